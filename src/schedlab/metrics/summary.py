"""From recorded columns to tables and summaries: percentiles, JRT delay, allocation components, utilization.

Every distribution is summarised the same way, under the same names in code, JSON and plots:
``{count, mean, p50, p90, p99, p999, p9999, max}`` in seconds, with numpy's
linear-interpolation percentiles. Summaries cover tasks that started and jobs
that completed; the rest are counted (``tasks_unfinished``, ``jobs_incomplete``).

**Utilization** (constraint-aware paper, Section 2.4): resources held by running
tasks over the data center's resources. We compute it exactly, per one-second
bin from the first arrival to the last task end, as the time-average over the
bin (the integral of the held resources), including runs later preempted.
In multi-resource mode there is one series per resource; ``utilization`` in the
summary is the first resource's (cores).

**Short and long jobs** (constraint-aware paper, Section 6: "the 99th percentile
delays in short jobs"): a job is short when its trace mean task duration is
below :data:`~schedlab.defaults.SHORT_JOB_CUTOFF` (90.5811 s, the papers'
simulators' cutoff), else long — one rule for every scheduler, whatever cutoff
a scheduler uses for its own decisions. The jobs table carries ``mean_duration``
and ``short``; the summary has ``jrt_delay_short`` and ``jrt_delay_long``, the
JRT delay of each class's completed jobs (count 0 and null statistics when a
class has none, as in the synthetic traces, whose jobs are all short).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.defaults import SHORT_JOB_CUTOFF
from schedlab.metrics.recorder import CHUNK, COMPONENTS, Recorder

if TYPE_CHECKING:
    import pandas as pd

# A table as named numpy columns: what a run's summary is computed from, and what a DataFrame is built from only
# when one is asked for (pandas, and the pyarrow it loads, cost a short run more than the run itself).
Columns = dict[str, np.ndarray]

STAT_KEYS = ("count", "mean", "p50", "p90", "p99", "p999", "p9999", "max")
_PCTS = (50.0, 90.0, 99.0, 99.9, 99.99)


def stats(values: Any) -> dict[str, float]:
    """``{count, mean, p50, p90, p99, p999, p9999, max}`` of the finite values given."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return {k: (0 if k == "count" else float("nan")) for k in STAT_KEYS}
    p = np.percentile(x, _PCTS)
    return {
        "count": len(x),
        "mean": float(x.mean()),
        "p50": float(p[0]),
        "p90": float(p[1]),
        "p99": float(p[2]),
        "p999": float(p[3]),
        "p9999": float(p[4]),
        "max": float(x.max()),
    }


def _class_stats(values: np.ndarray) -> dict[str, Any]:
    """:func:`stats` of one class of jobs; a class without jobs has count 0 and null statistics (not NaN, which
    compares unequal to itself: two identical summaries must compare equal)."""
    st: dict[str, Any] = stats(values)
    return st if st["count"] else {k: (0 if k == "count" else None) for k in STAT_KEYS}


def tasks_frame(rec: Recorder, lo: int = 0, hi: int | None = None, masks: Any = None) -> pd.DataFrame:
    """One row per task of ``lo … hi-1``: job, arrival, duration, start, end, worker, starts, allocation time and its
    components (and ``constraints`` when the tasks' ``masks`` are given)."""
    hi = rec.num_tasks if hi is None else min(hi, rec.num_tasks)
    lo = max(0, min(lo, hi))
    n = hi - lo
    start = rec.column("start", lo, hi)
    comps = {name: rec.component(k, lo, hi) for k, name in enumerate(COMPONENTS)}
    not_started = np.isnan(start)
    alloc = np.where(not_started, np.nan, sum(comps.values()) if n else np.zeros(0))
    starts = (~not_started).astype(np.int64)
    again = [t - lo for t, _w, _s, _e in rec.preempted_runs if lo <= t < hi]
    if again:
        starts += np.bincount(again, minlength=n)
    import pandas as pd

    df = pd.DataFrame(
        {
            "task": np.arange(lo, hi, dtype=np.int64),
            "job": rec.column("job", lo, hi),
            "arrival": rec.column("arrival", lo, hi),
            "duration": rec.column("duration", lo, hi),
            "start": start,
            "end": rec.column("end", lo, hi),
            "worker": rec.column("worker", lo, hi),
            "starts": starts,
            "allocation_time": alloc,
        }
    )
    for name, col in comps.items():
        df[name] = np.where(not_started, np.nan, col)
    if masks is not None:
        df["constraints"] = _int_column(masks, lo, hi)
    return df


def _int_column(values: Any, lo: int, hi: int) -> np.ndarray:
    if isinstance(values, array) and values.typecode == "q":
        return np.frombuffer(values, dtype=np.int64, count=hi)[lo:].copy()
    return np.fromiter((values[t] for t in range(lo, hi)), dtype=np.int64, count=hi - lo)


class TaskRecords:
    """The per-task table of a finished run, read from its recorder a block of rows at a time.

    A run of 10⁸ tasks never holds this table whole unless asked: summaries
    read one column at a time, and :func:`~schedlab.metrics.export.write_table`
    streams :meth:`frames` into Parquet row groups or CSV.
    """

    def __init__(self, rec: Recorder, masks: Any = None) -> None:
        self.rec = rec
        self.masks = masks

    def __len__(self) -> int:
        return self.rec.num_tasks

    def frame(self, lo: int = 0, hi: int | None = None) -> pd.DataFrame:
        """Rows ``lo … hi-1`` (all by default) as a DataFrame."""
        return tasks_frame(self.rec, lo, hi, self.masks)

    def frames(self, rows: int = CHUNK) -> Iterator[pd.DataFrame]:
        """The whole table, ``rows`` rows at a time (at least one frame, maybe empty)."""
        n = len(self)
        yield self.frame(0, min(rows, n))
        for lo in range(rows, n, rows):
            yield self.frame(lo, lo + rows)


def frame(columns: Columns) -> pd.DataFrame:
    """Named columns as a DataFrame (pandas loads here)."""
    import pandas as pd

    return pd.DataFrame(columns)


def jobs_frame(rec: Recorder) -> pd.DataFrame:
    """One row per job: arrival, tasks, user, completion (when the scheduler learned it), JRT, ideal JRT, JRT delay,
    the trace's mean task duration and whether that makes the job short."""
    return frame(jobs_columns(rec))


def jobs_columns(rec: Recorder) -> Columns:
    """:func:`jobs_frame`'s columns."""
    arrival = np.array(rec.j_arrival, dtype=float)
    done = np.array(rec.j_done, dtype=float)
    ideal = np.array(rec.j_ideal, dtype=float)
    mean = np.array(rec.j_mean, dtype=float)
    jrt = done - arrival
    return {
        "job": np.arange(rec.num_jobs, dtype=np.int64),
        "arrival": arrival,
        "tasks": np.array(rec.j_tasks, dtype=np.int64),
        "user": np.array(rec.j_user, dtype=np.int64),
        "completion": done,
        "jrt": jrt,
        "ideal_jrt": ideal,
        "jrt_delay": jrt - ideal,
        "mean_duration": mean,
        "short": mean < SHORT_JOB_CUTOFF,
    }


def inconsistencies_frame(rec: Recorder) -> pd.DataFrame:
    """Inconsistencies over time: one row per (second, GM) with any — ``time`` (bin start, s), ``gm``, ``inconsistencies``
    (requests of that GM an LM rejected in that second), in time then GM order; seconds without any are absent."""
    return frame(inconsistencies_columns(rec))


def inconsistencies_columns(rec: Recorder) -> Columns:
    """:func:`inconsistencies_frame`'s columns."""
    if not rec.inconsistency_bins:
        return {"time": np.zeros(0), "gm": np.zeros(0, dtype=np.int64), "inconsistencies": np.zeros(0, dtype=np.int64)}
    keys = sorted(rec.inconsistency_bins)
    return {
        "time": np.array([float(t) for t, _g in keys]),
        "gm": np.array([g for _t, g in keys], dtype=np.int64),
        "inconsistencies": np.array([rec.inconsistency_bins[k] for k in keys], dtype=np.int64),
    }


def _busy_integral(points: np.ndarray, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Σ_i w_i · |[s_i, e_i) ∩ (−∞, t)| at each t of ``points`` (``weights=None``: every w_i = 1).

    With unit weights ``starts`` and ``ends`` are sorted in place (the caller's
    arrays are consumed) and no permutation is built: the sums are the same
    floating-point operations on the same sorted values as the weighted form's
    with weights of 1, so the result is identical to the last bit.
    """
    if weights is None:
        starts.sort()
        ns = np.searchsorted(starts, points, side="left")
        head = ns * points - np.concatenate(([0.0], np.cumsum(starts)))[ns]
        ends.sort()
        ne = np.searchsorted(ends, points, side="left")
        return head - (ne * points - np.concatenate(([0.0], np.cumsum(ends)))[ne])
    order_s = np.argsort(starts, kind="stable")
    order_e = np.argsort(ends, kind="stable")
    s, ws = starts[order_s], weights[order_s]
    e, we = ends[order_e], weights[order_e]
    cws = np.concatenate(([0.0], np.cumsum(ws)))
    cwss = np.concatenate(([0.0], np.cumsum(ws * s)))
    cwe = np.concatenate(([0.0], np.cumsum(we)))
    cwee = np.concatenate(([0.0], np.cumsum(we * e)))
    ns = np.searchsorted(s, points, side="left")
    ne = np.searchsorted(e, points, side="left")
    return (cws[ns] * points - cwss[ns]) - (cwe[ne] * points - cwee[ne])


def utilization_frame(
    rec: Recorder, total_capacity: np.ndarray, resources: tuple[str, ...], requests: np.ndarray | None = None
) -> pd.DataFrame:
    """Per-second utilization of each resource (columns named after the resources), indexed by bin start."""
    return frame(utilization_columns(rec, total_capacity, resources, requests))


def utilization_columns(
    rec: Recorder, total_capacity: np.ndarray, resources: tuple[str, ...], requests: np.ndarray | None = None
) -> Columns:
    """:func:`utilization_frame`'s columns."""
    start = rec.column("start")
    end = rec.column("end")
    ran = ~np.isnan(start) & ~np.isnan(end)
    s_list = [start[ran]]
    del start
    e_list = [end[ran]]
    del end
    idx_list = [np.flatnonzero(ran)] if requests is not None else []
    del ran
    if rec.preempted_runs:
        pr = np.array([(t, s, e) for t, _w, s, e in rec.preempted_runs], dtype=float)
        if requests is not None:
            idx_list.append(pr[:, 0].astype(np.int64))
        s_list.append(pr[:, 1])
        e_list.append(pr[:, 2])
    s = np.concatenate(s_list) if len(s_list) > 1 else s_list[0]
    e = np.concatenate(e_list) if len(e_list) > 1 else e_list[0]
    del s_list, e_list
    if len(s) == 0:
        return {"time": np.zeros(0), **{r: np.zeros(0) for r in resources}}
    t0 = math.floor(min(np.array(rec.j_arrival, dtype=float).min(), s.min()))
    t1 = max(math.ceil(e.max()), t0 + 1)
    edges = np.arange(t0, t1 + 1, dtype=float)
    out: dict[str, np.ndarray] = {"time": edges[:-1]}
    if requests is None:  # every run weighs 1 on every resource: one integral serves them all
        busy = np.diff(_busy_integral(edges, s, e, None))
        for k, name in enumerate(resources):
            out[name] = busy / float(total_capacity[k])
        return out
    idx = np.concatenate(idx_list)
    for k, name in enumerate(resources):
        w = requests[idx, k].astype(float)
        out[name] = np.diff(_busy_integral(edges, s, e, w)) / float(total_capacity[k])
    return out


def task_summary(rec: Recorder) -> dict[str, Any]:
    """Allocation time and its components over the tasks that started, and the count of unfinished tasks,
    read one column at a time (never the whole task table)."""
    started = ~np.isnan(rec.column("start"))
    total: Any = 0
    comp_stats: dict[str, dict[str, float]] = {}
    for k, name in enumerate(COMPONENTS):
        col = rec.component(k)
        total = total + col
        comp_stats[name] = stats(col[started])
        del col
    alloc = stats(total[started])
    del total, started
    unfinished = int(np.isnan(rec.column("end")).sum())
    return {"allocation_time": alloc, "allocation_components": comp_stats, "tasks_unfinished": unfinished}


def utilization_stats(series: np.ndarray) -> dict[str, float]:
    if len(series) == 0:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0}
    return {
        "mean": float(np.mean(series)),
        "p50": float(np.median(series)),
        "p99": float(np.percentile(series, 99)),
    }


def build_summary(tasks: pd.DataFrame, jobs: pd.DataFrame, utilization: pd.DataFrame, resources: tuple[str, ...]) -> dict[str, Any]:
    """The metric part of the summary JSON (run identification is added by the engine)."""
    started = tasks[tasks["start"].notna()]
    task_part = {
        "allocation_time": stats(started["allocation_time"]),
        "allocation_components": {name: stats(started[name]) for name in COMPONENTS},
    }
    return metric_summary(task_part, jobs, utilization, resources)


def metric_summary(
    task_part: dict[str, Any], jobs: pd.DataFrame | Columns, utilization: pd.DataFrame | Columns, resources: tuple[str, ...]
) -> dict[str, Any]:
    """The metric part of the summary from the tasks' statistics (:func:`task_summary`), the jobs and utilization tables
    (DataFrames or their :data:`Columns`)."""
    done = ~np.isnan(np.asarray(jobs["completion"], dtype=float))
    short = np.asarray(jobs["short"], dtype=bool)[done]
    delay = np.asarray(jobs["jrt_delay"], dtype=float)[done]
    out: dict[str, Any] = {
        "jrt_delay": stats(delay),
        "jrt_delay_short": _class_stats(delay[short]),
        "jrt_delay_long": _class_stats(delay[~short]),
        "jrt": stats(np.asarray(jobs["jrt"], dtype=float)[done]),
        "ideal_jrt": stats(np.asarray(jobs["ideal_jrt"], dtype=float)[done]),
        "allocation_time": task_part["allocation_time"],
        "allocation_components": task_part["allocation_components"],
        "utilization": utilization_stats(_series(utilization, resources[0])),
    }
    if len(resources) > 1:
        out["utilization_by_resource"] = {r: utilization_stats(_series(utilization, r)) for r in resources}
    return out


def _series(table: pd.DataFrame | Columns, name: str) -> np.ndarray:
    """A utilization column as an array (empty when the table has no rows)."""
    rows = len(next(iter(table.values()), ())) if isinstance(table, dict) else len(table)
    return np.asarray(table[name]) if rows else np.zeros(0)
