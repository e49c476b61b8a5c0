"""Scale: wall seconds and peak memory against the number of tasks and of workers.

The workload is the generated one of the scale targets: one job a second,
task durations exponential with a mean of 20 s, jobs of ``load × workers / 20``
tasks so that the offered load is the same fraction of every data center
(``--load``, default 0.2: jobs of 1,000 tasks on 100,000 workers, the targets'
workload), ``generate_jobs(N, "constant:1", "const:SIZE", "exp:20", seed 0)``
streamed into the run (no trace file), on a generated data center with the
Sharma machine constraints, run seed 1. Each point is a fresh process; its peak
resident memory is the process's own ``ru_maxrss`` (Python, NumPy and the
data center included).

Targets: the 10 M-task Megha run on 100,000 workers in <= 100 s and <= 2 GB
peak, and a 100 M-task run completing within this machine's memory.

    python benchmarks/bench_scale.py                          # tasks 0.5M, 2M, 10M on 100k workers
    python benchmarks/bench_scale.py --tasks 100M --schedulers megha
    python benchmarks/bench_scale.py --tasks 2M --workers 10k,50k,100k,500k
    python benchmarks/bench_scale.py ... --csv reports/scale/scale.csv   # append rows for the report
    python benchmarks/bench_scale.py --plot reports/scale/scale.csv      # redraw the report's figures from its CSV

A row is printed as soon as its run ends: scheduler, tasks, workers, wall
seconds (the simulation's own, then the whole process's), peak RSS and bytes
per task, tasks/s and the summary's p50/p99 JRT delay.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TARGET_10M_SECONDS = 100.0
TARGET_10M_BYTES = 2 << 30
MEAN_DURATION = 20.0

CHILD = r"""
import json, resource, sys
import numpy as np
from schedlab.engine import simulate
from schedlab.workload.synthetic import generate_jobs
sched, jobs, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
gen = generate_jobs(jobs, "constant:1", "const:%d" % int(sys.argv[4]), "exp:20", np.random.default_rng(0))
r = simulate(sched, gen, workers=workers, seed=1, trace_label="generated")
s = r.summary
print(json.dumps({"wall": s["wall_seconds"], "tasks": s["tasks"], "events": s["events"],
                  "p50": s["jrt_delay"]["p50"], "p99": s["jrt_delay"]["p99"],
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def count(text: str) -> int:
    """``500k``, ``2M``, ``100000`` -> an int."""
    t = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedulers", default="ideal,megha,sparrow")
    ap.add_argument("--tasks", default="0.5M,2M,10M", help="task counts (rounded down to whole jobs)")
    ap.add_argument("--workers", default="100k")
    ap.add_argument("--load", type=float, default=0.2, help="offered load: busy workers / workers, on average")
    ap.add_argument("--csv", type=Path, help="append one row per run to this CSV")
    ap.add_argument("--plot", type=Path, metavar="CSV", help="only draw the figures of a CSV written by --csv, beside it")
    args = ap.parse_args()
    if args.plot is not None:
        for path in plot(args.plot):
            print(f"wrote {path}")
        return
    print(f"{'scheduler':9s} {'tasks':>11s} {'workers':>8s} {'sim s':>8s} {'proc s':>8s} {'peak MB':>8s} "
          f"{'B/task':>7s} {'tasks/s':>9s}  jrt_delay p50 / p99")
    for workers in map(count, args.workers.split(",")):
        for tasks in map(count, args.tasks.split(",")):
            for sched in args.schedulers.split(","):
                size = max(1, round(args.load * workers / MEAN_DURATION))
                jobs = max(1, tasks // size)
                t0 = time.perf_counter()
                out = subprocess.run([sys.executable, "-c", CHILD, sched, str(jobs), str(workers), str(size)],
                                     check=True, capture_output=True, text=True)
                proc = time.perf_counter() - t0
                r = json.loads(out.stdout)
                peak = r["peak_kb"] * 1024
                line = (f"{sched:9s} {r['tasks']:>11,} {workers:>8,} {r['wall']:8.1f} {proc:8.1f} {peak / 2**20:8.0f} "
                        f"{peak / r['tasks']:7.0f} {r['tasks'] / r['wall']:9,.0f}  {r['p50']:.4g} / {r['p99']:.4g}")
                if sched == "megha" and r["tasks"] == 10_000_000 and workers == 100_000:
                    line += (f"   targets: {TARGET_10M_SECONDS:g} s {'met' if r['wall'] <= TARGET_10M_SECONDS else 'MISSED'}, "
                             f"2 GB {'met' if peak <= TARGET_10M_BYTES else 'MISSED'}")
                print(line, flush=True)
                if args.csv is not None:
                    new = not args.csv.exists()
                    args.csv.parent.mkdir(parents=True, exist_ok=True)
                    with open(args.csv, "a", newline="", encoding="utf-8") as f:
                        w = csv.writer(f)
                        if new:
                            w.writerow(["scheduler", "tasks", "workers", "job_size", "sim_seconds", "process_seconds", "peak_rss_mb",
                                        "bytes_per_task", "jrt_delay_p50", "jrt_delay_p99", "python", "cpu"])
                        w.writerow([sched, r["tasks"], workers, size, round(r["wall"], 2), round(proc, 2), round(peak / 2**20, 1),
                                    round(peak / r["tasks"]), r["p50"], r["p99"], sys.version.split()[0], os.cpu_count()])


def plot(csv_path: Path) -> list[Path]:
    """Wall seconds and peak RSS against tasks (at the most common worker count) and against workers
    (at the most common task count), one line per scheduler; the last row of a repeated point wins."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    df = pd.read_csv(csv_path)
    # whole jobs make the task count of a point depend a little on its job size (499,981 at 10k workers for
    # 0.5M): points are told apart by their count to two significant figures
    df["tasks"] = df["tasks"].map(lambda n: float(f"{n:.2g}"))
    df = df.drop_duplicates(["scheduler", "tasks", "workers"], keep="last")
    written = []
    for x, fixed in (("tasks", "workers"), ("workers", "tasks")):
        at = df[fixed].mode().iloc[0]
        part = df[df[fixed] == at]
        if part[x].nunique() < 2:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for sched, g in part.groupby("scheduler"):
            g = g.sort_values(x)
            axes[0].plot(g[x], g["sim_seconds"], marker="o", label=sched)
            axes[1].plot(g[x], g["peak_rss_mb"] / 1024, marker="o", label=sched)
        for ax, label in zip(axes, ("wall seconds (simulation)", "peak RSS (GB)"), strict=True):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(x)
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        fig.suptitle(f"schedlab scale: against {x} ({fixed} = {int(at):,})")
        fig.tight_layout()
        out = csv_path.with_name(f"scale_{x}.png")
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out)
    return written


if __name__ == "__main__":
    main()
