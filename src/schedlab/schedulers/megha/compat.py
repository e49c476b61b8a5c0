"""``compat="authors"``: Megha as the authors' own simulator runs it, departures from the papers included.

The constraint-aware paper's Megha numbers come from the authors' simulator
(meghanat/megha-constraint-aware, ``megha3.0``); docs/authors-simulators.md#megha
lists where it departs from the papers; we read its GM (``gm_constraints_*.py``), LM
(``lm_constraints.py``) and events and reproduce each departure here, on top of
the paper-faithful classes, so that both profiles run on the same kernel,
workloads and metrics and each departure's effect can be measured.

GM (:class:`AuthorsGM`):

* **Search order.** Internal partitions always from LM 1 (not round-robin),
  then external partitions LM 1…L × the other GMs in order; the first
  partition with a candidate wins.
* **Per-job search mode.** Once per job the GM decides from its "busy
  partition" flags (a partition is flagged when a search finds its
  availability vector empty, unflagged when one of its workers is seen free)
  whether the job's tasks search internal partitions, internal then external,
  or external only — or none, in which case every task is queued.
* **Batching.** Consecutive tasks bound for the same LM travel in one request
  (at most 100).
* **Queue retry only on freed workers.** A task that finds nothing is appended
  to the GM's queue. The queue is looked at only when the GM learns a specific
  worker became free — its own task finished there, or an update lists it as
  available — and then the *first* queued task whose constraints that worker
  satisfies is sent to exactly that worker. New arrivals never look at the
  queue, and queued tasks are never retried against the standing view.
* **Rejections** put the tasks back at the *front* of the queue (each with
  ``insert(0)``, so a rejected batch comes back reversed).

LM (:class:`AuthorsLM`):

* **Updates as event lists.** For each other GM the LM appends a worker to a
  "busy" list when it launches a task there and to an "available" list when a
  task there ends (the task's own GM is left out of both); the GM applies all
  "busy" entries of a partition, then all "available" ones. A worker freed and
  then taken again within one period is thus believed free — an error that
  nothing corrects, since updates never carry full state.
* **Heartbeats** every ``heartbeat`` seconds, phased at first arrival − 0.05 s;
  accepted launches get no reply (no piggybacked state).
* **The discarded update.** When a request batch has rejected tasks, the LM
  hands the GM's pending update to the rejection by reference and then resets
  it — so the rejection arrives with an empty update and those pending changes
  are lost for good. (It is easily taken to happen whenever an LM accepts a
  launch from that GM; in the code we read it happens on a batch with a
  rejected request, which is what we reproduce.)

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


class AuthorsGM(GlobalMaster):
    """The GM of the authors' simulator (slot mode)."""

    def __init__(self, g: int, shared: MeghaShared, rng: random.Random) -> None:
        super().__init__(g, shared, rng)
        if not self.slot_mode:

            raise InputError("param compat", "the authors' simulator is slot-mode only (no --resources multi)")
        self.internal_busy: set[int] = set()  # internal partitions flagged busy
        self.external_busy: set[int] = set()
        self.lm_order_external = [p for p in range(shared.layout.num_partitions) if shared.layout.owner[p] != g]

    # -- arrivals: per-job mode, LM-1-first search, consecutive batching ---------------------------
    def _on_tasks(self, tids) -> None:
        L = self.layout.num_lms
        G = self.layout.num_gms
        int_open = len(self.internal_busy) < L
        ext_open = len(self.external_busy) < L * (G - 1)
        mode = ("A" if ext_open else "I") if int_open else ("E" if ext_open else None)
        batch: list[tuple[int, int, int]] = []
        batch_lm = -1
        now = self.rt.now()
        for tid in tids:
            m = None
            if mode in ("I", "A"):
                m = self._search(tid, self.internal, self.internal_busy)
            if m is None and mode in ("A", "E"):
                m = self._search(tid, self.lm_order_external, self.external_busy)
            if m is None:
                self.waiting.add(tid, self._key(tid))
                continue
            p, pos = m
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

    def _search(self, tid: int, partitions: list[int], busy: set[int]) -> tuple[int, int] | None:
        el = self.layout.eligible(self.tasks.mask[tid])
        avail = self.avail
        for p in partitions:
            if p in busy:
                continue
            a = avail[p]
            if not a:
                busy.add(p)
                continue
            cand = a & el[p]
            if cand:
                return p, self._take_slot(p, cand)
        return None

    def _send_batch(self, lm: int, items: list[tuple[int, int, int]], now: float) -> None:
        mark = self.rec.mark
        for tid, _p, _pos in items:
            mark(tid, now, FRAMEWORK_QUEUING)
        self.requests_sent += len(items)
        self.proc.send(self.lm_addr[lm], LaunchRequest(self.g, items))

    # -- the queue is retried only for a specific freed worker --------------------------------------
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

    def _mark_free(self, p: int, pos: int) -> None:
        self.avail[p] |= 1 << pos
        self.internal_busy.discard(p)
        self.external_busy.discard(p)

    def _on_finished(self, msg: TasksFinished) -> None:
        group = msg.group
        now = self.rt.now()
        self.rec.tasks_reported(group, now)
        where = self.layout.where
        for _tid, w in group:
            p, pos = where[w]
            self.reserved[p] &= ~(1 << pos)
            if not self._offer(p, pos, now):
                self._mark_free(p, pos)

    def _on_update(self, msg: StateUpdate) -> None:
        self._apply_lists(msg)

    def _apply_lists(self, msg: StateUpdate) -> None:
        now = self.rt.now()
        for p, (busy, available) in msg.lists.items():
            for pos in busy:
                self.avail[p] &= ~(1 << pos)
            for pos in available:
                if not self._offer(p, pos, now):
                    self._mark_free(p, pos)

    def _on_rejected(self, msg: LaunchRejected) -> None:
        self.rejections += len(msg.items)
        now = self.rt.now()
        for tid, p, pos in msg.items:
            self.rec.mark(tid, now, COMMUNICATION)
            self.reserved[p] &= ~(1 << pos)
            self.waiting.push_front(tid, self._key(tid))
        self._apply_lists(msg.update)


class AuthorsLM(LocalMaster):
    """The LM of the authors' simulator: event-list updates and the discarded update on rejection."""

    def __init__(self, i: int, shared: MeghaShared) -> None:
        super().__init__(i, shared)
        # per GM, per partition: ([busy positions], [available positions]) since the last update
        self.lists: list[dict[int, tuple[list[int], list[int]]]] = [self._empty() for _ in range(self.G)]

    def _empty(self) -> dict[int, tuple[list[int], list[int]]]:
        return {p: ([], []) for p in self.parts}

    def _on_request(self, msg: LaunchRequest) -> None:
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
            # The pending update is passed by reference and then reset: the GM gets it empty.
            self.lists[gm] = self._empty()
            self.proc.send(self.gm_addr[gm], LaunchRejected(self.i, rejected, StateUpdate(self.i, False, lists=self._empty())))

    def _on_finished(self, msg: TasksFinished) -> None:
        for tid, _w in msg.group:
            p, pos, gm = self.running.pop(tid)
            self.avail[p] |= 1 << pos
            for g in range(self.G):
                if g != gm:
                    self.lists[g][p][1].append(pos)

    def _on_heartbeat(self) -> None:
        for g in range(self.G):
            lists = self.lists[g]
            self.lists[g] = self._empty()
            self.updates_sent += 1
            self.update_entries += sum(len(b) + len(a) for b, a in lists.values())
            self.proc.send(self.gm_addr[g], StateUpdate(self.i, False, lists=lists))
