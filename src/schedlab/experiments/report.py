"""``schedlab report``: a Markdown and an HTML report with PNG plots from a results folder.

Sections (each only when the spec's ``plots`` asks for it and the data allow):

1. **Comparison** — :mod:`schedlab.experiments.compare` (mean ±std ×ratio per metric).
2. **JRT delay CDFs**, log x, one panel per data center (constraint-aware paper,
   Figures 6–8). Like the paper, each job's delay is averaged over the seeds
   when every seed ran the same jobs (same count and arrival times); otherwise
   the seeds' delays are pooled. Delays ≤ 0.1 ms are drawn at 0.1 ms.
3. **Allocation-time CDFs**, log x, every task of every seed (Megha paper,
   Figure 3), when the spec keeps the ``tasks`` table.
   **Allocation-time percentiles** — median, mean, p90, p99, p99.99 (Megha
   paper, Figure 4), mean over seeds with ±std bars.
4. **Allocation-time components** — framework queuing, processing, worker
   queuing, communication (Megha Figure 7): medians, as in the paper, and
   means (which add up to the mean allocation time; medians need not).
5. **Allocation time against data-center size** (Megha Figures 6, 8, 10), when
   the spec has several data centers.
6. **Utilization** — CDF of per-second utilization for the lowest seed, as the
   paper shows one seed (constraint-aware Figure 10), and mean utilization
   normalized to the baseline's (Figure 9). As in the paper, a scheduler's
   variants (e.g. both worker choices) are averaged together when there are
   several schedulers; with one scheduler the variants are compared instead.
7. **Per-constraint load** of each workload on each data center (mean, median,
   p95, p99 per constraint id; constraint-aware Figures 2–4) and the overall
   load's median, mean and p99 (Table 1). Computed from the workload itself,
   as the paper does, for one-task-per-worker data centers; supply is exact
   for a config, expected (workers × frequency) for a generated one.
8. **Fairness counters** — repartitions, preemption attempts, preemptions per
   data-center size (Megha Figure 11), for runs with fair sharing.
   **Inconsistencies over time** — requests an LM rejected, per second and GM,
   for the lowest seed of each variant that has any (constraint-aware paper,
   Figure 5's conflicts per second, as the scheduler meets them), when the spec
   keeps the ``inconsistencies`` table; runs longer than
   :data:`MAX_POINTS` seconds are drawn as per-second means over wider bins.
9. **Runs** — every run with its id, seed, jobs, tasks and wall time.

Everything is written atomically into ``RESULTS/report`` (or ``out``):
``report.md``, ``report.html``, ``comparison.csv``, ``comparison.json`` and the PNGs.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.atomic import all_or_nothing
from schedlab.errors import InputError
from schedlab.experiments import plots
from schedlab.experiments.compare import compare_frame, default_baseline, fmt, to_json, wide
from schedlab.experiments.matrix import workload_jobs
from schedlab.experiments.results import load_results
from schedlab.metrics.export import atomic_write, write_json
from schedlab.sweeps.store import Store
from schedlab.workload.info import trace_report

PERCENTILES = {"p50": "median", "mean": "mean", "p90": "p90", "p99": "p99", "p9999": "p99.99"}
COMPONENTS = ("framework_queuing", "processing", "worker_queuing", "communication")
FAIRNESS = ("repartitions", "preemption_attempts", "preemptions")
MAX_POINTS = 2500  # inconsistencies over time: at most this many bins per curve


@dataclass
class Report:
    """What :func:`write_report` wrote."""

    out: Path
    markdown: Path
    html: Path
    images: list[Path] = field(default_factory=list)


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", str(s)).strip("_") or "x"


def md_table(df: pd.DataFrame) -> str:
    """A pipe table (pandas' to_markdown needs the optional tabulate package)."""

    def c(x: Any) -> str:
        return (fmt(x) if isinstance(x, float | int) and not isinstance(x, bool) else str(x)).replace("|", "\\|")

    head = "| " + " | ".join(c(h) for h in df.columns) + " |"
    sep = "|" + "|".join(" ---: " if pd.api.types.is_numeric_dtype(df[h]) else " --- " for h in df.columns) + "|"
    rows = ["| " + " | ".join(c(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *rows])


class _Builder:
    def __init__(self, store: Store, df: pd.DataFrame, out: Path, baseline: str) -> None:
        self.store = store
        self.df = df
        self.out = out
        self.baseline = baseline
        self.lines: list[str] = []
        self.images: list[Path] = []
        self.workloads = list(dict.fromkeys(df["workload"]))
        self.dcs = list(dict.fromkeys(df["data_center"]))
        self.labels = list(dict.fromkeys(df["scheduler"]))

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def image(self, fig: Any, name: str, caption: str) -> None:
        path = self.out / f"{slug(name)}.png"
        plots.save_png(fig, path)
        self.images.append(path)
        self.add(f"![{caption}]({path.name})", "")

    def panel(self, workload: str, dc: str) -> str:
        """A panel's title: the data center and its size."""
        rows = self.df[(self.df["workload"] == workload) & (self.df["data_center"] == dc)]
        n = int(rows["workers"].iloc[0]) if len(rows) else None
        return dc if n is None or str(dc).startswith(str(n)) else f"{dc} ({n} workers)"

    def groups(self) -> list[tuple[str, list[str]]]:
        return [(w, [d for d in self.dcs if ((self.df["workload"] == w) & (self.df["data_center"] == d)).any()]) for w in self.workloads]

    def runs(self, workload: str, dc: str, label: str) -> pd.DataFrame:
        df = self.df
        return df[(df["workload"] == workload) & (df["data_center"] == dc) & (df["scheduler"] == label)].sort_values("seed")

    def mean_std(self, columns: list[str], keys: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        cols = [c for c in columns if c in self.df.columns]
        g = self.df.groupby(keys, sort=False)[cols]
        return g.mean(), g.std()


# -- sections ------------------------------------------------------------------------------------
def _comparison(b: _Builder, metrics: list[str] | None) -> None:
    table = compare_frame(b.df, metrics, b.baseline)
    table.attrs["experiment"] = b.df.attrs.get("experiment", {})
    table.attrs["total"] = b.df.attrs.get("total", len(b.df))
    table.attrs["unfinished"] = b.df.attrs.get("unfinished", 0)
    write_json(b.out / "comparison.json", to_json(table))
    atomic_write(b.out / "comparison.csv", lambda tmp: table.to_csv(tmp, index=False))
    b.add(
        f"## Comparison (baseline: {b.baseline})",
        "",
        "Mean over seeds ±standard deviation, ×ratio of means to the baseline on the same workload and data center "
        "(seconds for times; `comparison.csv` has n, min and max too).",
        "",
        md_table(wide(table)),
        "",
    )


def _per_job_delays(frames: list[pd.DataFrame]) -> np.ndarray:
    """Each job's delay averaged over seeds when every seed ran the same jobs, else all seeds' delays pooled."""
    frames = [f for f in frames if f is not None]
    if not frames:
        return np.zeros(0)
    same = all(len(f) == len(frames[0]) and np.array_equal(f["arrival"].to_numpy(), frames[0]["arrival"].to_numpy()) for f in frames)
    if same and len(frames) > 1:
        stack = np.vstack([f["jrt_delay"].to_numpy(dtype=float) for f in frames])
        ok = np.isfinite(stack).any(axis=0)
        return np.nanmean(stack[:, ok], axis=0)
    return np.concatenate([f["jrt_delay"].to_numpy(dtype=float) for f in frames])


def _cdfs(b: _Builder, name: str, what: str, xlabel: str, values: Callable[[pd.DataFrame], np.ndarray | None], log: bool = True) -> bool:
    """One CDF figure per workload (a panel per data center, a curve per scheduler); False if no data."""
    drawn = False
    for w, dcs in b.groups():
        panels: dict[str, dict[str, np.ndarray]] = {}
        for d in dcs:
            series = {}
            for label in b.labels:
                runs = b.runs(w, d, label)
                v = values(runs) if not runs.empty else None
                if v is not None:
                    series[label] = v
            if series:
                panels[b.panel(w, d)] = series
        if panels:
            fig = plots.cdf(panels, xlabel, log=log, title=f"CDF of {what} — {w}")
            b.image(fig, f"{name}_{w}", f"CDF of {what}, {w}")
            drawn = True
    return drawn


def _jrt_delay_cdf(b: _Builder) -> None:
    b.add("## Job response-time delay (constraint-aware paper, Figures 6–8)", "")

    def delays(runs: pd.DataFrame) -> np.ndarray | None:
        frames = [b.store.table(i, "jobs", ["arrival", "jrt_delay"]) for i in runs["id"]]
        return _per_job_delays(frames) if any(f is not None for f in frames) else None

    if _cdfs(b, "jrt_delay_cdf", "JRT delay", "delay in job response time (s), log scale", delays):
        b.add("Each job's delay is averaged over the seeds (pooled when seeds ran different jobs); delays ≤ 0.1 ms are drawn at 0.1 ms.", "")
    else:
        b.add("_No jobs tables stored (the spec's `tables` leaves out `jobs`)._", "")


def _allocation_cdf(b: _Builder) -> None:
    b.add("## Allocation time of tasks (Megha paper, Figure 3)", "")

    def times(runs: pd.DataFrame) -> np.ndarray | None:
        frames = [b.store.table(i, "tasks", ["allocation_time"]) for i in runs["id"]]
        arrays = [f["allocation_time"].to_numpy(dtype=float) for f in frames if f is not None]
        return np.concatenate(arrays) if arrays else None

    if _cdfs(b, "allocation_cdf", "task allocation time", "allocation time (s), log scale", times):
        b.add("Every task of every seed; times ≤ 0.1 ms are drawn at 0.1 ms.", "")
    else:
        b.add("_No tasks tables stored (the spec's `tables` leaves out `tasks`)._", "")


def _allocation_percentiles(b: _Builder) -> None:
    b.add("## Allocation-time percentiles (Megha paper, Figure 4)", "")
    cols = [f"allocation_time.{k}" for k in PERCENTILES]
    mean, std = b.mean_std(cols, ["workload", "data_center", "scheduler"])
    for w, dcs in b.groups():
        panels, errors = {}, {}
        for d in dcs:
            m = mean.loc[(w, d)][cols].T
            s = std.loc[(w, d)][cols].T
            m.index = s.index = list(PERCENTILES.values())
            panels[b.panel(w, d)] = m[[lab for lab in b.labels if lab in m.columns]]
            errors[b.panel(w, d)] = s
        fig = plots.bars(panels, "allocation time (s), log scale", errors=errors, log=True, title=f"Allocation time — {w}")
        b.image(fig, f"allocation_percentiles_{w}", f"allocation-time percentiles, {w}")


def _allocation_components(b: _Builder) -> None:
    b.add("## Allocation-time components (Megha paper, Figure 7)", "")
    for w, dcs in b.groups():
        panels = {}
        for stat, name in (("p50", "median"), ("mean", "mean")):
            cols = [f"allocation_components.{c}.{stat}" for c in COMPONENTS]
            mean, _ = b.mean_std(cols, ["workload", "data_center", "scheduler"])
            for d in dcs:
                t = mean.loc[(w, d)][cols]
                t.columns = list(COMPONENTS)
                panels[f"{name} — {b.panel(w, d)}"] = t.reindex([lab for lab in b.labels if lab in t.index])
        fig = plots.stacked(panels, "seconds", title=f"Allocation-time components — {w}")
        fig.set_size_inches(5 * len(panels), 4)
        b.image(fig, f"allocation_components_{w}", f"allocation-time components, {w}")
    b.add("Medians of the components (the paper's Figure 7) need not add up to the median allocation time; means do.", "")


def _allocation_by_size(b: _Builder) -> None:
    if len(b.dcs) < 2:
        return
    b.add("## Allocation time against data-center size (Megha paper, Figures 6, 8 and 10)", "")
    stats = {"mean": "mean", "p50": "median", "p99": "p99"}
    mean, _ = b.mean_std([f"allocation_time.{k}" for k in stats], ["workload", "scheduler", "data_center"])
    workers = b.df.groupby("data_center", sort=False)["workers"].first()
    for w in b.workloads:
        panels = {}
        for k, name in stats.items():
            t = mean.loc[w][f"allocation_time.{k}"].unstack("scheduler")
            t = t.reindex([d for d in b.dcs if d in t.index])
            t.index = [f"{d}\n({workers[d]} w)" if not str(d).startswith(str(workers[d])) else str(d) for d in t.index]
            panels[name] = t[[lab for lab in b.labels if lab in t.columns]]
        fig = plots.lines(panels, "data center", "allocation time (s), log scale", title=f"Allocation time by data-center size — {w}")
        b.image(fig, f"allocation_by_size_{w}", f"allocation time by data-center size, {w}")


def _utilization_cdf(b: _Builder) -> None:
    b.add("## Utilization (constraint-aware paper, Figure 10)", "")

    def lowest_seed(runs: pd.DataFrame) -> np.ndarray | None:
        u = b.store.table(runs["id"].iloc[0], "utilization")
        return u[u.columns[1]].to_numpy(dtype=float) if u is not None and len(u.columns) > 1 else None

    if not _cdfs(b, "utilization_cdf", "utilization (lowest seed)", "utilization (per second)", lowest_seed, log=False):
        b.add("_No utilization tables stored._", "")


def _utilization_normalized(b: _Builder) -> None:
    df = b.df
    families = list(dict.fromkeys(df["scheduler_name"]))
    by = "scheduler_name" if len(families) > 1 else "scheduler"
    base_label = b.baseline
    base = df.loc[df["scheduler"] == base_label, "scheduler_name"].iloc[0] if by == "scheduler_name" else base_label
    g = df.groupby(["workload", "data_center", by], sort=False)["utilization.mean"].mean().unstack(by)
    if base not in g.columns or len(g.columns) < 2:
        return
    norm = g.div(g[base], axis=0).drop(columns=[base])
    norm.index = [w if len(b.dcs) == 1 else f"{w} / {d}" for w, d in norm.index]
    b.add("## Mean utilization normalized to the baseline (constraint-aware paper, Figure 9)", "")
    what = "scheduler (all its variants and seeds averaged)" if by == "scheduler_name" else "variant (seeds averaged)"
    fig = plots.bars({f"mean utilization / {base}'s": norm}, "normalized mean utilization", hline=1.0, title=f"Utilization normalized to {base}")
    b.image(fig, "utilization_normalized", f"utilization normalized to {base}")
    table = norm.reset_index(names="workload")
    b.add(f"Per {what}; 1 = the same mean utilization as {base}.", "", md_table(table), "")


NO_CONSTRAINTS = "no placement constraints"
NOT_SLOTS = "load is defined for one-task-per-worker data centers"


def constraint_load_source(rc: dict[str, Any]) -> tuple[str | None, int | None] | str:
    """Where a stored run's per-constraint load comes from: ``(config, workers)`` of its data center (one of
    them None), or why it has none (:data:`NO_CONSTRAINTS`, :data:`NOT_SLOTS`)."""
    wl, dc, paths = rc["config"]["workload"], rc["config"]["data_center"], rc.get("paths", {})
    if not wl["constraints"]:
        return NO_CONSTRAINTS
    if dc["resource_mode"] != "slots":
        return NOT_SLOTS
    config = paths.get("config") or dc["config"]
    return config, None if config is not None else dc["workers"]


def constraint_load_of(rc: dict[str, Any], label: str) -> dict[str, Any]:
    """The trace report (per-constraint load, overall load) of a stored run's workload on its data center;
    ``rc`` must have a source (:func:`constraint_load_source`)."""
    source = constraint_load_source(rc)
    assert not isinstance(source, str), source
    config, workers = source
    wl, paths = rc["config"]["workload"], rc.get("paths", {})
    return trace_report(workload_jobs(wl, paths.get("trace")), label=label, workers=workers, config=config, constraint_seed=wl["constraint_seed"])


def _constraint_load(b: _Builder) -> None:

    b.add("## Per-constraint load (constraint-aware paper, Figures 2–4; Table 1)", "")
    table1 = []
    notes = []
    done: set[tuple[str, Any]] = set()
    for w, dcs in b.groups():
        for d in dcs:
            rid = b.df[(b.df["workload"] == w) & (b.df["data_center"] == d)]["id"].iloc[0]
            rc = b.store.run_config(rid)
            source = constraint_load_source(rc)
            if isinstance(source, str):
                notes.append(f"{w}: {source}" if source == NO_CONSTRAINTS else f"{w} on {d}: {source}")
                continue
            config, workers = source
            key = (w, config if config is not None else workers)
            if key in done:
                continue
            done.add(key)
            try:
                rep = constraint_load_of(rc, w)
            except (InputError, OSError) as e:
                notes.append(f"{w} on {d}: {e}")
                continue
            supply = d if config is not None else f"{workers} workers"
            fig = plots.constraint_load(rep["per_constraint_load"], title=f"per-constraint load — {w}, {supply}")
            b.image(fig, f"constraint_load_{w}_{d}", f"per-constraint load, {w} on {supply}")
            table1.append({"workload": w, "data center": supply, **{f"{k} load": v for k, v in rep["load"].items()}})
    if table1:
        b.add("Overall load per second (demand / workers) — the paper's Table 1:", "", md_table(pd.DataFrame(table1)), "")
    for n in notes:
        b.add(f"- {n}")
    if notes:
        b.add("")


def _fairness(b: _Builder) -> None:
    cols = [f"counters.{c}" for c in FAIRNESS]
    if "counters.preemption_attempts" not in b.df.columns:
        return
    df = b.df[b.df["counters.preemption_attempts"].notna()]
    if df.empty:
        return
    b.add("## Fairness counters (Megha paper, Figure 11)", "")
    present = [c for c in cols if c in df.columns]
    g = df.groupby(["workload", "scheduler", "data_center"], sort=False)[present]
    mean, std = g.mean(), g.std()
    for w in dict.fromkeys(df["workload"]):
        panels, errors = {}, {}
        for label in dict.fromkeys(df[df["workload"] == w]["scheduler"]):
            m = mean.loc[(w, label)]
            m.columns = [c.removeprefix("counters.") for c in m.columns]
            s = std.loc[(w, label)]
            s.columns = m.columns
            panels[label], errors[label] = m, s
        fig = plots.bars(panels, "count (mean over seeds)", errors=errors, title=f"Repartitions and preemptions — {w}")
        b.image(fig, f"fairness_counters_{w}", f"fairness counters, {w}")
        t = mean.loc[w].reset_index()
        t.columns = [c.removeprefix("counters.") for c in t.columns]
        b.add(md_table(t), "")


def inconsistencies_per_gm(table: pd.DataFrame, t0: float, t1: float, max_points: int = MAX_POINTS) -> pd.DataFrame:
    """Per-second inconsistencies of each GM (columns ``GM 1`` …) from ``t0`` to ``t1``, zeros filled, indexed by
    seconds since ``t0``; longer spans are averaged over bins of ``ceil(span / max_points)`` seconds."""
    span = max(int(np.ceil(t1 - t0)), 1)
    width = max(1, -(-span // max_points))
    bins = -(-span // width)
    gms = sorted(int(g) for g in table["gm"].unique()) if len(table) else [0]
    out = np.zeros((bins, len(gms)))
    col = {g: k for k, g in enumerate(gms)}
    for t, g, n in zip(table["time"].to_numpy(), table["gm"].to_numpy(), table["inconsistencies"].to_numpy(), strict=True):
        i = min(max(int((t - t0) // width), 0), bins - 1)
        out[i, col[int(g)]] += n
    return pd.DataFrame(out / width, index=np.arange(bins) * float(width), columns=[f"GM {g + 1}" for g in gms])


def _inconsistencies(b: _Builder) -> None:
    b.add("## Inconsistencies over time (constraint-aware paper, Figure 5: conflicts per second)", "")
    drawn = False
    for w, dcs in b.groups():
        panels: dict[str, pd.DataFrame] = {}
        widths = set()
        for d in dcs:
            for label in b.labels:
                runs = b.runs(w, d, label)
                if runs.empty:
                    continue
                rid = runs["id"].iloc[0]
                t = b.store.table(rid, "inconsistencies")
                if t is None or not len(t):
                    continue
                u = b.store.table(rid, "utilization", ["time"])
                t0 = float(u["time"].min()) if u is not None and len(u) else float(t["time"].min())
                t1 = float(u["time"].max()) + 1 if u is not None and len(u) else float(t["time"].max()) + 1
                frame = inconsistencies_per_gm(t, t0, t1)
                widths.add(frame.index[1] - frame.index[0] if len(frame) > 1 else 1.0)
                panels[f"{label}, seed {int(runs['seed'].iloc[0])}" + ("" if len(dcs) == 1 else f" — {b.panel(w, d)}")] = frame
        if panels:
            bins = "" if widths == {1.0} else f" (per-second means over {', '.join(f'{x:g}' for x in sorted(widths))}-s bins)"
            fig = plots.series(panels, "seconds since the first arrival", "inconsistencies / s", title=f"Inconsistencies per GM — {w}{bins}")
            b.image(fig, f"inconsistencies_{w}", f"inconsistencies per second per GM, {w}")
            drawn = True
    if not drawn:
        b.add("_No inconsistencies recorded (or the spec's `tables` leaves out `inconsistencies`)._", "")


def _runs(b: _Builder) -> None:
    cols = ["id", "scheduler", "workload", "data_center", "workers", "seed", "jobs", "tasks", "counters.jobs_incomplete", "wall_seconds"]
    t = b.df[[c for c in cols if c in b.df.columns]].rename(columns={"counters.jobs_incomplete": "incomplete jobs", "wall_seconds": "wall s"})
    b.add("## Runs", "", md_table(t), "")


SECTIONS: dict[str, Callable[[_Builder], None]] = {
    "jrt_delay_cdf": _jrt_delay_cdf,
    "allocation_cdf": _allocation_cdf,
    "allocation_percentiles": _allocation_percentiles,
    "allocation_components": _allocation_components,
    "allocation_by_size": _allocation_by_size,
    "utilization_cdf": _utilization_cdf,
    "utilization_normalized": _utilization_normalized,
    "constraint_load": _constraint_load,
    "fairness_counters": _fairness,
    "inconsistencies_over_time": _inconsistencies,
}

_CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:0.85em;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 6px}
th{background:#f3f3f3}img{max-width:100%;margin:0.5em 0}code{background:#f3f3f3;padding:0 3px}"""


def to_html(markdown: str, title: str) -> str:
    """The report as a standalone HTML page (markdown-it-py, which rich already depends on)."""
    from markdown_it import MarkdownIt  # only the HTML report needs it

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_CSS}</style></head>\n<body>\n{body}</body></html>\n"
    )


def write_report(
    results: str | os.PathLike,
    out: str | os.PathLike | None = None,
    *,
    baseline: str | None = None,
    metrics: list[str] | None = None,
    plots_wanted: list[str] | None = None,
) -> Report:
    """Write the report of a results folder (default into ``RESULTS/report``): every file of it, or none."""

    with all_or_nothing():
        return _write_report(results, out, baseline, metrics, plots_wanted)


def _write_report(results: str | os.PathLike, out: str | os.PathLike | None, baseline: str | None, metrics: list[str] | None,
                  plots_wanted: list[str] | None) -> Report:
    store = Store(results)
    df = load_results(results)
    info = df.attrs["experiment"]
    if df.empty:
        raise InputError(str(results), "no finished run to report (run `schedlab sweep` first)")
    out_dir = Path(out) if out is not None else Path(results) / "report"
    b = _Builder(store, df, out_dir, default_baseline(df, baseline))
    name = info.get("name", "experiment")
    b.add(f"# {name}", "")
    if info.get("description"):
        b.add(info["description"].strip(), "")
    total, unfinished = df.attrs["total"], df.attrs["unfinished"]
    b.add(
        f"{total - unfinished} of {total} runs finished"
        + (f" ({unfinished} not yet: rerun `schedlab sweep` to complete them)" if unfinished else "")
        + f"; schedlab {info.get('schedlab_version', '?')}; results in `{Path(results)}`.",
        "",
    )
    _comparison(b, metrics)
    wanted = plots_wanted if plots_wanted is not None else info.get("plots", list(SECTIONS))
    for key, section in SECTIONS.items():
        if key in wanted:
            section(b)
    _runs(b)
    text = "\n".join(b.lines).rstrip() + "\n"
    md_path = out_dir / "report.md"
    html_path = out_dir / "report.html"
    atomic_write(md_path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    page = to_html(text, name)
    atomic_write(html_path, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
    return Report(out_dir, md_path, html_path, b.images)
