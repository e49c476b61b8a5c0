"""The independent over-allocation check: from a run's task table alone, never trusting the worker pool.

Sweeps every worker's starts and ends in time order (ends first at equal
times: a slot freed at t may be taken at t) and checks that at no instant a
slot worker runs two tasks, or a multi-resource worker's running requests
exceed its capacity. Killed runs of preempted tasks (``preempted_runs``:
``(task, worker, start, end)``) hold their worker too.
"""

from __future__ import annotations

import numpy as np


def assert_no_over_allocation(tasks, cluster, requests=None, preempted_runs=()) -> None:
    events = []
    for task, worker, start, end in zip(tasks.task, tasks.worker, tasks.start, tasks.end, strict=True):
        if worker >= 0 and end > start:  # a zero-length task holds nothing
            events.append((end, 0, worker, task))
            events.append((start, 1, worker, task))
    for task, worker, start, end in preempted_runs:
        if end > start:
            events.append((end, 0, worker, task))
            events.append((start, 1, worker, task))
    events.sort()
    if cluster.slot_mode:
        busy: dict[int, int] = {}
        for _time, kind, w, task in events:
            if kind == 1:
                assert w not in busy, f"worker {w} ran tasks {busy[w]} and {task} at once"
                busy[w] = task
            else:
                busy.pop(w, None)
        return
    assert requests is not None, "the multi-resource check needs each task's request"
    cap = np.asarray(cluster.capacity, dtype=float)
    used = np.zeros_like(cap)
    for _time, kind, w, task in events:
        req = np.asarray(requests[task], dtype=float)
        used[w] += req if kind == 1 else -req
        assert (used[w] <= cap[w] + 1e-9).all(), f"worker {w} over-allocated at task {task}: {used[w]} > {cap[w]}"
