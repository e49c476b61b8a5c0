"""What a service node measures of the tasks it handles, as histograms — plain Python, no exporter.

A node's ``/metrics`` (:mod:`~.metrics`) exposes these with ``prometheus_client``;
they live here, in the node, so the same node code runs unchanged in the
embedded cluster and under deterministic simulation (which have no exporter).

* **Allocation time** (``allocation``, worker hosts): a task's start on its
  worker − its job's arrival at the GM, the Megha paper's allocation time.
  The GM stamps the arrival; it travels with the task to the LM and the host
  (``TaskWire.arrival``). GM and host read different clocks when they are on
  different machines: the figure carries their offset (as the run records do).
* **Components** (``components``, every node; the four of
  :data:`~schedlab.metrics.recorder.COMPONENTS`): each allocation-phase mark a
  node makes (:class:`~schedlab.metrics.observer.Observer`) closes a span of
  the task's allocation time, attributed to the mark's component — at a GM,
  from the task's arrival to its first mark and between its marks; at an LM,
  from the GM's last mark (the request's ``communication``) and between its
  own marks; at a worker host, from the LM's last mark to the start
  (``communication``). Spans that cross processes are measured with the
  sender's latest mark, which travels with the task like the arrival
  (``TaskWire.marked``, kept in the store's ``marked``): the stamps of two
  clocks, with their offset in the figure. ``worker_queuing`` is observed by
  no Megha node (no task waits in a worker's queue: a host starts what it is
  given at once): its histogram is exposed, empty, so that every node shows
  the four.

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
from schedlab.services.tasks import TaskStore, global_id

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


def component_histograms() -> dict[str, Histogram]:
    """One empty histogram per allocation-time component."""
    return {name: Histogram() for name in COMPONENTS}


class ComponentTimer:
    """Wraps a node's record emitter: every mark also closes a span of the task's allocation time (see above).

    ``store``: the node's task store — its ``marked`` holds each task's latest mark, the sender's (from the wire)
    or this node's own, whichever came last; ``arrival`` (a GM): the span before the first mark starts there."""

    def __init__(self, emit: Emit, arrival: Callable[[int], float | None] | None = None, store: TaskStore | None = None) -> None:
        self.inner = emit
        self.arrival = arrival  # global task id -> its arrival here (a GM), None elsewhere
        self.store = store
        self.components = component_histograms()
        self._last: OrderedDict[tuple[int, int], float] = OrderedDict()

    def emit(self, run: int, event: Event) -> None:
        kind, local = event[0], event[1]
        key = (run, local)
        if kind == MARK:
            now, component = event[2], event[3]
            prev = self._last.pop(key, None)
            store = self.store
            if store is not None:
                gid = global_id(run, local)
                prev = store.marked.get(gid, prev)
                if gid in store:
                    store.marked[gid] = now
                if prev is None and self.arrival is not None:
                    prev = self.arrival(gid)
            elif prev is None and self.arrival is not None:
                prev = self.arrival(global_id(run, local))
            if prev is not None and 0 <= component < len(COMPONENTS):
                self.components[COMPONENTS[component]].observe(now - prev)
            self._last[key] = now
            if len(self._last) > MAX_OPEN:
                self._last.popitem(last=False)
        elif kind in (REPORTED, FINISHED):
            self._last.pop(key, None)
        self.inner(run, event)
