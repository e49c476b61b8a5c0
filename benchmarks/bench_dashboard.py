"""Dashboard speed: the results explorer on a store of 500 runs (target: loaded and drawn in <= 2 s).

A store of ``--runs`` runs (default 500) is made by running a small sweep once
(two schedulers) and copying its run folders under new ids — summaries and
tables as a sweep writes them; then:

* the server side: reading the store (:class:`~schedlab.dashboard.explorer.Catalog`),
  median of ``--repeat`` loads;
* the page: ``schedlab dashboard`` in a fresh process, Debian's Chromium
  (headless, through Playwright) opens the explorer and waits until the run
  table is filled and the first runs' CDFs, percentiles and utilization are
  drawn; wall time from navigation (median of ``--repeat`` page loads, after
  one warm-up), against the 2 s target.

* ``--live``: what the live view costs a running cluster (target: <= 2 % of
  its placement throughput). A 5 GM x 5 LM cluster of processes (1,000
  workers, sleep-0 tasks in jobs of 31) is replayed at ``--rate`` (below its
  knee), alternately without and with a dashboard reading it every second
  (``--pairs`` pairs). On this 2-core machine every process shares the cores,
  so throughput at saturation is cores / CPU per task: the figure is the CPU
  time per task of all processes (services, client and, in the second run of
  each pair, the dashboard's own process), median against median. Beside it,
  the direct cost: the CPU time a GM and an LM spend answering one
  ``/v1/status`` read (500 reads), as a share of a core at one read a second.

    python benchmarks/bench_dashboard.py [--runs 500] [--repeat 5]
    python benchmarks/bench_dashboard.py --live [--pairs 3] [--rate 6000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 2.0
SPEC = """\
name: bench-dashboard
workloads:
  - name: gen
    generate: {jobs: 200, arrivals: "poisson:1", tasks_per_job: "geom:20", duration: "exp:5", seed: 1}
data_centers:
  - workers: 200
schedulers:
  - name: megha
  - name: sparrow
seeds: [0]
"""


def make_store(root: Path, runs: int) -> Path:
    from schedlab.experiments.runner import run_sweep

    spec = root / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    store = run_sweep(spec, root / "res", jobs=1).root
    exp = json.loads((store / "experiment.json").read_text())
    seeds = exp["runs"]
    listed = []
    for k in range(runs):
        src = seeds[k % len(seeds)]
        rid = f"{k:016x}"
        shutil.copytree(store / "runs" / src["id"], store / "runs" / rid)
        listed.append({**src, "id": rid, "seed": k // len(seeds)})
    for s in seeds:
        shutil.rmtree(store / "runs" / s["id"])
    exp["runs"] = listed
    (store / "experiment.json").write_text(json.dumps(exp))
    return store


def _cpu_seconds(pid: int) -> float:
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_live(pairs: int, rate: float, seconds: float = 5.0) -> None:
    import asyncio
    import os

    from schedlab.services import supervise
    from schedlab.services.client import replay
    from schedlab.services.clusterfile import load_cluster, render_cluster
    from schedlab.services.remote import RemoteCluster, fetch_statuses
    from schedlab.workload.trace import TraceJob

    per_job = 31
    jobs = [TraceJob(k * per_job / rate, 0.0, [0.0] * per_job) for k in range(int(rate * seconds / per_job))]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "cluster.yaml"
        path.write_text(render_cluster(name=f"dashbench{int(time.time() * 1000) % 10**9}", gms=5, lms=5, workers=1000,
                                       base_port=supervise.free_port_range(15), heartbeat=1.0))  # fmt: skip
        loaded = load_cluster(path)

        async def one_run(rc: RemoteCluster, pids: list[int]) -> tuple[float, float]:
            """Placements/s and the CPU milliseconds per task of every process in ``pids``."""
            c0 = sum(_cpu_seconds(p) for p in pids)
            r = await replay(rc, jobs, constraints=False, timeout=120)
            cpu = sum(_cpu_seconds(p) for p in pids) - c0
            t = r.tasks
            started = t[t.start.notna()]
            if r.summary["counters"]["tasks_unfinished"]:
                print(f"  ({r.summary['counters']['tasks_unfinished']} of {len(t)} tasks unfinished after 120 s)", flush=True)
            return len(started) / (started.start.max() - t.arrival.min()), cpu * 1e3 / len(t)

        async def cost_of_status(procs) -> tuple[float, float]:
            by_role = {}
            for p in procs:
                by_role.setdefault(p.role, p.pid)
            before = {r: _cpu_seconds(pid) for r, pid in by_role.items()}
            for _ in range(500):
                await fetch_statuses(loaded)
            return tuple((_cpu_seconds(by_role[r]) - before[r]) / 500 for r in ("gm", "lm"))  # type: ignore[return-value]

        async def run_all() -> tuple[list[tuple[float, float]], list[tuple[float, float]], tuple[float, float]]:
            procs = await supervise.up(loaded, path, timeout=120)
            pids = [p.pid for p in procs] + [os.getpid()]
            without: list[tuple[float, float]] = []
            with_dash: list[tuple[float, float]] = []
            async with RemoteCluster(loaded) as rc:
                await one_run(rc, pids)  # warm-up
                for k in range(pairs):
                    without.append(await one_run(rc, pids))
                    dash = await asyncio.create_subprocess_exec(sys.executable, "-m", "schedlab", "dashboard", "--cluster", str(path), "--port", "0",
                                                                "--every", "1", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
                    try:
                        assert dash.stdout is not None
                        await dash.stdout.readline()
                        await asyncio.sleep(1.5)
                        with_dash.append(await one_run(rc, [*pids, dash.pid]))
                    finally:
                        dash.terminate()
                        await dash.wait()
                    print(f"  pair {k + 1}: without a dashboard {without[-1][0]:,.0f} placements/s, {without[-1][1]:.3f} CPU ms/task; "
                          f"with {with_dash[-1][0]:,.0f} placements/s, {with_dash[-1][1]:.3f} CPU ms/task (the dashboard's process included)", flush=True)
            return without, with_dash, await cost_of_status(procs)

        try:
            without, with_dash, (gm_cost, lm_cost) = asyncio.run(run_all())
        finally:
            asyncio.run(supervise.down(loaded, path))
    a = statistics.median(c for _r, c in without)
    b = statistics.median(c for _r, c in with_dash)
    cost = b / a - 1
    print(f"live: CPU per task, all processes (services, client{' and dashboard' if with_dash else ''}): median {a:.3f} -> {b:.3f} ms; "
          f"cost {100 * cost:+.1f} % of the placements/s the cores give at saturation (target <= 2 %: {'met' if cost <= 0.02 else 'MISSED'})")
    print(f"live: placements/s at {rate:,.0f} offered: without {statistics.median(r for r, _c in without):,.0f}, with {statistics.median(r for r, _c in with_dash):,.0f}")
    print(f"live: one status read costs a GM {gm_cost * 1e3:.2f} ms and an LM {lm_cost * 1e3:.2f} ms of CPU: at one read a second, "
          f"{100 * gm_cost:.3f} % and {100 * lm_cost:.3f} % of a core")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--live", action="store_true", help="the live view's cost to a running cluster instead")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rate", type=float, default=2500.0, help="--live: offered tasks/s (below the cluster's knee)")
    args = ap.parse_args()
    # a run stopped by `timeout` or kill still stops its cluster's processes (the finally blocks run)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.live:
        bench_live(args.pairs, args.rate)
        return
    from schedlab.dashboard.explorer import Catalog

    with tempfile.TemporaryDirectory() as d:
        store = make_store(Path(d), args.runs)
        loads = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            cat = Catalog([store])
            loads.append(time.perf_counter() - t0)
        print(f"catalog: {len(cat.runs)} runs read in {statistics.median(loads) * 1000:.0f} ms (median of {args.repeat})", flush=True)

        from playwright.sync_api import sync_playwright

        proc = subprocess.Popen([sys.executable, "-m", "schedlab", "dashboard", "--results", str(store), "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split()[-1].decode()
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
                walls = []
                for k in range(args.repeat + 1):
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    t0 = time.perf_counter()
                    page.goto(url)
                    page.wait_for_function("document.body.dataset.ready === '1' && document.querySelectorAll('#cdf-chart svg').length > 0",
                                           timeout=60_000)  # fmt: skip
                    wall = time.perf_counter() - t0
                    rows = page.locator("#runs-table tbody tr").count()
                    page.close()
                    if k:
                        walls.append(wall)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(10)
        med = statistics.median(walls)
        print(f"page: {rows} runs listed, first CDFs drawn in {med:.2f} s (median of {args.repeat}; {min(walls):.2f}-{max(walls):.2f})  "
              f"target {TARGET_SECONDS:g} s: {'met' if med <= TARGET_SECONDS else 'MISSED'} (x{TARGET_SECONDS / med:.2f})")


if __name__ == "__main__":
    main()
