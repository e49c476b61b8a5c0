"""Start-up: whole ``schedlab`` processes, from exec to exit, against issue 49's targets.

* ``help``: ``schedlab --help``, target <= 0.2 s;
* ``simulate``: ``schedlab simulate`` on a one-job trace (one task, 1,000
  generated workers, ``--quiet --summary-json``): its overhead — the process's
  time less the simulation's own ``wall_seconds`` — target <= 0.3 s;
* ``simulate-help``: ``schedlab simulate --help`` (it lists every scheduler's
  parameters, so it loads the schedulers);
* ``cluster-help``: ``schedlab cluster up --help``, a services command;
* ``python``: the interpreter alone (``python -c pass``), the floor under all.

Each process is started as the ``schedlab`` script starts (``from schedlab.cli
import main``); the figure is the median over ``--repeat`` processes of the
wall time and of the CPU time (user + system, read from the children's
rusage: less shaken than wall time when other work shares the machine).
``--against REV`` runs REV's code too (its ``src`` exported and built as
``bench_megha --against`` does), old then new, process by process, and prints
the new/old ratios.

    python benchmarks/bench_startup.py [--repeat 15] [--against 5f23623]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_megha import export, only

TARGETS = {"help": 0.2, "simulate": 0.3}
CLI = "import sys; from schedlab.cli import main; sys.exit(main())"
CASES: dict[str, list[str]] = {
    "python": [],
    "help": ["--help"],
    "simulate": ["simulate", "-t", "{trace}", "-w", "1000", "-q", "--summary-json", "{summary}"],
    "simulate-help": ["simulate", "--help"],
    "cluster-help": ["cluster", "up", "--help"],
}


def run_once(case: str, tmp: Path, src: Path | None) -> dict | None:
    """One process of ``case``: wall and CPU seconds (and, for simulate, the overhead beyond the simulation);
    None when it fails (an older revision may not have the command)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    summary = tmp / "summary.json"
    args = [a.format(trace=tmp / "one.tr", summary=summary) for a in CASES[case]]
    cmd = [sys.executable, "-c", "pass"] if case == "python" else [sys.executable, "-c", CLI, *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    if subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env).returncode != 0:
        return None
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = {"wall": wall, "cpu": cpu}
    if case == "simulate":
        s = json.loads(summary.read_text())
        out.update(overhead=wall - s["wall_seconds"], tasks=s["tasks"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--only", help=f"comma-separated cases among {', '.join(CASES)} (default: all)")
    ap.add_argument("--against", metavar="REV", help="also run git revision REV's code, alternating, and print the ratios")
    args = ap.parse_args()
    names = only(ap, args.only, CASES, CASES)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as d:
        tmp = Path(d)
        (tmp / "one.tr").write_text("0 1 10 10\n")  # one job of one 10-second task
        (tmp / "old").mkdir()
        old_src = export(args.against, tmp / "old") if args.against else None
        for name in names:
            runs, olds = [], []
            for _ in range(args.repeat):
                if old_src is not None and None not in olds:  # old then new, pair by pair: both see the machine of that minute
                    olds.append(run_once(name, tmp, old_src))
                new = run_once(name, tmp, None)
                if new is None:
                    sys.exit(f"{name}: the command failed ({' '.join(CASES[name])})")
                runs.append(new)
            key = "overhead" if name == "simulate" else "wall"
            fig = statistics.median(r[key] for r in runs)
            line = (f"{name:14s} {key} {fig:6.3f} s (wall {statistics.median(r['wall'] for r in runs):.3f}, "
                    f"cpu {statistics.median(r['cpu'] for r in runs):.3f}; median of {len(runs)})")
            if name in TARGETS:
                line += f"  target {TARGETS[name]:g} s: {'met' if fig <= TARGETS[name] else 'MISSED'}"
            print(line, flush=True)
            if None in olds:
                print(f"{'':14s} against {args.against}: the command fails there (not in that revision?)", flush=True)
            elif olds:
                old_fig = statistics.median(o[key] for o in olds)
                ratios = [r["wall"] / o["wall"] for r, o in zip(runs, olds, strict=True)]
                cpu_ratios = [r["cpu"] / o["cpu"] for r, o in zip(runs, olds, strict=True)]
                print(f"{'':14s} against {args.against}: {key} {old_fig:.3f} s (wall {statistics.median(o['wall'] for o in olds):.3f}, "
                      f"cpu {statistics.median(o['cpu'] for o in olds):.3f}); new/old per pair: wall median "
                      f"{statistics.median(ratios):.3f}, cpu median {statistics.median(cpu_ratios):.3f}", flush=True)


if __name__ == "__main__":
    main()
