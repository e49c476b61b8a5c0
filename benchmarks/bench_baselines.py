"""Baselines benchmark: each scheduler's syn_250 replay on 10,000 workers against the 10 s target.

For each of pigeon, pigeonc (both profiles), sparrow, hawk and eagle, runs syn_250
on the papers' 10,000 workers (``reference-pigeon`` for the Pigeon family,
``reference`` for the others — the same workers) in fresh processes and prints
the median of ``--repeat`` runs of the summary's ``wall_seconds`` (data-center
setup, trace streaming, constraint synthesis and the simulation), the process
CPU time of the whole ``simulate`` call (the machine is shared: wall time
includes waiting for a core, CPU time does not), and the wall-time ratio to the
target.

    python benchmarks/bench_baselines.py [--repeat 3] [--only sparrow,eagle]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

TARGET_S = 10.0

RUNS = [
    ("pigeon", "reference-pigeon", {}),
    ("pigeonc", "reference-pigeon", {}),
    ("pigeonc", "reference-pigeon", {"compat": "authors"}),
    ("sparrow", "reference", {}),
    ("hawk", "reference", {}),
    ("eagle", "reference", {}),
]

CHILD = r"""
import json, sys, time
import schedlab
name, config, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
c0, t0 = time.process_time(), time.perf_counter()
r = schedlab.simulate(name, "syn_250", config=config, seed=1, params=params)
s = r.summary
print(json.dumps({"wall": s["wall_seconds"], "cpu": time.process_time() - c0, "total": time.perf_counter() - t0,
                  "events": s["events"], "tasks": s["tasks"], "unfinished": s["counters"]["tasks_unfinished"]}))
"""


def run(name: str, config: str, params: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, name, config, json.dumps(params)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated scheduler names")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    print(f"syn_250 (500,000 tasks), 10,000 workers, seed 1; median of {args.repeat} fresh processes; target {TARGET_S:.0f} s wall")
    print(f"{'scheduler':28s} {'wall s':>8s} {'cpu s':>8s} {'events':>9s} {'ratio':>7s}  runs (wall)")
    for name, config, params in RUNS:
        if only and name not in only:
            continue
        rs = [run(name, config, params) for _ in range(args.repeat)]
        assert all(r["unfinished"] == 0 for r in rs)
        wall = statistics.median(r["wall"] for r in rs)
        cpu = statistics.median(r["cpu"] for r in rs)
        label = name + (" (compat=authors)" if params.get("compat") == "authors" else "")
        each = ", ".join(f"{r['wall']:.2f}" for r in rs)
        print(f"{label:28s} {wall:8.2f} {cpu:8.2f} {rs[0]['events']:9d} {wall / TARGET_S:7.2f}  [{each}]")


if __name__ == "__main__":
    main()
