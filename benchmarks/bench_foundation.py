"""Foundation benchmark: syn_250 on 10,000 workers under `ideal`, and the Google sub-trace's peak memory.

Prints tasks/s and events/s of the simulation (``wall_seconds`` of the summary:
data-center setup, trace streaming, constraint synthesis, scheduling), the
ratio to the 300,000 tasks/s target, and the peak resident memory of a Google
run with 20,000 workers against the 1.5 GB target. Each figure is the median of
``--repeat`` runs in fresh processes (so imports and caches do not flatter it).

    python benchmarks/bench_foundation.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

TARGET_TASKS_PER_S = 300_000
TARGET_PEAK_MB = 1500

CHILD = r"""
import json, resource, sys, time
import schedlab
trace, workers = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
r = schedlab.simulate("ideal", trace, workers=workers, seed=1)
total = time.perf_counter() - t0
s = r.summary
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"tasks": s["tasks"], "events": s["events"], "wall": s["wall_seconds"], "total": total, "peak_mb": peak_mb}))
"""


def run(trace: str, workers: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, trace, str(workers)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    runs = [run("syn_250", 10000) for _ in range(args.repeat)]
    wall = statistics.median(r["wall"] for r in runs)
    tasks = runs[0]["tasks"]
    tps = tasks / wall
    print(f"syn_250, 10,000 workers, ideal: {tasks} tasks, {runs[0]['events']} events")
    each = ", ".join(f"{r['wall']:.3f}" for r in runs)
    print(f"  simulation wall (median of {args.repeat}): {wall:.3f} s  [runs: {each}]")
    print(f"  with result tables and summary: {statistics.median(r['total'] for r in runs):.3f} s")
    print(f"  {tps:,.0f} tasks/s  (target {TARGET_TASKS_PER_S:,}: ratio {tps / TARGET_TASKS_PER_S:.2f})")
    print(f"  {runs[0]['events'] / wall:,.0f} events/s")

    g = run("google", 20000)
    print(f"google, 20,000 workers, ideal: {g['tasks']} tasks in {g['wall']:.3f} s ({g['tasks'] / g['wall']:,.0f} tasks/s)")
    print(f"  peak memory {g['peak_mb']:.0f} MB  (target <= {TARGET_PEAK_MB} MB: ratio {g['peak_mb'] / TARGET_PEAK_MB:.2f})")


if __name__ == "__main__":
    main()
