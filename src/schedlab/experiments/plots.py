"""The report's figures, drawn with matplotlib's object API (no pyplot state, Agg canvas, imported lazily).

Each function takes plain data (dicts of arrays, DataFrames) and returns a
:class:`matplotlib.figure.Figure`; :func:`save_png` writes it atomically.
Which paper figure each one regenerates:

* :func:`cdf` — CDF of JRT delay per scheduler, log x (constraint-aware
  paper, Figures 6–8); of allocation time (Megha paper, Figure 3); utilization
  CDF, linear x (constraint-aware Figure 10);
* :func:`bars` — grouped bars: allocation-time percentiles (Megha paper,
  Figure 4), utilization normalized to a baseline (constraint-aware Figure 9),
  fairness counters per data-center size (Megha Figure 11);
* :func:`stacked` — allocation-time components (Megha Figure 7);
* :func:`lines` — allocation time against data-center size (Megha Figures 6, 8, 10);
* :func:`constraint_load` — per-constraint load (constraint-aware Figures 2–4).

Long series are thinned for drawing (every point of the top 0.1 % kept, so the
tail of a CDF is exact); nothing is thinned in the numbers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from schedlab.metrics.export import atomic_write

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

LOG_FLOOR = 1e-4  # seconds: delays at or below are drawn here on a log axis
_MAX_POINTS = 4000


def _figure(panels: int = 1, rows: int = 1, width: float = 6.0, height: float = 4.0) -> tuple[Figure, list[Axes]]:
    from matplotlib.figure import Figure  # matplotlib loads only when a figure is drawn

    fig = Figure(figsize=(width * panels, height * rows), layout="constrained")
    axes = fig.subplots(rows, panels, squeeze=False)
    return fig, [a for row in axes for a in row]


def _finish(ax: Axes, title: str, ylabel: str, xlabel: str | None = None, log: bool = False, grid: Literal["both", "x", "y"] = "y") -> None:
    if log:
        ax.set_yscale("log")
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis=grid, alpha=0.3)
    ax.legend(fontsize="small")


def save_png(fig: Figure, path: str | os.PathLike, dpi: int = 110) -> None:
    """Write ``fig`` as a PNG, atomically (temp file, then rename)."""
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi))


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(np.asarray(values, dtype=float))
    x = x[np.isfinite(x)]
    n = len(x)
    y = np.arange(1, n + 1) / n
    if n > _MAX_POINTS:
        tail = max(1, n // 1000)
        idx = np.unique(np.concatenate([np.linspace(0, n - tail - 1, _MAX_POINTS).astype(int), np.arange(n - tail, n)]))
        x, y = x[idx], y[idx]
    return x, y


def cdf(
    panels: Mapping[str, Mapping[str, np.ndarray]],
    xlabel: str,
    *,
    log: bool = True,
    floor: float = LOG_FLOOR,
    title: str = "",
) -> Figure:
    """One panel per key of ``panels``; in each, one CDF per series (label → values)."""
    fig, axes = _figure(len(panels))
    for ax, (ptitle, series) in zip(axes, panels.items(), strict=True):
        for label, values in series.items():
            v = np.asarray(values, dtype=float)
            if log:
                v = np.maximum(v, floor)
            x, y = _ecdf(v)
            if len(x):
                ax.step(x, y, where="post", label=label)
        if log:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        _finish(ax, ptitle, "CDF", xlabel, grid="both")
    fig.suptitle(title)
    return fig


def bars(
    panels: Mapping[str, pd.DataFrame],
    ylabel: str,
    *,
    errors: Mapping[str, pd.DataFrame] | None = None,
    log: bool = False,
    title: str = "",
    hline: float | None = None,
) -> Figure:
    """Grouped bars: per panel, index = groups on the x axis, columns = series (one colour each)."""
    fig, axes = _figure(len(panels))
    for ax, (ptitle, table) in zip(axes, panels.items(), strict=True):
        groups = [str(g) for g in table.index]
        k = max(1, len(table.columns))
        width = 0.8 / k
        x = np.arange(len(groups))
        err = errors.get(ptitle) if errors else None
        for j, col in enumerate(table.columns):
            vals = table[col].to_numpy(dtype=float)
            yerr = err[col].to_numpy(dtype=float) if err is not None and col in err else None
            if yerr is not None:
                yerr = np.where(np.isfinite(yerr), yerr, 0.0)
            ax.bar(x + (j - (k - 1) / 2) * width, vals, width, yerr=yerr, label=str(col), capsize=2)
        ax.set_xticks(x, groups, rotation=20 if max((len(g) for g in groups), default=0) > 8 else 0)
        if hline is not None:
            ax.axhline(hline, color="black", linewidth=0.8, linestyle="--")
        _finish(ax, ptitle, ylabel, log=log)
    fig.suptitle(title)
    return fig


def stacked(panels: Mapping[str, pd.DataFrame], ylabel: str, *, title: str = "") -> Figure:
    """Stacked bars: per panel, index = bars (schedulers), columns = stacked parts (components)."""
    fig, axes = _figure(len(panels))
    for ax, (ptitle, table) in zip(axes, panels.items(), strict=True):
        x = np.arange(len(table.index))
        bottom = np.zeros(len(x))
        for col in table.columns:
            vals = np.nan_to_num(table[col].to_numpy(dtype=float))
            ax.bar(x, vals, 0.6, bottom=bottom, label=str(col))
            bottom += vals
        ax.set_xticks(x, [str(i) for i in table.index], rotation=20 if len(table.index) > 3 else 0)
        _finish(ax, ptitle, ylabel)
    fig.suptitle(title)
    return fig


def lines(panels: Mapping[str, pd.DataFrame], xlabel: str, ylabel: str, *, log: bool = True, title: str = "") -> Figure:
    """Per panel, index = x positions (categorical, in order), columns = series."""
    fig, axes = _figure(len(panels))
    for ax, (ptitle, table) in zip(axes, panels.items(), strict=True):
        x = np.arange(len(table.index))
        for col in table.columns:
            ax.plot(x, table[col].to_numpy(dtype=float), marker="o", label=str(col))
        ax.set_xticks(x, [str(i) for i in table.index])
        _finish(ax, ptitle, ylabel, xlabel, log=log, grid="both")
    fig.suptitle(title)
    return fig


def series(panels: Mapping[str, pd.DataFrame], xlabel: str, ylabel: str, *, title: str = "") -> Figure:
    """Per panel, index = numeric x (time), columns = series, drawn as lines (one panel per row)."""
    fig, axes = _figure(1, rows=len(panels), width=9.0, height=2.6)
    for ax, (ptitle, table) in zip(axes, panels.items(), strict=True):
        x = table.index.to_numpy(dtype=float)
        for col in table.columns:
            ax.plot(x, table[col].to_numpy(dtype=float), linewidth=0.8, label=str(col))
        _finish(ax, ptitle, ylabel, xlabel, grid="both")
    fig.suptitle(title)
    return fig


def constraint_load(rows: Sequence[Mapping[str, Any]], *, title: str = "") -> Figure:
    """Per-constraint load: mean, median, 95th and 99th percentile per constraint id (Figures 2–4)."""
    df = pd.DataFrame(list(rows)).set_index("constraint")[["mean", "p50", "p95", "p99"]]
    df.columns = ["average", "median", "95th percentile", "99th percentile"]
    fig = bars({title or "per-constraint load": df}, "load (demand / supply)")
    fig.axes[0].set_xlabel("constraint id")
    fig.set_size_inches(10, 4)
    return fig
