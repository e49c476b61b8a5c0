"""The availability profile of one site: free processors over future time, as a sorted step function.

Backfilling (Mu'alem & Feitelson, the paper's reference [13]; Section II: "each
site … employing the conservative backfill queuing policy") plans with a
*profile*: for every future instant, how many processors are not claimed by a
running job (until its *estimated* end) or by a queued job's reservation.

Representation: ``times``, a Python list of strictly increasing breakpoints,
and ``free``, the free processors on ``[times[i], times[i+1])`` (the last
segment runs to infinity and, once every claim has ended, holds all
processors). ``free`` is a ``bytearray`` when the site has at most 255
processors (the paper's 64, and most sites) and an ``array('i')`` otherwise.
A herded site's profile has hundreds of segments, and compression asks, again
and again, "where does the next run of at least *s* free processors start and
end?". Those scans run in C: a query builds (once per size until the profile
next changes) a 0/1 *mask* of the segments with at least *s* free — one
``bytes.translate`` on the bytearray, one NumPy comparison on the wide array —
and walks it with ``bytes.find`` / ``rfind``, one call per run instead of one
interpreted step per segment. Adding to a range of segments is one
``translate`` (or one NumPy slice update) as well. A mask is worth building
only if it is used more than once: a compression changes the profile between
almost every two queries, and most windows it checks span a few segments, so
:meth:`Profile.earliest_move` reads up to ``_SCAN`` segments of ``free``
directly before it turns to a mask. The results are exactly those of the plain
per-segment scans, which the tests check against brute force.

Breakpoints are only created, never merged, while the plan changes; the past
is cut off by :meth:`Profile.trim`, and :meth:`Profile.merge` drops breakpoints
that no longer change the value (after many reservations have moved).

All claims are half-open intervals ``[start, end)``; a job whose estimated
runtime is zero claims nothing.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from typing import Any

import numpy as np

try:  # the compiled passes (setup.py builds them where a C compiler is at hand)
    from schedlab.grid import _compress as compiled
except ImportError:  # pragma: no cover - depends on the install
    compiled = None

INF = float("inf")

# Largest processor count stored one byte per segment.
_BYTE_MAX = 255
# _AT_LEAST[s]: translation table mapping a free count to 1 if it is at least s, else 0.
_AT_LEAST = [b"\x00" * s + b"\x01" * (256 - s) for s in range(_BYTE_MAX + 1)]
# _ADD[delta]: translation table adding delta (-255..255) to a free count, by Python indexing
# (negative deltas from the end); only ever applied where the result stays within 0..255:
# claims go where there is room, releases return what was claimed.
_ADD = [bytes(range(d, 256)) + b"\xff" * d for d in range(256)] + [
    b"\x00" * -d + bytes(range(256 + d)) for d in range(-255, 0)
]


# Above this many segments, NumPy finds a maximum faster than the built-in `max` (whose cost is
# per element).
_LONG = 100
_DTYPE = {False: np.uint8, True: np.int32}
# Segments a window check reads one by one before it walks a mask instead.
_SCAN = 8


class Profile:
    """Free processors of one site as a step function of time."""

    __slots__ = ("capacity", "times", "free", "_masks", "_wide", "found")

    def __init__(self, capacity: int, now: float = 0.0) -> None:
        self.capacity = capacity
        self.times: list[float] = [now]
        self._wide = capacity > _BYTE_MAX
        # bytearray up to 255 processors, array("i") beyond: the narrow branches use bytes.translate,
        # the wide ones numpy; typed Any because the branch (self._wide), not the type, tells them apart.
        self.free: Any = (
            array("i", [capacity]) if self._wide else bytearray([capacity])
        )
        self._masks: dict[int, bytes] = {}
        # The segment holding the start `earliest_move` last returned (a hint for `move`).
        self.found = 0

    def _mask(self, size: int) -> bytes:
        """``mask[k] == 1`` iff segment ``k`` has at least ``size`` free; cached in ``_masks`` until the next change.

        Callers look in ``_masks`` first (``self._masks.get(size) or self._mask(size)``): a hit is
        one dict lookup, and a mask is never empty.
        """
        if self._wide:
            mask = (np.frombuffer(self.free, dtype=np.int32) >= size).tobytes()
        else:
            mask = self.free.translate(_AT_LEAST[size])
        self._masks[size] = mask
        return mask

    @property
    def narrow(self) -> bool:
        """True when ``free`` is a bytearray (at most 255 processors): the compiled pass works on those."""
        return not self._wide

    def changed(self) -> None:
        """Say that ``times`` or ``free`` were changed from outside (the compiled pass): cached masks go."""
        self._masks.clear()

    # -- queries ------------------------------------------------------------------------------
    def earliest(self, now: float, size: int, duration: float) -> float:
        """The earliest ``t >= now`` such that ``size`` processors are free on all of ``[t, t + duration)``.

        Assumes ``times[0] <= now`` (call :meth:`trim` first) and ``size <= capacity``.
        A job with no duration needs nothing and fits at once.
        """
        if duration <= 0:
            return now
        if compiled is not None and not self._wide:
            return compiled.earliest(self.times, self.free, now, size, duration)  # the same scan in C
        times = self.times
        mask = self._masks.get(size) or self._mask(size)
        j = bisect_right(times, now) - 1  # the segment holding `now`
        start = now
        while True:
            if not mask[j]:
                j = mask.find(1, j)  # the last segment holds every processor: always found
                start = times[j]
            k = mask.find(0, j)  # the end of this run of room
            if k < 0 or times[k] >= start + duration:
                return start
            j = k

    def earliest_move(
        self, lo: float, a: float, hi: float, size: int, claim: float, duration: float
    ) -> float | None:
        """Earliest start in ``[lo, hi)`` of a window reaching ``a`` or later, for a job claiming ``[claim, claim + duration)``.

        Used to move a job into processors freed from ``a`` on: a window that
        starts before ``a`` must have ``size`` free all the way to ``a``, so the
        search starts where that run of room begins (scanning back from ``a``),
        not at ``lo``. Only ``[start, claim)`` of a window needs room: from
        ``claim`` on it lies in the job's own claim. Returns ``None`` when no
        start before ``hi`` (``<= claim``) fits; a start found leaves the index of the
        segment holding it in ``found``.
        """
        times = self.times
        free = self.free
        j = bisect_left(times, a) - 1  # the segment just before `a`
        if j >= 0 and free[j] >= size:
            mask = self._masks.get(size) or self._mask(size)
            k = mask.rfind(0, 0, j) + 1  # where the run of room through `a` begins
            start = times[k]
            if start < lo:
                start = lo
                j = bisect_right(times, lo, k) - 1
            else:
                j = k
        else:
            start = a
            if j + 1 < len(times) and times[j + 1] == a:
                j += 1  # `a` is a breakpoint: its segment starts there
        if start >= hi:
            return None
        # `j` is the segment holding `start`.
        if free[j] >= size:
            # Most windows tried span a few segments, and the profile has changed since the last
            # query (a mask would be built for one use): look at those segments directly.
            end = start + duration
            if end > claim:
                end = claim
            n = len(times)
            k = j + 1
            last = j + _SCAN if j + _SCAN < n else n
            while k < last and times[k] < end and free[k] >= size:
                k += 1
            if k == n or times[k] >= end:
                self.found = j
                return start
            if free[k] < size:
                j = k  # the first segment without room, before `end`
        mask = self._masks.get(size) or self._mask(size)
        while True:
            if not mask[j]:
                j = mask.find(1, j)
                if j < 0:
                    return None
                start = times[j]
                if start >= hi:
                    return None
            end = start + duration
            if end > claim:
                end = claim
            k = mask.find(0, j)
            if k < 0 or times[k] >= end:
                self.found = j
                return start
            j = k

    def longest_run(self, a: float, b: float, size: int) -> float:
        """Length of the longest run of time with ``size`` processors free that meets ``[a, b)`` (``inf`` if unbounded)."""
        times = self.times
        mask = self._masks.get(size) or self._mask(size)
        k = bisect_right(times, a) - 1
        last = bisect_left(times, b)  # runs must start at a segment before this one
        if mask[k]:
            k = mask.rfind(0, 0, k) + 1
        else:
            k = mask.find(1, k, last)
            if k < 0:
                return 0.0
        best = 0.0
        while True:
            end = mask.find(0, k)
            if end < 0:
                return INF  # the last segment lasts for ever
            if times[end] - times[k] > best:
                best = times[end] - times[k]
            k = mask.find(1, end, last)
            if k < 0:
                return best

    def max_free(self, a: float, b: float) -> int:
        """Most processors free at any instant of ``[a, b)``."""
        times = self.times
        i = bisect_right(times, a) - 1
        j = bisect_left(times, b, i)
        if j - i > _LONG:
            return int(np.frombuffer(self.free, _DTYPE[self._wide])[i:j].max())
        return max(self.free[i:j]) if j > i else self.free[i]

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
        self._masks.clear()
        return i

    def add(self, start: float, end: float, delta: int) -> None:
        """Add ``delta`` free processors on ``[start, end)`` (negative to claim, positive to release)."""
        if not end > start:
            return
        if compiled is not None and not self._wide:
            compiled.add(self.times, self.free, start, end, delta)  # the same change, in C
            self._masks.clear()
            return
        i = self._breakpoint(start)
        j = self._breakpoint(end)
        free = self.free
        if self._wide:
            np.frombuffer(free, dtype=np.int32)[i:j] += delta
        else:
            free[i:j] = free[i:j].translate(_ADD[delta])
        self._masks.clear()

    def move(
        self, old: float, new: float, duration: float, size: int, a: float, b: float, at: int = -1
    ) -> tuple[int, int]:
        """:meth:`shift`, then the most processors free at any instant of ``[a, b)`` (:meth:`max_free`)."""
        return self.shift(old, new, duration, size, at), self.max_free(a, b)

    def shift(self, old: float, new: float, duration: float, size: int, at: int = -1) -> int:
        """Move a claim of ``size`` processors for ``duration`` from ``old`` to ``new < old``.

        The same as releasing ``[old, old + duration)`` and claiming ``[new, new + duration)``,
        done as one claim of ``[new, min(new + duration, old))`` and one release of the part of
        the old claim the new one leaves, ``[max(new + duration, old), old + duration)``.
        Returns, after the move, the most processors free at any instant of that released part.
        ``at``, when given, is the segment holding ``new`` (``found`` after ``earliest_move``
        returned ``new``, with no change since), which spares a search.
        """
        times = self.times
        free = self.free
        # The four ends, in order: claim [new, p1), release [p2, p3); unrolled, as this is the
        # innermost step of a compression.
        p1 = new + duration
        p2 = old
        if p1 > p2:
            p1, p2 = p2, p1
        p3 = old + duration
        n = len(times)
        i0 = bisect_left(times, new) if at < 0 else at if times[at] == new else at + 1
        if i0 == n or times[i0] != new:
            times.insert(i0, new)
            free.insert(i0, free[i0 - 1])
            n += 1
        i1 = bisect_left(times, p1, i0)
        if i1 == n or times[i1] != p1:
            times.insert(i1, p1)
            free.insert(i1, free[i1 - 1])
            n += 1
        i2 = bisect_left(times, p2, i1)
        if i2 == n or times[i2] != p2:
            times.insert(i2, p2)
            free.insert(i2, free[i2 - 1])
            n += 1
        i3 = bisect_left(times, p3, i2)
        if i3 == n or times[i3] != p3:
            times.insert(i3, p3)
            free.insert(i3, free[i3 - 1])
        if self._wide:
            view = np.frombuffer(free, dtype=np.int32)
            view[i0:i1] -= size
            view[i2:i3] += size
            cap = int(view[i2:i3].max()) if i3 > i2 else int(view[i2])
            del view  # a buffer export blocks resizing the array
        else:
            # Most moves claim and release one segment each: plain item updates then.
            if i1 - i0 == 1:
                free[i0] -= size
            else:
                free[i0:i1] = free[i0:i1].translate(_ADD[-size])
            if i3 - i2 == 1:
                cap = free[i2] + size
                free[i2] = cap
            else:
                freed = free[i2:i3].translate(_ADD[size])
                free[i2:i3] = freed
                cap = max(freed) if i3 > i2 else free[i2]
        self._masks.clear()
        return cap

    def trim(self, now: float) -> None:
        """Forget the past: keep one breakpoint at or before ``now``."""
        times = self.times
        i = bisect_right(times, now) - 1
        if i > 0:
            del times[:i]
            del self.free[:i]
            self._masks.clear()

    def merge(self) -> None:
        """Drop breakpoints where the free count does not change."""
        if compiled is not None and not self._wide:
            compiled.merge(self.times, self.free)  # the same, in place, without a NumPy round trip
            self._masks.clear()
            return
        free = np.frombuffer(self.free, dtype=np.int32 if self._wide else np.uint8)
        keep = np.flatnonzero(free[1:] != free[:-1]) + 1
        times = self.times
        self.times = [times[0], *[times[k] for k in keep.tolist()]]
        kept = free[np.concatenate(([0], keep))]
        del free  # the old buffer's export
        if self._wide:
            self.free = array("i", kept.tolist())
        else:
            self.free = bytearray(kept.tobytes())
        self._masks.clear()

    def __len__(self) -> int:
        return len(self.times)
