"""Tasks waiting for resources: FIFO queues per task class, searched in arrival order.

A *class* groups tasks that are interchangeable for placement (same constraint
mask, same resource request). Classes are kept in a list sorted by the task id
(= arrival order) of their head, so "the earliest waiting task that fits here"
is found by scanning classes in that order and stopping at the first whose key
fits — instead of scanning every waiting task. Used by the exact view of
``ideal``/``centralized`` and by Megha's Global Masters.
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from collections.abc import Callable, Hashable, Iterator


class WaitingClasses:
    """FIFO waiting tasks grouped by class key."""

    __slots__ = ("queues", "heads", "count", "_order", "_front")

    def __init__(self) -> None:
        self.queues: dict[Hashable, deque[int]] = {}
        self.heads: list[tuple[int, Hashable]] = []  # (order of the head, key), sorted
        self.count = 0
        # A task's place in the order is its tid, unless it was pushed to the very front
        # of the whole queue (push_front): then a negative number below every other.
        self._order: dict[int, int] = {}
        self._front = 0

    def __len__(self) -> int:
        return self.count

    def add(self, tid: int, key: Hashable) -> None:
        """Append ``tid`` to its class (tids must grow within a class for FIFO order)."""
        q = self.queues.get(key)
        if q is None:
            self.queues[key] = deque((tid,))
            insort(self.heads, (tid, key))
        else:
            q.append(tid)
        self.count += 1

    def _rank(self, tid: int) -> int:
        return self._order.get(tid, tid)

    def add_front(self, tid: int, key: Hashable) -> None:
        """Put ``tid`` back at the front of its class, keeping its place by arrival (it had been taken out and failed)."""
        q = self.queues.get(key)
        if q is None:
            self.queues[key] = deque((tid,))
            insort(self.heads, (self._rank(tid), key))
        else:
            old = self._rank(q[0])
            q.appendleft(tid)
            new = self._rank(tid)
            if new < old:
                self.heads.remove((old, key))
                insort(self.heads, (new, key))
        self.count += 1

    def push_front(self, tid: int, key: Hashable) -> None:
        """Put ``tid`` ahead of every waiting task (a queue's insert(0))."""
        self._front -= 1
        self._order[tid] = self._front
        self.add_front(tid, key)

    def pop_first(self, accept: Callable[[Hashable], bool]) -> int:
        """Remove and return the earliest task whose class key ``accept`` takes, or -1."""
        heads = self.heads
        for i, (_tid, key) in enumerate(heads):
            if accept(key):
                return self._pop_at(i)
        return -1

    def pop_first_mask(self, lacking: int) -> int:
        """:meth:`pop_first` for keys ``(mask, …)`` whose mask has no bit of ``lacking`` — the hot path, inlined."""
        heads = self.heads
        for i, (_tid, key) in enumerate(heads):
            if not key[0] & lacking:  # type: ignore[index]
                return self._pop_at(i)
        return -1

    def _pop_at(self, i: int) -> int:
        heads = self.heads
        _rank, key = heads.pop(i)
        q = self.queues[key]
        tid = q.popleft()
        if q:
            insort(heads, (self._rank(q[0]) if self._order else q[0], key))
        else:
            del self.queues[key]
        self.count -= 1
        if self._order:
            self._order.pop(tid, None)
        return tid

    def remove(self, tid: int, key: Hashable) -> None:
        """Take a specific waiting task out (e.g. its job was cancelled)."""
        q = self.queues[key]
        head = q[0]
        q.remove(tid)
        self.count -= 1
        if tid == head:
            self.heads.remove((self._rank(head), key))
            if q:
                insort(self.heads, (self._rank(q[0]), key))
            else:
                del self.queues[key]
        self._order.pop(tid, None)

    def __iter__(self) -> Iterator[int]:
        """Waiting task ids in queue order."""
        return iter(sorted((t for q in self.queues.values() for t in q), key=self._rank))
