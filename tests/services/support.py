"""Checks of a finished run (real or simulated) that do not trust the scheduler or the workers."""

from __future__ import annotations

import numpy as np

from allocation import assert_no_over_allocation
from schedlab.cluster import Cluster


def assert_valid_schedule(result, cluster: Cluster) -> None:
    """Every task ran to completion exactly once, on a worker with its constraints, without over-allocation.

    A task preempted by fair sharing starts once more per preemption; its
    killed runs (``result.extra["preempted_runs"]``) count in the allocation check.
    """
    t = result.tasks
    s = result.summary
    assert s["counters"]["tasks_unfinished"] == 0, "a task never finished"
    assert s["counters"]["jobs_incomplete"] == 0, "a job never completed"
    preempted = result.extra.get("preempted_runs", [])
    runs = np.bincount([p[0] for p in preempted], minlength=len(t)) if preempted else np.zeros(len(t), dtype=int)
    assert (t.starts.to_numpy() == 1 + runs).all(), "a task started more often than it was preempted"
    for key in ("duplicate_starts", "duplicate_finishes", "duplicate_reports", "refused_launches", "handler_errors", "bad_record_messages", "unknown_task_events"):
        assert s["counters"].get(key, 0) == 0, f"{key} = {s['counters'][key]}"
    masks = np.array(cluster.machine_masks, dtype=object)
    for task, worker, need in zip(t.task, t.worker, t.constraints, strict=True):
        assert worker >= 0, f"task {task} has no worker"
        assert int(need) & ~int(masks[worker]) == 0, f"task {task} ran on worker {worker} without its constraints"
    assert_no_over_allocation(t, cluster, result.extra.get("requests"), preempted)
