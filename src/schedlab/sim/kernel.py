"""The discrete-event kernel: one event heap, a clock, deterministic tie-breaking.

An event is a list ``[time, seq, fn, args]``. ``seq`` is a strictly increasing
insertion counter, so two events at the same time always run in the order they
were scheduled (FIFO) and the heap never compares callables: the run order is a
pure function of the inputs, never of object identities or hash seeds.

Events are lists rather than tuples so that the entry itself is the cancellation
handle: :meth:`Kernel.cancel` blanks its callable in place (lazy deletion), which
costs nothing for the many events that are never cancelled.

The loop is deliberately bare; progress reporting runs every ``progress_every``
events, not per event.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

Event = list  # [time: float, seq: int, fn: Callable | None, args: tuple]


class Kernel:
    """Event heap and simulated clock."""

    __slots__ = ("now", "events", "_heap", "_seq")

    def __init__(self, start: float = 0.0) -> None:
        self.now: float = start
        self.events: int = 0
        self._heap: list[Event] = []
        self._seq: int = 0

    def call_at(self, time: float, fn: Callable[..., Any], *args: Any) -> Event:
        """Run ``fn(*args)`` at simulated ``time`` (never earlier than now)."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time!r}, before now={self.now!r}")
        self._seq += 1
        ev = [time, self._seq, fn, args]
        heappush(self._heap, ev)
        return ev

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Event:
        """Run ``fn(*args)`` after ``delay`` simulated seconds (``delay`` ≥ 0)."""
        if delay < 0:
            raise ValueError(f"negative delay {delay!r}")
        self._seq += 1
        ev = [self.now + delay, self._seq, fn, args]
        heappush(self._heap, ev)
        return ev

    @staticmethod
    def cancel(ev: Event) -> None:
        """Cancel a scheduled event; cancelling twice or after it ran is harmless."""
        ev[2] = None

    def pending(self) -> int:
        """Events still in the heap (cancelled ones included until popped)."""
        return len(self._heap)

    def run(
        self,
        until: float | None = None,
        progress: Callable[[float, int], None] | None = None,
        progress_every: int = 1 << 15,
    ) -> int:
        """Process events in (time, seq) order until the heap is empty or the clock passes ``until``.

        Events at exactly ``until`` run. ``progress(now, events)`` is called every
        ``progress_every`` events. Returns the number of events run by this call;
        cancelled events are skipped and not counted.
        """
        heap = self._heap
        pop = heappop
        ran = 0
        limit = float("inf") if until is None else until
        while heap:
            chunk = progress_every
            # The inner loop is the hot path: keep it free of anything but the heap.
            if until is None:
                while chunk and heap:
                    ev = pop(heap)
                    fn = ev[2]
                    if fn is None:
                        continue
                    self.now = ev[0]
                    fn(*ev[3])
                    chunk -= 1
            else:
                while chunk and heap:
                    if heap[0][0] > limit:
                        break
                    ev = pop(heap)
                    fn = ev[2]
                    if fn is None:
                        continue
                    self.now = ev[0]
                    fn(*ev[3])
                    chunk -= 1
            ran += progress_every - chunk
            if heap and heap[0][0] > limit:
                self.now = limit
                break
            if progress is not None:
                progress(self.now, self.events + ran)
        self.events += ran
        return ran
