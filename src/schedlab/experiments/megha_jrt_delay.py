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
runs). Each run is a :class:`~schedlab.sweeps.points.Point` (``_one`` on
the scheduler, trace, seed, scheduler parameters and ``simulate()`` keyword
arguments: its id covers every input) run by the one runner
(:func:`~schedlab.sweeps.runner.run_points`: ``jobs`` processes locally,
or Ray) into the results store ``store`` (one folder per run): a run already
finished there is not run again, so an interrupted or repeated call resumes
(``store=None`` keeps nothing and runs them all). The JSON file holds every run
(JRT delay percentiles, mean utilization, inconsistencies, repartitions,
unfinished tasks, wall seconds) and the papers' numbers; the Markdown file
beside it (same name, ``.md``) holds the table. Both are made from the runs'
results alone, so they are the same whether the runs ran now or were resumed.
"""

from __future__ import annotations

import itertools
import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import schedlab
from schedlab.atomic import atomic_write
from schedlab.metrics.export import write_json
from schedlab.sweeps.points import Point, null_to_nan
from schedlab.sweeps.runner import SweepProgress, run_points

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


_TARGET = f"{__name__}:_one"


def _one(*, scheduler: str, trace: str, seed: int, params: dict[str, Any], kw: dict[str, Any]) -> dict[str, Any]:
    """One run (a point, in any process): ``simulate(scheduler, trace, seed=seed, params=params, **kw)``'s figures."""
    r = schedlab.simulate(scheduler, trace, seed=seed, params=params, **kw)
    s = r.summary
    return {
        "jrt_delay": s["jrt_delay"],
        "utilization_mean": s["utilization"]["mean"],
        "inconsistencies": s["counters"]["inconsistencies"],
        "repartitions": s["counters"]["repartitions"],
        "tasks_unfinished": s["counters"]["tasks_unfinished"],
        "wall_seconds": s["wall_seconds"],
    }


def _point(trace: str, compat: str, choice: str, seed: int) -> Point:
    """The run of Megha in profile ``compat`` with worker choice ``choice`` on ``trace`` with ``seed``."""
    kw = {"workers": 20000} if trace == "google" else {"config": "reference"}
    inputs = {"scheduler": "megha", "trace": trace, "seed": seed, "params": {"worker_choice": choice, "compat": compat}, "kw": kw}
    return Point(_TARGET, inputs, {"trace": trace, "compat": compat, "worker_choice": choice, "seed": seed})


def _plan(quick: bool) -> list[Point]:
    """Every run, in the order of the table: trace, profile, worker choice, seed."""
    traces = ["syn_250"] if quick else ["syn_250", "syn_500", "syn_1000", "google"]
    seeds = [1] if quick else [1, 2, 3]
    return [_point(*g) for g in itertools.product(traces, ["none", "authors"], ["random", "min-constraints"], seeds)]


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
    backend: str = "local",
    address: str | None = None,
    store: str | os.PathLike | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Run every Megha run not yet in ``store``, write ``out`` (JSON) and the table beside it (``.md``); return ``out``.

    The runs go through :func:`~schedlab.sweeps.runner.run_points`
    (``jobs`` processes, ``backend`` ``"local"`` or ``"ray"`` at ``address``)
    and are kept in the results store ``store`` (None: nothing is kept, every
    run runs). ``progress`` gets how many runs are to do, then the table one
    line at a time (None: silent).
    """
    out = Path(out)
    say = progress or (lambda _line: None)
    points = _plan(quick)

    def tick(state: SweepProgress) -> None:
        if state.last is None:  # the sweep's start
            say(f"{state.todo} runs to do ({state.skipped} already in {store})")

    if store is None:
        say(f"{len(points)} runs to do (no store: nothing is kept)")
    results = run_points(
        points, store, name="megha-jrt-delay", description=PARTS["jrt-delay"], jobs=jobs, backend=backend, address=address, progress=tick
    )
    rows = [{**p.label, **null_to_nan(r)} for p, r in zip(points, results, strict=True)]
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
