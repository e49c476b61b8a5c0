"""An LM's state of its partitions' workers — the truth GMs' views follow — one class per resource mode.

A Megha LM owns its cluster's workers and validates every launch against its
own state (Megha paper, Section III-C); its state updates are how the GMs'
views converge. Both modes keep, per local partition, a bitset ``avail`` of
the positions with room — what the compiled validation
(:func:`~.slots.lm_accept`) and release (:func:`~.slots.lm_vacate`) work on —
and differ in what stands behind it:

* :class:`SlotState` — one task per worker: ``avail`` is "free";
* :class:`CapacityState` — each worker's ``free`` vector (a tuple, replaced,
  never changed in place, so an update carries the LM's own to every GM
  without copying — and a tuple of floats is not tracked by the cyclic
  garbage collector, whose passes over ~10^6 small lists cost half of a
  50,000-worker run), and ``held``, per GM, what that GM's tasks hold on each
  worker (a GM's own holdings are added back in the deltas sent to it: its
  view counts them already).

The LM (:class:`~.lm.LocalMaster`) calls the same methods in both modes —
:meth:`room`, :meth:`room_after`, :meth:`occupy`, :meth:`vacate`, :meth:`down`, :meth:`up`,
:meth:`unknown`, :meth:`changes` and :meth:`whole` — and keeps what does not
depend on the mode: where each task runs, the changes noted for each GM's
next update, and the counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import add, sub

from schedlab.cluster.bitsets import iter_set_bits
from schedlab.schedulers.megha.messages import StateUpdate
from schedlab.schedulers.placement import EPS, Request


class SlotState:
    """One task per worker: ``avail[p]`` has the free positions of local partition ``p``."""

    slot_mode = True

    def __init__(self, full: Sequence[int], parts: Sequence[int]) -> None:
        self.full = full
        self.parts = list(parts)
        self.avail: dict[int, int] = {p: full[p] for p in parts}

    def room(self, p: int, pos: int, req: Request) -> bool:
        """Whether (p, pos) has room for ``req``."""
        return bool(self.avail[p] >> pos & 1)

    def room_after(self, p: int, pos: int, req: Request, freed: Request) -> bool:
        """Whether (p, pos) has room for ``req`` once a task holding ``freed`` has left it (a preemption's
        victim: in slot mode, always)."""
        return True

    def occupy(self, p: int, pos: int, req: Request, gm: int) -> None:
        """A task of GM ``gm`` starts there (it has room)."""
        self.avail[p] ^= 1 << pos

    def vacate(self, p: int, pos: int, req: Request, gm: int) -> None:
        """A task of GM ``gm`` has left."""
        self.avail[p] |= 1 << pos

    def down(self, p: int, pos: int) -> None:
        """The worker failed (its tasks vacated already): no room until :meth:`up`."""
        self.avail[p] &= ~(1 << pos)

    def up(self, p: int, pos: int, capacity: Sequence[float] | None) -> None:
        """The worker is back, empty."""
        self.avail[p] |= 1 << pos

    def unknown(self) -> None:
        """Nothing known (a process that just took over): no room anywhere until the hosts say what they run."""
        for p in self.parts:
            self.avail[p] = 0

    def changes(self, upd: StateUpdate, ch: list[int], gm: int, snapshot: bool) -> None:
        """Write into ``upd`` what GM ``gm`` should learn — every worker (``snapshot``) or those in ``ch`` (its
        pending delta per local partition, reset here)."""
        avail, full = self.avail, self.full
        for j, p in enumerate(self.parts):
            a = avail[p]
            if snapshot:
                upd.bits[p] = (a, full[p] ^ a)
            elif ch[j]:
                c = ch[j]
                upd.bits[p] = (c & a, c & ~a)
            ch[j] = 0

    def whole(self, upd: StateUpdate, p: int) -> None:
        """Write partition ``p`` whole into ``upd`` (a restarted GM's snapshot)."""
        a = self.avail[p]
        upd.bits[p] = (a, self.full[p] ^ a)


class CapacityState:
    """Capacity vectors: ``free[p][pos]``, ``held[gm]`` per worker, and ``avail[p]``, the positions with room."""

    slot_mode = False

    def __init__(self, full: Sequence[int], parts: Sequence[int], free: dict[int, list[tuple[float, ...]]], gms: int) -> None:
        self.full = full
        self.parts = list(parts)
        self.avail: dict[int, int] = {p: full[p] for p in parts}
        self.free = free
        self.held: list[dict[tuple[int, int], list[float]]] = [{} for _ in range(gms)]

    def room(self, p: int, pos: int, req: Request) -> bool:
        fv = self.free[p][pos]
        return all(r <= fv[k] + EPS for k, r in enumerate(req))  # type: ignore[arg-type]

    def room_after(self, p: int, pos: int, req: Request, freed: Request) -> bool:
        fv = self.free[p][pos]
        return all(r <= fv[k] + freed[k] + EPS for k, r in enumerate(req))  # type: ignore[arg-type,index]

    def occupy(self, p: int, pos: int, req: Request, gm: int) -> None:
        fp = self.free[p]
        fp[pos] = fv = tuple(map(sub, fp[pos], req))  # type: ignore[arg-type]
        if min(fv) <= EPS:
            self.avail[p] &= ~(1 << pos)
        h = self.held[gm].get((p, pos))
        if h is None:
            self.held[gm][(p, pos)] = list(req)  # type: ignore[arg-type]
        else:
            for k, r in enumerate(req):  # type: ignore[arg-type]
                h[k] += r

    def vacate(self, p: int, pos: int, req: Request, gm: int) -> None:
        fp = self.free[p]
        fp[pos] = fv = tuple(map(add, fp[pos], req))  # type: ignore[arg-type]
        h = self.held[gm][(p, pos)]
        for k, r in enumerate(req):  # type: ignore[arg-type]
            h[k] -= r
        if max(h) <= EPS:
            del self.held[gm][(p, pos)]
        if min(fv) > EPS:
            self.avail[p] |= 1 << pos

    def down(self, p: int, pos: int) -> None:
        self.avail[p] &= ~(1 << pos)
        self.free[p][pos] = (0.0,) * len(self.free[p][pos])

    def up(self, p: int, pos: int, capacity: Sequence[float] | None) -> None:
        assert capacity is not None
        self.avail[p] |= 1 << pos
        self.free[p][pos] = tuple(map(float, capacity))

    def unknown(self) -> None:
        for p in self.parts:
            self.avail[p] = 0
            fp = self.free[p]
            fp[:] = [(0.0,) * len(fv) for fv in fp]

    def changes(self, upd: StateUpdate, ch: list[int], gm: int, snapshot: bool) -> None:
        # vectors are immutable tuples: every GM's update carries the LM's own, uncopied
        held = self.held[gm]
        for j, p in enumerate(self.parts):
            c = self.full[p] if snapshot else ch[j]
            if not c:
                continue
            fp = self.free[p]
            positions = range(len(fp)) if snapshot else iter_set_bits(c)
            if snapshot or not held:  # the GM's own holdings are reported only in deltas
                changes = {pos: fp[pos] for pos in positions}
            else:
                changes = {}
                get = held.get
                for pos in positions:
                    h = get((p, pos))
                    changes[pos] = fp[pos] if h is None else tuple(map(add, fp[pos], h))
            upd.free[p] = changes
            ch[j] = 0

    def whole(self, upd: StateUpdate, p: int) -> None:
        upd.free[p] = dict(enumerate(self.free[p]))


LMState = SlotState | CapacityState
