"""Probes, late binding and worker-side queues: the machinery Sparrow, Hawk and Eagle share (sans-IO).

Sparrow (Ousterhout et al., SOSP 2013) introduced it and Hawk and Eagle
(Delgado et al., ATC 2015 / SoCC 2016) build on it:

* A scheduler places *probes* (reservations) for a job's tasks in the queues of
  workers; a probe carries no task.
* A worker's node monitor runs one task at a time (slot mode). When its slot is
  free it takes the next reservation from its queue and asks that probe's
  scheduler for a task (``GetTasks``); the scheduler answers with a task of the
  job that the worker can run — *late binding* — or with nothing (a no-op)
  once the job has no task left to launch. The slot stays reserved during the
  round trip, and after a no-op the worker moves on to its next reservation.
* When every task of a job has been launched, the scheduler may cancel the
  job's remaining probes (``CancelJobs``, *proactive cancellation*); node
  monitors then drop them without a round trip.
* Completions go back to the task's scheduler, which is when the framework
  learns of them (JRT is measured there).

Constraints (Sparrow paper, Section 4.3). A job's tasks are grouped by
constraint mask; a group's probes go only to workers that satisfy its mask. A
worker asking for a task of the job gets, under *sharing* (Sparrow's
"information shared across tasks"), the job's earliest unlaunched task it can
run; but a probe takes a task of its own group whenever that group has no
probe to spare (outstanding probes ≤ unlaunched tasks), so every group keeps at
least one outstanding probe while it has unlaunched tasks and no job can be
left without probes. A job without constraints is one group: batch sampling.

Probes travel as *entries*, small lists (fields named below) that also carry
what the worker-side policies need (Eagle's remaining-work estimate and
starvation counter) and the probe's accumulated flight time, so that a task's
allocation time splits exactly into communication (probe flights, get-task
round trips, re-sent and stolen probes' flights, the launch) and worker
queuing (everything else before the task starts: its probe waiting at
workers). Framework queuing and processing are zero: the schedulers here have
no processing cost, as in the Sparrow and Eagle simulators.

All node monitors are hosted by one :class:`NodeMonitors` component (each
worker's logic is the same and reads only its own queue), and the messages
that travel at the same instant between two components share one envelope:
message counts are envelopes; the ``probes``, ``get_task_requests``,
``noop_replies`` and ``probes_cancelled`` counters count the real thing.
"""

from __future__ import annotations

import math
import random
from array import array
from collections import deque
from dataclasses import dataclass

import numpy as np

from schedlab.cluster.bitsets import ConstraintBitsets, MaskCache, set_bits_array
from schedlab.errors import InputError
from schedlab.metrics.recorder import COMMUNICATION, WORKER_QUEUING, Recorder
from schedlab.schedulers.base import SchedulerContext
from schedlab.sim.runtime import Component
from schedlab.workers.protocol import LocalWorkers, TasksFinished
from schedlab.workload.model import Job, TaskTable

IDLE, REQUESTING, RUNNING = 0, 1, 2
NODE_MONITORS = "node-monitors"


class Probe:
    """A probe (or, for long jobs in Hawk and Eagle, a task reservation), mutated as it travels.

    A slotted class rather than a dataclass: probes are made by the million and
    a plain ``__init__`` is the cheapest way to make one.
    """

    __slots__ = ("sched", "jid", "gid", "long", "est", "rem", "acc", "comm", "stamp", "tries", "mask")

    def __init__(self, sched: int, jid: int, gid: int, long: bool, est: float, rem: float, mask: int, now: float) -> None:
        self.sched = sched  # the index of the scheduler that sent it
        self.jid = jid
        self.gid = gid  # its group (tasks with one constraint mask) in the job
        self.long = long  # a long job's?
        self.est = est  # estimated task duration
        self.rem = rem  # the job's remaining estimated work, as last heard
        self.acc = 0.0  # work that bypassed it in an SRPT queue (Eagle)
        self.comm = 0.0  # flight time so far
        self.stamp = now  # time of its last send, or of its get-task request
        self.tries = 0  # times it was sent back (Eagle)
        self.mask = mask  # its group's constraint mask

    def __repr__(self) -> str:
        return f"Probe(job {self.jid}, group {self.gid}, scheduler {self.sched}{', long' if self.long else ''})"



@dataclass(slots=True)
class Probes:
    """Scheduler → node monitors: ``(worker, entry)`` reservations."""

    items: list[tuple[int, Probe]]


@dataclass(slots=True)
class GetTasks:
    """Node monitors → scheduler: these workers are free and hold these probes."""

    items: list[tuple[int, Probe]]


@dataclass(slots=True)
class TaskReplies:
    """Scheduler → node monitors: ``(worker, entry, tid)``; ``tid`` -1 is a no-op."""

    items: list[tuple[int, Probe, int]]


@dataclass(slots=True)
class CancelJobs:
    """Scheduler → node monitors: these jobs have no task left; drop their probes."""

    jids: list[int]


def require_slot_mode(ctx: SchedulerContext, name: str) -> None:
    if not ctx.cluster.slot_mode:
        raise InputError("--resources", f"{name} runs one task per worker slot: it supports slot mode only")


MEMBERS_CACHE_BYTES = 256 << 20


class EligibleSampler:
    """Uniform samples of distinct workers that satisfy a constraint mask (and lie in an allowed set).

    Bit ``w`` of every bitset here is worker ``w``. Dense candidate sets are
    sampled by rejection over all workers; sparse ones by indexing the list of
    their members (cached per mask when no allowed set restricts them).
    """

    def __init__(self, masks: list[int]) -> None:
        n = len(masks)
        self.n = n
        self.masks = masks
        # workers given in reverse so that ConstraintBitsets puts worker w at bit w
        self.index = ConstraintBitsets(range(n - 1, -1, -1), masks)
        self.all = self.index.all
        self._marr = np.asarray(masks, dtype=np.int64) if max(masks, default=0) < 1 << 62 else None
        # Only masks held by under a quarter of the workers come here (denser ones are sampled by rejection),
        # but a run meets thousands of them and rebuilding one costs a pass over every worker: a roomier budget.
        self._members = MaskCache(MEMBERS_CACHE_BYTES)
        self._count: dict[int, int] = {}

    def eligible(self, mask: int) -> int:
        return self.index.eligible(mask)

    def count(self, mask: int) -> int:
        c = self._count.get(mask)
        if c is None:
            c = self._count[mask] = self.index.eligible(mask).bit_count()
        return c

    def _members_of(self, bits: int) -> array:
        """The workers of a bitset, as an int array (indexing it gives Python ints, cheaply)."""
        a = array("i")
        a.frombytes(set_bits_array(bits, self.n).astype(np.int32).tobytes())
        return a

    def _ids(self, mask: int) -> array:
        ids = self._members.get(mask)
        if ids is None:
            if self._marr is None:
                ids = self._members_of(self.index.eligible(mask))
            else:
                ids = array("i")
                ids.frombytes(np.flatnonzero((self._marr & mask) == mask).astype(np.int32).tobytes())
            self._members.put(mask, ids, 4 * len(ids))
        return ids

    def sample(self, mask: int, k: int, rng: random.Random, allowed: int | None = None) -> list[int]:
        """``k`` workers: distinct when there are at least ``k`` candidates, else every candidate, some repeatedly."""
        if k <= 0:
            return []
        if allowed is None:
            c = self.count(mask)
            cand = 0
        else:
            cand = self.index.eligible(mask) & allowed
            c = cand.bit_count()
        if c == 0:
            return []
        n = self.n
        r = rng.random
        if k * 2 <= c and c * 4 >= n:
            out: list[int] = []
            # a few probes: look duplicates up in the list itself; many: keep a set
            seen: set[int] | list[int] = set() if k > 8 else out
            masks = self.masks
            while len(out) < k:
                w = int(r() * n)
                if w in seen:
                    continue
                if (not mask & ~masks[w]) if allowed is None else (cand >> w & 1):
                    if seen is not out:
                        seen.add(w)  # type: ignore[union-attr]
                    out.append(w)
            return out
        ids = self._ids(mask) if allowed is None else self._members_of(cand)
        if k * 4 <= c:
            picked: set[int] = set()
            while len(picked) < k:
                picked.add(int(r() * c))
            return [ids[i] for i in picked]
        if k < c:
            return [ids[i] for i in rng.sample(range(c), k)]
        every = ids.tolist()
        rng.shuffle(every)
        return every * (k // c) + every[: k % c]


class _Group:
    __slots__ = ("mask", "tids", "probes")

    def __init__(self, mask: int) -> None:
        self.mask = mask
        self.tids: deque[int] = deque()
        self.probes = 0  # outstanding probes


class _JobState:
    __slots__ = ("groups", "tids", "masks", "skip", "unlaunched", "outstanding", "est")

    def __init__(self, groups: list[_Group], n: int, est: float) -> None:
        self.groups = groups
        self.tids = [g.tids for g in groups]  # the groups' fields as lists: the scan's hot loop reads them
        self.masks = [g.mask for g in groups]
        # skip[i]: a later group to look at when group i has no unlaunched task left (path-compressed,
        # as groups only ever run out), so scans step over exhausted groups in amortised O(1).
        self.skip = list(range(1, len(groups) + 1))
        self.unlaunched = n
        self.outstanding = 0
        self.est = est


class LateBinding:
    """A scheduler's jobs not fully launched: their unlaunched tasks by constraint group, and binding."""

    def __init__(self, tasks: TaskTable, machine_masks: list[int], share: bool) -> None:
        self.tasks = tasks
        self.masks = machine_masks
        self.share = share
        self.jobs: dict[int, _JobState] = {}
        self.to_cancel: list[int] = []  # jobs fully launched with probes still out

    def add(self, job: Job, est: float) -> list[_Group]:
        """Register ``job``; returns its groups (in order of their first task) with their tasks."""
        by_mask: dict[int, _Group] = {}
        groups: list[_Group] = []
        tmask = self.tasks.mask
        for tid in job.tids:
            m = tmask[tid]
            g = by_mask.get(m)
            if g is None:
                g = by_mask[m] = _Group(m)
                groups.append(g)
            g.tids.append(tid)
        self.jobs[job.jid] = _JobState(groups, job.num_tasks, est)
        return groups

    def probes_sent(self, jid: int, group: _Group, k: int) -> None:
        group.probes += k
        self.jobs[jid].outstanding += k

    def remaining_work(self, jid: int) -> float:
        job = self.jobs.get(jid)
        return 0.0 if job is None else job.est * job.unlaunched

    def bind(self, entry: Probe, worker: int, keep: bool = False) -> int:
        """The task the worker holding ``entry`` should run, or -1.

        The probe is consumed, unless it binds a task and ``keep`` says it stays
        at the worker afterwards (Eagle's sticky probes).
        """
        job = self.jobs.get(entry.jid)
        if job is None:  # every task launched already
            return -1
        groups = job.groups
        g = groups[entry.gid]
        p = g.probes
        tids = g.tids
        tid = -1
        if tids and (p <= len(tids) or not self.share):
            tid = tids.popleft()
        elif self.share:
            # The job's earliest unlaunched task this worker can run.
            lacking = ~self.masks[worker]
            gtids, gmask = job.tids, job.masks
            n = len(gtids)
            skip = job.skip
            j = 0
            while j < n:
                q = gtids[j]
                if not q:
                    # find the next group with tasks, then point every exhausted group passed at it
                    k = skip[j]
                    while k < n and not gtids[k]:
                        k = skip[k]
                    while j < n and j != k and not gtids[j]:
                        skip[j], j = k, skip[j]
                    j = k
                    continue
                if not gmask[j] & lacking:
                    tid = q.popleft()
                    break
                j += 1
        if tid < 0 or not keep:
            g.probes = p - 1
            job.outstanding -= 1
        if tid < 0:
            return -1
        job.unlaunched -= 1
        if job.unlaunched == 0:
            del self.jobs[entry.jid]
            if job.outstanding > 0:
                self.to_cancel.append(entry.jid)
        return tid


class ProbeScheduler(Component):
    """A scheduler that probes and late-binds (Sparrow's, Hawk's and Eagle's distributed schedulers).

    ``probe_ratio`` d: a group of ``m`` tasks gets ``ceil(d·m)`` probes, and a
    job at least ``min_probes`` in all (the extra ones spread over its groups).
    """

    def __init__(
        self,
        index: int,
        address: object,
        ctx: SchedulerContext,
        sampler: EligibleSampler,
        *,
        probe_ratio: float,
        min_probes: int = 0,
        cancel: bool = True,
        share: bool = True,
        rng_name: str,
    ) -> None:
        super().__init__(address, ctx.runtime)
        self.index = index
        self.tasks: TaskTable = ctx.tasks
        self.rec: Recorder = ctx.recorder
        self.sampler = sampler
        self.book = LateBinding(ctx.tasks, ctx.cluster.machine_masks, share)
        self.probe_ratio = probe_ratio
        self.min_probes = min_probes
        self.cancel = cancel
        self.sticky = False  # probes stay at their worker after binding a task (Eagle)
        self.tell_remaining = False  # replies carry the job's remaining estimated work (Eagle's SRPT)
        self.watch_binding = False  # call ``bound`` for every task bound
        self.rng = ctx.runtime.rng(rng_name)
        self.probes = 0
        self.get_task_requests = 0
        self.noops = 0

    def handlers(self):
        return {GetTasks: self._on_get, TasksFinished: self._on_finished}

    # -- probing ---------------------------------------------------------------------------------
    def probe_counts(self, groups: list[_Group]) -> list[int]:
        d = self.probe_ratio
        counts = [math.ceil(d * len(g.tids) - 1e-9) for g in groups]
        extra = self.min_probes - sum(counts)
        i = 0
        while extra > 0:
            counts[i % len(counts)] += 1
            extra -= 1
            i += 1
        return counts

    def submit(self, job: Job, est: float = 0.0, long: bool = False, allowed: int | None = None) -> None:
        """Probe for ``job``: each group's probes on random workers that satisfy it (within ``allowed``)."""
        groups = self.book.add(job, est)
        now = self.rt.now()
        items: list[tuple[int, Probe]] = []
        jid, me = job.jid, self.index
        rem = est * job.num_tasks
        sample = self.sampler.sample
        for gid, (g, k) in enumerate(zip(groups, self.probe_counts(groups), strict=True)):
            ws = sample(g.mask, k, self.rng, allowed)
            if not ws and allowed is not None:
                ws = sample(g.mask, k, self.rng)
            self.book.probes_sent(jid, g, len(ws))
            m = g.mask
            for w in ws:
                items.append((w, Probe(me, jid, gid, long, est, rem, m, now)))
        self.probes += len(items)
        self.rt.send(NODE_MONITORS, Probes(items))

    # -- late binding ----------------------------------------------------------------------------
    def _on_get(self, msg: GetTasks) -> None:
        now = self.rt.now()
        bind = self.book.bind
        mark = self.rec.mark
        replies: list[tuple[int, Probe, int]] = []
        sticky, tell, hook = self.sticky, self.tell_remaining, self.watch_binding
        for w, e in msg.items:
            tid = bind(e, w, sticky and not e.long)
            if tid >= 0:
                # Up to the get-task request the task was, in the form of its probe, flying (COMM) or queued.
                mark(tid, e.stamp - e.comm, WORKER_QUEUING)
                mark(tid, now, COMMUNICATION)
                if hook:
                    self.bound(tid, w, e, now)
            else:
                self.noops += 1
            if tell:
                e.rem = self.book.remaining_work(e.jid)
            e.stamp = now
            replies.append((w, e, tid))
        self.get_task_requests += len(replies)
        self.rt.send(NODE_MONITORS, TaskReplies(replies))
        if self.book.to_cancel:
            if self.cancel:
                self.rt.send(NODE_MONITORS, CancelJobs(self.book.to_cancel))
            self.book.to_cancel = []

    def bound(self, tid: int, worker: int, entry: Probe, now: float) -> None:
        """Hook: ``tid`` was just bound to ``worker``."""

    def _on_finished(self, msg: TasksFinished) -> None:
        self.rec.tasks_reported(msg.group, self.rt.now())
        self.finished(msg.group)

    def finished(self, group: list[tuple[int, int]]) -> None:
        """Hook: these tasks finished (the scheduler just learned it)."""

    def counters(self) -> dict[str, int]:
        return {"probes": self.probes, "get_task_requests": self.get_task_requests, "noop_replies": self.noops}


class NodeMonitors(Component):
    """Every worker's node monitor: a queue of reservations, one slot, late binding.

    Subclasses change the policy through the hooks ``accept`` (take a probe or
    send it back), ``enqueue``, ``pick`` (which reservation next), ``after_task``
    (what the reservation that ran a task becomes) and ``on_idle`` (a worker
    with nothing queued).
    """

    def __init__(self, ctx: SchedulerContext, sched_addresses: list[object]) -> None:
        super().__init__(NODE_MONITORS, ctx.runtime)
        n = ctx.cluster.n
        self.n = n
        self.pool: LocalWorkers = ctx.pool
        self.sched_addr = sched_addresses
        self.queues: list[deque[Probe]] = [deque() for _ in range(n)]
        self.state = bytearray(n)
        self.running: list[Probe | None] = [None] * n
        self.longs = [0] * n  # long probes at each worker, including the one it requested or runs (Hawk, Eagle)
        self.cur_long = bytearray(n)  # the worker's slot is taken by a long probe
        self.cancelled: set[int] = set()
        self._req: dict[int, list[tuple[int, Probe]]] = {}
        self.has_after_task = type(self).after_task is not NodeMonitors.after_task
        self.cancelled_probes = 0

    filters = False  # does ``accept`` ever refuse a probe?

    def handlers(self):
        return {Probes: self._on_probes, TaskReplies: self._on_replies, CancelJobs: self._on_cancel}

    # -- hooks -------------------------------------------------------------------------------------
    def accept(self, w: int, e: Probe, now: float) -> bool:
        return True

    def enqueue(self, w: int, e: Probe) -> None:
        self.queues[w].append(e)

    def pick(self, w: int) -> Probe | None:
        q = self.queues[w]
        cancelled = self.cancelled
        while q:
            e = q.popleft()
            if e.jid in cancelled:
                self.cancelled_probes += 1
                continue
            return e
        return None

    def after_task(self, w: int, e: Probe, now: float) -> None:
        """The task bound through ``e`` ended on ``w`` (the probe is spent: Sparrow, Hawk; Eagle keeps it)."""

    def on_idle(self, w: int, now: float) -> None:
        """``w`` has nothing queued and nothing to run."""

    # -- mechanics ---------------------------------------------------------------------------------
    def request(self, w: int, e: Probe, now: float) -> None:
        self.state[w] = REQUESTING
        self.cur_long[w] = e.long
        e.stamp = now
        lst = self._req.get(e.sched)
        if lst is None:
            self._req[e.sched] = [(w, e)]
        else:
            lst.append((w, e))

    def arrive(self, w: int, e: Probe, now: float) -> None:
        """A probe reaches ``w`` (from a scheduler, or moved from another worker)."""
        e.comm += now - e.stamp
        if e.long:
            self.longs[w] += 1  # (long jobs are never cancelled nor sent back)
        elif e.jid in self.cancelled:
            self.cancelled_probes += 1
            return
        if self.filters and not self.accept(w, e, now):
            return
        if self.state[w] == IDLE:
            self.request(w, e, now)
        else:
            self.enqueue(w, e)

    def next(self, w: int, now: float) -> None:
        """``w``'s slot is free: ask for a task for its next reservation, or go idle."""
        e = self.pick(w)
        if e is None:
            self.state[w] = IDLE
            self.on_idle(w, now)
        else:
            self.request(w, e, now)

    def flush(self) -> None:
        """Send the get-task requests gathered while handling one input, one envelope per scheduler."""
        if self._req:
            send = self.rt.send
            for s, items in self._req.items():
                send(self.sched_addr[s], GetTasks(items))
            self._req = {}

    def _on_probes(self, msg: Probes) -> None:
        now = self.rt.now()
        arrive = self.arrive
        for w, e in msg.items:
            arrive(w, e, now)
        self.flush()

    def _on_replies(self, msg: TaskReplies) -> None:
        now = self.rt.now()
        placements: list[tuple[int, int]] = []
        running, state = self.running, self.state
        for w, e, tid in msg.items:
            if tid >= 0:
                state[w] = RUNNING
                running[w] = e
                placements.append((tid, w))
            else:
                self.next(w, now)
        if placements:
            self.pool.start_many(placements, self._finished, COMMUNICATION)
        self.flush()

    def _finished(self, group: list[tuple[int, int]]) -> None:
        now = self.rt.now()
        running, cur_long = self.running, self.cur_long
        reports: dict[int, list[tuple[int, int]]] = {}
        hook = self.after_task if self.has_after_task else None
        for p in group:
            w = p[1]
            e: Probe = running[w]  # type: ignore[assignment]
            running[w] = None
            if e.long:
                self.longs[w] -= 1
            cur_long[w] = 0
            lst = reports.get(e.sched)
            if lst is None:
                reports[e.sched] = [p]
            else:
                lst.append(p)
            if hook is not None:
                hook(w, e, now)
            self.next(w, now)
        send = self.rt.send
        for s, g in reports.items():
            send(self.sched_addr[s], TasksFinished(g))
        self.flush()

    def _on_cancel(self, msg: CancelJobs) -> None:
        self.cancelled.update(msg.jids)

    def counters(self) -> dict[str, int]:
        return {"probes_cancelled": self.cancelled_probes}
