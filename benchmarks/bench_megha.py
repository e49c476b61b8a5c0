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

* the scale workload's first 3 % (300 jobs of 1,000 tasks, exponential
  durations with a mean of 20 s, on 100,000 workers: ``bench_scale``'s 10 M-task
  run, whose target is <= 100 s): no target of its own, for ``--against``.

Each run is a fresh process (median of ``--repeat``); the figure is the
simulation's own ``wall_seconds``. Random worker choice, default profile,
unless ``--worker-choice``/``--compat`` say otherwise.

Machines of one kind differ by up to 2.5 times from day to day, so a figure
in seconds says little on its own. ``--against REV`` runs the same workloads
with the code of git revision REV too (its ``src`` exported to a temporary
folder, its C parts built there), alternating old and new run by run, and
prints each pair's ratio: a target stated against the code of the day it was
set (issue 18: 10 M tasks 204 s -> 100 s, syn_250 4.3 s -> 2.75 s, Google
16 s -> 10 s) becomes a ratio any machine can check.

    python benchmarks/bench_megha.py [--repeat 3] [--only syn_250]
    python benchmarks/bench_megha.py --against bc40588 --only syn_250,google,gen-300
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterable
from pathlib import Path

from schedlab.schedulers.megha import MEGHA_PAPER_COSTS

AUTHORS_SYN_250_SECONDS = 275.0
MULTI_50K = {"gms": 10, "lms": 10, "heartbeat": 10.0, **MEGHA_PAPER_COSTS}
# name -> (trace, simulate keywords, scheduler parameters beyond the defaults, target seconds or None);
# a trace "gen:JOBSxTASKS" is bench_scale's generated workload (one job a second, exp:20 durations)
RUNS: dict[str, tuple[str, dict, dict, float | None]] = {
    "syn_250": ("syn_250", {"config": "reference"}, {}, AUTHORS_SYN_250_SECONDS / 100),
    "google": ("google", {"workers": 20000}, {}, 10.0),
    "syn_1000": ("syn_1000", {"config": "reference"}, {}, 40.0),
    "google-multi-50k": ("google", {"workers": 50000, "resource_mode": "multi"}, MULTI_50K, 30.0),
    "gen-300": ("gen:300x1000", {"workers": 100000, "trace_label": "generated"}, {}, None),
}
DEFAULT_RUNS = ("syn_250", "google", "syn_1000", "google-multi-50k")

CHILD = r"""
import json, sys, schedlab
trace, kw, params = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
if trace.startswith("gen:"):  # a list, not a stream: older code took no generator
    import numpy as np
    from schedlab.workload.synthetic import generate_jobs
    jobs, size = map(int, trace[4:].split("x"))
    trace = list(generate_jobs(jobs, "constant:1", "const:%d" % size, "exp:20", np.random.default_rng(0)))
r = schedlab.simulate("megha", trace, seed=1, params=params, **kw)
s = r.summary
print(json.dumps({"wall": s["wall_seconds"], "tasks": s["tasks"], "events": s["events"], "p50": s["jrt_delay"]["p50"]}))
"""


def export(rev: str, into: Path) -> Path:
    """The ``src`` folder of git revision ``rev``, exported into ``into`` with its C parts built there."""
    repo = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "src"], capture_output=True, check=False)
    if archive.returncode != 0:
        sys.exit(f"--against {rev}: {archive.stderr.decode().strip() or 'git archive failed'}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    # each C part is one self-contained file: compiled as setup.py compiles it, beside its source
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    for c in sorted((into / "src").rglob("*.c")):
        out = c.with_name(c.stem + sysconfig.get_config_var("EXT_SUFFIX"))
        built = subprocess.run([*cc, "-O2", "-ffp-contract=off", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                                str(c), "-o", str(out)], capture_output=True, text=True, check=False)
        if built.returncode != 0:
            print(f"--against {rev}: {c.name} did not build; its Python fallback runs instead", file=sys.stderr)
    return into / "src"


def run_once(trace: str, kw: dict, params: str, src: Path | None = None) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    out = subprocess.run([sys.executable, "-c", CHILD, trace, json.dumps(kw), params], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout)


def only(ap: argparse.ArgumentParser, given: str | None, known: Iterable[str], default: Iterable[str]) -> list[str]:
    """The runs ``--only`` names (comma-separated; ``default`` without it), each checked against ``known``."""
    names = given.split(",") if given else list(default)
    unknown = [n for n in names if n not in known]
    if unknown:
        ap.error(f"--only: unknown run(s) {', '.join(unknown)} (choose from {', '.join(known)})")
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", help=f"comma-separated runs among {', '.join(RUNS)} (default: {', '.join(DEFAULT_RUNS)})")
    ap.add_argument("--worker-choice", default="random")
    ap.add_argument("--compat", default="none")
    ap.add_argument("--against", metavar="REV", help="also run git revision REV's code, alternating, and print the ratios")
    args = ap.parse_args()
    names = only(ap, args.only, RUNS, DEFAULT_RUNS)
    base = {"worker_choice": args.worker_choice, "compat": args.compat}
    with tempfile.TemporaryDirectory(prefix="bench-megha-") as tmp:
        old_src = export(args.against, Path(tmp)) if args.against else None
        for name in names:
            trace, kw, extra, target = RUNS[name]
            params = json.dumps({**base, **extra})
            runs, olds = [], []
            for _ in range(args.repeat):
                if old_src is not None:  # old then new, pair by pair: both see the machine of that minute
                    olds.append(run_once(trace, kw, params, old_src))
                runs.append(run_once(trace, kw, params))
            wall = statistics.median(r["wall"] for r in runs)
            each = ", ".join(f"{r['wall']:.2f}" for r in runs)
            line = f"{name:16s} {runs[0]['tasks']:>8} tasks  {wall:7.2f} s [{each}]  {runs[0]['tasks'] / wall:>9,.0f} tasks/s"
            if target is not None:
                line += f"  target {target:g} s: {'met' if wall <= target else 'MISSED'} (x{target / wall:.2f})"
            if name == "syn_250":
                line += f"  vs authors' simulator {AUTHORS_SYN_250_SECONDS:g} s: x{AUTHORS_SYN_250_SECONDS / wall:.0f}"
            print(line, flush=True)
            if olds:
                ratios = [r["wall"] / o["wall"] for r, o in zip(runs, olds, strict=True)]
                same = all(r["events"] == o["events"] and r["tasks"] == o["tasks"] for r, o in zip(runs, olds, strict=True))
                old_walls = ", ".join(f"{o['wall']:.2f}" for o in olds)
                print(f"{'':16s} against {args.against}: {old_walls} s; new/old per pair "
                      f"{', '.join(f'{x:.3f}' for x in ratios)} (median {statistics.median(ratios):.3f})"
                      + ("" if same else "  -- events or tasks differ from the old code's"), flush=True)


if __name__ == "__main__":
    main()
