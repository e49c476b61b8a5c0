"""The discrete-event kernel: a clock and pending events, run in (time, scheduling order).

Events run in time order, and events at the same time in the order they were
scheduled (FIFO), so the run order is a pure function of the inputs, never of
object identities or hash seeds.

Pending events are kept as a heap of the distinct pending *times* (plain floats)
and, per time, the list of its events in scheduling order. A heap of floats is
compared float to float; a heap of ``[time, seq, …]`` entries compared each pair
as lists (two generic comparisons a step), which was most of the kernel's cost
on large runs, where thousands of tasks are in flight and each ends at a time of
its own. The order is the same as a heap keyed by ``(time, seq)``: a time's list
is taken whole when the clock reaches it, and an event scheduled for that same
time while its list runs opens a new list for it, after the ones already there.

An event is a list ``[fn, args]``; the list itself is the cancellation handle:
:meth:`Kernel.cancel` blanks its callable in place (lazy deletion), which costs
nothing for the many events that are never cancelled. An event nobody will
cancel (a message's delivery) can be posted as a tuple instead (:meth:`Kernel.post`),
one allocation less; both kinds share the same lists and order.

The loop is deliberately bare; progress reporting runs every ``progress_every``
events or so (checked between times), not per event.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

Event = list  # [fn: Callable | None, args: tuple]; posted events are (fn, args) tuples


class Kernel:
    """Pending events and simulated clock."""

    __slots__ = ("now", "events", "_times", "_at")

    def __init__(self, start: float = 0.0) -> None:
        self.now: float = start
        self.events: int = 0
        self._times: list[float] = []  # heap of the distinct times with pending events
        self._at: dict[float, list] = {}  # time -> its events ([fn, args] lists or (fn, args) tuples), in scheduling order

    def call_at(self, time: float, fn: Callable[..., Any], *args: Any) -> Event:
        """Run ``fn(*args)`` at simulated ``time`` (never earlier than now)."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time!r}, before now={self.now!r}")
        ev = [fn, args]
        same = self._at.get(time)
        if same is None:
            self._at[time] = [ev]
            heappush(self._times, time)
        else:
            same.append(ev)
        return ev

    def post(self, time: float, fn: Callable[..., Any], *args: Any) -> None:
        """:meth:`call_at` for an event that will never be cancelled (no handle)."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time!r}, before now={self.now!r}")
        same = self._at.get(time)
        if same is None:
            self._at[time] = [(fn, args)]
            heappush(self._times, time)
        else:
            same.append((fn, args))

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Event:
        """Run ``fn(*args)`` after ``delay`` simulated seconds (``delay`` ≥ 0)."""
        if delay < 0:
            raise ValueError(f"negative delay {delay!r}")
        return self.call_at(self.now + delay, fn, *args)

    @staticmethod
    def cancel(ev: Event) -> None:
        """Cancel a scheduled event; cancelling twice or after it ran is harmless."""
        ev[0] = None

    def pending(self) -> int:
        """Events still pending (cancelled ones included until their time comes)."""
        return sum(map(len, self._at.values()))

    def run(
        self,
        until: float | None = None,
        progress: Callable[[float, int], None] | None = None,
        progress_every: int = 1 << 15,
    ) -> int:
        """Process events in (time, scheduling) order until none is left or the clock passes ``until``.

        Events at exactly ``until`` run. ``progress(now, events)`` is called about
        every ``progress_every`` events. Returns the number of events run by this
        call; cancelled events are skipped and not counted.
        """
        times, at = self._times, self._at
        pop = heappop
        ran = 0
        limit = float("inf") if until is None else until
        next_report = progress_every if progress is not None else -1
        while times:
            t = times[0]
            if t > limit:
                self.now = limit
                break
            pop(times)
            same = at.pop(t)
            self.now = t
            # The inner loop is the hot path: keep it free of anything but the calls.
            ev = same[0]  # a time's list is never empty
            try:
                for ev in same:
                    fn = ev[0]
                    if fn is not None:
                        fn(*ev[1])
                        ran += 1
            except BaseException:
                self._keep_rest(t, same, ev)
                self.events += ran
                raise
            if ran >= next_report >= 0:
                progress(self.now, self.events + ran)  # type: ignore[misc]
                next_report = ran + progress_every
        if progress is not None and ran + progress_every != next_report:
            progress(self.now, self.events + ran)  # the last events since the last report
        self.events += ran
        return ran

    def _keep_rest(self, t: float, same: list[Event], failed: Event) -> None:
        """A handler raised: the events after it at time ``t`` stay pending, ahead of any scheduled since."""
        i = next(j for j, e in enumerate(same) if e is failed)
        rest = same[i + 1 :]
        if not rest:
            return
        later = self._at.get(t)
        if later is None:
            self._at[t] = rest
            heappush(self._times, t)
        else:
            self._at[t] = rest + later
