"""Megha speed: three reference runs against their targets and the authors' simulator.

* syn_250 on the papers' 10,000-worker data center (5 GMs × 5 LMs, the bundled
  reference config): target <= 2.75 s, i.e. 100 times the authors' Python
  simulator on the same run (``AUTHORS_SYN_250_SECONDS``,
  docs/authors-simulators.md#measured-runs), whose ratio is printed too;
* the Google sub-trace on 20,000 generated workers: target <= 10 s;
* syn_1000 (2 M tasks) on the reference data center: target <= 40 s;
* the Google sub-trace on 50,000 64-core workers, 10 GMs × 10 LMs, heartbeat
  10 s, ``MEGHA_PAPER_COSTS`` (``megha-cluster-size``'s largest run): target
  <= 30 s.

Each run is a fresh process (median of ``--repeat``); the figure is the
simulation's own ``wall_seconds``. Random worker choice, default profile,
unless ``--worker-choice``/``--compat`` say otherwise.

    python benchmarks/bench_megha.py [--repeat 3] [--only syn_250]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from schedlab.schedulers.megha import MEGHA_PAPER_COSTS

AUTHORS_SYN_250_SECONDS = 275.0
MULTI_50K = {"gms": 10, "lms": 10, "heartbeat": 10.0, **MEGHA_PAPER_COSTS}
# name -> (trace, simulate keywords, scheduler parameters beyond the defaults, target seconds)
RUNS: dict[str, tuple[str, dict, dict, float]] = {
    "syn_250": ("syn_250", {"config": "reference"}, {}, AUTHORS_SYN_250_SECONDS / 100),
    "google": ("google", {"workers": 20000}, {}, 10.0),
    "syn_1000": ("syn_1000", {"config": "reference"}, {}, 40.0),
    "google-multi-50k": ("google", {"workers": 50000, "resource_mode": "multi"}, MULTI_50K, 30.0),
}

CHILD = r"""
import json, sys, schedlab
trace, kw, params = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
r = schedlab.simulate("megha", trace, seed=1, params=params, **kw)
s = r.summary
print(json.dumps({"wall": s["wall_seconds"], "tasks": s["tasks"], "events": s["events"], "p50": s["jrt_delay"]["p50"]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=list(RUNS))
    ap.add_argument("--worker-choice", default="random")
    ap.add_argument("--compat", default="none")
    args = ap.parse_args()
    base = {"worker_choice": args.worker_choice, "compat": args.compat}
    for name, (trace, kw, extra, target) in RUNS.items():
        if args.only and name != args.only:
            continue
        params = json.dumps({**base, **extra})
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, "-c", CHILD, trace, json.dumps(kw), params], check=True, capture_output=True, text=True)
            runs.append(json.loads(out.stdout))
        wall = statistics.median(r["wall"] for r in runs)
        each = ", ".join(f"{r['wall']:.2f}" for r in runs)
        line = f"{name:16s} {runs[0]['tasks']:>8} tasks  {wall:7.2f} s [{each}]  {runs[0]['tasks'] / wall:>9,.0f} tasks/s  target {target:g} s: {'met' if wall <= target else 'MISSED'} (x{target / wall:.2f})"
        if name == "syn_250":
            line += f"  vs authors' simulator {AUTHORS_SYN_250_SECONDS:g} s: x{AUTHORS_SYN_250_SECONDS / wall:.0f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
