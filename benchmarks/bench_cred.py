"""Benchmark: CRED-M on 1,000 jobs and 10,000 chunks, verification included, against the 2 s target.

Each case generates its instance first (not timed), then times ``cred_m`` (placement, slot
planning and the full slot-by-slot schedule) plus ``verify`` on the result, best and median
of ``--repeat`` runs. The cases cover the regimes that matter: storage-bound (small B),
slot-bound (large B, few VMs, short deadlines), more deadline classes and ~100k tasks.

    python benchmarks/bench_cred.py [--repeat 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time

from schedlab.edge.bounds import lower_bound
from schedlab.edge.cred import cred_m
from schedlab.edge.generate import generate_instance
from schedlab.edge.verify import verify

TARGET_SECONDS = 2.0
CASES = {
    "storage-bound (B=64, S=8, 3 deadlines)": dict(chunks_per_job="uniform:10,50", deadlines="20,40,60", chunks_per_node=64, vms_per_node=8),
    "slot-bound (B=512, S=4, 3 deadlines)": dict(chunks_per_job="uniform:10,50", deadlines="10,20,30", chunks_per_node=512, vms_per_node=4),
    "5 deadline classes (B=128, S=8)": dict(chunks_per_job="uniform:10,50", deadlines="8,16,24,32,40", chunks_per_node=128, vms_per_node=8),
    "~100k tasks (B=256, S=16, 3 deadlines)": dict(chunks_per_job="uniform:50,150", deadlines="20,40,60", chunks_per_node=256, vms_per_node=16),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--chunks", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", action="store_true", help="cProfile one run of the first case")
    args = ap.parse_args()
    worst = 0.0
    print(f"CRED-M + verify, {args.jobs} jobs, {args.chunks} chunks, target {TARGET_SECONDS} s")
    for label, kw in CASES.items():
        inst = generate_instance(jobs=args.jobs, chunks=args.chunks, popularity=0.8, seed=args.seed, **kw)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            sol = cred_m(inst)
            verdict = verify(inst, sol)
            times.append(time.perf_counter() - t0)
            if not verdict.ok:
                print(f"{label}: INFEASIBLE {verdict.summary()}")
                return 1
        best, med = min(times), statistics.median(times)
        worst = max(worst, med)
        print(
            f"{label:42s} tasks {inst.num_tasks:6d}  nodes {verdict.active_nodes:4d} (LB {lower_bound(inst):4d})  "
            f"best {best:.3f} s  median {med:.3f} s  = {med / TARGET_SECONDS:.3f} x target"
        )
        if args.profile and label == next(iter(CASES)):
            prof = cProfile.Profile()
            prof.enable()
            verify(inst, cred_m(inst))
            prof.disable()
            pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(15)
    print(f"worst median {worst:.3f} s = {worst / TARGET_SECONDS:.3f} x the {TARGET_SECONDS} s target ({'met' if worst <= TARGET_SECONDS else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
