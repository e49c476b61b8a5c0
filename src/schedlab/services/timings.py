"""What a service node measures of the tasks it handles, as histograms — plain Python, no exporter.

A node's ``/metrics`` (:mod:`~.metrics`) exposes these with ``prometheus_client``;
they live here, in the node, so the same node code runs unchanged in the
embedded cluster and under deterministic simulation (which have no exporter).

* **Allocation time** (``allocation``, worker hosts): a task's start on its
  worker − its job's arrival at the GM, the Megha paper's allocation time.
  The GM stamps the arrival; it travels with the task to the LM and the host
  (``TaskWire.arrival``). GM and host read different clocks when they are on
  different machines: the figure carries their offset (as the run records do).
* **Components** (``components``, GMs and LMs): each allocation-phase mark a
  node makes (:class:`~schedlab.metrics.observer.Observer`) closes a span of
  the task's allocation time, attributed to the mark's component; a node
  observes the spans that begin and end with its own stamps — at a GM, from
  the task's arrival to its first mark and between its marks; at an LM,
  between its own marks (the span from the GM's placement to the LM's first
  mark crosses processes and is left to the client's records).

Choices: fixed buckets from 1 ms to 60 s (allocation times in the papers are
milliseconds to tens of seconds); per-task stamps are kept only until the
task's end and at most ``MAX_OPEN`` of them (the oldest forgotten first), so
memory stays bounded whatever is lost.
"""

from __future__ import annotations

import bisect
import math
from collections import OrderedDict
from collections.abc import Callable

from schedlab.metrics.recorder import COMPONENTS
from schedlab.services.records import FINISHED, MARK, REPORTED, Emit, Event
from schedlab.services.tasks import global_id

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, math.inf)
MAX_OPEN = 1 << 16


class Histogram:
    """Counts per bucket (upper bounds :data:`BUCKETS`, not cumulative), their sum and count."""

    __slots__ = ("counts", "sum", "count")

    def __init__(self) -> None:
        self.counts = [0] * len(BUCKETS)
        self.sum = 0.0
        self.count = 0

    def observe(self, v: float) -> None:
        v = max(0.0, v)
        self.counts[bisect.bisect_left(BUCKETS, v)] += 1
        self.sum += v
        self.count += 1

    def cumulative(self) -> list[tuple[float, int]]:
        """``(upper bound, observations <= it)`` per bucket, as an exposition gives them."""
        out, n = [], 0
        for bound, c in zip(BUCKETS, self.counts, strict=True):
            n += c
            out.append((bound, n))
        return out


class ComponentTimer:
    """Wraps a node's record emitter: every mark also closes a span of the task's allocation time (see above)."""

    def __init__(self, emit: Emit, arrival: Callable[[int], float | None] | None = None) -> None:
        self.inner = emit
        self.arrival = arrival  # global task id -> its arrival here (a GM), None elsewhere
        self.components = {name: Histogram() for name in COMPONENTS}
        self._last: OrderedDict[tuple[int, int], float] = OrderedDict()

    def emit(self, run: int, event: Event) -> None:
        kind, local = event[0], event[1]
        key = (run, local)
        if kind == MARK:
            now, component = event[2], event[3]
            prev = self._last.pop(key, None)
            if prev is None and self.arrival is not None:
                prev = self.arrival(global_id(run, local))
            if prev is not None and 0 <= component < len(COMPONENTS):
                self.components[COMPONENTS[component]].observe(now - prev)
            self._last[key] = now
            if len(self._last) > MAX_OPEN:
                self._last.popitem(last=False)
        elif kind in (REPORTED, FINISHED):
            self._last.pop(key, None)
        self.inner(run, event)
