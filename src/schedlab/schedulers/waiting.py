"""Tasks waiting for resources: FIFO queues per task class, searched in arrival order.

A *class* groups tasks that are interchangeable for placement: its key is a
tuple whose first element is the constraint mask (``(mask, request)`` in
practice). Classes are kept in a list sorted by the queue order of their head
task, so "the earliest waiting task that fits here" is found by scanning
classes in that order and stopping at the first whose key fits — not by
scanning every waiting task.

Under a backlog most freed workers fit *no* waiting class, and a full scan
to learn that dominated whole runs (the Google trace). So classes also get a
slot in per-constraint bitsets: bit ``s`` of ``requires[c]`` is set when class
``s``'s mask has constraint ``c``. The classes a worker with machine mask ``M``
can serve are ``alive`` minus the OR of ``requires[c]`` over the constraints
``c`` not in ``M`` — a dozen int operations — and an empty answer returns at
once; otherwise the scan visits only compatible classes' heads in order.

Used by the exact view of ``ideal``/``centralized`` and by Megha's GMs.
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from collections.abc import Callable, Hashable, Iterator

from schedlab.cluster.bitsets import iter_set_bits

# A class key: the constraint mask first, then whatever else tells classes apart (the request)
ClassKey = tuple[int, *tuple[Hashable, ...]]


class WaitingClasses:
    """FIFO waiting tasks grouped by class key ``(mask, …)``."""

    __slots__ = ("queues", "heads", "count", "_order", "_front", "slot", "_free_slots", "requires", "alive")

    def __init__(self) -> None:
        self.queues: dict[ClassKey, deque[int]] = {}
        self.heads: list[tuple[int, ClassKey]] = []  # (order of the head, key), sorted
        self.count = 0
        # A task's place in the order is its tid, unless it was pushed to the very front
        # of the whole queue (push_front): then a negative number below every other.
        self._order: dict[int, int] = {}
        self._front = 0
        self.slot: dict[ClassKey, int] = {}
        self._free_slots: list[int] = []
        self.requires: dict[int, int] = {}  # constraint -> bits of the class slots needing it
        self.alive = 0

    def __len__(self) -> int:
        return self.count

    # -- classes ---------------------------------------------------------------------------------
    def _new_class(self, key: ClassKey, tid: int) -> None:
        self.queues[key] = deque((tid,))
        s = self._free_slots.pop() if self._free_slots else len(self.slot)
        self.slot[key] = s
        bit = 1 << s
        self.alive |= bit
        req = self.requires
        for c in iter_set_bits(key[0]):
            req[c] = req.get(c, 0) | bit
        insort(self.heads, (self._rank(tid), key))

    def _drop_class(self, key: ClassKey) -> None:
        del self.queues[key]
        s = self.slot.pop(key)
        bit = 1 << s
        self.alive &= ~bit
        req = self.requires
        for c in iter_set_bits(key[0]):
            req[c] &= ~bit
        self._free_slots.append(s)

    def compatible(self, lacking: int) -> int:
        """Slots of the classes whose mask has none of the constraint bits in ``lacking``."""
        blocked = 0
        for c, bits in self.requires.items():
            if lacking >> c & 1:
                blocked |= bits
        return self.alive & ~blocked

    # -- adding ------------------------------------------------------------------------------------
    def add(self, tid: int, key: ClassKey) -> None:
        """Append ``tid`` to its class (within a class, later additions come later in the order)."""
        q = self.queues.get(key)
        if q is None:
            self._new_class(key, tid)
        else:
            q.append(tid)
        self.count += 1

    def _rank(self, tid: int) -> int:
        return self._order.get(tid, tid)

    def add_front(self, tid: int, key: ClassKey) -> None:
        """Put ``tid`` back at the front of its class, keeping its place by arrival (it had been taken out and failed)."""
        q = self.queues.get(key)
        if q is None:
            self._new_class(key, tid)
        else:
            old = self._rank(q[0])
            q.appendleft(tid)
            new = self._rank(tid)
            if new < old:
                self.heads.remove((old, key))
                insort(self.heads, (new, key))
        self.count += 1

    def push_front(self, tid: int, key: ClassKey) -> None:
        """Put ``tid`` ahead of every waiting task (a queue's insert(0))."""
        self._front -= 1
        self._order[tid] = self._front
        self.add_front(tid, key)

    # -- taking ------------------------------------------------------------------------------------
    def pop_first_mask(self, lacking: int) -> int:
        """Remove and return the earliest task whose class mask has no bit of ``lacking``, or -1.

        ``lacking`` is ``~machine_mask`` of the worker being offered.
        """
        ok = self.compatible(lacking)
        if not ok:
            return -1
        slot = self.slot
        for i, (_rank, key) in enumerate(self.heads):
            if ok >> slot[key] & 1:
                return self._pop_at(i)
        return -1  # pragma: no cover - ok names a live class, which has a head

    def pop_first(self, accept: Callable[[ClassKey], bool], lacking: int | None = None) -> int:
        """Remove and return the earliest task whose class key ``accept`` takes, or -1.

        With ``lacking``, classes whose mask needs one of those constraint bits
        are ruled out first (cheaply) and ``accept`` sees only the others.
        """
        if lacking is None:
            for i, (_rank, key) in enumerate(self.heads):
                if accept(key):
                    return self._pop_at(i)
            return -1
        ok = self.compatible(lacking)
        if not ok:
            return -1
        slot = self.slot
        for i, (_rank, key) in enumerate(self.heads):
            if ok >> slot[key] & 1 and accept(key):
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
            self._drop_class(key)
        self.count -= 1
        if self._order:
            self._order.pop(tid, None)
        return tid

    def remove(self, tid: int, key: ClassKey) -> None:
        """Take a specific waiting task out."""
        q = self.queues[key]
        head = q[0]
        q.remove(tid)
        self.count -= 1
        if tid == head:
            self.heads.remove((self._rank(head), key))
            if q:
                insort(self.heads, (self._rank(q[0]), key))
            else:
                self._drop_class(key)
        self._order.pop(tid, None)

    def head_tasks(self) -> list[int]:
        """The first task of every class, in queue order."""
        return [self.queues[key][0] for _rank, key in self.heads]

    def __iter__(self) -> Iterator[int]:
        """Waiting task ids in queue order."""
        return iter(sorted((t for q in self.queues.values() for t in q), key=self._rank))
