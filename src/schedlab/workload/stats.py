"""Workload statistics: sizes, durations, per-second load and per-constraint load.

*Load* follows the constraint-aware paper (Section 2.3, Table 1 and Figures 2–4):
the resources required by active tasks over the resources of the data center,
per second, where a task is active from its job's arrival for its duration
(the ideal, queue-free schedule). We compute each one-second bin's load
exactly as the time-average over the bin — the integral of the number of active
tasks over ``[s, s+1)`` divided by the capacity — through the closed form
``F(t) = Σ_i clamp(t − a_i, 0, d_i)``, so sub-second tasks count for the fraction
of the second they run. Bins span from the first arrival to the last ideal
completion.

*Per-constraint load* for constraint ``c``: the same over tasks that require
``c``, divided by the number of workers that satisfy ``c``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from schedlab.cluster.bitsets import NUM_CONSTRAINTS
from schedlab.defaults import SHORT_JOB_CUTOFF
from schedlab.workload.trace import TraceJob


def _integral_at(points: np.ndarray, starts: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """F(t) = Σ_i clamp(t − a_i, 0, d_i) at each t of ``points``."""
    a = np.sort(starts)
    e = np.sort(starts + durations)
    ca = np.concatenate(([0.0], np.cumsum(a)))
    ce = np.concatenate(([0.0], np.cumsum(e)))
    na = np.searchsorted(a, points, side="left")
    ne = np.searchsorted(e, points, side="left")
    return (na * points - ca[na]) - (ne * points - ce[ne])


def per_second_load(
    starts: np.ndarray, durations: np.ndarray, capacity: float, t0: float | None = None, t1: float | None = None
) -> np.ndarray:
    """Load in each one-second bin from ``floor(t0)`` to ``ceil(t1)`` (defaults: the workload's span)."""
    starts = np.asarray(starts, dtype=float)
    durations = np.asarray(durations, dtype=float)
    if len(starts) == 0:
        return np.zeros(0)
    lo = math.floor(starts.min() if t0 is None else t0)
    hi = math.ceil((starts + durations).max() if t1 is None else t1)
    hi = max(hi, lo + 1)
    edges = np.arange(lo, hi + 1, dtype=float)
    f = _integral_at(edges, starts, durations)
    return np.diff(f) / capacity


def load_summary(load: np.ndarray) -> dict[str, float]:
    """Median, mean and 99th percentile of per-second load (Table 1's columns)."""
    if len(load) == 0:
        return {"median": 0.0, "mean": 0.0, "p99": 0.0}
    return {
        "median": float(np.median(load)),
        "mean": float(np.mean(load)),
        "p99": float(np.percentile(load, 99)),
    }


def per_constraint_load(
    starts: np.ndarray,
    durations: np.ndarray,
    task_masks: np.ndarray,
    workers_per_constraint: Sequence[float],
    t0: float | None = None,
    t1: float | None = None,
) -> list[dict[str, float]]:
    """For each constraint: workers satisfying it, tasks requiring it, and its load's mean, p50, p95, p99."""
    starts = np.asarray(starts, dtype=float)
    durations = np.asarray(durations, dtype=float)
    masks = np.asarray(task_masks, dtype=np.int64)
    lo = math.floor(starts.min()) if t0 is None else t0
    hi = math.ceil((starts + durations).max()) if t1 is None else t1
    rows = []
    for c in range(NUM_CONSTRAINTS):
        sel = (masks >> c) & 1 == 1
        supply = float(workers_per_constraint[c])
        row: dict[str, float] = {"constraint": c, "workers": supply, "tasks": int(sel.sum())}
        if sel.any() and supply > 0:
            load = per_second_load(starts[sel], durations[sel], supply, lo, hi)
            row.update(
                mean=float(load.mean()),
                p50=float(np.median(load)),
                p95=float(np.percentile(load, 95)),
                p99=float(np.percentile(load, 99)),
            )
        else:
            row.update(mean=0.0, p50=0.0, p95=0.0, p99=0.0)
        rows.append(row)
    return rows


def distribution(x: np.ndarray) -> dict[str, float]:
    """min, mean, p50, p99 and max of ``x`` (zeros when empty)."""
    if len(x) == 0:
        return {"min": 0.0, "mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    return {
        "min": float(x.min()),
        "mean": float(x.mean()),
        "p50": float(np.median(x)),
        "p99": float(np.percentile(x, 99)),
        "max": float(x.max()),
    }


@dataclass
class WorkloadArrays:
    """A workload flattened to per-task arrays (job arrival, duration) plus per-job columns."""

    job_arrival: np.ndarray
    job_tasks: np.ndarray
    job_mean: np.ndarray
    task_start: np.ndarray
    task_duration: np.ndarray
    task_masks: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_jobs(cls, jobs: Iterable[TraceJob]) -> WorkloadArrays:
        arr, ntask, mean, durs = [], [], [], []
        for j in jobs:
            arr.append(j.arrival)
            ntask.append(j.num_tasks)
            mean.append(j.mean_duration)
            durs.extend(j.durations)
        ja = np.asarray(arr, dtype=float)
        jn = np.asarray(ntask, dtype=np.int64)
        return cls(ja, jn, np.asarray(mean, dtype=float), np.repeat(ja, jn), np.asarray(durs, dtype=float))


def workload_summary(w: WorkloadArrays, cutoff: float = SHORT_JOB_CUTOFF) -> dict:
    """Jobs, tasks, span, task durations, tasks per job, short/long split."""
    span = float(w.job_arrival.max() - w.job_arrival.min()) if len(w.job_arrival) else 0.0
    short = int((w.job_mean < cutoff).sum())
    return {
        "jobs": len(w.job_arrival),
        "tasks": len(w.task_duration),
        "first_arrival": float(w.job_arrival.min()) if len(w.job_arrival) else 0.0,
        "arrival_span": span,
        "task_duration": distribution(w.task_duration),
        "tasks_per_job": distribution(w.job_tasks.astype(float)),
        "short_jobs": short,
        "long_jobs": len(w.job_arrival) - short,
        "short_cutoff": cutoff,
        "work": float(w.task_duration.sum()),
    }
