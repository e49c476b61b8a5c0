"""The results explorer's data: runs from results stores and summary JSONs, and the series its charts draw.

A :class:`Catalog` reads what ``schedlab dashboard --results DIR --summary FILE`` names:

* a **results store** (``schedlab sweep``/``reproduce``: ``experiment.json`` and
  ``runs/<id>/summary.json``, with the run's tables beside it): every finished
  run the experiment lists, labelled as the store labels it (scheduler label,
  workload, data center, workers, seed);
* a **summary JSON** (``schedlab simulate --out DIR`` writes ``DIR/summary.json``
  and its tables beside it): one run, labelled from the summary itself.

Only the summaries are read when the catalog loads (500 runs in well under a
second); a run's tables are read when a chart asks for them. What cannot be
read does not stop the others: a folder that is not a store, a JSON file that
does not parse, or a summary without the fields this version writes (an older
or newer schedlab's, or another program's) becomes one :class:`Problem` — a
line naming the path and what is wrong — that the page and the log show.

The series are what :mod:`schedlab.experiments.report` draws, as data for
interactive charts: the CDF of each job's JRT delay (``jobs`` table), of each
task's allocation time (``tasks``) or of per-second utilization
(``utilization``); utilization over time; the percentile table of a metric
with each run's ratio to a chosen baseline run on the same workload and data
center (from the summaries: the same figures as ``compare``); and the
per-constraint load of a run's workload on its data center
(:func:`schedlab.experiments.report.constraint_load_of`, what the report
draws). A CDF is sent as at most :data:`CDF_POINTS` points taken
at evenly spaced ranks of the sorted values (the first and last included), so
a million-task run costs the browser what a small one does; the percentile
table, not the curve, gives exact figures.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError

CDF_POINTS = 400
TIMELINE_POINTS = 600
PERCENTILES = ("p50", "mean", "p90", "p99", "p9999")
# The metrics whose distribution a run's tables hold: metric -> (table, column)
CDF_METRICS = {
    "jrt_delay": ("jobs", "jrt_delay"),
    "allocation_time": ("tasks", "allocation_time"),
    "utilization": ("utilization", None),  # None: the table's first resource column
}
# What a summary of this version has (checked when it is read): a summary without them is refused.
REQUIRED = ("scheduler", "trace", "workers", "seed", "tasks", "jrt_delay.p50", "allocation_time.p50", "utilization.mean")


@dataclass(frozen=True)
class Problem:
    """Something named on the command line that could not be read, and why."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass
class Run:
    """One finished run: where its files are, its labels and its summary."""

    id: str  # unique in the catalog: "<store name>/<run id>" or "<folder>/summary.json"'s folder name
    folder: Path  # holds summary.json and the tables
    source: str  # the store or the summary file it came from
    label: str  # the scheduler's label in the sweep (or its name)
    workload: str
    data_center: str
    workers: int
    seed: int
    summary: dict[str, Any] = field(repr=False)

    def row(self) -> dict[str, Any]:
        """The run as a row of the page's run table."""
        s = self.summary
        return {
            "id": self.id,
            "source": self.source,
            "label": self.label,
            "scheduler": s["scheduler"],
            "workload": self.workload,
            "data_center": self.data_center,
            "workers": self.workers,
            "seed": self.seed,
            "jobs": s.get("jobs"),
            "tasks": s["tasks"],
            "jrt_delay_p50": _num(s["jrt_delay"].get("p50")),
            "jrt_delay_p99": _num(s["jrt_delay"].get("p99")),
            "allocation_time_p50": _num(s["allocation_time"].get("p50")),
            "allocation_time_p99": _num(s["allocation_time"].get("p99")),
            "utilization_mean": _num(s["utilization"].get("mean")),
            "tables": sorted(t for t in ("jobs", "tasks", "utilization") if (self.folder / f"{t}.parquet").is_file()),
        }


def _num(v: Any) -> float | None:
    """A JSON-safe number (NaN and infinities are not JSON)."""
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def _get(d: dict[str, Any], dotted: str) -> Any:
    for k in dotted.split("."):
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def check_summary(s: Any) -> str | None:
    """Why ``s`` is not a run summary of this version, or None."""
    if not isinstance(s, dict):
        return "not a run summary (a JSON object is expected)"
    missing = [k for k in REQUIRED if _get(s, k) is None]
    if missing:
        return f"not a run summary of this schedlab version (missing {', '.join(missing)})"
    return None


class Catalog:
    """The runs of some results stores and summary files, and the problems met reading them."""

    def __init__(self, stores: Sequence[str | os.PathLike] = (), summaries: Sequence[str | os.PathLike] = ()) -> None:
        self.stores = [Path(p) for p in stores]
        self.summaries = [Path(p) for p in summaries]
        self.runs: dict[str, Run] = {}
        self.problems: list[Problem] = []
        self._loads: dict[str, dict[str, Any]] = {}  # per-constraint load by workload and data center
        self.reload()

    def reload(self) -> None:
        """Read every store and summary again (new runs of a sweep still going appear)."""
        self.runs, self.problems = {}, []
        for root in self.stores:
            self._read_store(root)
        for path in self.summaries:
            self._read_summary_file(path)

    def _add(self, run: Run) -> None:
        rid, k = run.id, 2
        while rid in self.runs:  # two stores with the same folder name
            rid = f"{run.id}~{k}"
            k += 1
        run.id = rid
        self.runs[rid] = run

    def _read_store(self, root: Path) -> None:
        exp = root / "experiment.json"
        if not root.is_dir():
            self.problems.append(Problem(str(root), "no such folder"))
            return
        if not exp.is_file():
            self.problems.append(Problem(str(root), "not a results store (no experiment.json: `schedlab sweep SPEC --out DIR` makes one)"))
            return
        try:
            info = json.loads(exp.read_text(encoding="utf-8"))
            listed = info["runs"]
            if not isinstance(listed, list):
                raise TypeError
        except ValueError as e:
            self.problems.append(Problem(str(exp), f"invalid JSON: {e}"))
            return
        except (KeyError, TypeError):
            self.problems.append(Problem(str(exp), "not a results store's experiment file (no list of runs)"))
            return
        name = root.resolve().name
        for r in listed:
            if not isinstance(r, dict) or not isinstance(r.get("id"), str):
                self.problems.append(Problem(str(exp), f"a run without an id: {str(r)[:80]}"))
                continue
            folder = root / "runs" / r["id"]
            summary = self._load(folder / "summary.json", quiet_missing=True)
            if summary is None:
                continue  # not finished yet (or refused, and said)
            self._add(Run(
                id=f"{name}/{r['id']}", folder=folder, source=str(root), label=str(r.get("scheduler", summary["scheduler"])),
                workload=str(r.get("workload", summary["trace"])), data_center=str(r.get("data_center", f"{summary['workers']}w")),
                workers=int(summary["workers"]), seed=int(r.get("seed", summary["seed"])), summary=summary,
            ))  # fmt: skip

    def _read_summary_file(self, path: Path) -> None:
        if path.is_dir():
            path = path / "summary.json"
        summary = self._load(path)
        if summary is None:
            return
        folder = path.parent
        self._add(Run(
            id=folder.resolve().name or "run", folder=folder, source=str(path), label=str(summary["scheduler"]),
            workload=str(summary["trace"]), data_center=f"{summary['workers']}w", workers=int(summary["workers"]),
            seed=int(summary["seed"]), summary=summary,
        ))  # fmt: skip

    def _load(self, path: Path, quiet_missing: bool = False) -> dict[str, Any] | None:
        if not path.is_file():
            if not quiet_missing:
                self.problems.append(Problem(str(path), "no such file"))
            return None
        try:
            s = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            self.problems.append(Problem(str(path), f"invalid JSON: {e}"))
            return None
        why = check_summary(s)
        if why is not None:
            self.problems.append(Problem(str(path), why))
            return None
        return s

    # -- what the page asks for -------------------------------------------------------------------
    def run(self, rid: str) -> Run:
        try:
            return self.runs[rid]
        except KeyError:
            raise InputError("runs", f"no run {rid!r} in the loaded results") from None

    def select(self, ids: list[str]) -> list[Run]:
        return [self.run(i) for i in ids]

    def cdf(self, ids: list[str], metric: str) -> dict[str, Any]:
        """Each run's CDF of ``metric`` (see :data:`CDF_METRICS`) as points ``{run, value, p}``,
        and the runs that lack the table."""
        if metric not in CDF_METRICS:
            raise InputError("metric", f"unknown metric {metric!r} (one of {', '.join(CDF_METRICS)})")
        table, column = CDF_METRICS[metric]
        points: list[dict[str, Any]] = []
        missing: list[str] = []
        for run in self.select(ids):
            values = _column(run.folder / f"{table}.parquet", column)
            if values is None:
                missing.append(run.id)
                continue
            points.extend({"run": run.id, "value": v, "p": p} for v, p in _cdf_points(values))
        return {"metric": metric, "points": points, "missing": missing}

    def percentiles(self, ids: list[str], metric: str, baseline: str | None) -> dict[str, Any]:
        """Per run the summary's percentiles of ``metric`` and, with a baseline run, each one's ratio to it
        (for runs on the baseline's workload and data center; None for the others)."""
        if metric not in ("jrt_delay", "jrt", "allocation_time"):
            raise InputError("metric", f"no percentiles for {metric!r} (jrt_delay, jrt or allocation_time)")
        runs = self.select(ids)
        base_run = self.run(baseline) if baseline else None
        rows = []
        for run in runs:
            stats = run.summary[metric]
            # a ratio compares schedulers on the same jobs and machines, as `compare` does
            base = base_run.summary[metric] if base_run is not None and (run.workload, run.data_center) == (base_run.workload, base_run.data_center) else None
            row: dict[str, Any] = {"run": run.id, "label": series_name(run)}
            for k in PERCENTILES:
                v = _num(stats.get(k))
                row[k] = v
                b = _num(base.get(k)) if base is not None else None
                row[f"{k}_ratio"] = v / b if v is not None and b else None
            rows.append(row)
        return {"metric": metric, "baseline": baseline, "columns": list(PERCENTILES), "rows": rows}

    def utilization(self, ids: list[str]) -> dict[str, Any]:
        """Each run's utilization over time (first resource), at most :data:`TIMELINE_POINTS` points a run
        (means of equal stretches when longer)."""
        points: list[dict[str, Any]] = []
        missing: list[str] = []
        for run in self.select(ids):
            path = run.folder / "utilization.parquet"
            if not path.is_file():
                missing.append(run.id)
                continue
            import pandas as pd

            u = pd.read_parquet(path)
            if len(u.columns) < 2 or not len(u):
                missing.append(run.id)
                continue
            t, v = u["time"].to_numpy(float), u[u.columns[1]].to_numpy(float)
            if len(t) > TIMELINE_POINTS:  # the mean of each of TIMELINE_POINTS equal stretches, at its start
                starts = np.linspace(0, len(t), TIMELINE_POINTS + 1).astype(int)
                v = np.add.reduceat(v, starts[:-1]) / np.diff(starts)
                t = t[starts[:-1]]
            points.extend({"run": run.id, "time": float(a), "utilization": float(b)} for a, b in zip(t, v, strict=True))
        return {"points": points, "missing": missing}

    def constraint_load(self, rid: str) -> dict[str, Any]:
        """The per-constraint load (mean, median, p95, p99 of demand over supply per constraint id: the
        constraint-aware paper's Figures 2–4, as ``schedlab report`` draws it) of a stored run's workload on its
        data center, and the overall load (Table 1); or a ``note`` saying why there is none. Computed from the
        trace once per workload and data center, then kept."""
        from schedlab.experiments.report import constraint_load_of, constraint_load_source

        run = self.run(rid)
        cfg = run.folder / "config.json"
        if not cfg.is_file():
            return {"run": rid, "note": "per-constraint load is computed for runs of a results store (their config.json)"}
        try:
            rc = json.loads(cfg.read_text(encoding="utf-8"))
            source = constraint_load_source(rc)
        except (ValueError, KeyError, TypeError) as e:
            return {"run": rid, "note": f"{cfg}: not a run config of this version ({type(e).__name__}: {e})"}
        what = f"{run.workload} on {run.data_center}"
        if isinstance(source, str):
            return {"run": rid, "what": what, "note": source}
        key = json.dumps([rc["config"]["workload"], source, rc.get("paths", {}).get("trace")], sort_keys=True)
        if key not in self._loads:
            try:
                rep = constraint_load_of(rc, run.workload)
            except (InputError, OSError) as e:
                return {"run": rid, "what": what, "note": str(e)}
            self._loads[key] = {"rows": rep["per_constraint_load"], "load": rep["load"]}
        return {"run": rid, "what": what, **self._loads[key]}


def series_name(run: Run) -> str:
    """A run's name in legends: its label, workload, data center and seed."""
    return f"{run.label} · {run.workload} · {run.data_center} · seed {run.seed}"


def _column(path: Path, column: str | None) -> np.ndarray | None:
    if not path.is_file():
        return None
    import pyarrow.parquet as pq

    names = pq.read_schema(path).names
    if column is None:  # utilization: the first resource column after time
        rest = [n for n in names if n != "time"]
        if not rest:
            return None
        column = rest[0]
    if column not in names:
        return None
    values = pq.read_table(path, columns=[column]).column(0).to_numpy(zero_copy_only=False).astype(float)
    return values[np.isfinite(values)]


def _cdf_points(values: np.ndarray, n: int = CDF_POINTS) -> list[tuple[float, float]]:
    """(value, fraction of values <= it) at up to ``n`` evenly spaced ranks of the sorted values."""
    if not len(values):
        return []
    v = np.sort(values)
    ranks = np.unique(np.linspace(0, len(v) - 1, min(n, len(v))).round().astype(int))
    return [(float(v[r]), (r + 1) / len(v)) for r in ranks]
