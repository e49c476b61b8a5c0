"""Speed of the grid simulation: the paper's full setup (8 sites × 64 processors, conservative backfilling,
8 × 100,000 local jobs + 100,000 global jobs), one run per scenario.

    python benchmarks/bench_grid.py [--scale 1.0] [--scenario NAME ...] [--heavy]

Prints, per scenario, the wall and CPU time of the simulation (workload generation
excluded, shown apart), the jobs simulated per second and the mean global queue time.
The target is ≤ 60 s per run on the 2-core development machine. Not a test: no
assertion on time.

The sites compress with the compiled pass (schedlab/grid/_compress.c) when it was built;
``--python`` runs the Python pass instead, and ``--compare`` runs both and prints the ratio
(the two give the same schedule: the mean queue times printed agree to the last digit).
"""

from __future__ import annotations

import argparse
import time

from schedlab.grid import profile as profile_module
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
# Heavier duplication: every copy is queued, planned and invalidated at its site, so a run costs
# about as much as one with that many more global jobs. Run with --heavy or by name.
HEAVY = {
    "hybrid2+2/strong": dict(scheduler="hybrid2", arrivals="strong", duplications=2),
    "rand+7/strong": dict(scheduler="rand", arrivals="strong", duplications=7),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the paper's 100,000 jobs per stream")
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS | HEAVY), help="default: all but the heavy ones")
    ap.add_argument("--heavy", action="store_true", help="also run the heavy-duplication scenarios")
    ap.add_argument("--seed", type=int, default=0)
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--python", action="store_true", help="compress with the Python pass, not the compiled one")
    how.add_argument("--compare", action="store_true", help="run each scenario with both passes; print the ratio")
    args = ap.parse_args()
    n = max(1, int(round(100_000 * args.scale)))
    names = args.scenario or list(SCENARIOS) + (list(HEAVY) if args.heavy else [])
    compiled = profile_module.compiled
    if compiled is None:
        print("the compiled pass was not built (no C compiler at install): every run uses the Python pass")
        passes = ["python"]
    else:
        passes = ["compiled", "python"] if args.compare else ["python" if args.python else "compiled"]
    print(
        f"{'scenario':22} {'pass':8} {'jobs':>8} {'workload s':>10} {'sim wall s':>10} {'sim cpu s':>9} "
        f"{'jobs/s':>8} {'mean qt s':>9}"
    )
    for name in names:
        cfg = GridConfig(local_jobs=n, global_jobs=n, seed=args.seed, **(SCENARIOS | HEAVY)[name])
        t0 = time.perf_counter()
        wl = build_workload(cfg)
        t_wl = time.perf_counter() - t0
        walls = {}
        for kind in passes:
            profile_module.compiled = compiled if kind == "compiled" else None
            c0 = time.process_time()
            w0 = time.perf_counter()
            r = simulate_grid(cfg, wl)
            wall = walls[kind] = time.perf_counter() - w0
            cpu = time.process_time() - c0
            s = r.summary
            jobs = s["global_jobs"] + s["local_jobs"]
            print(
                f"{name:22} {kind:8} {jobs:8d} {t_wl:10.2f} {wall:10.2f} {cpu:9.2f} {jobs / wall:8.0f} "
                f"{s['mean_queue_time']:9.4f}",
                flush=True,
            )
        if len(walls) == 2:
            print(f"{'':22} python / compiled: x{walls['python'] / walls['compiled']:.1f}", flush=True)
        profile_module.compiled = compiled


if __name__ == "__main__":
    main()
