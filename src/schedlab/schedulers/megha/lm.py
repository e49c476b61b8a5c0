"""Megha's Local Master: the true, consistent state of one cluster (sans-IO).

Megha paper, Section IV-A/B; constraint-aware paper, Sections 2.1 and 4.4.

* **Validation.** A :class:`~.messages.LaunchRequest` names a worker per task.
  The LM launches the task if the worker really has the resources (and the
  constraints); a worker outside the requesting GM's internal partition makes
  it a *repartition*: in slot mode the whole worker is lent to the GM's
  partition, in multi-resource mode a logical node with exactly the requested
  resources is carved out of it (Megha paper IV-B-4) — in both cases only for
  the task's lifetime, after which the resources return to their partition.
  Invalid requests are answered with :class:`~.messages.LaunchRejected`
  carrying the LM's state (an *inconsistency*, counted).
* **Launch.** Accepted tasks go to their workers in one
  :class:`~schedlab.workers.protocol.LaunchBatch` per request; each
  worker reports completion to this LM and to the task's GM at the same time
  (worker → GM is the third network hop of the papers' 3·ND minimum).
* **Piggybacking** (``piggyback``, off by default). The LM answers each accepted
  launch request with the requesting GM's pending update, as the Megha paper
  describes ("the LMs also send updates to the GMs, piggybacking the response
  to task launch requests", IV-A; "GMs collect partial state information about
  an entire LM cluster after every launch request", II-C). A GM's view of an
  LM it works with is then fresh to within one round trip, not one heartbeat.
* **Updates.** Every ``heartbeat`` seconds the LM sends each GM either a full
  snapshot of its partitions (the original design) or only what changed since
  the previous update to that GM, leaving out the GM's own launches and
  completions, which that GM already knows (the enhanced design, default).
  In slot mode a delta is two bitsets per partition (became free / became busy,
  latest state wins); in multi-resource mode the free vector of every changed
  worker, plus what that GM's own tasks hold there (the GM subtracts its
  holdings, so its in-flight requests stay accounted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from schedlab.errors import InputError
from schedlab.metrics.recorder import COMMUNICATION, FRAMEWORK_QUEUING, PROCESSING
from schedlab.schedulers.megha.costs import CostDraws
from schedlab.schedulers.megha.gm import gm_address, lm_address
from schedlab.schedulers.megha.messages import (
    LaunchRejected,
    LaunchRequest,
    PreemptRejected,
    PreemptRequest,
    StateUpdate,
    TaskLost,
    TaskPreempted,
)
from schedlab.schedulers.megha.slots import lm_accept, lm_vacate
from schedlab.schedulers.megha.state import CapacityState, LMState, SlotState
from schedlab.sim.processor import Processor
from schedlab.sim.runtime import Component
from schedlab.workers.protocol import POOL_ADDRESS, LaunchBatch, TasksFinished

if TYPE_CHECKING:
    from schedlab.schedulers.megha import MeghaShared


class FairnessLedger(Protocol):
    """What an LM tells fair sharing: :class:`~schedlab.schedulers.megha.fairness.FairSharing`
    in a simulation, :class:`~schedlab.services.fairness.LedgerFeed` in a real cluster."""

    def launched(self, tid: int, p: int, pos: int) -> None: ...

    def vacated(self, tid: int) -> None: ...

    def settle(self, victim: int) -> None: ...


class LocalMaster(Component):
    """One LM and its cluster's true state."""

    def __init__(self, i: int, shared: MeghaShared) -> None:
        p = shared.params
        # set before registering: without processing costs the inputs bypass the processor (see handlers)
        self.verify_fixed = (p.cost_per_input or {}).get("lm_verify", 0.0)  # a measured profile's fit: a part per input
        self.costly = p.lm_verify_cost > 0 or p.message_cost > 0 or self.verify_fixed > 0
        super().__init__(lm_address(i), shared.runtime)
        self.draws = CostDraws(shared.runtime.rng(f"megha:costs:lm{i}"), p.cost_spread) if self.costly and p.cost_spread else None
        self.i = i
        self.sh = shared
        lay = shared.layout
        self.layout = lay
        self.tasks = shared.tasks
        self.rec = shared.observer
        self.since = shared.handling_since  # a real process's (MeghaShared)
        self.G = lay.num_gms
        self.base = i * self.G  # first global partition id of this LM
        self.parts = list(lay.partitions_of_lm(i))
        self.slot_mode = shared.slot_mode
        self.snapshot_mode = shared.params.updates == "snapshot"
        # the ablation (slot mode): a GM's own completions also go into its delta (noted as no GM's change)
        self.own_completions = shared.params.updates in ("delta+own", "delta+own-unguarded")
        if self.own_completions and not self.slot_mode:
            raise InputError("param updates", f"{shared.params.updates!r} is slot-mode only (no --resources multi)")
        # the state of its workers (state.py); avail is the state's own dict (slot: free workers; multi: with
        # room), which the compiled validation and release work on
        if self.slot_mode:
            self.state: LMState = SlotState(lay.full, self.parts)
        else:
            cap = shared.cluster.capacity
            assert cap is not None
            self.state = CapacityState(lay.full, self.parts, {p: [tuple(map(float, cap[w])) for w in lay.order[p]] for p in self.parts}, self.G)
        self.avail: dict[int, int] = self.state.avail
        # per GM, per local partition: positions changed since the last update to that GM
        self.changed: list[list[int]] = [[0] * self.G for _ in range(self.G)]
        # per local partition, per GM whose task caused it (the last slot: no GM's): changes not yet in
        # `changed`. A change is noted once here and folded into the other GMs' deltas only when one is
        # read (an update), not G - 1 times as it happens: most tasks start and end between two updates.
        self.noted: list[list[int]] = [[0] * (self.G + 1) for _ in range(self.G)]
        self.any_noted = False  # whether `noted` holds anything: most heartbeats of a quiet run fold nothing
        self.running: dict[int, tuple[int, int, int]] = {}  # tid -> (p, pos, gm)
        self.gm_addr = [gm_address(g) for g in range(self.G)]
        self.proc = Processor(shared.runtime)
        # fair sharing's ledger (FairSharing in a simulation, a LedgerFeed in a real cluster):
        # told of every launch, vacate and carried-out preemption
        self.fairness: FairnessLedger | None = None
        # counters
        self.launched = 0
        self.repartitions = 0
        self.inconsistencies = 0
        self.updates_sent = 0
        self.update_entries = 0
        self.piggybacked = 0
        self.piggyback = shared.params.piggyback

    def handlers(self):
        if not self.costly:
            # Nothing takes processing time, so nothing ever waits for the processor: each input is
            # handled on arrival (its messages leave at once, in the order the processor would send them).
            return {LaunchRequest: self._on_request, TasksFinished: self._on_finished, PreemptRequest: self._on_preempt}
        return {
            LaunchRequest: self._in_request,
            TasksFinished: self._in_finished,
            PreemptRequest: self._in_preempt,
        }

    def _in_request(self, msg: LaunchRequest) -> None:
        if self.costly:  # the request's flight ends here; any wait for the busy LM is queuing
            now = self.rt.now()
            for tid, _p, _pos in msg.items:
                self.rec.mark(tid, now, COMMUNICATION)
        self.proc.handle(self._on_request, msg)

    def _in_finished(self, msg: TasksFinished) -> None:
        self.proc.handle(self._on_finished, msg)

    def _in_preempt(self, msg: PreemptRequest) -> None:
        self.proc.handle(self._on_preempt, msg)

    def _charge(self, items: int) -> None:
        if self.costly:
            p = self.sh.params
            d = self.draws
            if self.verify_fixed:
                verify = self.verify_fixed + p.lm_verify_cost * items if items else 0.0
                self.proc.charge(p.message_cost + verify if d is None
                                 else p.message_cost * d.factor("message") + (verify * d.factor("lm_verify") if items else 0.0))
            elif d is None:
                self.proc.charge(p.message_cost + p.lm_verify_cost * items)
            else:
                self.proc.charge(p.message_cost * d.factor("message") + (p.lm_verify_cost * items * d.factor("lm_verify") if items else 0.0))

    # -- bookkeeping -------------------------------------------------------------------------------
    def _note(self, p: int, bit: int, by_gm: int) -> None:
        """Position ``bit`` of partition ``p`` changed because of GM ``by_gm``'s task (-1: no GM's)."""
        self.noted[p - self.base][by_gm] |= bit
        self.any_noted = True

    def _fold(self) -> None:
        """Bring the noted changes into every other GM's pending delta (before any is read or reset)."""
        if not self.any_noted:
            return
        self.any_noted = False
        changed, G = self.changed, self.G
        for j, row in enumerate(self.noted):
            for cause, bits in enumerate(row):
                if bits:
                    for g in range(G):
                        if g != cause:
                            changed[g][j] |= bits
                    row[cause] = 0

    def pending_changes(self, gm: int) -> list[int]:
        """GM ``gm``'s pending delta, per local partition (the list itself: resetting an entry resets it)."""
        self._fold()
        return self.changed[gm]

    def _fits(self, p: int, pos: int, tid: int) -> bool:
        w = self.layout.order[p][pos]
        if self.tasks.mask[tid] & ~self.sh.cluster.machine_masks[w]:
            return False
        return self.state.room(p, pos, self.request(tid))

    def request(self, tid: int) -> tuple[float, ...] | None:
        """A task's resource request, None in slot mode."""
        return None if self.slot_mode else self.tasks.request[tid]

    def _occupy(self, p: int, pos: int, tid: int, gm: int) -> None:
        self.state.occupy(p, pos, self.request(tid), gm)
        self.running[tid] = (p, pos, gm)
        self._note(p, 1 << pos, gm)
        if self.fairness is not None:
            self.fairness.launched(tid, p, pos)

    def _vacate(self, tid: int) -> tuple[int, int, int]:
        p, pos, gm = self.running.pop(tid)
        if self.fairness is not None:
            self.fairness.vacated(tid)
        self.state.vacate(p, pos, self.request(tid), gm)
        self._note(p, 1 << pos, gm)
        return p, pos, gm

    # -- requests ----------------------------------------------------------------------------------
    def _on_request(self, msg: LaunchRequest) -> None:
        gm = msg.gm
        now = self.rt.now()
        items = msg.items
        if self.since is not None:  # a real process: the request's flight ended when it came
            self.rec.mark_each(items, self.since(), COMMUNICATION)
        self._charge(len(items))
        accepted: list[tuple[int, int]] = []
        rejected: list[tuple[int, int, int]] = []
        owner = self.layout.owner
        order = self.layout.order
        if self.slot_mode:
            # partition -> the bits this request took there
            taken = lm_accept(items, self.avail, self.tasks.mask, self.sh.cluster.machine_masks, order, self.running, gm, accepted, rejected)
            if self.fairness is not None:  # told once the request is checked: what it records bears on no check
                running, launched = self.running, self.fairness.launched
                for tid, _w in accepted:
                    p, pos, _gm = running[tid]
                    launched(tid, p, pos)
            # the other GMs learn of the change at their next update (noted once per partition, not per task);
            # each task accepted took a bit of its own, so a partition's bits count its tasks
            noted, base = self.noted, self.base
            for p, bits in taken.items():
                noted[p - base][gm] |= bits
                if owner[p] != gm:
                    self.repartitions += bits.bit_count()
            if taken:
                self.any_noted = True
        else:
            for item in items:
                tid, p, pos = item
                if self._fits(p, pos, tid):
                    self._occupy(p, pos, tid, gm)
                    accepted.append((tid, order[p][pos]))
                    if owner[p] != gm:
                        self.repartitions += 1
                else:
                    rejected.append(item)
        if self.costly:
            self.rec.mark_each(items, now, FRAMEWORK_QUEUING)
        elif self.since is not None:  # a real process: its answers leave now (their wire carries this mark)
            self.rec.mark_each(items, self.rt.now(), PROCESSING)
        if accepted:
            self.launched += len(accepted)
            self.proc.send(POOL_ADDRESS, LaunchBatch(accepted, (self.address, self.gm_addr[gm])))
        if rejected:
            self.inconsistencies += len(rejected)
            self.rec.inconsistency(gm, now, len(rejected))
            update = self._update_for(gm, extra=[(p, pos) for _t, p, pos in rejected])
            self.proc.send(self.gm_addr[gm], LaunchRejected(self.i, rejected, update))
        elif self.piggyback:
            # The reply to a launch request carries what the GM has not heard yet (Megha paper IV-A).
            update = self._update_for(gm)
            if update.bits or update.free or self.snapshot_mode:
                self.piggybacked += 1
                self.proc.send(self.gm_addr[gm], update)
        if self.costly:
            # Processing at the LM ends when the messages leave; attribute it now (same instant).
            self.rt.call_later(self.proc.cost, self._mark_processed, [t for t, _p, _pos in items])

    def reject_again(self, gm: int, items: list[tuple[int, int, int]]) -> None:
        """Answer again requests this LM rejected already (their first answer was lost): rejected, with the
        state as it is now (real clusters only: a request retried after its reply was lost)."""
        update = self._update_for(gm, extra=[(p, pos) for _t, p, pos in items])
        self.proc.send(self.gm_addr[gm], LaunchRejected(self.i, items, update))

    def _mark_processed(self, tids: list[int]) -> None:
        now = self.rt.now()
        for tid in tids:
            self.rec.mark(tid, now, PROCESSING)

    def _on_finished(self, msg: TasksFinished) -> None:
        if self.costly:
            self._charge(0)
        if not self.slot_mode or self.fairness is not None or self.own_completions:
            vacate, note = self._vacate, self._note
            for tid, _w in msg.group:
                p, pos, _gm = vacate(tid)
                if self.own_completions:
                    note(p, 1 << pos, -1)  # every GM's delta, the placing GM's too
            return
        # Slot-mode hot path (one call per finished task on most runs).
        lm_vacate(msg.group, self.running, self.avail, self.noted, self.base)
        self.any_noted = True

    # -- state updates -----------------------------------------------------------------------------
    def _update_for(self, gm: int, extra: list[tuple[int, int]] | None = None) -> StateUpdate:
        """What GM ``gm`` should learn now (its pending delta, or a snapshot); resets its delta."""
        upd = StateUpdate(self.i, self.snapshot_mode)
        ch = self.pending_changes(gm)
        if extra:
            for p, pos in extra:
                ch[p - self.base] |= 1 << pos
        self.state.changes(upd, ch, gm, self.snapshot_mode)
        return upd

    def heartbeat(self) -> None:
        """Send every GM its update (a periodic timer of the LM)."""
        self.proc.handle(self._on_heartbeat)

    def _on_heartbeat(self) -> None:
        self._fold()
        for g in range(self.G):
            if not self.snapshot_mode and not any(self.changed[g]):
                continue  # nothing new for this GM (most rounds of a long, quiet run): no update to build
            upd = self._update_for(g)
            if upd.bits or upd.free or self.snapshot_mode:
                self.updates_sent += 1
                self.update_entries += sum((a | b).bit_count() for a, b in upd.bits.values()) + sum(len(v) for v in upd.free.values())
                self.proc.send(self.gm_addr[g], upd)

    # -- worker failures (real clusters: the services detect them) -----------------------------------
    def workers_down(self, positions: list[tuple[int, int]]) -> list[int]:
        """These workers failed: each task running there is vacated and its GM told to re-queue it
        (:class:`TaskLost`); the workers stay unavailable — to every GM, through the usual state
        updates — until :meth:`workers_up`. Returns the lost tasks."""
        down = set(positions)
        lost = [(tid, where) for tid, where in self.running.items() if where[:2] in down]
        for tid, (p, pos, gm) in lost:
            self._vacate(tid)
            self.proc.send(self.gm_addr[gm], TaskLost(tid, p, pos))
        for p, pos in positions:
            self.state.down(p, pos)
            self._note(p, 1 << pos, -1)
        return [tid for tid, _w in lost]

    def hand_back(self, launches: list[tuple[int, int]]) -> list[int]:
        """These ``(tid, worker)`` launches never started (their worker host refused them, or never got them):
        each task still held on that worker is vacated and its GM told to request it again (:class:`TaskLost`);
        the workers stay available. Returns the tasks handed back."""
        back = []
        order = self.layout.order
        for tid, worker in launches:
            where = self.running.get(tid)
            if where is None or order[where[0]][where[1]] != worker:
                continue
            p, pos, gm = self._vacate(tid)
            self._note(p, 1 << pos, -1)  # every GM learns the worker is free, its own too (it believes it busy: TaskLost)
            self.proc.send(self.gm_addr[gm], TaskLost(tid, p, pos))
            back.append(tid)
        return back

    def drop_run(self, tid: int) -> None:
        """Forget where ``tid`` runs (real clusters: a run found lost, whose task runs elsewhere since): its worker is
        free again, every GM told at its next update; nobody is told the task was lost."""
        if tid in self.running:
            p, pos, _gm = self._vacate(tid)
            self._note(p, 1 << pos, -1)

    def workers_up(self, positions: list[tuple[int, int]]) -> None:
        """These workers are back, empty (a restarted worker runs nothing)."""
        cap, order = self.sh.cluster.capacity, self.layout.order
        for p, pos in positions:
            self.state.up(p, pos, None if cap is None else cap[order[p][pos]])
            self._note(p, 1 << pos, -1)

    # -- an LM process that takes over (real clusters: restarted, or a standby) ----------------------
    def view_unknown(self) -> None:
        """This LM process has just started: no worker is available until its host has said what it runs."""
        self.state.unknown()

    def host_back(self, positions: list[tuple[int, int]], running: list[tuple[int, int, int, int]]) -> None:
        """A worker host told this LM what it runs, as ``(tid, p, pos, gm)``: its workers are available again
        less what those tasks hold, and the tasks are this LM's active tasks again (the rebuilt state)."""
        self.workers_up(positions)
        for tid, p, pos, gm in running:
            if tid not in self.running:
                self._occupy(p, pos, tid, gm)

    # -- a GM that restarted (real clusters: the services run the recovery) ---------------------------
    def recovery_state(self, gm: int) -> tuple[StateUpdate, list[tuple[int, int, int]]]:
        """GM ``gm`` restarted with an empty view (Megha paper IV: GMs are stateless and rebuild their view
        from the LMs): a full snapshot of this LM's partitions — whatever the update mode, since the GM
        holds nothing to apply a delta to — and the tasks this LM runs for that GM, as ``(tid, p, pos)``.
        The GM's pending delta starts afresh from here."""
        upd = StateUpdate(self.i, True)
        ch = self.pending_changes(gm)
        for j, p in enumerate(self.parts):
            self.state.whole(upd, p)
            ch[j] = 0
        return upd, [(tid, p, pos) for tid, (p, pos, g) in self.running.items() if g == gm]

    # -- preemption (fair sharing, Algorithm 2) ------------------------------------------------------
    def _on_preempt(self, msg: PreemptRequest) -> None:
        """Verify and carry out a GM's preemption: the victim must still run where the GM believes."""
        self._charge(1)
        where = self.running.get(msg.victim)
        workers = self.sh.workers
        assert workers is not None, "preemption needs control of the workers"
        if where is None or where[:2] != (msg.p, msg.pos) or not self._fits_after_preempt(msg) or not workers.is_running(msg.victim):
            self.inconsistencies += 1
            self.rec.inconsistency(msg.gm, self.rt.now())
            upd = self._update_for(msg.gm, extra=[(msg.p, msg.pos)])
            self.proc.send(self.gm_addr[msg.gm], PreemptRejected(self.i, msg.tid, msg.victim, msg.p, msg.pos, upd))
            return
        victim_gm = where[2]
        w = self.layout.order[msg.p][msg.pos]
        workers.preempt(msg.victim, w)
        if self.fairness is not None:
            self.fairness.settle(msg.victim)
        self._vacate(msg.victim)
        self.proc.send(self.gm_addr[victim_gm], TaskPreempted(msg.victim, msg.p, msg.pos, msg.gm))
        self._occupy(msg.p, msg.pos, msg.tid, msg.gm)
        self.launched += 1
        if self.layout.owner[msg.p] != msg.gm:
            self.repartitions += 1
        self.rec.mark(msg.tid, self.rt.now(), COMMUNICATION)
        self.proc.send(POOL_ADDRESS, LaunchBatch([(msg.tid, w)], (self.address, self.gm_addr[msg.gm])))

    def _fits_after_preempt(self, msg: PreemptRequest) -> bool:
        w = self.layout.order[msg.p][msg.pos]
        if self.tasks.mask[msg.tid] & ~self.sh.cluster.machine_masks[w]:
            return False
        return self.state.room_after(msg.p, msg.pos, self.request(msg.tid), self.request(msg.victim))

    def counters(self) -> dict[str, int]:
        return {
            "launched": self.launched,
            "repartitions": self.repartitions,
            "inconsistencies": self.inconsistencies,
            "state_updates": self.updates_sent,
            "piggybacked_updates": self.piggybacked,
            "state_update_entries": self.update_entries,
        }
