"""Speed of the grid simulation: the paper's full setup (8 sites × 64 processors, conservative backfilling,
8 × 100,000 local jobs + 100,000 global jobs), one run per scenario.

    PYTHONPATH=src python benchmarks/bench_grid.py [--scale 1.0] [--scenario NAME ...]

Prints, per scenario, the wall and CPU time of the simulation (workload generation
excluded, shown apart), the jobs simulated per second and the mean global queue time.
The target is ≤ 60 s per run on the 2-core development machine. Not a test: no
assertion on time.
"""

from __future__ import annotations

import argparse
import time

from schedlab.grid.simulation import GridConfig, build_workload, simulate_grid

SCENARIOS = {
    "rand/non-bursty": dict(scheduler="rand", arrivals="non-bursty"),
    "qlen/non-bursty": dict(scheduler="qlen", arrivals="non-bursty"),
    "rand/strong": dict(scheduler="rand", arrivals="strong"),
    "hybrid1+1/strong": dict(scheduler="hybrid1", arrivals="strong", duplications=1),
    "qlen/weak": dict(scheduler="qlen", arrivals="weak"),
    "qlen/strong": dict(scheduler="qlen", arrivals="strong"),
    "act_qt-ideal/strong": dict(scheduler="act_qt", arrivals="strong", delay=0.0),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the paper's 100,000 jobs per stream")
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="default: all")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n = max(1, int(round(100_000 * args.scale)))
    names = args.scenario or list(SCENARIOS)
    print(f"{'scenario':22} {'jobs':>8} {'workload s':>10} {'sim wall s':>10} {'sim cpu s':>9} {'jobs/s':>8} {'mean qt s':>9}")
    for name in names:
        cfg = GridConfig(local_jobs=n, global_jobs=n, seed=args.seed, **SCENARIOS[name])
        t0 = time.perf_counter()
        wl = build_workload(cfg)
        t_wl = time.perf_counter() - t0
        c0 = time.process_time()
        w0 = time.perf_counter()
        r = simulate_grid(cfg, wl)
        wall = time.perf_counter() - w0
        cpu = time.process_time() - c0
        s = r.summary
        jobs = s["global_jobs"] + s["local_jobs"]
        print(
            f"{name:22} {jobs:8d} {t_wl:10.2f} {wall:10.2f} {cpu:9.2f} {jobs / wall:8.0f} {s['mean_queue_time']:9.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
