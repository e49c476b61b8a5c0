"""Global fair sharing in Megha: user queues with shares, preemption under contention (Algorithm 2).

Megha paper, Section IV-C:

* Each user has a queue with a share of the data center; each queue is mapped
  to one GM (``queue_gms``, default: queue ``u`` to GM ``u mod G``); a GM
  serves its queues round-robin. Jobs are assigned to users round-robin in
  arrival order (``user_assignment="round-robin"``) or at random in proportion
  to the shares (``"by-share"``, stream ``megha:users``) — the paper does not
  say how its trace's jobs map to users.
* Fairness acts only under contention: a task first tries internal partitions,
  then a repartition; only when both fail does Algorithm 2 run. If the task's
  user already holds at least its share, it waits. Otherwise the GM looks at
  the users in decreasing order of share violation (holding minus share,
  positive only) and picks a running task of the first one that can yield what
  the task needs (a worker satisfying its constraints, with enough resources
  once the victim is gone), and asks that worker's LM to preempt it.
* The LM verifies the preemption against its true state (the victim must still
  run there, and the resources must suffice); a failed verification is an
  inconsistency and the GM tries the next candidate. A preempted task goes
  back to its own GM's queue and later restarts from scratch.
* Consistency of knowledge: a GM knows its own users' holdings exactly and the
  other users' only as of the last heartbeat round (a snapshot of every user's
  running tasks and holdings published each round) — the paper's "consistent
  state about its own queues, eventually consistent about the others'".
  Waiting tasks of users under their share get another go at Algorithm 2 each
  round, when that knowledge refreshes (the paper's queue rotation re-runs it
  when a re-queued task reaches the front), from the front of the queue and
  until a few task classes have failed (``RETRY_CLASSES_PER_ROUND``). So a GM
  cannot preempt a user it has not yet heard about: at least one round passes
  before the first preemption.

A user's *holding* is its share of the data center: running tasks over workers
in slot mode, the dominant resource share (max over resources of used/total)
in multi-resource mode.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from schedlab.schedulers.megha.gm import GlobalMaster, lm_address
from schedlab.schedulers.megha.messages import PreemptRejected, PreemptRequest, TaskPreempted
from schedlab.schedulers.megha.view import CapacityView
from schedlab.schedulers.placement import EPS
from schedlab.schedulers.waiting import WaitingClasses

# Per round, a GM retries Algorithm 2 for waiting tasks from the front of its queues
# until this many task classes have failed: the paper's queue rotation reaches the
# front tasks first, and bounding the work keeps a long backlog from costing
# O(backlog × running tasks) every heartbeat.
RETRY_CLASSES_PER_ROUND = 8

if TYPE_CHECKING:
    from schedlab.cluster.model import Cluster
    from schedlab.schedulers.megha.partitions import Layout
    from schedlab.workload.model import TaskLookup


def queue_gms_of(shares: list[float], queue_gms: list[int] | None, num_gms: int) -> list[int]:
    """The GM (0-based) serving each user queue: ``queue_gms`` (1-based), or queue ``u`` to GM ``u mod G``."""
    return [g - 1 for g in queue_gms] if queue_gms else [u % num_gms for u in range(len(shares))]


class UserAssignment:
    """Which user queue each job joins, and the GM serving that queue (Megha paper IV-C).

    Used by the simulator's :class:`~schedlab.schedulers.megha.MeghaScheduler`
    and by a real cluster's client, so both put the same jobs in the same queues.
    """

    def __init__(self, shares: list[float], queue_gms: list[int] | None, num_gms: int, assignment: str, rng: random.Random) -> None:
        self.shares = list(shares)
        self.queue_gm = queue_gms_of(shares, queue_gms, num_gms)
        self.assignment = assignment
        self.rng = rng
        self.next_user = 0

    def next(self) -> int:
        """The user of the next job."""
        n = len(self.shares)
        if self.assignment == "round-robin":
            u = self.next_user
            self.next_user = (u + 1) % n
            return u
        x = self.rng.random() * sum(self.shares)
        u = 0
        while u < n - 1 and x >= self.shares[u]:
            x -= self.shares[u]
            u += 1
        return u


def worker_masks_of(victims: list[tuple[int, tuple[int, int]]], masks: list[int], order: list[list[int]]) -> np.ndarray:
    """The machine masks of the victims' workers, as an int64 array — or of Python ints when a trace's
    own constraints need more than 63 bits (tested elementwise then)."""
    wm = [masks[order[p][pos]] for _victim, (p, pos) in victims]
    return np.array(wm, dtype=object if wm and max(wm) >> 63 else np.int64)


class _Candidates:
    """Victims on workers satisfying a task mask, newest first, as ``(victim, p, pos, size)``: taken from
    ``compatible`` (an iterator of ``(victim, (p, pos))``) a chunk at a time as scans reach them — most
    scans stop at one of the first."""

    __slots__ = ("found", "_source", "_size")

    CHUNK = 32

    def __init__(self, compatible: Iterator[tuple[int, tuple[int, int]]], size: Callable[[int], float]) -> None:
        self.found: list[tuple[int, int, int, float]] = []
        self._source = compatible
        self._size = size

    @classmethod
    def of(cls, victims: list[tuple[int, tuple[int, int]]], worker_masks: np.ndarray, mask: int,
           size: Callable[[int], float]) -> _Candidates:
        """The compatible ones among ``victims`` (whose workers' masks are ``worker_masks``), found at once
        by one vectorised test (a worker has every constraint of the mask)."""
        if mask >> 63 and worker_masks.dtype != object:  # a mask beyond int64 (a trace's own constraints)
            worker_masks = worker_masks.astype(object)
        where = np.flatnonzero((worker_masks & mask) == mask).tolist()
        return cls(map(victims.__getitem__, where), size)

    def more(self) -> bool:
        """Take up to CHUNK more; False when there are no more."""
        found, size = self.found, self._size
        before = len(found)
        for victim, (p, pos) in islice(self._source, self.CHUNK):
            found.append((victim, p, pos, size(victim)))
        return len(found) > before


class FairSharing:
    """Users, shares, holdings and the preemption decisions of Algorithm 2, for some GMs.

    In a simulation one instance serves every GM and the LMs feed it directly
    (``lm.fairness``: :meth:`launched`, :meth:`vacated`, :meth:`settle`) — the
    run-wide truth, known at once. In a real cluster each GM process has its
    own, serving that GM, and applies the LMs' reports of the same three
    events (:meth:`record_launch`, :meth:`record_vacate`, :meth:`settle`) as
    they arrive (:mod:`schedlab.services.fairness`). Either way the GMs read
    their own users' holdings as reported and the others' as of the last
    round (:meth:`publish`).
    """

    def __init__(self, shares: list[float], queue_gm: list[int], layout: Layout, cluster: Cluster, tasks: TaskLookup,
                 gms: Sequence[GlobalMaster]) -> None:
        self.tasks = tasks
        self.layout = layout
        self.cluster = cluster
        self.gms = list(gms)
        self.shares = list(shares)
        n = len(self.shares)
        G = layout.num_gms
        self.queue_gm = list(queue_gm)
        # capacity for holdings
        cap = cluster.total_capacity()
        self.total = [float(c) for c in cap]
        # truth: running tasks per user -> (p, pos); holdings vector per user
        self.running: list[dict[int, tuple[int, int]]] = [{} for _ in range(n)]
        self.used: list[list[float]] = [[0.0] * len(self.total) for _ in range(n)]
        self.info: dict[int, tuple[int, list[float]]] = {}  # running task -> (user, amount)
        # what the GMs know of everyone as of the last heartbeat round
        self.published_running: list[dict[int, tuple[int, int]]] = [{} for _ in range(n)]
        self.published_used: list[list[float]] = [[0.0] * len(self.total) for _ in range(n)]
        self.published_info: dict[int, tuple[int, list[float]]] = {}
        self._unpublished: set[int] = set()  # tasks launched or vacated since the last round
        # victims of preemptions not yet carried out or refused -> (gm, requester user, victim user,
        # requester's gain, victim's loss): a GM counts its own pending preemptions in its estimates
        self.in_flight: dict[int, tuple[int, int, int, float, float]] = {}
        self.pending: list[list[float]] = [[0.0] * n for _ in range(G)]
        self.tried: dict[int, set[int]] = {}  # requesting tid -> victims already refused
        self.attempts = 0
        self.refused = 0
        self._sizes: dict[int, float] = {}
        self.version = 0  # bumped on every launch and vacate: what a round's knowledge depends on
        self._round_version = -1
        self._published_sorted: dict[int, list] = {}
        # (user, task mask) -> that user's published running tasks on workers satisfying the mask: the
        # candidates of Algorithm 2 for tasks of that mask until the next round (see _candidates)
        self._published_compatible: dict[tuple[int, int], _Candidates] = {}
        self._published_masks: dict[int, np.ndarray] = {}  # user -> its sorted victims' workers' masks
        # each GM serves its users' queues
        for gm in self.gms:
            mine = [u for u in range(n) if self.queue_gm[u] == gm.g]
            if len(mine) > 1:

                gm.queues = [WaitingClasses() for _ in mine]
                gm.waiting = gm.queues[0]
            gm.queue_of_user = {u: i for i, u in enumerate(mine)}
            gm.fairness = self

    def user_of(self, tid: int) -> int:
        return self.tasks.jobs[self.tasks.job[tid]].user

    # -- truth, kept by the LMs ------------------------------------------------------------------------
    def _amount(self, tid: int) -> list[float]:
        # a running task's amount came with its launch report; a victim candidate from the last
        # round's snapshot may have ended since (a real GM never knew other GMs' tasks otherwise)
        info = self.info.get(tid) or self.published_info.get(tid)
        if info is not None:
            return info[1]
        req = self.tasks.request[tid]
        return [1.0] if req is None else list(req)

    def launched(self, tid: int, p: int, pos: int) -> None:
        """An LM started ``tid`` at ``(p, pos)`` (the simulator's LMs call this directly)."""
        req = self.tasks.request[tid]
        self.record_launch(tid, p, pos, self.user_of(tid), [1.0] if req is None else list(req))

    def record_launch(self, tid: int, p: int, pos: int, user: int, amount: list[float]) -> None:
        self.version += 1
        self._unpublished.add(tid)
        self.running[user][tid] = (p, pos)
        self.info[tid] = (user, amount)
        used = self.used[user]
        for k, a in enumerate(amount):
            used[k] += a

    def vacated(self, tid: int) -> None:
        """``tid`` no longer runs on its LM's worker (finished or preempted)."""
        self.record_vacate(tid)

    def record_vacate(self, tid: int) -> None:
        self.version += 1
        self._unpublished.add(tid)
        info = self.info.pop(tid, None)
        if info is not None:
            u, amount = info
            del self.running[u][tid]
            used = self.used[u]
            for k, a in enumerate(amount):
                used[k] -= a

    def publish(self) -> None:
        """A heartbeat round: every GM's knowledge of every user catches up.

        Only the tasks launched or vacated since the last round are brought up to date (a round is
        frequent and most running tasks run through many), to the same content as a fresh copy.
        """
        info, running = self.info, self.running
        pub_info, pub_running = self.published_info, self.published_running
        for tid in self._unpublished:
            was = pub_info.pop(tid, None)
            if was is not None:
                del pub_running[was[0]][tid]
            now = info.get(tid)
            if now is not None:
                u = now[0]
                pub_running[u][tid] = running[u][tid]
                pub_info[tid] = now
        self._unpublished.clear()
        self.published_used = [list(v) for v in self.used]
        self._published_sorted = {}
        self._published_compatible = {}
        self._published_masks = {}

    # -- Algorithm 2 -----------------------------------------------------------------------------------
    def _holding(self, u: int, gm: GlobalMaster) -> float:
        own = self.queue_gm[u] == gm.g
        used = self.used[u] if own else self.published_used[u]
        return max(x / t for x, t in zip(used, self.total, strict=True)) + self.pending[gm.g][u]

    def _size(self, tid: int) -> float:
        """A task's dominant share of the data center (cached: it never changes)."""
        size = self._sizes.get(tid)
        if size is None:
            size = self._sizes[tid] = max(a / t for a, t in zip(self._amount(tid), self.total, strict=True))
        return size

    def _victims(self, v: int, gm: GlobalMaster) -> list[tuple[int, tuple[int, int]]]:
        """User ``v``'s running tasks as ``gm`` knows them, newest first (preempting them loses the least work)."""
        if self.queue_gm[v] == gm.g:
            return sorted(self.running[v].items(), key=lambda kv: -kv[0])
        cached = self._published_sorted.get(v)
        if cached is None:
            cached = self._published_sorted[v] = sorted(self.published_running[v].items(), key=lambda kv: -kv[0])
        return cached

    def _candidates(self, v: int, gm: GlobalMaster, mask: int) -> _Candidates:
        """User ``v``'s running tasks as ``gm`` knows them on workers satisfying ``mask``, newest first.

        Under contention most of a user's running tasks sit on workers a constrained task cannot use
        (seven in ten on the Google trace), and a task whose preemptions are refused asks again and again
        in one round: the published ones are filtered once per round and task mask, by one vectorised
        test. A user of ``gm``'s own queues is known exactly, as it changes: filtered as scanned.
        """
        if self.queue_gm[v] == gm.g:
            masks, order = self.cluster.machine_masks, self.layout.order
            own = self._victims(v, gm)
            return _Candidates((e for e in own if not mask & ~masks[order[e[1][0]][e[1][1]]]), self._size)
        key = (v, mask)
        cands = self._published_compatible.get(key)
        if cands is None:
            masks_v = self._published_masks.get(v)
            if masks_v is None:
                masks_v = self._published_masks[v] = self._worker_masks(self._victims(v, gm))
            cands = self._published_compatible[key] = _Candidates.of(self._victims(v, gm), masks_v, mask, self._size)
        return cands

    def _worker_masks(self, victims: list[tuple[int, tuple[int, int]]]) -> np.ndarray:
        return worker_masks_of(victims, self.cluster.machine_masks, self.layout.order)

    def try_preempt(self, gm: GlobalMaster, tid: int) -> bool:
        """Algorithm 2 for a task that matched nowhere: True if a preemption request was sent.

        Two guards (our choice; the paper is silent) keep preemption from
        oscillating between users on stale knowledge: the requester must stay
        within its share after gaining the task, and the victim's user must stay
        at or above its share after losing the victim.
        """
        u = self.user_of(tid)
        size = self._size(tid)
        holding = [self._holding(v, gm) for v in range(len(self.shares))]
        if holding[u] + size > self.shares[u] + EPS:
            return False
        violators = sorted(
            (v for v in range(len(self.shares)) if v != u and holding[v] - self.shares[v] > EPS),
            key=lambda v: (-(holding[v] - self.shares[v]), v),
        )
        tried = self.tried.get(tid, ())
        mask = self.tasks.mask[tid]
        req = self.tasks.request[tid]
        in_flight = self.in_flight
        for v in violators:
            room = holding[v] - self.shares[v] + EPS  # what v can lose and stay at its share
            cands = self._candidates(v, gm, mask)
            found = cands.found
            i = 0
            while i < len(found) or cands.more():
                victim, p, pos, dv = found[i]
                i += 1
                if dv > room or victim in in_flight or victim in tried:
                    continue
                if req is not None and not self._fits_after(p, pos, victim, req, gm):
                    continue
                self.attempts += 1
                in_flight[victim] = (gm.g, u, v, size, dv)
                self.pending[gm.g][u] += size
                self.pending[gm.g][v] -= dv
                gm.hold(p, pos, tid)
                gm.proc.send(lm_address(self.layout.lm_of[p]), PreemptRequest(gm.g, tid, victim, p, pos))
                return True
        return False

    def _fits_after(self, p: int, pos: int, victim: int, req: tuple[float, ...], gm: GlobalMaster) -> bool:
        view = gm.view
        assert isinstance(view, CapacityView)  # (multi-resource mode only)
        fv = view.free[p][pos]
        vreq = self._amount(victim)
        return all(r <= fv[k] + vreq[k] + EPS for k, r in enumerate(req))

    def settle(self, victim: int) -> None:
        """A preemption was carried out or refused: the GM's estimate no longer needs its pending share."""
        entry = self.in_flight.pop(victim, None)
        if entry is not None:
            g, u, v, du, dv = entry
            self.pending[g][u] -= du
            self.pending[g][v] += dv

    def preempt_rejected(self, gm: GlobalMaster, msg: PreemptRejected, out: dict) -> None:
        self.refused += 1
        self.settle(msg.victim)
        self.tried.setdefault(msg.tid, set()).add(msg.victim)
        m = gm.match(msg.tid)
        if m is not None:
            gm.add_request(out, msg.tid, m[0], m[1])
            self.tried.pop(msg.tid, None)
        elif not self.try_preempt(gm, msg.tid):
            self.tried.pop(msg.tid, None)
            gm.enqueue(msg.tid)

    def preempted(self, gm: GlobalMaster, msg: TaskPreempted, out: dict) -> None:
        """``gm``'s task was killed: it no longer holds its worker; re-queue it (it restarts later).

        In slot mode the worker now runs the preempting task: still taken for
        this GM if it asked for the preemption, otherwise believed busy. In
        multi-resource mode the victim's resources come back to the view (the
        preempting task's own hold, if this GM's, stays deducted).
        """
        if gm.slot_mode:
            if msg.by_gm != gm.g:
                gm.forget(msg.p, msg.pos, msg.tid)
        else:
            gm.give_back(msg.p, msg.pos, msg.tid)
        # Re-queued as a new request; the room it left may serve others.
        gm.rematch(msg.tid, out)
        if not gm.slot_mode and gm.waiting_count():
            gm.refill(msg.p, msg.pos, out)

    def finished(self, gm: GlobalMaster, group: list[tuple[int, int]]) -> None:
        for tid, _w in group:
            self.tried.pop(tid, None)

    def round(self) -> None:
        """Each heartbeat round: publish holdings, and let waiting tasks of under-share users try Algorithm 2 again.

        If no task started or stopped since the previous round, every GM's knowledge and
        every waiting task's outlook are unchanged (each new waiting task had its own try
        when it was queued), so the round has nothing to do.
        """
        if self.version == self._round_version:
            return
        self._round_version = self.version
        self.publish()
        for gm in self.gms:
            if gm.waiting_count():
                gm.proc.handle(self._retry, gm)

    def _retry(self, gm: GlobalMaster) -> None:
        """Algorithm 2 again for waiting tasks, class by class from the front of the GM's queues.

        Within a class the tasks fare alike, so a class is left at its first failure;
        the round stops after ``RETRY_CLASSES_PER_ROUND`` failed classes.
        """
        failures = 0
        for q in gm.queues:
            for _rank, key in list(q.heads):
                if failures >= RETRY_CLASSES_PER_ROUND:
                    return
                tids = q.queues.get(key)
                if not tids:
                    continue
                u = self.user_of(tids[0])
                if self._holding(u, gm) + self._size(tids[0]) > self.shares[u] + EPS:
                    continue  # at or over its share: Algorithm 2 would not act; not a failure
                for tid in list(tids):
                    if self.try_preempt(gm, tid):
                        q.remove(tid, key)
                    else:
                        failures += 1
                        break

    def counters(self) -> dict[str, int]:
        return {"preemption_attempts": self.attempts, "preemptions_refused": self.refused}
