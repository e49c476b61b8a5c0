"""The Megha paper's Figure 5 for every workload its reproductions use: worker slots the workload requires over time.

Megha paper, Figure 5: "Total number of worker slots required by the workload
sample" (the Cloudera sample) against time. Its curve is the workload's own
demand — each task holding one slot from its arrival for its duration, as if
it started at once — not what a scheduler achieved. We draw it for each
distinct workload of the built-in specs that reproduce the Megha paper's
figures (``megha-vs-sparrow``, ``megha-cluster-size``, ``megha-gm-lm``,
``megha-costs``, ``megha-fairness``: the Google sub-trace, its first 67 jobs
and the generated Poisson workload; the paper's own samples are used instead
when ``schedlab reproduce megha-gm-lm --paper-traces`` has them, which we do
not), read with the simulator's conventions (whole-second durations, dephased
repeats), and give the demand's median, mean, p99 and peak per second — the
load a data center of a given size faces (divide by its slots).

:func:`write_demand` writes ``demand.md`` (the table), ``demand.json`` and one
``demand_<workload>.png`` per workload; runs nothing but reading the traces.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.atomic import all_or_nothing, atomic_write
from schedlab.metrics.export import pipe_table, write_json

__all__ = ["MEGHA_SPECS", "demand", "write_demand"]

MEGHA_SPECS = ("megha-vs-sparrow", "megha-cluster-size", "megha-gm-lm", "megha-costs", "megha-fairness")
MAX_POINTS = 4000  # a curve's points at most (longer spans: the per-second maximum over wider bins)


def _workloads(quick: bool) -> dict[str, tuple[dict[str, Any], str | None]]:
    """Each distinct workload of the Megha specs: name -> (resolved config, trace path)."""
    from schedlab.experiments.matrix import expand
    from schedlab.experiments.reproduce import load_builtin

    out: dict[str, tuple[dict[str, Any], str | None]] = {}
    for spec in MEGHA_SPECS:
        for run in expand(load_builtin(spec, quick=quick)):
            out.setdefault(run.workload, (run.config["workload"], run.trace_path))
    return out


def demand(wl: dict[str, Any], trace_path: str | None) -> tuple[np.ndarray, float]:
    """Slots required in each second from the first arrival (tasks running if each started on arrival), and that start."""
    from schedlab.experiments.matrix import workload_jobs
    from schedlab.workload.stats import per_second_load

    starts: list[float] = []
    durations: list[float] = []
    for job in workload_jobs(wl, trace_path):
        starts.extend([job.arrival] * len(job.durations))
        durations.extend(job.durations)
    s = np.asarray(starts, dtype=float)
    return per_second_load(s, np.asarray(durations, dtype=float), 1.0), float(np.floor(s.min())) if len(s) else 0.0


def _plot(name: str, series: np.ndarray, path: Path) -> None:
    from schedlab.experiments.plots import _figure, save_png

    width = max(1, -(-len(series) // MAX_POINTS))
    pad = np.pad(series, (0, (-len(series)) % width))
    peaks = pad.reshape(-1, width).max(axis=1)
    fig, (ax,) = _figure(1, width=9.0, height=3.5)
    ax.plot(np.arange(len(peaks)) * width, peaks, linewidth=0.8)
    ax.set_xlabel("seconds since the first arrival")
    ax.set_ylabel("worker slots required" + ("" if width == 1 else f" (max per {width} s)"))
    ax.set_title(f"Slots required by the workload over time — {name} (Megha paper, Fig. 5)")
    ax.grid(True, alpha=0.3)
    save_png(fig, path)


def write_demand(out_dir: str | os.PathLike, quick: bool = False) -> Path:
    """``demand.md``, ``demand.json`` and the plots in ``out_dir``: every file, or none."""
    out = Path(out_dir)
    rows = []
    with all_or_nothing():
        for name, (wl, path) in _workloads(quick).items():
            series, t0 = demand(wl, path)
            _plot(name, series, out / f"demand_{name}.png")
            rows.append({"workload": name, "first_arrival": t0, "seconds": len(series),
                         "median": float(np.median(series)) if len(series) else 0.0, "mean": float(series.mean()) if len(series) else 0.0,
                         "p99": float(np.percentile(series, 99)) if len(series) else 0.0, "max": float(series.max()) if len(series) else 0.0})
        write_json(out / "demand.json", {"specs": list(MEGHA_SPECS), "workloads": rows})
        text = "\n".join([
            "# The Megha paper's Figure 5 for every workload used: worker slots required over time", "",
            "Written by `schedlab reproduce megha-demand` (`schedlab.experiments.megha_demand`): each task holds one slot from its "
            "arrival for its duration (trace durations in whole seconds, as the simulator reads them). Per second from the first arrival:", "",
            pipe_table(["workload", "seconds", "median", "mean", "p99", "max"],
                       ([r["workload"], f"{r['seconds']:,}", f"{r['median']:,.0f}", f"{r['mean']:,.1f}", f"{r['p99']:,.0f}", f"{r['max']:,.0f}"]
                        for r in rows)), "",
            *(f"![{r['workload']}](demand_{r['workload']}.png)" for r in rows), ""])
        return atomic_write(out / "demand.md", lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
