"""``schedlab compare``: each metric per scheduler and workload, over seeds, with ratios to a baseline.

For every (workload, data center, scheduler label, metric) the table gives the
number of seeds, the mean, the spread (sample standard deviation, min, max)
and ``ratio`` = mean / the baseline's mean on the same workload and data
center (a ratio of means, so a baseline mean of 0 gives no ratio). The
baseline is ``--baseline``, else the spec's ``baseline``, else the first
scheduler variant of the spec. Rows keep the spec's order.

Metrics are summary fields in dotted form (``jrt_delay.p99``,
``allocation_components.processing.p50``, ``utilization.mean``,
``counters.preemptions``, …; see :func:`schedlab.experiments.spec.expand_metric`);
the default is the spec's ``metrics``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.experiments.results import load_results
from schedlab.experiments.spec import expand_metric

KEYS = ["workload", "data_center", "scheduler"]


def resolve_metrics(df: pd.DataFrame, metrics: list[str] | None) -> list[str]:
    """Summary columns for the metric names asked (default: the spec's), refusing unknown or absent ones."""
    asked = metrics or list(df.attrs.get("experiment", {}).get("metrics") or [])
    cols: list[str] = []
    for m in asked:
        try:
            expanded = expand_metric(m)
        except ValueError as e:
            raise InputError("--metric", str(e)) from None
        for c in expanded:
            if c not in df.columns:
                if metrics:
                    raise InputError("--metric", f"no finished run reports {c!r}")
                continue
            if c not in cols:
                cols.append(c)
    return cols


def default_baseline(df: pd.DataFrame, baseline: str | None = None) -> str:
    labels = list(dict.fromkeys(df["scheduler"]))
    if baseline is None:
        spec_baseline = df.attrs.get("experiment", {}).get("baseline")
        baseline = spec_baseline if spec_baseline in labels else labels[0]  # (its runs may all have failed)
    elif baseline not in labels:
        raise InputError("--baseline", f"no scheduler is labelled {baseline!r} (labels: {', '.join(labels)})")
    return baseline


def compare_frame(df: pd.DataFrame, metrics: list[str] | None = None, baseline: str | None = None, *, keys: list[str] | None = None) -> pd.DataFrame:
    """The comparison in long form: one row per ``keys`` (default workload, data center, scheduler) and metric.

    ``keys`` other than the default (a domain spec's varied settings and the
    scheduler) take ``metrics`` as given, already checked.
    """
    if df.empty:
        raise InputError("results", "no finished run to compare (run `schedlab sweep` first)")
    keys = keys or KEYS
    cols = resolve_metrics(df, metrics) if keys == KEYS else list(metrics or [])
    base = default_baseline(df, baseline)
    others = [k for k in keys if k != "scheduler"]
    long = df.melt(id_vars=[*keys, "seed"], value_vars=cols, var_name="metric", value_name="value")
    long["value"] = pd.to_numeric(long["value"], errors="coerce")
    g = long.groupby([*keys, "metric"], sort=False)["value"].agg(n="count", mean="mean", std="std", min="min", max="max").reset_index()
    ref = g[g["scheduler"] == base][[*others, "metric", "mean"]].rename(columns={"mean": "baseline_mean"})
    g = g.merge(ref, on=[*others, "metric"], how="left")
    ratio = g["mean"] / g["baseline_mean"]
    g["ratio"] = ratio.where(g["baseline_mean"].abs() > 0)
    g.attrs["baseline"] = base
    g.attrs["metrics"] = cols
    g.attrs["keys"] = keys
    return g


def compare(results: str | os.PathLike, metrics: list[str] | None = None, baseline: str | None = None) -> pd.DataFrame:
    """:func:`compare_frame` of a results folder (a data-center spec's, or a domain spec's: keyed by its varied settings)."""
    from schedlab.experiments.domain_sweep import domain_rows, is_domain_results, load_domain

    if is_domain_results(results):
        ls, points = load_domain(results)
        df = domain_rows(ls, points, Path(results))
        if df.empty:
            raise InputError(str(results), "no finished run to compare (run `schedlab sweep` first)")
        known = metrics or ls.metrics
        for m in known:
            if m not in df.columns:
                raise InputError("--metric", f"no finished run reports {m!r} (this {ls.spec.domain} sweep has {', '.join(ls.metrics)})")
        out = compare_frame(df, known, baseline, keys=[*ls.spec.vary, "scheduler"])
        info = {"name": ls.spec.name, "domain": ls.spec.domain}
        out.attrs.update({"unfinished": len(points) - len(df), "total": len(points), "experiment": info})
        return out
    df = load_results(results)
    out = compare_frame(df, metrics, baseline)
    out.attrs.update({"unfinished": df.attrs["unfinished"], "total": df.attrs["total"], "experiment": df.attrs["experiment"]})
    return out


def fmt(x: Any) -> str:
    """A number in four significant digits ("-" for missing)."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if isinstance(x, int) or (isinstance(x, float) and x == int(x) and abs(x) < 1e9):
        return str(int(x))
    return f"{x:.4g}"


def cell(row: pd.Series, ratio: bool = True) -> str:
    """``mean ±std ×ratio`` for one metric of one scheduler."""
    s = fmt(row["mean"])
    if row["n"] > 1 and pd.notna(row["std"]):
        s += f" ±{fmt(row['std'])}"
    if ratio and pd.notna(row["ratio"]):
        s += f" ×{row['ratio']:.3g}"
    return s


def wide(table: pd.DataFrame) -> pd.DataFrame:
    """One row per workload, data center and scheduler; one ``mean ±std ×ratio`` column per metric.

    With a single scheduler there is nothing to divide by, and no ratio is shown.
    """
    ratio = table["scheduler"].nunique() > 1
    t = table.assign(cell=table.apply(cell, axis=1, ratio=ratio))
    w = t.pivot_table(index=table.attrs.get("keys", KEYS), columns="metric", values="cell", aggfunc="first", sort=False)
    cols = [m for m in table.attrs.get("metrics", []) if m in w.columns] or list(w.columns)
    w = w[cols].reset_index()
    w.columns.name = None
    return w


def to_json(table: pd.DataFrame) -> dict[str, Any]:
    return {
        "experiment": table.attrs.get("experiment", {}).get("name"),
        "baseline": table.attrs.get("baseline"),
        "metrics": table.attrs.get("metrics"),
        "runs_finished": table.attrs.get("total", 0) - table.attrs.get("unfinished", 0),
        "runs_total": table.attrs.get("total"),
        "rows": [
            {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in rec.items()}
            for rec in table.drop(columns=["baseline_mean"]).to_dict(orient="records")
        ],
    }
