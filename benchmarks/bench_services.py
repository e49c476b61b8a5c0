"""Megha for real: allocation time, placement throughput and start-up of the services, against the targets.

Targets:

* **latency** — loopback, 1 GM, 1 LM, 100 workers, light load: median
  allocation time <= 10 ms and p99 <= 50 ms over HTTP + RabbitMQ, median
  <= 2 ms with the in-process transport;
* **throughput** — one GM sustains >= 1,000 placements/s, a 5 GM x 5 LM cluster
  >= 3,000/s, with sleep-0 tasks; the curve of allocation time against offered
  load shows where it saturates;
* **startup** — ``cluster up`` of 5 GMs, 5 LMs and 200 workers healthy in <= 15 s;
* **fairness** (no target: a comparison) — global fair sharing under
  contention, simulated, embedded and as processes: preemptions, attempts,
  refusals and the per-user median JRT delay;
* **faults** — one chaos campaign per fault during a replay (worker hosts
  back after 1 s and after 3 s, GMs, LMs with standbys and restarted, the
  broker), printed as the report's fault table: detection and recovery times,
  tasks relaunched, lost, duplicated; targets: a killed host's tasks started
  again within 3 s, a restarted GM serving within 2 heartbeats, a standby LM
  active within 3 s;
* **security** — every attack against a live cluster, the answer it got and
  the counter it moved, printed as the report's security table;
* **soak** — ``--soak-minutes`` (default 10) of replay at half the capacity of
  24 workers with one component of ``--soak-roles`` (default: worker, gm, lm,
  broker; LMs with standbys) killed every 20 s: zero lost or duplicated, and
  every service process's resident memory sampled every 15 s (it must stay flat).

Placements/s is tasks placed over the span from the first arrival to the last
start; for the multi-process runs, the CPU time all processes (services and
client) spent per task tells what the machine's cores can carry. Every figure is one run on this machine; the processes share its cores
with the load generator, so the multi-process figures are a lower bound of
what separate hosts would give.

    python benchmarks/bench_services.py [--only latency,throughput,startup,fairness,faults,security,soak] [--quick] [--soak-minutes M] [--soak-roles R]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from schedlab.cluster import Cluster
from schedlab.services import supervise
from schedlab.services.client import replay
from schedlab.services.clusterfile import load_cluster, render_cluster
from schedlab.services.embedded import EmbeddedMegha
from schedlab.services.remote import RemoteCluster
from schedlab.workload.trace import TraceJob


def free_base(n: int) -> int:
    return supervise.free_port_range(n)


def trace(jobs: int, tasks_per_job: int, rate_tasks: float, duration: float) -> list[TraceJob]:
    gap = tasks_per_job / rate_tasks
    return [TraceJob(i * gap, duration, [duration] * tasks_per_job) for i in range(jobs)]


def cluster_file(folder: Path, gms: int, lms: int, workers: int, heartbeat: float = 1.0) -> Path:
    path = folder / f"bench-{gms}x{lms}.yaml"
    text = render_cluster(name=f"bench{int(time.time() * 1000) % 10**9}", gms=gms, lms=lms, workers=workers,
                          base_port=free_base(gms + 2 * lms), heartbeat=heartbeat)
    path.write_text(text)
    return path


async def run_embedded(gms: int, lms: int, workers: int, tr: list[TraceJob]) -> dict:
    async with EmbeddedMegha(Cluster.slots([0] * workers), {"gms": gms, "lms": lms, "heartbeat": 1.0}) as c:
        r = await replay(c, tr, constraints=False, timeout=300)
    return figures(r)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


async def run_processes(path: Path, tr: list[TraceJob]) -> dict:
    loaded = load_cluster(path)
    try:
        procs = await supervise.up(loaded, path, timeout=120)
        pids = [p.pid for p in procs] + [os.getpid()]
        before = cpu_seconds(pids)
        async with RemoteCluster(loaded) as rc:
            r = await replay(rc, tr, constraints=False, timeout=300)
        f = figures(r)
        f["cpu_ms_per_task"] = (cpu_seconds(pids) - before) * 1e3 / max(1, f["tasks"])
        return f
    finally:
        await supervise.down(loaded, path)


def figures(r) -> dict:
    t = r.tasks
    s = r.summary
    started = t[t.start.notna()]
    span = started.start.max() - t.arrival.min() if len(started) else float("nan")
    return {
        "tasks": len(t),
        "unfinished": s["counters"]["tasks_unfinished"],
        "p50_ms": s["allocation_time"]["p50"] * 1e3,
        "p99_ms": s["allocation_time"]["p99"] * 1e3,
        "placements_per_s": len(started) / span if span > 0 else float("nan"),
        "inconsistencies": s["counters"].get("inconsistencies", 0),
    }


def show(label: str, f: dict, extra: str = "") -> None:
    cpu = f"  CPU {f['cpu_ms_per_task']:.2f} ms/task (all processes)" if "cpu_ms_per_task" in f else ""
    print(f"  {label:<34} tasks {f['tasks']:>6}  alloc p50 {f['p50_ms']:8.2f} ms  p99 {f['p99_ms']:8.2f} ms  "
          f"placements/s {f['placements_per_s']:8.0f}  inconsistencies {f['inconsistencies']:>4}  unfinished {f['unfinished']}{cpu} {extra}", flush=True)


def bench_latency(folder: Path, quick: bool) -> None:
    print("latency: 1 GM x 1 LM, 100 workers, 20 jobs/s of 1 task (50 ms sleep)")
    tr = trace(100 if quick else 400, 1, 20.0, 0.05)
    f = asyncio.run(run_embedded(1, 1, 100, tr))
    show("in-process (embedded)", f, f"target p50 <= 2 ms: {'met' if f['p50_ms'] <= 2 else 'MISSED'}")
    f = asyncio.run(run_processes(cluster_file(folder, 1, 1, 100), tr))
    ok = f["p50_ms"] <= 10 and f["p99_ms"] <= 50
    show("processes, HTTP + RabbitMQ", f, f"target p50 <= 10, p99 <= 50 ms: {'met' if ok else 'MISSED'}")


def bench_throughput(folder: Path, quick: bool) -> None:
    rates = [500, 1000, 2000, 4000] if quick else [500, 1000, 2000, 3000, 4000, 6000, 8000]
    seconds = 2.0 if quick else 5.0
    # (GMs, LMs, tasks per job, target): a job's tasks are spread over the LMs, so small jobs
    # mean small launch requests; the Google sub-trace averages 31 tasks a job, syn_250 250
    for gms, lms, per_job, target in ((1, 1, 10, 1000), (5, 5, 10, 3000), (5, 5, 31, 3000), (5, 5, 50, 3000)):
        workers = 1000
        print(f"throughput: {gms} GM x {lms} LM, {workers} workers, sleep-0 tasks in jobs of {per_job}, {seconds:g} s per offered rate")
        for mode in ("embedded", "processes"):
            best = 0.0
            for rate in rates:
                tr = trace(max(1, int(rate * seconds / per_job)), per_job, rate, 0.0)
                if mode == "embedded":
                    f = asyncio.run(run_embedded(gms, lms, workers, tr))
                else:
                    f = asyncio.run(run_processes(cluster_file(folder, gms, lms, workers), tr))
                if f["unfinished"] == 0 and f["p99_ms"] < 1000:  # sustained: everything placed, no runaway queue
                    best = max(best, f["placements_per_s"])
                show(f"{mode:<10} offered {rate:>5}/s", f)
            print(f"  {mode}: sustained {best:.0f} placements/s (all placed, p99 < 1 s); target >= {target}: {'met' if best >= target else 'MISSED'}")


def bench_startup(folder: Path, quick: bool) -> None:
    path = folder / "startup.yaml"
    path.write_text(render_cluster(name=f"bench{int(time.time()) % 10**6}", gms=5, lms=5, workers=200, base_port=free_base(15)))
    loaded = load_cluster(path)
    t0 = time.perf_counter()
    try:
        procs = asyncio.run(supervise.up(loaded, path, timeout=120))
        dt = time.perf_counter() - t0
    finally:
        asyncio.run(supervise.down(loaded, path))
    print(f"startup: cluster up of 5 GMs, 5 LMs, 200 workers ({len(procs)} processes) healthy in {dt:.1f} s; "
          f"target <= 15 s: {'met' if dt <= 15 else 'MISSED'}")


def bench_fairness(folder: Path, quick: bool) -> None:
    """The megha-fairness spec's quick workload (60 jobs, Poisson arrivals, 20 s tasks), 20x faster, on 12 workers."""
    import numpy as np

    from schedlab import simulate
    from schedlab.workload.synthetic import generate_jobs

    k = 20.0
    jobs = [TraceJob(j.arrival / k, j.mean_duration / k, [d / k for d in j.durations], j.line)
            for j in generate_jobs(60, "poisson:1", "geom:20", "exp:20", np.random.default_rng(0))]
    params = {"gms": 3, "lms": 3, "heartbeat": 0.5, "shares": [0.1, 0.25, 0.15, 0.5], "queue_gms": [1, 2, 2, 3]}
    print("fairness: 3 GMs x 3 LMs, 12 workers of 64 cores, 4 users with shares 10/25/15/50 %, "
          f"{sum(len(j.durations) for j in jobs)} tasks in 60 jobs (megha-fairness quick workload, 20x faster)")
    cl = Cluster.multi_resource([0] * 12, [64.0, 16384.0])

    async def embedded():
        async with EmbeddedMegha(cl, params) as c:
            return await replay(c, jobs, constraints=False, timeout=120)

    async def processes():
        path = folder / "fair.yaml"
        text = render_cluster(name=f"benchfair{os.getpid()}", gms=3, lms=3, workers=12, base_port=free_base(3 + 3 + 3), heartbeat=0.5,
                              resources=["cores", "memory_mb"], capacity=[64.0, 16384.0])
        path.write_text(text.replace("  worker_choice: random", "  worker_choice: random\n  shares: [0.1, 0.25, 0.15, 0.5]\n  queue_gms: [1, 2, 2, 3]"))
        loaded = load_cluster(path)
        try:
            await supervise.up(loaded, path, timeout=60)
            async with RemoteCluster(loaded) as rc:
                return await replay(rc, jobs, constraints=False, timeout=120)
        finally:
            await supervise.down(loaded, path)

    runs = [("simulated", simulate("megha", jobs, cluster=cl, params=params, constraints=False)), ("embedded", asyncio.run(embedded()))]
    if not quick:
        runs.append(("processes", asyncio.run(processes())))
    for label, r in runs:
        c = r.summary["counters"]
        per_user = r.jobs.groupby("user").jrt_delay.median()
        print(f"  {label:<10} preemptions {c.get('preemptions', 0):>4}  attempts {c.get('preemption_attempts', 0):>4}  "
              f"refused {c.get('preemptions_refused', 0):>4}  too late {c.get('preemptions_too_late', 0):>2}  "
              f"alloc p50 {r.summary['allocation_time']['p50']:.3f} s  p90 {r.summary['allocation_time']['p90']:.3f} s  "
              f"JRT delay p50 per user {' '.join(f'{v:.3f}' for v in per_user)} s  unfinished {c['tasks_unfinished']}", flush=True)


def bench_faults(folder: Path, quick: bool) -> None:
    """Chaos campaigns, one per fault, at the default lease: detection and recovery times, tasks relaunched,
    and the exactly-once verdict — printed as the report's fault table."""
    from statistics import median

    from schedlab.services.chaos import run_chaos
    from schedlab.services.embedded import parse_params

    jobs = 30 if quick else 80
    tr = [TraceJob(0.5 * i, 2.0, [2.0] * 4) for i in range(jobs)]  # 16 of the 24 workers busy on average: room to relaunch
    print(f"faults: 2 GMs x 2 LMs, 6 worker hosts of 4 workers, lease 2 s; {jobs} jobs of four 2-s tasks every 0.5 s; "
          f"one component killed every 6 s (restarted after 1 s unless said)")
    rows: list[tuple[str, ...]] = []

    def stat(xs: list[float]) -> str:
        return f"{median(xs):.2f} / {max(xs):.2f} s" if xs else "-"

    def campaign(roles: list[str], restart_after: float = 1.0, standby: bool = False):
        path = folder / f"faults-{'-'.join(roles)}-{restart_after:g}-{int(standby)}.yaml"
        text = render_cluster(name=f"benchfaults{os.getpid()}", gms=2, lms=2, workers=24, hosts_per_lm=3,
                              base_port=free_base(2 + 2 + 6), heartbeat=1.0, lm_standby=standby)
        path.write_text(text)
        loaded = load_cluster(path)

        async def go():
            await supervise.up(loaded, path, timeout=60)
            try:
                return await run_chaos(loaded, path, tr, roles=roles, every=6.0, restart_after=restart_after, seed=0,
                                       constraints=False, timeout=180)
            finally:
                await supervise.down(loaded, path)

        rep = asyncio.run(go())
        verdict = "every task completed exactly once" if rep.ok else "FAILED"
        print(f"  {','.join(roles)} (restart after {restart_after:g} s{', standbys' if standby else ''}): kills {len(rep.kills)}, "
              f"tasks {rep.result.summary['tasks']}: {rep.lost} lost, {rep.duplicated} duplicated -> {verdict}", flush=True)
        return loaded, rep

    # worker hosts: back after 1 s (noticed by the new incarnation) and after 3 s (the lease runs out)
    for restart_after in (1.0, 3.0):
        _l, rep = campaign(["worker"], restart_after)
        det = [d for k in rep.kills for d in k.detection]
        rel = [d for k in rep.kills for d in k.relaunch]
        print(f"    re-queued after the kill p50/max {stat(det)}; started again {stat(rel)} (target <= 3 s: "
              f"{'met' if rel and max(rel) <= 3.0 else 'MISSED'})")
        rows.append((f"worker host SIGKILLed, back after {restart_after:g} s", f"{stat(det)} (re-queued)", f"{stat(rel)} (started again)",
                     str(sum(k.lost_runs for k in rep.kills)), str(rep.lost), str(rep.duplicated)))

    # GMs: restarted after 1 s; the view from the LMs, the jobs it gets back
    loaded, rep = campaign(["gm"])
    heartbeat = parse_params(loaded.megha_params()).heartbeat
    rec = [k.recovery for k in rep.kills if k.recovery.get("recovered_in") is not None]
    view = [r["recovered_in"] for r in rec]
    serving = [k.healthy_after - 1.0 for k in rep.kills if k.healthy_after is not None]
    again = sum(r["tasks_requested_again"] for r in rec)
    print(f"    view rebuilt {stat(view)} after the process started; serving again {stat(serving)} after the restart "
          f"(target <= 2 heartbeats = {2 * heartbeat:g} s: {'met' if serving and max(serving) <= 2 * heartbeat else 'MISSED'}); "
          f"jobs back {sum(r['jobs_resolved'] for r in rec)}: running {sum(r['tasks_found_running'] for r in rec)}, "
          f"completed {sum(r['tasks_found_completed'] for r in rec)}, requested again {again}")
    rows.append(("GM SIGKILLed, restarted after 1 s", "— (restarted by the campaign)", f"{stat(serving)} serving after the restart; "
                 f"view {stat(view)}", str(again), str(rep.lost), str(rep.duplicated)))

    # LMs: standbys take over; and without standbys, restarted after 1 s
    for standby in (True, False):
        _l, rep = campaign(["lm"], standby=standby)
        rec = [k.recovery for k in rep.kills if k.recovery.get("rebuilt_in") is not None]
        back = [k.healthy_after for k in rep.kills if k.healthy_after is not None]
        built = [r["rebuilt_in"] for r in rec]
        lost_tt = max((r.get("gm_tasks_lost_at_takeovers", 0) for r in rec), default=0)
        print(f"    LM answering again {stat(back)} after the kill (state rebuilt {stat(built)}); adopted "
              f"{sum(r['tasks_adopted_from_hosts'] for r in rec)} running tasks, {sum(r['ends_sent_to_verify'] for r in rec)} ends verified, "
              f"{lost_tt} requested again" + (f" (target standby active <= 3 s: {'met' if back and max(back) <= 3.0 else 'MISSED'})" if standby else ""))
        rows.append(("LM SIGKILLed, standby takes over" if standby else "LM SIGKILLed, restarted after 1 s",
                     "lease (at once)" if standby else "— (restarted by the campaign)", f"{stat(back)} answering after the kill",
                     str(lost_tt), str(rep.lost), str(rep.duplicated)))

    # the broker, stopped for 1 s
    _l, rep = campaign(["broker"])
    back = [k.healthy_after for k in rep.kills if k.healthy_after is not None]
    rows.append(("RabbitMQ stopped for 1 s (rabbitmqctl stop_app/start_app)", "— (reconnection)", f"{stat(back)} broker back after the stop",
                 str(rep.result.summary["counters"].get("lost_runs", 0)), str(rep.lost), str(rep.duplicated)))

    print("  | fault | detection p50 / max | recovery p50 / max | tasks relaunched | lost | duplicated |\n  | --- | --- | --- | ---: | ---: | ---: |")
    for r in rows:
        print("  | " + " | ".join(r) + " |", flush=True)


def bench_security(folder: Path, quick: bool) -> None:
    """The security table: every attack against a live 1 GM x 1 LM cluster, the answer it got, and the
    counter it moved (read from the attacked service's own status)."""
    import json

    import aio_pika
    import aiohttp

    from schedlab.services.auth import Signer
    from schedlab.services.links import REQUEST_FRESH
    from schedlab.services.messages import SubmitJob
    from schedlab.services.remote import fetch_statuses
    from schedlab.services.wire import Codec
    from schedlab.workers.protocol import TasksFinished

    path = folder / "security.yaml"
    path.write_text(render_cluster(name=f"benchsec{os.getpid()}", gms=1, lms=1, workers=4, base_port=free_base(3), heartbeat=1.0))
    loaded = load_cluster(path)
    env = {"v": 1, "type": "LaunchRequest", "src": "gm:0", "dst": "lm:0",
           "body": {"gm": 0, "items": [[5, 0, 0]], "tasks": [{"tid": 5, "jid": 1, "duration": 0.1}]}}
    valid = json.dumps([env]).encode()
    good = Signer(loaded.secret, "gm:0")
    old = Signer(loaded.secret, "gm:0", clock=lambda: time.time() - 120)
    late = Signer(loaded.secret, "gm:0", clock=lambda: time.time() - REQUEST_FRESH - 2)
    http_attacks = [
        ("HTTP request without credentials", valid, {}),
        ("signed with another cluster's secret", valid, Signer("x" * 32, "gm:0").headers(valid)),
        ("signature of another body", valid, good.headers(b"other body")),
        ("request signed 2 minutes ago (stale)", valid, old.headers(valid)),
        ("a captured request sent again (first delivery)", valid, "capture"),
        ("a captured request sent again (replay)", valid, "captured"),
        (f"authentic launch signed {REQUEST_FRESH + 2:g} s ago (the links' fence)", valid, late.headers(valid)),
        ("authentic peer, body not JSON", b"not json", "sign"),
        ("authentic peer, unknown message type", json.dumps([{**env, "type": "Nonsense"}]).encode(), "sign"),
        ("authentic peer, unknown partition", json.dumps([{**env, "body": {**env["body"], "items": [[5, 99, 0]]}}]).encode(), "sign"),
        ("body over 8 MiB", b"[" + b" " * (9 << 20) + b"]", "sign"),
    ]

    async def run() -> list[tuple[str, str, str]]:
        rows = []
        await supervise.up(loaded, path, timeout=60)
        try:
            url = loaded.spec.lms[0].url + "/v1/message"
            async with aiohttp.ClientSession() as session:
                captured: dict = {}
                for label, data, headers in http_attacks:
                    before = (await fetch_statuses(loaded))[1]["refused"]
                    if headers == "capture":  # signed now (a launch is acted on within REQUEST_FRESH s), kept for the replay
                        captured = good.headers(data)
                    h = good.headers(data) if headers == "sign" else captured if headers in ("capture", "captured") else headers
                    async with session.post(url, data=data, headers=h) as resp:
                        text = (await resp.text()).strip()
                        status = resp.status
                    after = (await fetch_statuses(loaded))[1]["refused"]
                    moved = ", ".join(f"refused.{k} +{after[k] - before.get(k, 0)}" for k in sorted(after) if after[k] != before.get(k, 0))
                    rows.append((label, f"{status} {text.split(':')[0]}" if status != 200 else "200 (accepted, run once)", moved or "-"))
            codec = Codec(None)
            job = codec.encode("client", ("submit", 0), SubmitJob(7, [70, 71], [0.1, 0.1]))
            done = codec.encode("host:0", ("lm", 0), TasksFinished([(70, 0)]))
            conn = await aio_pika.connect(loaded.broker)
            try:
                x = (await conn.channel()).default_exchange
                for label, body, queue, node in (
                    ("broker message, unsigned (a job)", job, f"{loaded.name}.submit.0", 0),
                    ("broker message, forged (a job)", Signer("y" * 32, "client").frame(job), f"{loaded.name}.submit.0", 0),
                    ("broker message, forged (a completion)", Signer("y" * 32, "host:0").frame(done), f"{loaded.name}.lm.0", 1),
                ):
                    before = (await fetch_statuses(loaded))[node]["refused"]
                    await x.publish(aio_pika.Message(body), routing_key=queue)
                    await asyncio.sleep(0.3)
                    st = (await fetch_statuses(loaded))[node]
                    after = st["refused"]
                    moved = ", ".join(f"refused.{k} +{after[k] - before.get(k, 0)}" for k in sorted(after) if after[k] != before.get(k, 0))
                    rows.append((label, f"dropped before decoding; {st['role']} still knows {st['tasks_known']} task(s)", moved or "-"))
            finally:
                await conn.close()
            statuses = await fetch_statuses(loaded)
            lm = statuses[1]
            rows.append(("(after all of the above)", f"LM launched {lm['launched']} task(s), handler errors {lm['handler_errors']}, "
                         f"every node healthy: {all('error' not in st for st in statuses)}", f"refused_total {lm['refused_total']}"))
        finally:
            await supervise.down(loaded, path)
        return rows

    rows = asyncio.run(run())
    print("security: 1 GM x 1 LM x 1 worker host; each attack, the answer, and the counter it moved")
    print("  | attack | result | counter |\n  | --- | --- | --- |")
    for r in rows:
        print(f"  | {r[0]} | {r[1]} | {r[2]} |", flush=True)


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def bench_soak(folder: Path, quick: bool, minutes: float = 10.0, roles: str = "worker,gm,lm,broker") -> None:
    """Half capacity for ``minutes`` with a component of ``roles`` killed every 20 s: exactly once, and memory flat."""
    from schedlab.services.chaos import run_chaos

    if quick:
        minutes = min(minutes, 1.0)
    path = folder / "soak.yaml"
    path.write_text(render_cluster(name=f"benchsoak{os.getpid()}", gms=2, lms=2, workers=24, hosts_per_lm=3,
                                   base_port=free_base(2 + 2 + 6), heartbeat=1.0, lm_standby="lm" in roles))
    loaded = load_cluster(path)
    gap = 4 * 0.5 / 12.0  # jobs of four 0.5-s tasks: 12 of the 24 workers busy on average
    tr = [TraceJob(gap * i, 0.5, [0.5] * 4) for i in range(int(minutes * 60 / gap))]
    print(f"soak: {minutes:g} min, 2 GMs x 2 LMs (with standbys), 6 worker hosts of 4 workers, {len(tr) * 4} tasks of 0.5 s at half "
          f"capacity (24 tasks/s: the cluster saturates at 48/s with these tasks); one of [{roles}] killed every 20 s and restarted "
          f"1 s later; RSS of every service process every 15 s")
    samples: dict[tuple[str, int], list[float]] = {}

    async def sample(stop: asyncio.Event) -> None:
        while not stop.is_set():
            for name, pid in supervise.running_pids(path).items():
                mb = rss_mb(pid)
                if mb is not None:
                    samples.setdefault((name, pid), []).append(mb)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 15.0)

    async def soak():
        await supervise.up(loaded, path, timeout=60)
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample(stop))
        try:
            return await run_chaos(loaded, path, tr, roles=roles.split(","), every=20.0, restart_after=1.0, seed=0, constraints=False,
                                   timeout=180)
        finally:
            stop.set()
            await sampler
            await supervise.down(loaded, path)

    rep = asyncio.run(soak())
    by_role: dict[str, int] = {}
    for k in rep.kills:
        by_role[k.role] = by_role.get(k.role, 0) + 1
    print(f"  tasks {rep.result.summary['tasks']}, kills {len(rep.kills)} ({', '.join(f'{r} {n}' for r, n in sorted(by_role.items()))}), "
          f"lost runs {rep.result.summary['counters'].get('lost_runs', 0)}: {rep.lost} lost, {rep.duplicated} duplicated -> "
          f"{'every task completed exactly once' if rep.ok else 'FAILED'}")
    # each process that lived through at least 8 samples (2 minutes): its own curve
    for (name, pid), series in sorted(samples.items()):
        if len(series) < 8 or name.startswith("worker"):
            continue
        third = max(1, len(series) // 3)
        first, last = sum(series[:third]) / third, sum(series[-third:]) / third
        print(f"  {name:<13} pid {pid:<7} RSS MB over {len(series) * 15 // 60} min: {' '.join(f'{x:.0f}' for x in series)}  "
              f"(first third {first:.0f}, last third {last:.0f}, {'flat' if last <= first * 1.15 + 2 else 'GROWING'})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="latency,throughput,startup,fairness,faults,security,soak")
    ap.add_argument("--soak-minutes", type=float, default=10.0)
    ap.add_argument("--soak-roles", default="worker,gm,lm,broker", help="what the soak's chaos campaign kills")
    ap.add_argument("--quick", action="store_true", help="shorter runs")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in args.only.split(","):
            {"latency": bench_latency, "throughput": bench_throughput, "startup": bench_startup, "fairness": bench_fairness,
             "faults": bench_faults, "security": bench_security,
             "soak": lambda f, q: bench_soak(f, q, args.soak_minutes, args.soak_roles)}[name](folder, args.quick)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
