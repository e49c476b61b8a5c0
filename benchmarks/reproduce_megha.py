"""Reproduce the constraint-aware paper's Megha JRT-delay figures, in both profiles, beside the papers' numbers.

Runs Megha (default, paper-faithful profile and ``--compat authors``) with
random and min-constraints worker choice on syn_250, syn_500, syn_1000 (the
bundled reference 10,000-worker data center) and the Google sub-trace (20,000
workers generated from the same constraint frequencies), seeds 1–3, and prints
median / mean / p99 / max JRT delay (seconds; mean over seeds, and the spread
of the median) beside:

* the paper (constraint-aware paper, Section 6): median 1.5 ms on syn_250,
  syn_500 and Google; 0.67 s (random) and 0.33 s (min-constraints) on syn_1000;
* the authors' simulator as measured in REFERENCE-SIMULATORS.md (syn_250):
  median 1.5 ms, mean 0.257 s, p99 1.003 s, max 300 s.

    python benchmarks/reproduce_megha.py [--quick] [--jobs 2] [--out reports/megha/reproduction.json]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

PAPER_MEDIAN = {
    ("syn_250", "random"): 0.0015,
    ("syn_250", "min-constraints"): 0.0015,
    ("syn_500", "random"): 0.0015,
    ("syn_500", "min-constraints"): 0.0015,
    ("syn_1000", "random"): 0.67,
    ("syn_1000", "min-constraints"): 0.33,
    ("google", "random"): 0.0015,
    ("google", "min-constraints"): 0.0015,
}
AUTHORS_SYN_250 = {"p50": 0.0015, "mean": 0.257, "p99": 1.003, "max": 300.0}


def one(args: tuple[str, str, str, int]) -> dict:
    import schedlab

    trace, compat, choice, seed = args
    kw = {"workers": 20000} if trace == "google" else {"config": "reference"}
    r = schedlab.simulate("megha", trace, seed=seed, params={"worker_choice": choice, "compat": compat}, **kw)
    s = r.summary
    return {
        "trace": trace,
        "compat": compat,
        "worker_choice": choice,
        "seed": seed,
        "jrt_delay": s["jrt_delay"],
        "utilization_mean": s["utilization"]["mean"],
        "inconsistencies": s["counters"]["inconsistencies"],
        "repartitions": s["counters"]["repartitions"],
        "tasks_unfinished": s["counters"]["tasks_unfinished"],
        "wall_seconds": s["wall_seconds"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="syn_250 only, seed 1")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    traces = ["syn_250"] if args.quick else ["syn_250", "syn_500", "syn_1000", "google"]
    seeds = [1] if args.quick else [1, 2, 3]
    grid = list(itertools.product(traces, ["none", "authors"], ["random", "min-constraints"], seeds))
    with ProcessPoolExecutor(args.jobs) as ex:
        rows = list(ex.map(one, grid))
    print("| trace | profile | worker choice | median (s) | paper median | mean | p99 | max | inconsistencies | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (trace, compat, choice), grp in itertools.groupby(rows, key=lambda r: (r["trace"], r["compat"], r["worker_choice"])):
        g = list(grp)
        med = [x["jrt_delay"]["p50"] for x in g]

        def avg(k: str, g: list[dict] = g) -> float:
            return statistics.mean(x["jrt_delay"][k] for x in g)

        spread = f" ({min(med):.4g}–{max(med):.4g})" if len(g) > 1 else ""
        print(
            f"| {trace} | {'authors' if compat == 'authors' else 'default'} | {choice} | {avg('p50'):.4g}{spread} | "
            f"{PAPER_MEDIAN[(trace, choice)]:g} | {avg('mean'):.4g} | {avg('p99'):.4g} | {avg('max'):.4g} | "
            f"{statistics.mean(x['inconsistencies'] for x in g):.0f} | {statistics.mean(x['wall_seconds'] for x in g):.1f} |"
        )
    print(f"\nauthors' simulator, syn_250 (REFERENCE-SIMULATORS.md): {AUTHORS_SYN_250}")
    if args.out:
        from schedlab.metrics.export import write_json

        write_json(args.out, {"runs": rows, "paper_median": {f"{k[0]}/{k[1]}": v for k, v in PAPER_MEDIAN.items()}, "authors_syn_250": AUTHORS_SYN_250})


if __name__ == "__main__":
    main()
