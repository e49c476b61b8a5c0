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
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from schedlab.metrics.recorder import COMPONENTS, Recorder

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


def _col(a: Any, dtype: Any) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype).copy() if len(a) else np.zeros(0, dtype=dtype)


def tasks_frame(rec: Recorder) -> pd.DataFrame:
    """One row per task: job, arrival, duration, start, end, worker, starts, allocation time and its components."""
    n = rec.num_tasks
    start = _col(rec.column("start"), float)
    comps = {name: _col(rec.component(k), float) for k, name in enumerate(COMPONENTS)}
    not_started = np.isnan(start)
    alloc = np.where(not_started, np.nan, sum(comps.values()) if n else np.zeros(0))
    starts = (~not_started).astype(np.int64)
    if rec.preempted_runs:
        starts += np.bincount([t for t, _w, _s, _e in rec.preempted_runs], minlength=n)
    df = pd.DataFrame(
        {
            "task": np.arange(n, dtype=np.int64),
            "job": _col(rec.column("job"), np.int64),
            "arrival": _col(rec.column("arrival"), float),
            "duration": _col(rec.column("duration"), float),
            "start": start,
            "end": _col(rec.column("end"), float),
            "worker": _col(rec.column("worker"), np.int64),
            "starts": starts,
            "allocation_time": alloc,
        }
    )
    for name, col in comps.items():
        df[name] = np.where(not_started, np.nan, col)
    return df


def jobs_frame(rec: Recorder) -> pd.DataFrame:
    """One row per job: arrival, tasks, user, completion (when the scheduler learned it), JRT, ideal JRT, JRT delay."""
    arrival = np.array(rec.j_arrival, dtype=float)
    done = np.array(rec.j_done, dtype=float)
    ideal = np.array(rec.j_ideal, dtype=float)
    jrt = done - arrival
    return pd.DataFrame(
        {
            "job": np.arange(rec.num_jobs, dtype=np.int64),
            "arrival": arrival,
            "tasks": np.array(rec.j_tasks, dtype=np.int64),
            "user": np.array(rec.j_user, dtype=np.int64),
            "completion": done,
            "jrt": jrt,
            "ideal_jrt": ideal,
            "jrt_delay": jrt - ideal,
        }
    )


def _busy_integral(points: np.ndarray, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_i w_i · |[s_i, e_i) ∩ (−∞, t)| at each t of ``points``."""
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
    start = _col(rec.column("start"), float)
    end = _col(rec.column("end"), float)
    ran = ~np.isnan(start) & ~np.isnan(end)
    s_list = [start[ran]]
    e_list = [end[ran]]
    idx_list = [np.flatnonzero(ran)]
    if rec.preempted_runs:
        pr = np.array([(t, s, e) for t, _w, s, e in rec.preempted_runs], dtype=float)
        idx_list.append(pr[:, 0].astype(np.int64))
        s_list.append(pr[:, 1])
        e_list.append(pr[:, 2])
    s = np.concatenate(s_list)
    e = np.concatenate(e_list)
    idx = np.concatenate(idx_list)
    if len(s) == 0:
        return pd.DataFrame({"time": np.zeros(0), **{r: np.zeros(0) for r in resources}})
    t0 = math.floor(min(np.array(rec.j_arrival, dtype=float).min(), s.min()))
    t1 = max(math.ceil(e.max()), t0 + 1)
    edges = np.arange(t0, t1 + 1, dtype=float)
    out: dict[str, np.ndarray] = {"time": edges[:-1]}
    for k, name in enumerate(resources):
        w = np.ones(len(s)) if requests is None else requests[idx, k].astype(float)
        out[name] = np.diff(_busy_integral(edges, s, e, w)) / float(total_capacity[k])
    return pd.DataFrame(out)


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
    done = jobs[jobs["completion"].notna()]
    out: dict[str, Any] = {
        "jrt_delay": stats(done["jrt_delay"]),
        "jrt": stats(done["jrt"]),
        "ideal_jrt": stats(done["ideal_jrt"]),
        "allocation_time": stats(started["allocation_time"]),
        "allocation_components": {name: stats(started[name]) for name in COMPONENTS},
        "utilization": utilization_stats(utilization[resources[0]].to_numpy() if len(utilization) else np.zeros(0)),
    }
    if len(resources) > 1:
        out["utilization_by_resource"] = {
            r: utilization_stats(utilization[r].to_numpy() if len(utilization) else np.zeros(0)) for r in resources
        }
    return out
