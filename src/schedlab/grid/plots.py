"""Plots of sweep results in the paper's forms (PNG, matplotlib's Agg backend, imported lazily).

* :func:`plot_gap_vs_duplications` — performance gap (Eq. 1) against the number
  of duplications, one line per scheduler (Figures 3, 5 and 6).
* :func:`plot_composition` — shares of global jobs queued ``<10s``,
  ``10-100s`` and ``>=100s`` against duplications, one panel per scheduler
  (Figure 4).
* :func:`plot_gap_vs_delay` — performance gap per scheduler at each remote
  submission delay (Figure 2).

Inputs are the rows of :func:`schedlab.grid.experiments.run_sweep` (a
DataFrame or a ``results.csv``); several seeds are averaged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.grid.experiments import IDEAL, with_gaps
from schedlab.grid.metrics import BUCKET_NAMES
from schedlab.grid.selection import LABELS
from schedlab.metrics.export import atomic_write

_COLORS = {"rand": "tab:blue", "qlen": "tab:orange", "hybrid1": "tab:green", "hybrid2": "tab:red", "util": "tab:purple", "est_qt": "tab:brown", "act_qt": "tab:gray"}


def load_results(source: str | os.PathLike | pd.DataFrame) -> pd.DataFrame:
    if isinstance(source, pd.DataFrame):
        return source
    p = Path(source)
    if p.is_dir():
        p = p / "results.csv"
    if not p.is_file():
        raise InputError(str(source), "no results.csv here (run `schedlab grid sweep --out DIR` first)")
    try:
        df = pd.read_csv(p)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise InputError(str(p), f"not a readable CSV results file: {str(e).splitlines()[0]}") from None
    missing = {"arrivals", "scheduler", "duplications", "delay", "mean_queue_time"} - set(df.columns)
    if missing:
        raise InputError(str(p), f"not a grid sweep results file (missing {', '.join(sorted(missing))})")
    if "perf_gap" not in df.columns:

        df = with_gaps(df)
    return df


def _select(df: pd.DataFrame, arrivals: str | None) -> tuple[pd.DataFrame, str]:
    df = df[df["scheduler"] != IDEAL]
    names = list(dict.fromkeys(df["arrivals"]))
    if arrivals is None:
        if len(names) != 1:
            raise InputError("--arrivals", f"the results hold several workloads ({', '.join(names)}); pick one")
        arrivals = names[0]
    sub = df[df["arrivals"] == arrivals]
    if sub.empty:
        raise InputError("--arrivals", f"no rows for {arrivals!r} (have {', '.join(names)})")
    return sub, arrivals


def _save(fig: Any, out: str | os.PathLike) -> Path:
    def write(tmp: str) -> None:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")

    try:
        return atomic_write(out, write)
    finally:
        import matplotlib.pyplot as plt  # matplotlib loads only when a figure is drawn

        plt.close(fig)


def _pyplot():
    import matplotlib  # (idem)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # matplotlib loads only when a figure is drawn

    return plt


def plot_gap_vs_duplications(source: Any, out: str | os.PathLike, arrivals: str | None = None, delay: float | None = None, title: str | None = None) -> Path:
    """Figures 3, 5, 6: performance gap (%) against duplications, per scheduler."""
    df, arrivals = _select(load_results(source), arrivals)
    if delay is not None:
        df = df[df["delay"] == delay]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for sch, g in df.groupby("scheduler", sort=False):
        m = g.groupby("duplications")["perf_gap"].mean()
        ax.plot(m.index, m.values, marker="o", label=LABELS.get(sch, sch), color=_COLORS.get(sch))
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xlabel("duplications (copies beyond the first)")
    ax.set_ylabel("performance gap to the ideal (%)")
    ax.set_title(title or f"performance gap, arrivals {arrivals}")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, out)


def plot_composition(source: Any, out: str | os.PathLike, arrivals: str | None = None, title: str | None = None) -> Path:
    """Figure 4: shares of queue-time ranges against duplications, one panel per scheduler."""
    df, arrivals = _select(load_results(source), arrivals)
    schedulers = list(dict.fromkeys(df["scheduler"]))
    plt = _pyplot()
    cols = 2 if len(schedulers) > 1 else 1
    rows = (len(schedulers) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.4 * rows), squeeze=False, sharey=True)
    colors = ("tab:green", "tab:olive", "tab:red")
    for ax, sch in zip(axes.flat, schedulers, strict=False):
        g = df[df["scheduler"] == sch].groupby("duplications")[list(BUCKET_NAMES)].mean()
        bottom = None
        for name, color in zip(BUCKET_NAMES, colors, strict=True):
            vals = 100 * g[name].to_numpy()
            ax.bar(g.index, vals, bottom=bottom, color=color, label=name)
            bottom = vals if bottom is None else bottom + vals
        ax.set_title(LABELS.get(sch, sch))
        ax.set_xlabel("duplications")
        ax.set_ylabel("global jobs (%)")
        ax.set_ylim(0, 100)
    for ax in list(axes.flat)[len(schedulers):]:
        ax.axis("off")
    axes.flat[0].legend(loc="lower right", fontsize=8)
    fig.suptitle(title or f"queue-time composition, arrivals {arrivals}")
    fig.tight_layout()
    return _save(fig, out)


def plot_gap_vs_delay(source: Any, out: str | os.PathLike, arrivals: str | None = None, title: str | None = None) -> Path:
    """Figure 2: performance gap (%) per scheduler, one bar per remote submission delay."""
    df, arrivals = _select(load_results(source), arrivals)
    df = df[df["duplications"] == 0]
    schedulers = list(dict.fromkeys(df["scheduler"]))
    delays = sorted(df["delay"].unique())
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    width = 0.8 / max(1, len(delays))
    for k, delay in enumerate(delays):
        vals = [df[(df["scheduler"] == s) & (df["delay"] == delay)]["perf_gap"].mean() for s in schedulers]
        xs = [i + (k - (len(delays) - 1) / 2) * width for i in range(len(schedulers))]
        ax.bar(xs, vals, width=width, label=f"delay {delay:g} s")
    ax.set_xticks(range(len(schedulers)), [LABELS.get(s, s) for s in schedulers])
    ax.set_ylabel("performance gap to the ideal (%)")
    ax.set_title(title or f"performance gap by submission delay, arrivals {arrivals}")
    ax.grid(alpha=0.3, axis="y")
    ax.legend()
    return _save(fig, out)
