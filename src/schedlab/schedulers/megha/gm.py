"""Megha's Global Master: matching on an eventually-consistent global view (sans-IO).

Megha paper, Section IV-B; constraint-aware paper, Sections 2.1 and 4.

* **View.** For every partition of every LM the GM keeps an availability
  bitset (slot mode) or per-worker free vectors plus a "has room" bitset
  (multi-resource mode). It changes when the GM sends requests (optimistically
  taken), when its own tasks finish (completion messages), with LM state
  updates (heartbeats) and with the state piggybacked on rejections.
* **Matching** (Algorithm 1 with the constraint-aware paper's Algorithm 1):
  candidates = availability AND the bitsets of the task's constraints. The
  GM tries its internal partitions first, starting round-robin from the LM
  after the last one it used, then the external partitions round-robin (a
  *repartition* request). The worker is chosen at random or with the fewest
  machine constraints (``worker_choice``), among the candidates of the first
  partition that has any (``choice_scope="partition"``, what the authors'
  simulator does) or among all candidates of the group — every internal
  partition, else every external one (``choice_scope="group"``, slot mode):
  the constraint-aware paper's Section 4.3 chooses "from the set of all
  suitable worker nodes" without saying which set the search hands over.
* **Rescheduling** (IV-B-5). A task that matches nowhere waits; the paper
  re-inserts it at the end of the queue and treats it as new at the front.
  Here that rotation is event-driven rather than a busy loop: whenever the view
  gains resources on a worker, the earliest waiting tasks that worker could
  serve are matched again, as new requests, until it is taken. Since matching
  can only newly succeed when the view gains something, this is the same
  outcome without spinning.
* **Requests** of one handling step are batched per LM (one message per LM).
* **Own-task guard** (delta updates): a worker held by one of the GM's own
  in-flight or running tasks stays taken in its view whatever a state update
  generated before the LM saw the request says. With full snapshots (the
  original design, ``updates="snapshot"``) the GM overwrites its view, which
  is what made that design suffer the inconsistencies of constraint-aware
  paper 4.4.

Allocation-time phases: waiting until the request leaves the GM is framework
queuing, GM processing time is processing, the request's and launch's flight
is communication, a rejection's round trip is communication too. The
simulator marks processing when it charges costs; a real process, whose
handling takes time of its own, marks it from when the input being handled
reached it (``MeghaShared.handling_since``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from schedlab.cluster.bitsets import iter_set_bits
from schedlab.errors import InputError
from schedlab.metrics.recorder import COMMUNICATION, FRAMEWORK_QUEUING, PROCESSING
from schedlab.schedulers.megha.costs import CostDraws
from schedlab.schedulers.megha.messages import (
    LaunchRejected,
    LaunchRequest,
    PreemptRejected,
    StateUpdate,
    TaskLost,
    TaskPreempted,
)
from schedlab.schedulers.megha.slots import gm_release, gm_take, partition_walk
from schedlab.schedulers.megha.view import CapacityView, GMView, SlotView
from schedlab.schedulers.placement import worker_choice
from schedlab.schedulers.waiting import WaitingClasses
from schedlab.sim.processor import Processor
from schedlab.sim.runtime import Component
from schedlab.workers.protocol import TasksFinished

if TYPE_CHECKING:
    from schedlab.schedulers.megha import MeghaShared
    from schedlab.schedulers.megha.fairness import FairSharing



def gm_address(g: int) -> tuple[str, int]:
    return ("gm", g)


def lm_address(i: int) -> tuple[str, int]:
    return ("lm", i)


class GlobalMaster(Component):
    """One GM: its queue of waiting tasks and its view of every partition."""

    def __init__(self, g: int, shared: MeghaShared, rng: random.Random) -> None:
        p = shared.params
        # set before registering: without processing costs the inputs bypass the processor (see handlers)
        fixed = p.cost_per_input or {}
        self.match_fixed, self.update_fixed = fixed.get("gm_match", 0.0), fixed.get("update_per_worker", 0.0)
        self.costly = p.gm_match_cost > 0 or p.update_cost_per_worker > 0 or p.message_cost > 0 or self.match_fixed > 0 or self.update_fixed > 0
        super().__init__(gm_address(g), shared.runtime)
        # spread costs draw from a stream of their own: worker choices stay where they were
        self.draws = CostDraws(shared.runtime.rng(f"megha:costs:gm{g}"), p.cost_spread) if self.costly and p.cost_spread else None
        self.g = g
        self.sh = shared
        lay = shared.layout
        self.layout = lay
        self.tasks = shared.tasks
        self.rec = shared.observer
        self.rng = rng
        self.since = shared.handling_since  # a real process's (MeghaShared)
        # the worker-choice policy (placement), drawing from this GM's stream; gm_take takes a built-in's draw
        self.choice = worker_choice(shared.params.worker_choice, rng)
        self.choice_draw = self.choice.draw
        self.snapshot_mode = shared.params.updates == "snapshot"
        self.guard = shared.params.updates != "delta+own-unguarded"  # the own-task guard (off only for the ablation)
        self.slot_mode = shared.slot_mode
        self.group_scope = shared.params.choice_scope == "group"
        if self.group_scope and not self.slot_mode:
            raise InputError("param choice_scope", "'group' is slot-mode only (no --resources multi)")
        P = lay.num_partitions
        # the view of every partition (view.py): what is believed free, what this GM's tasks hold; avail and
        # reserved are the view's own lists (the compiled search and the fairness code read them)
        if self.slot_mode:
            self.view: GMView = SlotView(lay.full)
        else:
            cap = shared.cluster.capacity
            assert cap is not None
            self.view = CapacityView(lay.full, [[tuple(map(float, cap[w])) for w in lay.order[p]] for p in range(P)])
        self.avail: list[int] = self.view.avail
        self.reserved: list[int] = self.view.reserved  # slot: workers held by this GM's in-flight/running tasks
        self.sizes = [lay.index[p].size for p in range(P)]
        self.internal = [lay.partition(i, g) for i in range(lay.num_lms)]
        self.external = [p for p in range(P) if lay.owner[p] != g]
        self.groups = ((0, self.internal), (1, self.external))
        self.suspended: set[int] = set()  # LMs this GM cannot reach now (real clusters): matched nowhere there
        self.rr = [0, 0]  # round-robin positions in the internal and external partitions
        # One waiting queue per user queue this GM serves (one unless fair sharing maps several
        # users here); the GM serves them round-robin (Megha paper IV-C).
        self.queues: list[WaitingClasses] = [WaitingClasses()]
        self.waiting = self.queues[0]
        self.queue_of_user: dict[int, int] = {}
        self.rr_queue = 0
        self.lm_addr = [lm_address(i) for i in range(lay.num_lms)]
        self.proc = Processor(shared.runtime, self._before_send)
        # counters
        self.requests_sent = 0
        self.repartition_requests = 0
        self.rejections = 0
        self.lost = 0  # tasks re-queued because their worker failed (real clusters only)
        self.fairness: FairSharing | None = None  # set by MeghaScheduler when fair sharing is on

    def handlers(self):
        if not self.costly:
            # Nothing takes processing time, so nothing ever waits for the processor: each input is
            # handled on arrival (its messages leave at once, in the order the processor would send them).
            return {
                TasksFinished: self._on_finished,
                StateUpdate: self._on_update,
                LaunchRejected: self._on_rejected,
                PreemptRejected: self._on_preempt_rejected,
                TaskPreempted: self._on_preempted,
                TaskLost: self._on_lost,
            }
        return {
            TasksFinished: self._in_finished,
            StateUpdate: self._in_update,
            LaunchRejected: self._in_rejected,
            PreemptRejected: self._in_preempt_rejected,
            TaskPreempted: self._in_preempted,
            TaskLost: self._in_lost,
        }

    # -- inputs go through the processor (serial, with costs) -------------------------------------
    def submit(self, tids: list[int] | range) -> None:
        """Tasks arriving at this GM's queue now."""
        self.proc.handle(self._on_tasks, tids)

    def _in_finished(self, msg: TasksFinished) -> None:
        self.proc.handle(self._on_finished, msg)

    def _in_update(self, msg: StateUpdate) -> None:
        self.proc.handle(self._on_update, msg)

    def _in_rejected(self, msg: LaunchRejected) -> None:
        self.proc.handle(self._on_rejected, msg)

    def _in_preempt_rejected(self, msg: PreemptRejected) -> None:
        self.proc.handle(self._on_preempt_rejected, msg)

    def _in_preempted(self, msg: TaskPreempted) -> None:
        self.proc.handle(self._on_preempted, msg)

    def _in_lost(self, msg: TaskLost) -> None:
        self.proc.handle(self._on_lost, msg)

    def _charge(self, tasks: int = 0, workers: int = 0) -> None:
        if self.costly:
            p = self.sh.params
            d = self.draws
            if self.match_fixed or self.update_fixed:  # a fit of a measured profile: a part per input, one per item
                match = self.match_fixed + p.gm_match_cost * tasks if tasks else 0.0
                update = self.update_fixed + p.update_cost_per_worker * workers if workers else 0.0
                if d is None:
                    self.proc.charge(p.message_cost + match + update)
                else:
                    self.proc.charge(p.message_cost * d.factor("message") + (match * d.factor("gm_match") if tasks else 0.0)
                                     + (update * d.factor("update_per_worker") if workers else 0.0))
            elif d is None:
                self.proc.charge(p.message_cost + p.gm_match_cost * tasks + p.update_cost_per_worker * workers)
            else:  # one draw per step of this input (costs.py)
                self.proc.charge(p.message_cost * d.factor("message")
                                 + (p.gm_match_cost * tasks * d.factor("gm_match") if tasks else 0.0)
                                 + (p.update_cost_per_worker * workers * d.factor("update_per_worker") if workers else 0.0))

    def _before_send(self, dst: object, msg: object) -> None:
        # The request leaves now: the time since the GM started handling it was processing.
        if isinstance(msg, LaunchRequest) and self.costly:
            now = self.rt.now()
            mark = self.rec.mark
            for tid, _p, _pos in msg.items:
                mark(tid, now, PROCESSING)

    # -- handlers ----------------------------------------------------------------------------------
    def _on_tasks(self, tids: list[int] | range) -> None:
        out: dict[int, list[tuple[int, int, int]]] = {}
        self._charge(tasks=len(tids))
        match = self.match
        for tid in tids:
            m = match(tid)
            if m is None:
                self._no_match(tid, out)
            else:
                self.add_request(out, tid, m[0], m[1])
        self._dispatch(out)

    def _no_match(self, tid: int, out: dict) -> None:
        if self.fairness is None or not self.fairness.try_preempt(self, tid):
            self.enqueue(tid)

    def _queue_for(self, tid: int) -> WaitingClasses:
        if len(self.queues) == 1:
            return self.waiting
        user = self.tasks.jobs[self.tasks.job[tid]].user
        return self.queues[self.queue_of_user.get(user, 0)]

    def enqueue(self, tid: int) -> None:
        self._queue_for(tid).add(tid, self._key(tid))

    def waiting_count(self) -> int:
        return sum(q.count for q in self.queues)

    def _key(self, tid: int) -> tuple:
        return (self.tasks.mask[tid], self.tasks.request[tid])

    def add_request(self, out: dict, tid: int, p: int, pos: int) -> None:
        lm = self.layout.lm_of[p]
        items = out.get(lm)
        if items is None:
            out[lm] = [(tid, p, pos)]
        else:
            items.append((tid, p, pos))
        if self.layout.owner[p] != self.g:
            self.repartition_requests += 1

    def _dispatch(self, out: dict[int, list[tuple[int, int, int]]]) -> None:
        if not out:
            return
        now = self.rt.now()
        mark_each = self.rec.mark_each
        since = None if self.since is None else self.since()
        for lm, items in out.items():
            if since is None:
                mark_each(items, now, FRAMEWORK_QUEUING)
            else:  # a real process: queuing until its handling of this input began, processing since
                mark_each(items, since, FRAMEWORK_QUEUING)
                mark_each(items, now, PROCESSING)
            self.requests_sent += len(items)
            self.proc.send(self.lm_addr[lm], LaunchRequest(self.g, items))

    # -- matching ----------------------------------------------------------------------------------
    def match(self, tid: int) -> tuple[int, int] | None:
        """Find and take a worker for ``tid`` in the view: (partition, position) or None."""
        mask = self.tasks.mask[tid]
        if self.group_scope:
            el_all = self.layout.eligible(mask)
            for _g, group in self.groups:
                m = self.take_across(group, el_all)
                if m is not None:
                    return m
            return None
        lay = self.layout
        el = lay.eligible_cache.get(mask)
        if el is None:
            el = lay.eligible_entry(mask)
        if self.slot_mode and self.choice.native:
            return gm_take(mask, el, lay.eligible_at, self.groups, self.rr, self.avail, self.reserved, self.choice_draw)
        # Multi-resource mode, or a plugin's policy: gm_take's walk, with the policy's choice among the fitting.
        req = self.request(tid)
        avail, view, choice = self.avail, self.view, self.choice
        for g, after, p in partition_walk(self.groups, self.rr):
            e = el[p]
            if e is None:
                e = lay.eligible_at(el, mask, p)
            cand = avail[p] & e
            if cand:
                pos = view.fit(p, cand, req, choice)
                if pos >= 0:
                    self.rr[g] = after
                    view.take(p, pos, req)
                    return p, pos
        return None

    def request(self, tid: int) -> tuple[float, ...] | None:
        """A task's resource request, None in slot mode (a service GM may hold no description of the task)."""
        return None if self.slot_mode else self.tasks.request[tid]

    def take_across(self, group: Sequence[int], el: Sequence[int]) -> tuple[int, int] | None:
        """``choice_scope="group"``: the worker the policy picks among every candidate of these partitions
        (slot mode), taken: (partition, position), or None."""
        avail = self.avail
        masks, order = self.sh.cluster.machine_masks, self.layout.order
        m = self.choice.pick_across([(p, avail[p] & el[p]) for p in group], lambda q, pos: masks[order[q][pos]].bit_count())
        if m is None:
            return None
        self.view.take(m[0], m[1], None)
        return m

    def take_in(self, p: int, cand: int) -> int:
        """The worker the policy picks among candidates ``cand`` of partition ``p`` (slot mode), taken: its position."""
        pos = self.choice.pick(cand)
        self.view.take(p, pos, None)
        return pos

    def hold(self, p: int, pos: int, tid: int) -> None:
        """Count ``tid`` as holding (p, pos) in the view (a request sent outside normal matching)."""
        self.view.hold(p, pos, self.request(tid))

    def give_back(self, p: int, pos: int, tid: int) -> None:
        """This GM's task no longer holds its worker: release it in the view."""
        self.view.give_back(p, pos, self.request(tid))

    # -- rescheduling: resources appeared in the view ----------------------------------------------
    def _refill_all(self, places: list[tuple[int, int]], out: dict) -> None:
        """:meth:`_refill` at each of these workers, in order.

        Under a backlog most freed workers can serve no waiting task (the Google
        trace: 19 in 20); in slot mode with one queue that is ruled out here with
        the queue's compatibility test alone, without entering the refill.
        """
        if len(self.queues) != 1 or not self.slot_mode or self.suspended:
            for p, pos in places:
                self.refill(p, pos, out)
            return
        q = self.waiting
        compatible = q.compatible
        order = self.layout.order
        machine_masks = self.sh.cluster.machine_masks
        for p, pos in places:
            if not q.count:
                return
            if compatible(~machine_masks[order[p][pos]]):
                self.refill(p, pos, out)

    def refill(self, p: int, pos: int, out: dict) -> None:
        """Match the earliest waiting tasks that the worker at (p, pos) could serve, while it can.

        With several user queues the GM takes them in turn (round-robin).
        """
        if self.suspended and self.layout.lm_of[p] in self.suspended:
            return
        bit = 1 << pos
        w = self.layout.order[p][pos]
        lacking = ~self.sh.cluster.machine_masks[w]
        match = self.match
        queues = self.queues
        nq = len(queues)
        accept = self.view.accepts(p, pos)
        while self.avail[p] & bit:
            tid = -1
            for k in range(nq):
                q = queues[(self.rr_queue + k) % nq]
                if not q.count:
                    continue
                tid = q.pop_first_mask(lacking) if accept is None else q.pop_first(accept, lacking)
                if tid >= 0:
                    self.rr_queue = (self.rr_queue + k + 1) % nq
                    break
            if tid < 0:
                return
            m = match(tid)
            if m is None:  # cannot happen: the worker is free in the view and fits
                self._queue_for(tid).add_front(tid, self._key(tid))
                return
            self.add_request(out, tid, m[0], m[1])

    def freed_unknown(self, workers: Iterable[int]) -> None:
        """Workers whose tasks this GM's previous process placed have ended (the services: this process restarted).

        The LM leaves a GM's own completions out of its deltas to that GM, whichever of its processes placed the
        task, so only this frees their workers in the view (found by the deterministic simulation, seed 2206647:
        an old process's request, slow on the wire, ran after the GM restarted; the delta showed the worker taken,
        its end never freed it). A worker this process holds (``reserved``) is left alone. In multi-resource mode
        nothing is to do: the LM's vectors count a GM's holdings unknown to it as free already."""
        where = self.layout.where
        freed = self.view.freed_unknown(where[w] for w in workers)
        if freed and (self.waiting.count if len(self.queues) == 1 else self.waiting_count()):
            out: dict = {}
            self._refill_all(freed, out)
            self._dispatch(out)

    def _on_finished(self, msg: TasksFinished) -> None:
        # One call per finished task on most runs (each task ends at a time of its own): kept lean.
        group = msg.group
        if self.costly:
            self._charge(tasks=len(group))
        self.rec.tasks_reported(group, self.rt.now())
        where = self.layout.where
        freed: list[tuple[int, int]] = []
        if self.slot_mode:  # the compiled release
            gm_release(group, where, self.reserved, self.avail, freed)
        else:
            give_back, request = self.view.give_back, self.tasks.request
            for tid, w in group:
                place = where[w]
                freed.append(place)
                give_back(place[0], place[1], request[tid])
        if self.fairness is not None:
            self.fairness.finished(self, group)
        if self.waiting.count if len(self.queues) == 1 else self.waiting_count():
            out: dict = {}
            self._refill_all(freed, out)
            self._dispatch(out)

    def _on_update(self, msg: StateUpdate) -> None:
        out: dict = {}
        self._apply(msg, out)
        self._dispatch(out)

    def _apply(self, msg: StateUpdate, out: dict) -> None:
        """Fold an LM's state into the view; re-match waiting tasks on what became available."""
        # what became available matters only to waiting tasks
        gained: list[tuple[int, int]] | None = [] if self.waiting_count() > 0 else None
        n = self.view.fold(msg, self.guard, self.sizes, gained)
        self._charge(workers=n)
        if gained:
            self._refill_all(gained, out)

    def _on_rejected(self, msg: LaunchRejected) -> None:
        """An inconsistency: fold in the LM's state, then retry the tasks as new requests."""
        self.rejections += len(msg.items)
        now = self.rt.now() if self.since is None else self.since()  # the rejection's flight ended when it came
        mark = self.rec.mark
        out: dict = {}
        for tid, p, pos in msg.items:
            mark(tid, now, COMMUNICATION)
            self.forget(p, pos, tid)
        self._apply(msg.update, out)
        self._charge(tasks=len(msg.items))
        for tid, _p, _pos in msg.items:
            m = self.match(tid)
            if m is None:
                self._no_match(tid, out)
            else:
                self.add_request(out, tid, m[0], m[1])
        self._dispatch(out)

    def forget(self, p: int, pos: int, tid: int) -> None:
        """A request for (p, pos) failed: the worker is not ours; believe it busy until told otherwise."""
        self.view.forget(p, pos, self.request(tid))

    # -- fair sharing (Algorithm 2), delegated ------------------------------------------------------
    def _on_preempt_rejected(self, msg: PreemptRejected) -> None:
        out: dict = {}
        self.forget(msg.p, msg.pos, msg.tid)
        self._apply(msg.update, out)
        if self.fairness is not None:
            self.fairness.preempt_rejected(self, msg, out)
        self._dispatch(out)

    def _on_preempted(self, msg: TaskPreempted) -> None:
        out: dict = {}
        if self.fairness is not None:
            self.fairness.preempted(self, msg, out)
        self._dispatch(out)

    # -- failures ------------------------------------------------------------------------------------
    def _on_lost(self, msg: TaskLost) -> None:
        """The worker running our task failed: it is not ours any more (believe it busy until the LM says
        otherwise), and the task is a new request — matched now if the view has room, else queued."""
        out: dict = {}
        self.lost += 1
        self.forget(msg.p, msg.pos, msg.tid)
        self.rematch(msg.tid, out)
        self._dispatch(out)

    def rematch(self, tid: int, out: dict) -> None:
        """A task back in this GM's hands is a new request: matched now if the view has room (never left
        waiting beside an available worker), else queued."""
        m = self.match(tid)
        if m is None:
            self.enqueue(tid)
        else:
            self.add_request(out, tid, m[0], m[1])

    # -- a restarted GM (real clusters: the services run the recovery) -------------------------------
    def view_unknown(self) -> None:
        """This GM has just (re)started: it knows nothing of any partition yet, so nothing is available in
        its view until each LM's state arrives (:meth:`recover`)."""
        self.view.unknown()

    def recover(self, update: StateUpdate, running: list[tuple[int, int, int]]) -> None:
        """One LM's truth after a restart: its snapshot replaces the view of its partitions, and the tasks
        it runs for this GM are this GM's again (held in the view, so later deltas — which leave out the
        GM's own tasks — keep them accounted)."""
        out: dict = {}
        # the LM's answer is its whole truth: what the view held there before (an earlier answer) goes
        parts = set(update.bits) | set(update.free)
        if update.lm in self.suspended:  # it answered: match there again
            self.resume_lm(update.lm)
        self.view.drop_parts(parts)
        self._apply(update, out)
        if self.waiting_count():
            # waiting tasks are matched again on every worker the answer shows available, not only on those it
            # gained: workers already free in the view were out of reach while the LM was suspended (found by the
            # deterministic simulation: tasks left waiting beside free workers)
            avail = self.avail
            self._refill_all([(p, pos) for p in sorted(parts) for pos in iter_set_bits(avail[p])], out)
        held_again = self.view.held_again
        for tid, p, pos in running:
            held_again(p, pos, self.request(tid))  # (busy in the snapshot already)
        self._dispatch(out)

    def suspend_lm(self, i: int) -> None:
        """LM ``i`` cannot be reached (its requests time out): match no task on its partitions until
        :meth:`resume_lm` — new tasks go to the other LMs."""
        self.suspended.add(i)
        self._regroup()

    def resume_lm(self, i: int) -> None:
        self.suspended.discard(i)
        self._regroup()

    def _regroup(self) -> None:
        lay, g, off = self.layout, self.g, self.suspended
        self.internal = [lay.partition(i, g) for i in range(lay.num_lms) if i not in off]
        self.external = [p for p in range(lay.num_partitions) if lay.owner[p] != g and lay.lm_of[p] not in off]
        self.groups = ((0, self.internal), (1, self.external))
        self.rr = [0, 0]

    def request_again(self, tids: list[int]) -> None:
        """Tasks back in this GM's hands after their LM's snapshot already replaced its view of their workers
        (an LM process that took over did not find them): each is a new request."""
        out: dict = {}
        for tid in tids:
            self.rematch(tid, out)
        self._dispatch(out)

    def withdraw(self, tids: Iterable[int]) -> int:
        """Take these tasks out of the waiting queues where a copy waits; returns how many were.

        Only a real deployment needs it: a GM that requested a task again because
        its LM's restarted process did not find it (:mod:`schedlab.services.recovery`)
        may then learn that its first run ended after all — the copy still waiting
        must not run a second time.
        """
        if not self.waiting_count():
            return 0
        n = 0
        for tid in tids:
            q = self._queue_for(tid)
            key = self._key(tid)
            waiting = q.queues.get(key)
            if waiting is not None and tid in waiting:
                q.remove(tid, key)
                n += 1
        return n

    def release(self, items: list[tuple[int, int, int]]) -> None:
        """These requests were never sent and their tasks are not to run (a real deployment's cancelled job:
        :mod:`schedlab.services.cancel`): the workers go back to the view, and waiting tasks are matched on them."""
        out: dict = {}
        for tid, p, pos in items:
            if self.view.holds(p, pos):
                self.give_back(p, pos, tid)
        if self.waiting_count():
            self._refill_all([(p, pos) for _tid, p, pos in items], out)
        self._dispatch(out)

    def launch_failed(self, items: list[tuple[int, int, int]]) -> None:
        """These requests never took effect at their LM (it refused them unread, or they were never sent):
        the workers are not this GM's, and each task is a new request — like a rejection without a state."""
        out: dict = {}
        for tid, p, pos in items:
            # the LM never changed: the view goes back to what it was before the request (no state update
            # would ever correct a worker believed busy here); a snapshot taken since may have let go already
            if self.view.holds(p, pos):
                self.give_back(p, pos, tid)
        tasks = self.tasks
        for tid, _p, _pos in items:
            # a task whose description a service GM no longer holds (its job let go meanwhile) is not requested again:
            # matching it failed, and the rest of the batch was never requested (found by the deterministic
            # simulation, seed 915019)
            if tid in tasks:
                self.rematch(tid, out)
        self._dispatch(out)

    # -- observation ---------------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        out = {
            "requests": self.requests_sent,
            "repartition_requests": self.repartition_requests,
            "rejected_requests": self.rejections,
        }
        if self.lost:
            out["tasks_lost"] = self.lost
        return out
