"""A GM's view of every partition's workers, one class per resource mode: what the GM believes free, and what it holds.

Megha's GM matches tasks against an eventually-consistent global view
(Megha paper, Section III-B): the LMs' state updates fold into it, a match
*reserves* a worker in it, and a task's end or a failed request *releases* it.
Both resource modes keep, per partition, a bitset ``avail`` of the positions a
task may still be matched on — the candidates the compiled search
(:func:`~.slots.gm_take`) and the worker-choice policy
(:mod:`schedlab.schedulers.placement`) read — and differ in what stands behind it:

* :class:`SlotView` — one task per worker: ``avail`` is "believed free", and
  ``reserved`` the workers this GM's own in-flight or running tasks hold (the
  own-task guard of delta updates keeps them taken);
* :class:`CapacityView` — capacity vectors (multi-resource mode): ``free`` is
  each worker's believed free vector (tuples, replaced, never changed in place:
  an LM's update hands the GM the LM's own), ``mine`` what this GM's own tasks
  hold on each worker, and ``avail`` marks the workers with room left.

The GM (:class:`~.gm.GlobalMaster`) calls the same methods in both modes —
:meth:`fit`, :meth:`take`, :meth:`hold`, :meth:`give_back`, :meth:`forget`,
:meth:`fold` and the recovery's :meth:`unknown`, :meth:`drop_parts`,
:meth:`held_again` — so its matching, rejection, fairness and recovery code has
no branch on the mode. Choices where the paper is silent are the GM's and are
documented there; this module is the bookkeeping, each step once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import add, sub
from typing import Any

from schedlab.cluster.bitsets import iter_set_bits
from schedlab.schedulers.megha.messages import StateUpdate
from schedlab.schedulers.placement import EPS, Request, WorkerChoice


class SlotView:
    """One task per worker: ``avail`` (believed free) and ``reserved`` (held by this GM's tasks) bitsets."""

    slot_mode = True

    def __init__(self, full: Sequence[int]) -> None:
        self.avail: list[int] = list(full)
        self.reserved: list[int] = [0] * len(full)

    def fit(self, p: int, cand: int, req: Request, choice: WorkerChoice) -> int:
        """The policy's pick among candidates ``cand`` of partition ``p`` (every candidate fits: -1 never)."""
        return choice.pick(cand)

    def take(self, p: int, pos: int, req: Request) -> None:
        """Reserve an available worker for this GM's task."""
        bit = 1 << pos
        self.avail[p] ^= bit
        self.reserved[p] |= bit

    def hold(self, p: int, pos: int, req: Request) -> None:
        """Count a task of this GM as holding (p, pos), available or not (a request sent outside matching)."""
        bit = 1 << pos
        self.reserved[p] |= bit
        self.avail[p] &= ~bit

    def give_back(self, p: int, pos: int, req: Request) -> None:
        """This GM's task no longer holds its worker: available again."""
        bit = 1 << pos
        self.reserved[p] &= ~bit
        self.avail[p] |= bit

    def forget(self, p: int, pos: int, req: Request) -> None:
        """A request for (p, pos) failed: not this GM's, and believed busy until an update says otherwise."""
        bit = 1 << pos
        self.reserved[p] &= ~bit
        self.avail[p] &= ~bit

    def holds(self, p: int, pos: int) -> bool:
        """Whether a task of this GM may hold (p, pos) (slot mode: the caller knows; always)."""
        return True

    def holdings(self) -> int:
        """Workers held by this GM's tasks."""
        return sum(r.bit_count() for r in self.reserved)

    def accepts(self, p: int, pos: int) -> Callable[[Any], bool] | None:
        """A test of a waiting class's key (mask, request) against the worker's room; None: any task fits."""
        return None

    def fold(self, msg: StateUpdate, guard: bool, sizes: Sequence[int], gained: list[tuple[int, int]] | None) -> int:
        """Fold an LM's state in; append to ``gained`` the workers that became available (None: not wanted).
        Returns the worker entries folded (the update's processing cost). ``guard``: what this GM holds stays
        taken under a delta (the own-task guard); ``sizes``: each partition's workers (a snapshot's entries)."""
        avail, reserved = self.avail, self.reserved
        n = 0
        for p, (free_bits, busy_bits) in msg.bits.items():
            old = avail[p]
            if msg.snapshot:
                new = free_bits
                n += sizes[p]
            else:
                new = ((old | free_bits) & ~busy_bits) & ~reserved[p] if guard else (old | free_bits) & ~busy_bits
                n += (free_bits | busy_bits).bit_count()
            avail[p] = new
            if gained is not None:
                g = new & ~old
                if g:
                    gained.extend((p, pos) for pos in iter_set_bits(g))
        return n

    def unknown(self) -> None:
        """Nothing known of any partition (a GM just restarted): nothing available, nothing held."""
        for p in range(len(self.avail)):
            self.avail[p] = 0
            self.reserved[p] = 0

    def drop_parts(self, parts: Iterable[int]) -> None:
        """What this GM held in these partitions goes (an LM's whole truth replaces it)."""
        for p in parts:
            self.reserved[p] = 0

    def held_again(self, p: int, pos: int, req: Request) -> None:
        """A task the LM runs for this GM, held again after a restart (busy in the LM's snapshot already)."""
        self.reserved[p] |= 1 << pos

    def freed_unknown(self, places: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """Workers whose tasks an earlier process of this GM placed have ended: available again unless this
        process holds them. Returns those freed."""
        avail, reserved = self.avail, self.reserved
        freed = []
        for p, pos in places:
            bit = 1 << pos
            if not reserved[p] & bit and not avail[p] & bit:
                avail[p] |= bit
                freed.append((p, pos))
        return freed


class CapacityView:
    """Capacity vectors: each worker's believed ``free`` vector, what this GM's tasks hold (``mine``), and
    ``avail``, the workers with room left."""

    slot_mode = False

    def __init__(self, full: Sequence[int], free: list[list[tuple[float, ...]]]) -> None:
        self.avail: list[int] = list(full)
        self.reserved: list[int] = [0] * len(full)  # (slot mode's; empty here)
        self.free = free
        self.mine: dict[tuple[int, int], list[float]] = {}

    def fit(self, p: int, cand: int, req: Request, choice: WorkerChoice) -> int:
        """The policy's pick among the candidates of partition ``p`` with room for ``req``, or -1."""
        return choice.fit(cand, self.free[p], req)  # type: ignore[arg-type]

    def take(self, p: int, pos: int, req: Request) -> None:
        fp = self.free[p]
        fp[pos] = fv = tuple(map(sub, fp[pos], req))  # type: ignore[arg-type]
        mine = self.mine.get((p, pos))
        if mine is None:
            self.mine[(p, pos)] = list(req)  # type: ignore[arg-type]
        else:
            for k, r in enumerate(req):  # type: ignore[arg-type]
                mine[k] += r
        if min(fv) <= EPS and self.avail[p] >> pos & 1:
            self.avail[p] ^= 1 << pos

    hold = take

    def give_back(self, p: int, pos: int, req: Request) -> None:
        fp = self.free[p]
        fp[pos] = fv = tuple(map(add, fp[pos], req))  # type: ignore[arg-type]
        mine = self.mine[(p, pos)]
        for k, r in enumerate(req):  # type: ignore[arg-type]
            mine[k] -= r
        if max(mine) <= EPS:
            del self.mine[(p, pos)]
        if min(fv) > EPS:
            self.avail[p] |= 1 << pos

    def forget(self, p: int, pos: int, req: Request) -> None:
        # the state that comes with the failure (a rejection's) carries the worker's true free vector
        mine = self.mine[(p, pos)]
        for k, r in enumerate(req):  # type: ignore[arg-type]
            mine[k] -= r
        if max(mine) <= EPS:
            del self.mine[(p, pos)]

    def holds(self, p: int, pos: int) -> bool:
        return (p, pos) in self.mine

    def holdings(self) -> int:
        return len(self.mine)

    def accepts(self, p: int, pos: int) -> Callable[[Any], bool] | None:
        fp = self.free[p]

        def accept(key: Any) -> bool:
            fv = fp[pos]  # read afresh: each match replaces the worker's vector
            return all(r <= fv[k] + EPS for k, r in enumerate(key[1]))

        return accept

    def fold(self, msg: StateUpdate, guard: bool, sizes: Sequence[int], gained: list[tuple[int, int]] | None) -> int:
        avail, free = self.avail, self.free
        get = None if msg.snapshot or not self.mine else self.mine.get
        n = 0
        for p, changes in msg.free.items():
            fp = free[p]
            bits = avail[p]
            n += len(changes)
            for pos, vec in changes.items():
                held = None if get is None else get((p, pos))
                # the update's vector is immutable (the LM's own, or the wire's): adopt it
                after = (vec if type(vec) is tuple else tuple(vec)) if held is None else tuple(map(sub, vec, held))
                if min(after) > EPS:
                    bits |= 1 << pos
                    if gained is not None and any(a > b + EPS for a, b in zip(after, fp[pos], strict=True)):
                        gained.append((p, pos))
                else:
                    bits &= ~(1 << pos)
                fp[pos] = after
            avail[p] = bits
        return n

    def unknown(self) -> None:
        for p in range(len(self.avail)):
            self.avail[p] = 0
        for fp in self.free:
            fp[:] = [(0.0,) * len(fv) for fv in fp]
        self.mine.clear()

    def drop_parts(self, parts: Iterable[int]) -> None:
        parts = set(parts)
        for key in [k for k in self.mine if k[0] in parts]:
            del self.mine[key]

    def held_again(self, p: int, pos: int, req: Request) -> None:
        mine = self.mine.setdefault((p, pos), [0.0] * len(req))  # type: ignore[arg-type]
        for k, r in enumerate(req):  # type: ignore[arg-type]
            mine[k] += r

    def freed_unknown(self, places: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        # the LM's vectors count a GM's holdings unknown to it as free already: nothing to do
        return []


GMView = SlotView | CapacityView
