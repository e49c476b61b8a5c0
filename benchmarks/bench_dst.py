"""Speed of the deterministic simulation of the services (``schedlab dst``): fault schedules per second.

The issue's targets: at least 200 schedules per second of one core for the 2 GM x 2 LM x 4-host
cluster and 50 jobs, and at least 2,000 schedules within 2 minutes in CI (this machine, 2 cores).
This prints, for ``--seeds`` schedules in one process, the CPU seconds per schedule (process time:
what one core gives, whatever else the machine does), events per schedule and simulated seconds per
schedule; with ``--processes N`` also the wall time of the same seeds over N processes.

    python benchmarks/bench_dst.py [--seeds 300] [--processes 2] [--start 100000]
"""

from __future__ import annotations

import argparse
import time

from schedlab.services.dst import Setup, search

TARGET_PER_CORE = 200.0
CI_SEEDS, CI_SECONDS = 2000, 120.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument("--start", type=int, default=100_000, help="first seed (away from the ones the tests run)")
    ap.add_argument("--processes", type=int, default=0, help="also time the seeds over this many processes")
    args = ap.parse_args()
    setup = Setup()
    search(range(2), setup)  # imports and the cluster's plan, outside the measure
    t_cpu, t_wall = time.process_time(), time.perf_counter()
    s = search(range(args.start, args.start + args.seeds), setup)
    cpu, wall = time.process_time() - t_cpu, time.perf_counter() - t_wall
    per_core = s.seeds / cpu
    print(f"one process: {s.seeds} schedules, {cpu:.2f} s of CPU ({wall:.2f} s wall): {per_core:.1f} schedules/s per core "
          f"(target {TARGET_PER_CORE:.0f}: {per_core / TARGET_PER_CORE:.2f} of it)")
    print(f"  {s.events / s.seeds:.0f} events and {s.sim_seconds / s.seeds:.1f} simulated seconds a schedule; "
          f"{s.events / cpu:.0f} events/s; violations {sum(s.violations.values())}")
    print(f"  CI's {CI_SEEDS} schedules on one core: {CI_SEEDS / per_core:.0f} s")
    if args.processes > 1:
        t = time.perf_counter()
        p = search(range(args.start, args.start + args.seeds), setup, workers=args.processes)
        wall = time.perf_counter() - t
        rate = p.seeds / wall
        print(f"{args.processes} processes: {p.seeds} schedules in {wall:.2f} s: {rate:.1f} schedules/s; "
              f"CI's {CI_SEEDS}: {CI_SEEDS / rate:.0f} s (budget {CI_SECONDS:.0f} s); violations {sum(p.violations.values())}")


if __name__ == "__main__":
    main()
