"""The availability profile of one site: free processors over future time, as a sorted step function.

Backfilling (Mu'alem & Feitelson, the paper's reference [13]; Section II: "each
site … employing the conservative backfill queuing policy") plans with a
*profile*: for every future instant, how many processors are not claimed by a
running job (until its *estimated* end) or by a queued job's reservation.

Representation: two parallel Python lists, ``times`` (strictly increasing
breakpoints) and ``free`` (free processors on ``[times[i], times[i+1])``; the
last segment runs to infinity and, once every claim has ended, holds all
processors). Plain lists beat numpy here: a site's profile has tens of
segments, and the operations are short scans plus ``list.insert`` (a memmove).
Breakpoints are only created, never merged, while the plan changes; the past
is cut off by :meth:`Profile.trim`, and :meth:`Profile.merge` drops breakpoints
that no longer change the value (after many reservations have moved).

All claims are half-open intervals ``[start, end)``; a job whose estimated
runtime is zero claims nothing.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right


class Profile:
    """Free processors of one site as a step function of time."""

    __slots__ = ("capacity", "times", "free")

    def __init__(self, capacity: int, now: float = 0.0) -> None:
        self.capacity = capacity
        self.times: list[float] = [now]
        self.free: list[int] = [capacity]

    # -- queries ------------------------------------------------------------------------------
    def earliest(self, now: float, size: int, duration: float) -> float:
        """The earliest ``t >= now`` such that ``size`` processors are free on all of ``[t, t + duration)``.

        Assumes ``times[0] <= now`` (call :meth:`trim` first) and ``size <= capacity``.
        A job with no duration needs nothing and fits at once.
        """
        if duration <= 0:
            return now
        times = self.times
        free = self.free
        n = len(times)
        j = bisect_right(times, now) - 1  # the segment holding `now`
        start = now
        while True:
            end = start + duration
            k = j
            while k < n and times[k] < end:
                if free[k] < size:
                    break
                k += 1
            else:
                return start
            # Segment k is too full: the next candidate start is where it ends.
            j = k + 1
            start = times[j]

    def earliest_move(
        self, lo: float, a: float, hi: float, size: int, claim: float, duration: float
    ) -> float | None:
        """Earliest start in ``[lo, hi)`` of a window reaching ``a`` or later, for a job claiming ``[claim, claim + duration)``.

        Used to move a job into processors freed from ``a`` on: a window that
        starts before ``a`` must have ``size`` free all the way to ``a``, so the
        search starts where that run of room begins (scanning back from ``a``),
        not at ``lo``. Only ``[start, claim)`` of a window needs room: from
        ``claim`` on it lies in the job's own claim. Returns ``None`` when no
        start before ``hi`` (``<= claim``) fits.
        """
        times = self.times
        free = self.free
        n = len(times)
        j = bisect_left(times, a) - 1  # the segment just before `a`
        start = a
        while j >= 0 and free[j] >= size:
            start = times[j]
            if start <= lo:
                start = lo
                break
            j -= 1
        if start >= hi:
            return None
        j = bisect_right(times, start) - 1
        while True:
            # Skip start segments with too little room: the cheap, common case.
            while free[j] < size:
                j += 1
                if j >= n:
                    return None
                start = times[j]
                if start >= hi:
                    return None
            end = start + duration
            if end > claim:
                end = claim
            k = j + 1
            while k < n and times[k] < end:
                if free[k] < size:
                    break
                k += 1
            else:
                return start
            j = k + 1
            if j >= n:
                return None
            start = times[j]
            if start >= hi:
                return None

    def free_at(self, t: float) -> int:
        """Free processors at instant ``t`` (``t >= times[0]``)."""
        return self.free[bisect_right(self.times, t) - 1]

    # -- updates ------------------------------------------------------------------------------
    def _breakpoint(self, t: float) -> int:
        """Index of the breakpoint at ``t``, inserted (splitting a segment) if absent."""
        times = self.times
        i = bisect_left(times, t)
        if i < len(times) and times[i] == t:
            return i
        times.insert(i, t)
        self.free.insert(i, self.free[i - 1])
        return i

    def add(self, start: float, end: float, delta: int) -> None:
        """Add ``delta`` free processors on ``[start, end)`` (negative to claim, positive to release)."""
        if not end > start:
            return
        i = self._breakpoint(start)
        j = self._breakpoint(end)
        free = self.free
        for k in range(i, j):
            free[k] += delta

    def trim(self, now: float) -> None:
        """Forget the past: keep one breakpoint at or before ``now``."""
        times = self.times
        i = bisect_right(times, now) - 1
        if i > 0:
            del times[:i]
            del self.free[:i]

    def merge(self) -> None:
        """Drop breakpoints where the free count does not change."""
        times = self.times
        free = self.free
        nt = [times[0]]
        nf = [free[0]]
        last = free[0]
        for t, f in zip(times, free, strict=True):
            if f != last:
                nt.append(t)
                nf.append(f)
                last = f
        self.times = nt
        self.free = nf

    def __len__(self) -> int:
        return len(self.times)
