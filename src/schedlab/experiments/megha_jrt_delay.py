"""Megha's JRT delay in the constraint-aware paper (Section 6), in both profiles, beside the papers' numbers.

``schedlab reproduce megha-jrt-delay`` runs Megha in the paper-faithful profile (``compat=none``) and the
authors' profile (``compat=authors``), with random and min-constraints worker
choice, on syn_250, syn_500, syn_1000 (the bundled reference 10,000-worker
data center, ``config="reference"``) and the Google sub-trace (20,000 workers
generated from the same constraint frequencies), seeds 1–3, and reports median
/ mean / p99 / max JRT delay (seconds; mean over seeds, and the spread of the
median) beside:

* the paper (constraint-aware paper, Section 6): median 1.5 ms on syn_250,
  syn_500 and Google; 0.67 s (random) and 0.33 s (min-constraints) on syn_1000
  (:data:`PAPER_MEDIAN`);
* the authors' simulator, one measured run on syn_250
  (docs/authors-simulators.md#measured-runs):
  median 1.5 ms, mean 0.257 s, p99 1.003 s, max 300 s (:data:`AUTHORS_SYN_250`).

``quick=True`` runs syn_250 with seed 1 only (the four profile × worker-choice
runs). The runs go to a process pool of ``jobs`` workers; nothing is cached,
every call runs them all. The JSON file holds every run (JRT delay
percentiles, mean utilization, inconsistencies, repartitions, unfinished tasks,
wall seconds) and the papers' numbers; the Markdown file beside it
(same name, ``.md``) holds the table.
"""

from __future__ import annotations

import itertools
import os
import statistics
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import schedlab
from schedlab.atomic import atomic_write
from schedlab.metrics.export import write_json

__all__ = ["AUTHORS_SYN_250", "DEFAULT_OUT", "PAPER_MEDIAN", "PARTS", "reproduce"]

DEFAULT_OUT = "reports/megha/reproduction.json"

PARTS = {
    "jrt-delay": "Constraint-aware paper Section 6: Megha's median/mean/p99/max JRT delay on syn_250/500/1000 and Google, "
    "random vs min-constraints, paper-faithful and authors' profile",
}

# Constraint-aware paper, Section 6: Megha's median JRT delay (s) per (trace, worker choice).
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
# The authors' simulator on syn_250, one measured run (s): docs/authors-simulators.md#measured-runs.
AUTHORS_SYN_250 = {"p50": 0.0015, "mean": 0.257, "p99": 1.003, "max": 300.0}


def _one(args: tuple[str, str, str, int]) -> dict[str, Any]:
    """One run (in a worker process): its summary figures."""
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


def _table(rows: list[dict[str, Any]]) -> list[str]:
    """The table (one group per trace, profile and worker choice) and the authors' numbers."""
    lines = [
        "| trace | profile | worker choice | median (s) | paper median | mean | p99 | max | inconsistencies | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (trace, compat, choice), grp in itertools.groupby(rows, key=lambda r: (r["trace"], r["compat"], r["worker_choice"])):
        g = list(grp)
        med = [x["jrt_delay"]["p50"] for x in g]

        def avg(k: str, g: list[dict[str, Any]] = g) -> float:
            return statistics.mean(x["jrt_delay"][k] for x in g)

        spread = f" ({min(med):.4g}–{max(med):.4g})" if len(g) > 1 else ""
        lines.append(
            f"| {trace} | {'authors' if compat == 'authors' else 'default'} | {choice} | {avg('p50'):.4g}{spread} | "
            f"{PAPER_MEDIAN[(trace, choice)]:g} | {avg('mean'):.4g} | {avg('p99'):.4g} | {avg('max'):.4g} | "
            f"{statistics.mean(x['inconsistencies'] for x in g):.0f} | {statistics.mean(x['wall_seconds'] for x in g):.1f} |"
        )
    lines += ["", f"authors' simulator, syn_250 (docs/authors-simulators.md#measured-runs): {AUTHORS_SYN_250}"]
    return lines


def reproduce(
    out: str | os.PathLike,
    *,
    quick: bool = False,
    jobs: int = 2,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Run every Megha run on ``jobs`` processes, write ``out`` (JSON) and the table beside it (``.md``); return ``out``.

    ``progress`` gets the table one line at a time (None: silent).
    """
    # Imported here: it pulls in pandas (~1 s), which listing this module's PARTS does not need.

    out = Path(out)
    say = progress or (lambda _line: None)
    traces = ["syn_250"] if quick else ["syn_250", "syn_500", "syn_1000", "google"]
    seeds = [1] if quick else [1, 2, 3]
    grid = list(itertools.product(traces, ["none", "authors"], ["random", "min-constraints"], seeds))
    with ProcessPoolExecutor(jobs) as ex:
        rows = list(ex.map(_one, grid))
    lines = _table(rows)
    for line in lines:
        say(line)
    write_json(
        out,
        {"runs": rows, "paper_median": {f"{k[0]}/{k[1]}": v for k, v in PAPER_MEDIAN.items()}, "authors_syn_250": AUTHORS_SYN_250},
    )
    md = "\n".join(lines) + "\n"
    atomic_write(out.with_suffix(".md"), lambda tmp: Path(tmp).write_text(md, encoding="utf-8"))
    return out
