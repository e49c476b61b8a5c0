"""``compat="authors"``: Megha as the authors' own simulator runs it, departures from the papers included.

The constraint-aware paper's Megha numbers come from the authors' simulator
(meghanat/megha-constraint-aware, ``megha3.0``); docs/authors-simulators.md#megha
lists where it departs from the papers; we read its GM (``gm_constraints_*.py``), LM
(``lm_constraints.py``) and events and reproduce each departure here, on top of
the paper-faithful classes, so that both profiles run on the same kernel,
workloads and metrics and each departure's effect can be measured.

Each departure is a switch (``departures``, default: all of them), so that
they can be measured one at a time; a switch that is off leaves the
paper-faithful behaviour of :class:`GlobalMaster` / :class:`LocalMaster` in its
place.

GM (:class:`AuthorsGM`):

* ``search_order`` — internal partitions always from LM 1 (not round-robin),
  then external partitions LM 1…L × the other GMs in order; the first
  partition with a candidate wins. Their simulator also fixes a *search mode*
  once per job from "busy partition" flags (a partition is flagged when a
  search finds its availability vector empty, unflagged when one of its
  workers is seen free) — internal, internal then external, external only, or
  none (every task queued). A flagged partition is always empty in the view
  (only seeing a worker free makes it non-empty, and that unflags it), and no
  event comes between the tasks of one job, so the mode skips exactly the
  partitions in which the search would find nothing: it changes no outcome,
  and here the search simply skips empty partitions.
* ``batching`` — consecutive tasks bound for the same LM travel in one request
  (at most 100), instead of one request per LM per handling step.
* ``retry_on_freed_worker`` — the queue is looked at only when the GM learns a
  specific worker became free (its own task finished there, or an update lists
  it as available), and then the *first* queued task whose constraints that
  worker satisfies is sent to exactly that worker. (Paper-faithful: the
  earliest waiting task the worker could serve is matched again as a new
  request, anywhere the search finds a worker.) In both, new arrivals never
  look at the queue.
* ``rejection_to_front`` — rejected tasks go back to the *front* of the queue
  (each with ``insert(0)``, so a rejected batch comes back reversed) to wait
  for a freed worker, instead of being matched again at once.

LM (:class:`AuthorsLM`):

* ``event_lists`` — for each other GM the LM appends a worker to a "busy"
  list when it launches a task there and to an "available" list when a task
  there ends (the task's own GM is left out of both); the GM applies all
  "busy" entries of a partition, then all "available" ones. A worker freed and
  then taken again within one period is thus believed free — an error that
  nothing corrects, since updates never carry full state. Accepted launches get
  no reply (no piggybacked state).
* ``discarded_update`` — when a request batch has rejected tasks, the LM hands
  the GM's pending update to the rejection by reference and then resets it —
  so the rejection arrives with an empty update and those pending changes are
  lost for good. (It is easily taken to happen whenever an LM accepts a
  launch from that GM; in the code we read it happens on a batch with a
  rejected request, which is what we reproduce.) With state-delta updates
  (``event_lists`` off) the GM's pending changes are dropped the same way.
* ``heartbeat_phase`` — heartbeats phased at first arrival − 0.05 s (applied by
  :class:`~schedlab.schedulers.megha.MeghaScheduler`).
* ``update_order`` — the LMs' updates of one heartbeat reach a GM at the same
  instant, and their event queue (a heap of ``(time, event)`` whose events all
  compare "less than" each other) hands such a burst out last in, first out:
  each GM folds them last LM first (applied by ``MeghaScheduler``). With
  ``retry_on_freed_worker`` and ``event_lists`` the order decides which worker a
  queued task is offered first: a worker that only *looks* free in LM 1's list
  (freed and taken again within the period) takes the task out of the queue for
  a launch that is rejected, while the worker truly free in LM 5's list goes to
  someone else — on syn_250 a rare-constraint task waits 1,190 s that way,
  400 s with this order. Other simultaneous events (launches, task ends) keep
  our first-in, first-out order.

Random worker choice in the authors' code draws from one module-level RNG
seeded 43 and shared by all GMs; its draws depend on their event order, which
no other simulator reproduces, so here each GM draws from its own named stream
(same distribution). Minimum-constraints choice is identical: the lowest-index
worker among those with the fewest constraints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schedlab.errors import InputError
from schedlab.metrics.recorder import COMMUNICATION, FRAMEWORK_QUEUING
from schedlab.schedulers.megha.gm import GlobalMaster
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.messages import LaunchRejected, LaunchRequest, StateUpdate
from schedlab.workers.protocol import POOL_ADDRESS, LaunchBatch, TasksFinished

if TYPE_CHECKING:
    import random

    from schedlab.schedulers.megha import MeghaShared

BATCH_LIMIT = 100
# the switches (MeghaParams.departures; its Literal lists the same names, checked by a test)
DEPARTURES = ("search_order", "batching", "retry_on_freed_worker", "rejection_to_front", "event_lists",
              "discarded_update", "heartbeat_phase", "update_order")


class AuthorsGM(GlobalMaster):
    """The GM of the authors' simulator (slot mode), each of its departures switchable."""

    def __init__(self, g: int, shared: MeghaShared, rng: random.Random) -> None:
        super().__init__(g, shared, rng)
        if not self.slot_mode:

            raise InputError("param compat", "the authors' simulator is slot-mode only (no --resources multi)")
        on = shared.params.authors_departures()
        self.fixed_order = "search_order" in on
        self.consecutive = "batching" in on
        self.offer_only = "retry_on_freed_worker" in on
        self.to_front = "rejection_to_front" in on
        self.lm_order_external = [p for p in range(shared.layout.num_partitions) if shared.layout.owner[p] != g]

    # -- arrivals: LM-1-first search, consecutive batching ----------------------------------------
    def _on_tasks(self, tids) -> None:
        if not (self.fixed_order or self.consecutive):
            super()._on_tasks(tids)
            return
        batch: list[tuple[int, int, int]] = []
        batch_lm = -1
        out: dict[int, list[tuple[int, int, int]]] = {}
        now = self.rt.now()
        find = self._search if self.fixed_order else self.match
        for tid in tids:
            m = find(tid)
            if m is None:
                self.enqueue(tid)
                continue
            p, pos = m
            if not self.consecutive:
                self.add_request(out, tid, p, pos)
                continue
            if self.layout.owner[p] != self.g:
                self.repartition_requests += 1
            lm = self.layout.lm_of[p]
            if batch and lm != batch_lm:
                self._send_batch(batch_lm, batch, now)
                batch = []
            batch_lm = lm
            batch.append((tid, p, pos))
            if len(batch) == BATCH_LIMIT:
                self._send_batch(batch_lm, batch, now)
                batch = []
        if batch:
            self._send_batch(batch_lm, batch, now)
        self._dispatch(out)

    def _search(self, tid: int) -> tuple[int, int] | None:
        """Internal partitions from LM 1, then external ones LM 1…L × the other GMs: the first with a candidate."""
        el = self.layout.eligible(self.tasks.mask[tid])
        avail = self.avail
        for partitions in (self.internal, self.lm_order_external):
            if self.group_scope:
                m = self.take_across(partitions, el)
                if m is not None:
                    return m
                continue
            for p in partitions:
                cand = avail[p] & el[p]
                if cand:
                    return p, self.take_in(p, cand)
        return None

    def _send_batch(self, lm: int, items: list[tuple[int, int, int]], now: float) -> None:
        mark = self.rec.mark
        for tid, _p, _pos in items:
            mark(tid, now, FRAMEWORK_QUEUING)
        self.requests_sent += len(items)
        self.proc.send(self.lm_addr[lm], LaunchRequest(self.g, items))

    # -- the queue retried only for a specific freed worker ----------------------------------------
    def _offer(self, p: int, pos: int, now: float) -> bool:
        """The worker at (p, pos) is free: send it the first queued task it can run, if any."""
        if not self.waiting.count:
            return False
        w = self.layout.order[p][pos]
        tid = self.waiting.pop_first_mask(~self.sh.cluster.machine_masks[w])
        if tid < 0:
            return False
        self.reserved[p] |= 1 << pos
        if self.layout.owner[p] != self.g:
            self.repartition_requests += 1
        self._send_batch(self.layout.lm_of[p], [(tid, p, pos)], now)
        return True

    def _refill_all(self, places: list[tuple[int, int]], out: dict) -> None:
        """Workers the view gained through the paper-faithful paths (state deltas, a completion): with
        ``retry_on_freed_worker`` each is offered to the first queued task it can run, and taken if one is."""
        if not self.offer_only:
            super()._refill_all(places, out)
            return
        now = self.rt.now()
        for p, pos in places:
            if self._offer(p, pos, now):
                self.avail[p] &= ~(1 << pos)

    def _on_finished(self, msg: TasksFinished) -> None:
        if not self.offer_only:
            super()._on_finished(msg)
            return
        group = msg.group
        now = self.rt.now()
        self.rec.tasks_reported(group, now)
        where = self.layout.where
        for _tid, w in group:
            p, pos = where[w]
            self.reserved[p] &= ~(1 << pos)
            if not self._offer(p, pos, now):
                self.avail[p] |= 1 << pos

    def _on_update(self, msg: StateUpdate) -> None:
        if not msg.lists:
            super()._on_update(msg)
            return
        out: dict = {}
        self._apply_lists(msg, out)
        self._dispatch(out)

    def _apply_lists(self, msg: StateUpdate, out: dict) -> None:
        """An event-list update: every "busy" entry of a partition, then every "available" one."""
        now = self.rt.now()
        gained: list[tuple[int, int]] = []
        for p, (busy, available) in msg.lists.items():
            for pos in busy:
                self.avail[p] &= ~(1 << pos)
            for pos in available:
                if self.offer_only:
                    if not self._offer(p, pos, now):
                        self.avail[p] |= 1 << pos
                elif not self.avail[p] >> pos & 1:
                    self.avail[p] |= 1 << pos
                    gained.append((p, pos))
        if gained and self.waiting_count():
            self._refill_all(gained, out)

    def _fold(self, update: StateUpdate, out: dict) -> None:
        if update.lists:
            self._apply_lists(update, out)
        else:
            self._apply(update, out)

    def _on_rejected(self, msg: LaunchRejected) -> None:
        out: dict = {}
        now = self.rt.now()
        self.rejections += len(msg.items)
        if self.to_front:
            for tid, p, pos in msg.items:
                self.rec.mark(tid, now, COMMUNICATION)
                self.reserved[p] &= ~(1 << pos)
                self.waiting.push_front(tid, self._key(tid))
            self._fold(msg.update, out)
        else:  # matched again at once, as new requests (the paper-faithful GM's way)
            for tid, p, pos in msg.items:
                self.rec.mark(tid, now, COMMUNICATION)
                self.forget(p, pos, tid)
            self._fold(msg.update, out)
            self._charge(tasks=len(msg.items))
            find = self._search if self.fixed_order else self.match
            for tid, _p, _pos in msg.items:
                m = find(tid)
                if m is None:
                    self.enqueue(tid)
                else:
                    self.add_request(out, tid, m[0], m[1])
        self._dispatch(out)


class AuthorsLM(LocalMaster):
    """The LM of the authors' simulator: event-list updates and the discarded update on rejection (switchable)."""

    def __init__(self, i: int, shared: MeghaShared) -> None:
        super().__init__(i, shared)
        on = shared.params.authors_departures()
        self.event_lists = "event_lists" in on
        self.discard = "discarded_update" in on
        # per GM, per partition: ([busy positions], [available positions]) since the last update
        self.lists: list[dict[int, tuple[list[int], list[int]]]] = [self._empty() for _ in range(self.G)]

    def _empty(self) -> dict[int, tuple[list[int], list[int]]]:
        return {p: ([], []) for p in self.parts}

    def _on_request(self, msg: LaunchRequest) -> None:
        if not self.event_lists:
            super()._on_request(msg)
            return
        gm = msg.gm
        accepted: list[tuple[int, int]] = []
        rejected: list[tuple[int, int, int]] = []
        order = self.layout.order
        owner = self.layout.owner
        for item in msg.items:
            tid, p, pos = item
            bit = 1 << pos
            if self.avail[p] & bit:
                self.avail[p] ^= bit
                self.running[tid] = (p, pos, gm)
                for g in range(self.G):
                    if g != gm:
                        self.lists[g][p][0].append(pos)
                accepted.append((tid, order[p][pos]))
                if owner[p] != gm:
                    self.repartitions += 1
            else:
                rejected.append(item)
        if accepted:
            self.launched += len(accepted)
            self.proc.send(POOL_ADDRESS, LaunchBatch(accepted, (self.address, self.gm_addr[gm])))
        if rejected:
            self.inconsistencies += len(rejected)
            self.rec.inconsistency(gm, self.rt.now(), len(rejected))
            pending = self.lists[gm]
            self.lists[gm] = self._empty()
            # discarded: the pending update is passed by reference and then reset, so the GM gets it empty
            update = StateUpdate(self.i, False, lists=self._empty() if self.discard else pending)
            self.proc.send(self.gm_addr[gm], LaunchRejected(self.i, rejected, update))

    def _update_for(self, gm: int, extra: list[tuple[int, int]] | None = None) -> StateUpdate:
        if self.discard and extra is not None:  # a rejection with state-delta updates: the pending changes go
            ch = self.pending_changes(gm)
            for j in range(len(ch)):
                ch[j] = 0
            return StateUpdate(self.i, False)
        return super()._update_for(gm, extra)

    def _on_finished(self, msg: TasksFinished) -> None:
        if not self.event_lists:
            super()._on_finished(msg)
            return
        for tid, _w in msg.group:
            p, pos, gm = self.running.pop(tid)
            self.avail[p] |= 1 << pos
            for g in range(self.G):
                if g != gm:
                    self.lists[g][p][1].append(pos)

    def _on_heartbeat(self) -> None:
        if not self.event_lists:
            super()._on_heartbeat()
            return
        for g in range(self.G):
            lists = self.lists[g]
            self.lists[g] = self._empty()
            self.updates_sent += 1
            self.update_entries += sum(len(b) + len(a) for b, a in lists.values())
            self.proc.send(self.gm_addr[g], StateUpdate(self.i, False, lists=lists))
