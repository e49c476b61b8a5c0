"""Megha's services on a three-node RabbitMQ cluster (quorum queues): broker-node kills and the cost of quorum queues.

Targets (issue 42):

* **kills** — one of the three nodes SIGKILLed mid-replay at half capacity,
  at least 20 times (rotating over the three members, every other one started
  again without its data — a lost disk), each in a chaos campaign of its own
  (``schedlab chaos --kill broker-node``) on services that stay up: 0 tasks
  lost, 0 duplicated in every campaign, and scheduling resumes within 5 s of
  each kill — "resumes" being the first start of a task that arrived after the
  kill (tasks arrive every 1/8 s, so this is the pause a user saw plus one
  normal allocation time); reported as p50 / p90 / max;
* **throughput** — the highest placements/s of the 5 GM x 5 LM workload of
  ``bench_services.py`` (1,000 workers, sleep-0 tasks in jobs of 10) over a
  few offered rates, with quorum queues against classic queues on the same
  three-node cluster (``queue_type`` forced; connections spread over the
  nodes either way), and classic queues on one node of it alone: goal <= 20 %
  fewer with quorum queues than classic ones;
* **two down** — two of three nodes killed mid-replay (no quorum): the
  publishers wait rather than lose; once one node is back, every task
  completes exactly once.

The cluster is started here (``--base-port``, default 5681-5683) and stopped
at the end. Every figure is one run on this machine, whose two cores the
three Erlang VMs, the services and the load generator share.

    python benchmarks/bench_broker_cluster.py [--only kills,throughput,twodown] [--kills N] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_services import free_base, run_processes, show, trace
from schedlab.services import supervise
from schedlab.services.brokercluster import BrokerCluster
from schedlab.services.chaos import run_chaos
from schedlab.services.client import replay
from schedlab.services.clusterfile import load_cluster, render_cluster
from schedlab.services.remote import RemoteCluster

RESUME_TARGET = 5.0


def cluster_file(folder: Path, brokers: BrokerCluster, gms: int, lms: int, workers: int, queue_type: str, heartbeat: float = 1.0) -> Path:
    path = folder / f"bench-{gms}x{lms}-{queue_type}.yaml"
    text = render_cluster(name=f"bq{int(time.time() * 1000) % 10**9}", gms=gms, lms=lms, workers=workers,
                          base_port=free_base(gms + 2 * lms), heartbeat=heartbeat, broker=",".join(brokers.urls))
    path.write_text(text + f"queue_type: {queue_type}\n")
    return path


def percentile(xs: list[float], q: float) -> float:
    """The ``q``-quantile of ``xs`` (nearest rank: one of the measured values, no interpolation between kills)."""
    ys = sorted(xs)
    return ys[min(len(ys) - 1, max(0, math.ceil(q * len(ys)) - 1))]


def bench_kills(folder: Path, brokers: BrokerCluster, kills: int) -> None:
    """One chaos campaign per kill (so that lost/duplicated is a verdict per kill), on services that stay up: kill
    *k* takes member ``k % 3`` (rotating over the three) and wipes its data when *k* is odd (mixed: six kills cover
    every member with and without its data)."""
    workers, duration = 16, 1.0
    rate = 0.5 * workers / duration  # half capacity
    print(f"kills: 2 GMs x 2 LMs, {workers} workers, {rate:g} tasks/s of {duration:g} s (half capacity); {kills} broker-node "
          "kills, one per campaign 3 s into a 10 s replay, rotating over the three members, every other one with the member's "
          "data wiped", flush=True)
    path = cluster_file(folder, brokers, 2, 2, workers, "auto", heartbeat=0.5)
    loaded = load_cluster(path)
    rows: list[tuple[int, bool, list[float | None], float | None, int, int]] = []
    tr = trace(int(rate * 10), 1, rate, duration)

    async def campaigns() -> None:
        await supervise.up(loaded, path, timeout=120)
        try:
            for k in range(kills):
                node, wipe = k % len(brokers.nodes), k % 2 == 1
                r = await run_chaos(loaded, path, tr, roles=["broker-node"], every=3.0, restart_after=0.5, seed=k, brokers=brokers,
                                    wipe=wipe, broker_nodes=[node], constraints=False, timeout=300)
                resumed = [x.resumed_after for x in r.kills]
                healthy = max((x.healthy_after for x in r.kills if x.healthy_after is not None), default=None)
                rows.append((node, wipe, resumed, healthy, r.lost, r.duplicated))
                print(f"  kill {k + 1:>2}: member {node + 1} {'wiped' if wipe else 'with data'}: resumed after "
                      + ", ".join("-" if x is None else f"{x:.2f} s" for x in resumed)
                      + f"; member back after {healthy or 0:.1f} s; {r.result.summary['tasks']} tasks, lost {r.lost}, "
                        f"duplicated {r.duplicated}", flush=True)
        finally:
            await supervise.down(loaded, path)

    asyncio.run(campaigns())
    resumed = [x for row in rows for x in row[2] if x is not None]
    unmeasured = sum(1 for row in rows for x in row[2] if x is None)
    lost, duplicated = sum(r[4] for r in rows), sum(r[5] for r in rows)
    if resumed:
        over = sum(1 for x in resumed if x > RESUME_TARGET)
        print(f"  {len(resumed)} kills measured ({unmeasured} without a task arriving after them): scheduling resumed after "
              f"p50 {percentile(resumed, 0.5):.2f} s, p90 {percentile(resumed, 0.9):.2f} s, max {max(resumed):.2f} s; {over} over "
              f"{RESUME_TARGET:g} s (target: none: {'met' if over == 0 else 'MISSED'})")
        for wipe in (False, True):
            part = [x for row in rows if row[1] == wipe for x in row[2] if x is not None]
            if part:
                print(f"    {'wiped' if wipe else 'with data'}: {len(part)} kills, p50 {percentile(part, 0.5):.2f} s, "
                      f"p90 {percentile(part, 0.9):.2f} s, max {max(part):.2f} s")
        back = [r[3] for r in rows if r[3] is not None]
        print(f"  member back in the cluster after p50 {statistics.median(back):.1f} s, max {max(back):.1f} s")
    bad = [k + 1 for k, r in enumerate(rows) if r[4] or r[5]]
    print(f"  lost {lost}, duplicated {duplicated} over {len(rows)} campaigns (target 0, 0 in every one: "
          f"{'met' if not bad else 'MISSED in kills ' + ', '.join(map(str, bad))})", flush=True)


def bench_throughput(folder: Path, brokers: BrokerCluster, quick: bool) -> None:
    rates = [500, 1500] if quick else [300, 1000, 2000]
    seconds = 3.0 if quick else 5.0
    print(f"throughput: 5 GM x 5 LM, 1000 workers, sleep-0 tasks in jobs of 10, {seconds:g} s per offered rate, on the three-node "
          "cluster: classic queues with every process on node 1 (one broker), classic queues with the processes spread over the "
          "nodes, quorum queues (spread)")
    best: dict[str, float] = {}
    for rate in rates:
        for mode in ("classic-1", "classic-3", "quorum-3"):
            tr = trace(max(1, int(rate * seconds / 10)), 10, rate, 0.0)
            path = cluster_file(folder, brokers, 5, 5, 1000, mode.split("-")[0])
            if mode == "classic-1":
                path.write_text(path.read_text().replace(f"brokers: [{', '.join(brokers.urls)}]", f"broker: {brokers.urls[0]}"))
            f = asyncio.run(run_processes(path, tr))
            best[mode] = max(best.get(mode, 0.0), f["placements_per_s"])
            show(f"{mode:<10} offered {rate:>5}/s", f)
    c, q = best.get("classic-3", 0.0), best.get("quorum-3", 0.0)
    cost = (1 - q / c) * 100 if c else float("nan")
    print(f"  highest placements/s: one broker {best.get('classic-1', 0.0):.0f}, classic {c:.0f}, quorum {q:.0f} (both spread over "
          f"the three nodes): quorum/classic = {q / c if c else float('nan'):.2f}, {cost:.0f} % fewer with quorum queues "
          f"(goal <= 20 %: {'met' if cost <= 20 else 'MISSED'})", flush=True)


def bench_two_down(folder: Path, brokers: BrokerCluster) -> None:
    workers, duration = 8, 1.0
    rate = 0.5 * workers / duration
    tr = trace(int(rate * 20), 1, rate, duration)
    path = cluster_file(folder, brokers, 2, 2, workers, "auto", heartbeat=0.5)
    loaded = load_cluster(path)
    print(f"two down: 2 GMs x 2 LMs, {workers} workers, {len(tr)} tasks at half capacity; 3 s in, two of three nodes SIGKILLed, "
          "one back 8 s later, the other after that")

    async def body() -> tuple:
        await supervise.up(loaded, path, timeout=120)
        try:
            async with RemoteCluster(loaded) as rc:
                run = asyncio.create_task(replay(rc, tr, constraints=False, timeout=300))
                await asyncio.sleep(3.0)
                t_kill = time.time()
                for i in (1, 2):
                    await asyncio.to_thread(brokers.kill, i)
                await asyncio.sleep(8.0)
                t_back = time.time()
                await brokers.restart(1)
                back = time.time() - t_back
                await brokers.restart(2)
                result = await run
            return result, t_kill, back
        finally:
            await supervise.down(loaded, path)

    result, t_kill, back = asyncio.run(body())
    c = result.summary["counters"]
    dup = sum(int(c.get(k, 0)) for k in ("duplicate_starts", "duplicate_finishes", "duplicate_reports"))
    t = result.tasks
    origin = result.extra.get("origin", t_kill)
    during = t[(t.arrival >= t_kill - origin) & (t.arrival < t_kill - origin + 8.0)]
    print(f"  tasks {len(t)}, unfinished {c['tasks_unfinished']}, duplicated {dup}; the {len(during)} tasks that arrived while two "
          f"nodes were down started after p50 {during.start.sub(during.arrival).median():.1f} s, max "
          f"{during.start.sub(during.arrival).max():.1f} s (one node back {back:.1f} s after its restart began)", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="kills,throughput,twodown")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--base-port", type=int, default=5681)
    ap.add_argument("--dist-base", type=int, default=25681)
    a = ap.parse_args()
    only = set(a.only.split(","))
    top = Path(tempfile.mkdtemp(prefix="schedlab-bench-brokers-", dir="/tmp"))
    top.chmod(0o755)
    brokers = BrokerCluster.plan(top / "cluster", 3, base_port=a.base_port, dist_base=a.dist_base)
    t0 = time.perf_counter()
    asyncio.run(brokers.up())
    print(f"three-node RabbitMQ cluster up in {time.perf_counter() - t0:.0f} s: {', '.join(brokers.urls)}", flush=True)
    try:
        with tempfile.TemporaryDirectory() as d:
            if "kills" in only:
                bench_kills(Path(d), brokers, a.kills)
            if "throughput" in only:
                bench_throughput(Path(d), brokers, a.quick)
            if "twodown" in only:
                bench_two_down(Path(d), brokers)
    finally:
        brokers.down()
        top.rmdir() if top.exists() else None
    return 0


if __name__ == "__main__":
    sys.exit(main())
