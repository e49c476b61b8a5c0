"""Tasks waiting for resources: FIFO queues per task class, searched in arrival order.

A *class* groups tasks that are interchangeable for placement: its key is a
tuple whose first element is the constraint mask (``(mask, request)`` in
practice). Classes are kept in a list sorted by the queue order of their head
task, so "the earliest waiting task that fits here" is found by scanning
classes in that order and stopping at the first whose key fits — not by
scanning every waiting task.

Under a backlog most freed workers fit *no* waiting class, and a full scan
to learn that dominated whole runs (the Google trace). So each class gets a
slot (a bit), and the classes a worker with machine mask ``M`` can serve are
``alive`` minus the slots of the classes needing a constraint ``M`` lacks; an
empty answer returns at once. Those blocked slots are read from small tables
rather than gathered constraint by constraint: constraints are taken four at a
time, and for each group of four a 16-entry table (``blocked_by``) holds, for
every subset of the group a worker may lack, the slots of the classes needing
one of them — so a query is one lookup per group (six for the 21 Sharma
constraints), and a class coming or going updates at most 15 entries per group
it touches (under a backlog a GM asks far more often than classes change).

When some classes are compatible, the earliest is the one with the smallest
head rank among them: with few compatible classes among many, their ranks are
compared directly (``head_rank`` per slot) rather than scanning every head.

Used by the exact view of ``ideal``/``centralized`` and by Megha's GMs.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Hashable, Iterator

from schedlab.cluster.bitsets import iter_set_bits

# A class key: the constraint mask first, then whatever else tells classes apart (the request)
ClassKey = tuple[int, *tuple[Hashable, ...]]

GROUP_BITS = 4  # constraints per lookup table
_GROUP_MASK = (1 << GROUP_BITS) - 1
# for each nonzero subset n of a group's constraints: the entries (subsets a worker may lack) that meet it
_MEETING = [[x for x in range(1 << GROUP_BITS) if x & n] for n in range(1 << GROUP_BITS)]


class WaitingClasses:
    """FIFO waiting tasks grouped by class key ``(mask, …)``."""

    __slots__ = ("queues", "heads", "count", "_order", "_front", "slot", "_free_slots", "blocked_by", "alive", "head_rank")

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
        # blocked_by[k][x]: slots of the classes needing one of the constraints 4k..4k+3 that x (a subset
        # of them) names — the classes a worker lacking exactly x of that group cannot serve
        self.blocked_by: list[list[int]] = []
        self.alive = 0
        self.head_rank: dict[int, int] = {}  # slot -> rank of its class's head

    def __len__(self) -> int:
        return self.count

    # -- classes ---------------------------------------------------------------------------------
    def _new_class(self, key: ClassKey, tid: int) -> None:
        self.queues[key] = deque((tid,))
        s = self._free_slots.pop() if self._free_slots else len(self.slot)
        self.slot[key] = s
        bit = 1 << s
        self.alive |= bit
        tables = self.blocked_by
        m, k = key[0], 0
        while m:
            n = m & _GROUP_MASK
            if n:
                while len(tables) <= k:
                    tables.append([0] * (1 << GROUP_BITS))
                t = tables[k]
                for x in _MEETING[n]:
                    t[x] |= bit
            m >>= GROUP_BITS
            k += 1
        rank = self._rank(tid)
        self.head_rank[s] = rank
        insort(self.heads, (rank, key))

    def _drop_class(self, key: ClassKey) -> None:
        del self.queues[key]
        s = self.slot.pop(key)
        bit = 1 << s
        self.alive &= ~bit
        tables = self.blocked_by
        m, k = key[0], 0
        while m:
            n = m & _GROUP_MASK
            if n:
                t = tables[k]
                for x in _MEETING[n]:
                    t[x] &= ~bit
            m >>= GROUP_BITS
            k += 1
        del self.head_rank[s]
        self._free_slots.append(s)

    def compatible(self, lacking: int) -> int:
        """Slots of the classes whose mask has none of the constraint bits in ``lacking``."""
        blocked = 0
        for t in self.blocked_by:
            blocked |= t[lacking & _GROUP_MASK]
            lacking >>= GROUP_BITS
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
                self.head_rank[self.slot[key]] = new
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
        heads = self.heads
        if ok.bit_count() * 4 < len(heads):
            # few compatible classes among many: the smallest head rank among them (ranks are unique)
            hr = self.head_rank
            rank = min(hr[s] for s in iter_set_bits(ok))
            return self._pop_at(bisect_left(heads, (rank,)))
        slot = self.slot
        for i, (_rank, key) in enumerate(heads):
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
            rank = self._rank(q[0]) if self._order else q[0]
            insort(heads, (rank, key))
            self.head_rank[self.slot[key]] = rank
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
                rank = self._rank(q[0])
                insort(self.heads, (rank, key))
                self.head_rank[self.slot[key]] = rank
            else:
                self._drop_class(key)
        self._order.pop(tid, None)

    def head_tasks(self) -> list[int]:
        """The first task of every class, in queue order."""
        return [self.queues[key][0] for _rank, key in self.heads]

    def __iter__(self) -> Iterator[int]:
        """Waiting task ids in queue order."""
        return iter(sorted((t for q in self.queues.values() for t in q), key=self._rank))
