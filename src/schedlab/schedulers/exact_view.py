"""An exact global view of worker availability with FIFO waiting queues — the core of ``ideal`` and ``centralized``.

Matching follows the papers' bitset algorithm (Megha paper, Algorithm 1;
constraint-aware paper, Section 4.3): candidates = availability AND the
bitsets of the task's constraints, over all workers ranked by (number of
machine constraints, id), so ``min-constraints`` choice is the highest set bit
(see :class:`~schedlab.cluster.bitsets.ConstraintBitsets`) and ``random`` picks
a uniformly random set bit — the choice is the scheduler's ``worker_choice``
policy (:mod:`schedlab.schedulers.placement`), any policy registered there.

In multi-resource mode the availability bitset marks workers with some room
left, and candidates are checked against the request in order (first fit in
min-constraints order) or all fitting candidates are collected for a random
choice.

Tasks that find no worker wait in FIFO queues, one per *class* (constraint mask,
request; :mod:`schedlab.schedulers.waiting`). Whenever resources are released on a worker ``w``,
:meth:`ExactView.pop_waiting_for` returns the earliest-arrived waiting task that
fits on ``w``. Placing arrivals immediately when possible and re-matching every
release keeps the invariant "no waiting task fits on any worker", so the
placement order is FIFO among tasks that can run.
"""

from __future__ import annotations

import random

from schedlab.cluster.model import Cluster
from schedlab.schedulers import placement
from schedlab.schedulers.waiting import WaitingClasses
from schedlab.workload.model import TaskTable


class _FreeByPosition:
    """``free`` indexed by bit position instead of worker id (a view, no copy)."""

    __slots__ = ("free", "order")

    def __init__(self, free: list[list[float]], order: list[int]) -> None:
        self.free = free
        self.order = order

    def __getitem__(self, pos: int) -> list[float]:
        return self.free[self.order[pos]]


class ExactView:
    """Availability of every worker, known exactly, and the tasks waiting for resources."""

    def __init__(self, cluster: Cluster, tasks: TaskTable, worker_choice: str, rng: random.Random) -> None:
        self.cluster = cluster
        self.tasks = tasks
        self.choice = choice = placement.worker_choice(worker_choice, rng)
        self.first_fit = type(choice) is placement.MinConstraints  # the hot path of place_many
        self.rng = rng
        self.index = cluster.bitsets()
        self.order = self.index.order  # bit position -> worker id
        self.pos = self.index.position  # worker id -> bit position
        self.available = self.index.all  # slot mode: free workers; multi: workers with room left
        self.slot_mode = cluster.slot_mode
        self.free: list[list[float]] | None = None
        if not self.slot_mode:
            assert cluster.capacity is not None
            self.free = [list(map(float, row)) for row in cluster.capacity]
        self.waiting = WaitingClasses()

    # -- matching ------------------------------------------------------------------------------
    def place(self, tid: int) -> int:
        """Find a worker for ``tid`` and hold its resources there; -1 (and nothing held) if none fits."""
        if self.slot_mode:
            cand = self.available & self.index.eligible(self.tasks.mask[tid])
            if not cand:
                return -1
            pos = self.choice.pick(cand)
            self.available ^= 1 << pos
            return self.order[pos]
        w, _ = self.find_worker(tid)
        if w >= 0:
            self.take(w, tid)
        return w

    def place_many(self, tids: range | list[int]) -> tuple[list[tuple[int, int]], list[int]]:
        """:meth:`place` each task in order → (``(tid, worker)`` placements, tids that found nothing)."""
        placed: list[tuple[int, int]] = []
        unplaced: list[int] = []
        if not self.slot_mode or not self.first_fit:
            for tid in tids:
                w = self.place(tid)
                if w >= 0:
                    placed.append((tid, w))
                else:
                    unplaced.append(tid)
            return placed, unplaced
        # Slot mode, min-constraints: the hot path of `ideal`, kept free of calls.
        avail = self.available
        masks = self.tasks.mask
        cache = self.index._eligible
        eligible = self.index.eligible
        order = self.order
        append = placed.append
        for tid in tids:
            m = masks[tid]
            e = cache.get(m)
            if e is None:
                e = eligible(m)
            cand = avail & e
            if cand:
                pos = cand.bit_length() - 1
                avail ^= 1 << pos
                append((tid, order[pos]))
            else:
                unplaced.append(tid)
        self.available = avail
        return placed, unplaced

    def find_worker(self, tid: int) -> tuple[int, int]:
        """(worker, workers scanned) for ``tid`` — worker ``-1`` if none fits now.

        "Scanned" is the first-fit rank of the choice in min-constraints order
        (all workers when nothing fits or the choice is random); the
        centralized scheduler's cost model uses it.
        """
        size = self.index.size
        cand = self.available & self.index.eligible(self.tasks.mask[tid])
        if not cand:
            return -1, size
        if self.slot_mode:
            pos = self.choice.pick(cand)
            return self.order[pos], self.choice.first_fit_rank(size, pos)
        req = self.tasks.request[tid]
        # positions are global worker bit positions: look up free vectors through the order
        free = self.free
        order = self.order
        view = _FreeByPosition(free, order)  # type: ignore[arg-type]
        pos = self.choice.fit(cand, view, req)  # type: ignore[arg-type]
        if pos < 0:
            return -1, size
        return order[pos], self.choice.first_fit_rank(size, pos)

    def fits(self, tid: int, worker: int) -> bool:
        if self.tasks.mask[tid] & ~self.cluster.machine_masks[worker]:
            return False
        if self.slot_mode:
            return bool(self.available >> self.pos[worker] & 1)
        fw = self.free[worker]  # type: ignore[index]
        return all(r <= fw[k] + 1e-9 for k, r in enumerate(self.tasks.request[tid]))  # type: ignore[arg-type]

    # -- bookkeeping ---------------------------------------------------------------------------
    def take(self, worker: int, tid: int) -> None:
        """Hold ``tid``'s resources on ``worker`` (which must have room)."""
        bit = 1 << self.pos[worker]
        if self.slot_mode:
            self.available ^= bit
            return
        fw = self.free[worker]  # type: ignore[index]
        for k, r in enumerate(self.tasks.request[tid]):  # type: ignore[arg-type]
            fw[k] -= r
        if min(fw) <= 1e-9 and self.available & bit:
            self.available ^= bit

    def release(self, worker: int, tid: int) -> None:
        """Give ``tid``'s resources on ``worker`` back."""
        bit = 1 << self.pos[worker]
        if self.slot_mode:
            self.available |= bit
            return
        fw = self.free[worker]  # type: ignore[index]
        for k, r in enumerate(self.tasks.request[tid]):  # type: ignore[arg-type]
            fw[k] += r
        if min(fw) > 1e-9:
            self.available |= bit

    def release_many(self, group: list[tuple[int, int]]) -> None:
        """:meth:`release` for each ``(tid, worker)``."""
        if self.slot_mode:
            pos = self.pos
            avail = self.available
            for _tid, worker in group:
                avail |= 1 << pos[worker]
            self.available = avail
        else:
            for tid, worker in group:
                self.release(worker, tid)

    # -- waiting tasks -------------------------------------------------------------------------
    def enqueue(self, tid: int) -> None:
        self.waiting.add(tid, (self.tasks.mask[tid], self.tasks.request[tid]))

    @property
    def num_waiting(self) -> int:
        return self.waiting.count

    def pop_waiting_for(self, worker: int) -> int:
        """Remove and return the earliest waiting task that fits on ``worker`` now, or -1."""
        if not self.waiting.count:
            return -1
        lacking = ~self.cluster.machine_masks[worker]
        if self.slot_mode:
            if not (self.available >> self.pos[worker]) & 1:
                return -1
            return self.waiting.pop_first_mask(lacking)
        fw = self.free[worker]  # type: ignore[index]

        def fits(key) -> bool:
            return all(r <= fw[k] + 1e-9 for k, r in enumerate(key[1]))

        return self.waiting.pop_first(fits, lacking)
