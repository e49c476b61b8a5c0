"""Live figures of a replay in progress, for ``schedlab dashboard --cluster``: allocation times over a sliding window.

A task's allocation time and its four components (framework queuing,
processing, worker queuing, communication; Megha paper, Section V) are known
only where the task's marks from its GM and LM and its start on a worker host
meet: in the client that replays the trace (:mod:`~.records`). So the client
keeps an :class:`AllocationWindow` — the tasks completed in the last
``WINDOW_SECONDS`` — and every ``LIVE_EVERY`` seconds publishes a snapshot of
it (percentiles of the allocation time, mean and percentiles of each
component, tasks and jobs done) to the cluster's live queue, ``<name>.live``.

That queue exists only while a dashboard consumes it: the dashboard declares it
exclusive and auto-deleted (gone when it disconnects, so nothing is left behind),
and without it the broker drops the snapshots — a replay with no dashboard
costs one small publish a second. Snapshots are signed like every other
message of the cluster (:mod:`~.auth`) and checked by the dashboard.

Percentiles here are exact over the window (a sort of at most a window's tasks
each second); a window holds the tasks *completed* in its span, since that is
when a task's record is whole.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import numpy as np

from schedlab.metrics.recorder import COMPONENTS

LIVE_EVERY = 1.0
WINDOW_SECONDS = 60.0
LIVE_KIND = "schedlab.live"


def live_queue(cluster_name: str) -> str:
    """The queue a dashboard consumes a cluster's live snapshots from."""
    return f"{cluster_name}.live"


def _stats(v: np.ndarray) -> dict[str, float]:
    if not len(v):
        return {}
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    return {"mean": float(v.mean()), "p50": float(p50), "p90": float(p90), "p99": float(p99), "max": float(v.max())}


class AllocationWindow:
    """The allocation times (and components) of the tasks completed in the last ``span`` seconds."""

    def __init__(self, span: float = WINDOW_SECONDS, clock: Any = time.time) -> None:
        self.span = span
        self.clock = clock
        self.items: deque[tuple[float, float, float, float, float]] = deque()  # (when, the four components)

    def add(self, components: tuple[float, float, float, float]) -> None:
        self.items.append((self.clock(), *components))

    def snapshot(self) -> dict[str, Any]:
        """Count, allocation-time statistics and per-component statistics over the window."""
        cut = self.clock() - self.span
        items = self.items
        while items and items[0][0] < cut:
            items.popleft()
        if not items:
            return {"window_s": self.span, "tasks": 0, "allocation_time": {}, "components": {}}
        a = np.asarray(items, dtype=float)[:, 1:]
        return {
            "window_s": self.span,
            "tasks": len(a),
            "allocation_time": _stats(a.sum(axis=1)),
            "components": {name: _stats(a[:, k]) for k, name in enumerate(COMPONENTS)},
        }
