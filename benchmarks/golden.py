"""Golden summaries: reference runs whose results must not change when code is reorganised.

Each run's summary JSON (every figure and counter, event counts included;
wall-clock fields left out) and a hash of its task, job and utilization
tables are kept in ``benchmarks/golden.json``. A refactor that is meant to
change nothing must leave every entry identical:

    python benchmarks/golden.py --check            # 5-9 minutes on this 2-core machine; exit 1 naming each run that differs
    python benchmarks/golden.py --write            # record the current code's results (after a deliberate change)
    python benchmarks/golden.py --check --only syn_250-random,google-20k
    python benchmarks/golden.py --check --only fast    # the fast subset the tests check

The fast subset in ``tests/test_golden.py`` checks a few short runs in every
test run; this is the whole set: Megha on syn_250 in six variants (random and
minimum-constraints choice, snapshots and piggybacking, the authors' profile,
group scope), the Google sub-trace at 20k workers, multi-resource with and
without processing costs, fair sharing, and every baseline.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).with_name("golden.json")
VOLATILE = {"wall_seconds", "events_per_second", "peak_memory_mb", "created", "version", "spill"}

# name -> (scheduler, trace, simulate keywords)
RUNS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "syn_250-random": ("megha", "syn_250", {"config": "reference", "seed": 1}),
    "syn_250-min-constraints": ("megha", "syn_250", {"config": "reference", "seed": 1, "params": {"worker_choice": "min-constraints"}}),
    "syn_250-snapshot-piggyback": ("megha", "syn_250", {"config": "reference", "seed": 1,
                                                        "params": {"updates": "snapshot", "piggyback": True}}),
    "syn_250-authors": ("megha", "syn_250", {"config": "reference", "seed": 1, "params": {"compat": "authors"}}),
    "syn_250-group-scope": ("megha", "syn_250", {"config": "reference", "seed": 2, "params": {"choice_scope": "group"}}),
    "syn_250-heartbeat-2": ("megha", "syn_250", {"config": "reference", "seed": 3, "params": {"heartbeat": 2.0}}),
    "google-20k": ("megha", "google", {"workers": 20000, "seed": 1}),
    "google-3k": ("megha", "google", {"workers": 3000, "seed": 1, "max_jobs": 3000}),
    "google-multi": ("megha", "google", {"workers": 5000, "seed": 1, "resource_mode": "multi", "max_jobs": 2000}),
    "google-multi-costs": ("megha", "google", {"workers": 5000, "seed": 1, "resource_mode": "multi", "max_jobs": 2000,
                                               "params": {"gm_match_cost": 5e-5, "lm_verify_cost": 2e-5,
                                                          "update_cost_per_worker": 5e-6, "message_cost": 1e-4}}),
    "google-fair": ("megha", "google", {"workers": 4000, "seed": 1, "max_jobs": 600,
                                        "params": {"shares": [0.3, 0.7], "heartbeat": 2.0}}),
    "sparrow": ("sparrow", "syn_250", {"config": "reference", "seed": 1, "max_jobs": 2000}),
    "eagle": ("eagle", "syn_250", {"config": "reference", "seed": 1, "max_jobs": 2000}),
    "hawk": ("hawk", "syn_250", {"config": "reference", "seed": 1, "max_jobs": 2000}),
    "pigeon": ("pigeon", "syn_250", {"config": "reference-pigeon", "seed": 1, "max_jobs": 2000}),
    "pigeonc": ("pigeonc", "syn_250", {"config": "reference-pigeon", "seed": 1, "max_jobs": 2000}),
    "centralized": ("centralized", "google", {"workers": 20000, "seed": 1, "max_jobs": 3000}),
    "ideal": ("ideal", "google", {"workers": 20000, "seed": 1}),
    # the fast subset (tests/test_golden.py checks these in every test run: a second or two each)
    "fast-megha": ("megha", "syn_250", {"config": "reference", "seed": 1, "max_jobs": 300}),
    "fast-megha-authors": ("megha", "syn_250", {"config": "reference", "seed": 2, "max_jobs": 300, "params": {"compat": "authors"}}),
    "fast-megha-min-constraints": ("megha", "syn_250", {"config": "reference", "seed": 3, "max_jobs": 200,
                                                        "params": {"worker_choice": "min-constraints", "heartbeat": 2.0}}),
    "fast-megha-multi": ("megha", "google", {"workers": 1000, "seed": 1, "max_jobs": 300, "resource_mode": "multi"}),
    "fast-megha-fair": ("megha", "google", {"workers": 20000, "seed": 1, "max_jobs": 120, "params": {"shares": [0.3, 0.7], "heartbeat": 2.0}}),
    "fast-sparrow": ("sparrow", "google", {"workers": 2000, "seed": 1, "max_jobs": 300}),
    "fast-pigeonc": ("pigeonc", "syn_250", {"config": "reference-pigeon", "seed": 1, "max_jobs": 300}),
}
FAST = [name for name in RUNS if name.startswith("fast-")]


def _clean(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def fingerprint(result: Any) -> dict[str, Any]:
    """What must not change: the summary without wall-clock fields, and a hash of each table."""
    tables = {}
    for name in ("tasks", "jobs", "utilization"):
        df = getattr(result, name)
        tables[name] = hashlib.sha256(df.to_csv(index=False).encode()).hexdigest()[:16]
    summary = _clean(json.loads(json.dumps(result.summary, default=str)))
    return {"summary": summary, "tables": tables}


def run(name: str) -> dict[str, Any]:
    import schedlab
    from schedlab.workload.trace import read_trace

    scheduler, trace, kw = RUNS[name]
    kw = dict(kw)
    limit = kw.pop("max_jobs", None)
    if limit is not None:  # the trace's first jobs, read with the simulator's conventions
        return fingerprint(schedlab.simulate(scheduler, list(itertools.islice(read_trace(trace), limit)), trace_label=trace, **kw))
    return fingerprint(schedlab.simulate(scheduler, trace, **kw))


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: {'missing' if k not in b else 'new'}")
            else:
                out.extend(diff(a[k], b[k], f"{path}.{k}"))
        return out
    same_nan = isinstance(a, float) and isinstance(b, float) and a != a and b != b  # a statistic of no values both times
    return [] if a == b or same_nan else [f"{path}: {a!r} -> {b!r}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare against benchmarks/golden.json")
    mode.add_argument("--write", action="store_true", help="record the current code's results")
    ap.add_argument("--only", help="comma-separated run names (default: all)")
    args = ap.parse_args(argv)
    names = list(RUNS) if not args.only else FAST if args.only == "fast" else args.only.split(",")
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        ap.error(f"unknown run(s) {', '.join(unknown)} (choose from {', '.join(RUNS)})")
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    bad = 0
    for name in names:
        t0 = time.perf_counter()
        got = run(name)
        took = f" ({time.perf_counter() - t0:.1f} s)"
        if args.write:
            golden[name] = got
            print(f"{name}: recorded{took}", flush=True)
            continue
        if name not in golden:
            print(f"{name}: no golden entry (run --write)")
            bad += 1
            continue
        d = diff(golden[name], got)
        if d:
            bad += 1
            print(f"{name}: DIFFERS\n  " + "\n  ".join(d[:12]), flush=True)
        else:
            print(f"{name}: identical{took}", flush=True)
    if args.write:
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
