"""``schedlab trace info``: a trace's size, durations, load and per-constraint load, as one report dict.

Load figures need a data-center size: ``workers`` (machine-constraint supply is
then the expected count, ``workers × frequency``, from sharma_constraints.json)
or a ``config`` (exact supply from its workers). Task constraints are drawn
exactly as in a simulation (constraint seed 42 by default), so the
per-constraint load is the one the schedulers face (constraint-aware paper,
Figures 2–4).

``trace`` may also be an iterable of jobs (a generated workload, the first N
jobs of a trace), taken as they are: no conventions are applied to them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from schedlab.cluster.bitsets import NUM_CONSTRAINTS
from schedlab.cluster.config import load_config
from schedlab.cluster.generate import machine_constraint_percent
from schedlab.errors import InputError
from schedlab.workload.constraints import PAPER_CONSTRAINT_SEED, TaskConstraintSampler
from schedlab.workload.stats import (
    WorkloadArrays,
    load_summary,
    per_constraint_load,
    per_second_load,
    workload_summary,
)
from schedlab.workload.trace import TraceConventions, TraceJob, read_trace


def trace_report(
    trace: str | os.PathLike | Iterable[TraceJob],
    *,
    label: str | None = None,
    workers: int | None = None,
    config: str | None = None,
    constraints: bool = True,
    constraint_seed: int = PAPER_CONSTRAINT_SEED,
    conventions: TraceConventions | None = None,
) -> dict[str, Any]:
    if isinstance(trace, str | os.PathLike):
        w = WorkloadArrays.from_jobs(read_trace(trace, conventions))
        label = label or str(trace)
    else:
        w = WorkloadArrays.from_jobs(trace)
    if len(w.task_duration) == 0:
        raise InputError(label or "trace", "the trace has no jobs")
    report: dict[str, Any] = {"trace": label or "custom", "workload": workload_summary(w)}
    supply = None
    if config is not None:
        cl = load_config(config)
        if workers is not None and workers != cl.n:
            raise InputError("--workers", f"{workers} workers requested but config {config} has {cl.n}")
        workers = cl.n
        supply = [sum(1 for m in cl.machine_masks if m >> c & 1) for c in range(NUM_CONSTRAINTS)]
    if workers is None:
        return report
    if workers < 1:
        raise InputError("--workers", f"must be >= 1, got {workers}")
    report["workers"] = workers
    report["load"] = load_summary(per_second_load(w.task_start, w.task_duration, workers))
    if constraints:
        if supply is None:
            supply = [workers * p / 100.0 for p in machine_constraint_percent()]
        masks = np.asarray(TaskConstraintSampler(constraint_seed).sample(len(w.task_duration)), dtype=np.int64)
        report["per_constraint_load"] = per_constraint_load(w.task_start, w.task_duration, masks, supply)
    return report
