"""Shared non-fixture helpers for the whole suite: ``from tests.helpers import ...``.

* :func:`write_lines`, :func:`jobs` — tiny traces built by hand.
* :func:`assert_no_over_allocation` — the independent over-allocation check: from a run's task
  table alone, never trusting the worker pool.

Fixtures live in ``conftest.py`` files; a folder's own helpers in its ``helpers.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.workload.trace import TraceJob


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def jobs(*specs: tuple[float, list[float]]) -> list[TraceJob]:
    """TraceJobs from (arrival, durations) pairs."""
    return [TraceJob(a, sum(d) / len(d), list(d), i + 1) for i, (a, d) in enumerate(specs)]


def assert_no_over_allocation(tasks, cluster, requests=None, preempted_runs=()) -> None:
    """The independent over-allocation check: from a run's task table alone, never trusting the worker pool.

    Sweeps every worker's starts and ends in time order (ends first at equal
    times: a slot freed at t may be taken at t) and checks that at no instant a
    slot worker runs two tasks, or a multi-resource worker's running requests
    exceed its capacity. Killed runs of preempted tasks (``preempted_runs``:
    ``(task, worker, start, end)``) hold their worker too.
    """
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
