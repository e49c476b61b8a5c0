"""``pigeon`` and ``pigeonc``: federated scheduling with distributors and group masters (sans-IO).

**Pigeon** — Z. Wang et al., "Pigeon: an Effective Distributed, Hierarchical
Datacenter Job Scheduler", SoCC 2019 (as summarised in the constraint-aware
paper, Section 2.2, and in the Pigeon authors' public simulator):

* Workers are split into groups, each owned by a *master* that knows its
  group exactly and places tasks only there (no worker-side queues).
* A job arrives at a *distributor* (chosen uniformly at random), which spreads
  its tasks evenly over the masters: ``n // M`` full rounds over every master
  in order, the remaining ``n % M`` tasks on distinct masters drawn at random.
* A job is *short* when its mean task duration (the trace's column) is below
  ``cutoff``; a master keeps one FIFO queue per class.
* ``reserve`` of each group's workers (the lowest ids) are *reserved* for short
  tasks: an arriving task takes a general free worker first, a short one may
  fall back on a reserved one; a freed reserved worker serves only short tasks.
* *Weighted fair queuing*: a freed general worker serves ``fqw`` queued short
  tasks for every queued long one (when both classes wait).

**PigeonC** — the constraint-aware paper ("Constraint-Aware Federated
Scheduling for Data Center Workloads"), Sections 4.1.2–4.3:

* Distributors choose a master per task by weighted random choice, the weight
  of a master being how many of its workers satisfy the task (Section 4.2's
  ``count_i``: constraint-set occurrences whose set contains the task's).
* No reservation. WFQ is kept, but a long task may take a freed worker that no
  queued short task can use, and the other way round.
* Masters match with the bitset algorithm (Algorithm 1) over their group,
  choosing the worker at random or with the fewest machine constraints
  (``worker_choice``), exactly as Megha's GMs do.

``compat="authors"`` (``pigeonc`` only) reproduces the authors' simulator
(docs/authors-simulators.md#pigeonc): master weights summed over "constraint-set
keys" (each key counts every worker whose set is a *subset* of it, so the
weights count the wrong workers); minimum-constraints worker choice whatever
``worker_choice`` says (their "random" variant picks the same way); the config's
short/long cutoff (2 s — every synthetic job short, every Google job long); and
their WFQ test ``served <= FQW`` (``FQW + 1`` short tasks per long one: :class:`AuthorsMaster`). The
master-choice RNG, unseeded there, is a named stream here, so runs repeat.

Choices where the papers are silent, and defaults:

* ``cutoff`` 90.5811 s (the Pigeon simulator's and the papers' simulators'
  short-job cutoff), ``fqw`` 20 (the constraint-aware paper, Section 5) or the
  config's ``FQW``, ``distributors`` 10 or the config's, ``masters``: the
  config's groups, else groups of about 100 workers (the papers' size).
* ``reserve`` 0.02 — two workers in a group of 100, the Pigeon simulator's
  default (``DNUM``); never a whole group, and a long task that no general
  worker of its group can run (constraints) may use a reserved one. The reference config's ``reserve`` (0) and ``cutoff`` (2)
  are the authors' PigeonC settings: only ``compat="authors"`` reads them.
* Pigeon is not constraint-aware, but a run must stay valid on a constrained
  workload: its masters match with bitsets like PigeonC's, and a task whose
  evenly assigned master has no worker able to run it goes to a master drawn
  uniformly among those that have one. Without constraints this is Pigeon.
* WFQ counts the queued short tasks a freed general worker serves in a row;
  tasks placed at arrival do not count (both simulators do the same).
* Slot mode only: Pigeon allocates whole worker slots (Megha paper, Section II).

Messages and timing: distributor → master (:class:`TaskBatch`), master →
workers (``LaunchBatch``), workers → master and distributor
(``TasksFinished``): the unloaded JRT delay is 3·ND, as in the papers. The
masters are independent sans-IO objects hosted by one :class:`Masters`
component, which carries the parts of their messages that travel at the same
instant in one envelope (message counts are envelopes).
Allocation components: the distributor → master flight and the launch flight
are communication, waiting in a master's queue is framework queuing.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from schedlab.cluster.bitsets import ConstraintBitsets, set_bits_array
from schedlab.cluster.model import Cluster, split_groups
from schedlab.errors import InputError
from schedlab.metrics.recorder import COMMUNICATION, FRAMEWORK_QUEUING, Recorder
from schedlab.schedulers.base import (
    Scheduler,
    SchedulerContext,
    SchedulerParams,
    WorkerChoiceName,
    compat_field,
    worker_choice_field,
)
from schedlab.schedulers.placement import worker_choice
from schedlab.schedulers.waiting import WaitingClasses
from schedlab.sim.runtime import Component, Runtime
from schedlab.workers.protocol import POOL_ADDRESS, LaunchBatch, TasksFinished
from schedlab.workload.model import Job, TaskTable
from schedlab.workload.stats import SHORT_JOB_CUTOFF

GROUP_SIZE = 100  # workers per master when neither a config nor ``masters`` says otherwise
AUTHORS_CUTOFF = 2.0


class _GroupParams(SchedulerParams):
    distributors: int | None = Field(None, ge=1, description="number of distributors (default: the config's, else 10)")
    masters: int | None = Field(None, ge=1, description="number of masters/groups (default: the config's, else groups of ~100)")
    fqw: int | None = Field(None, ge=1, description="short tasks served per long one (default: the config's FQW, else 20)")
    cutoff: float | None = Field(None, ge=0, description="short job: mean task duration below this (default 90.5811 s)")
    worker_choice: WorkerChoiceName = worker_choice_field("min-constraints")


class PigeonParams(_GroupParams):
    reserve: float = Field(0.02, ge=0, lt=1, description="fraction of each group's workers reserved for short tasks")


class PigeonCParams(_GroupParams):
    compat: Literal["none", "authors"] = compat_field()


@dataclass(slots=True)
class TaskBatch:
    """Distributor → masters: the tasks of one job, per master (``parts``: master → tids)."""

    dist: int
    short: bool
    parts: dict[int, list[int]]


def distributor_address(d: int) -> tuple[str, int]:
    return ("distributor", d)


MASTERS_ADDRESS = "masters"


def pigeon_groups(cluster: Cluster, masters: int | None) -> list[tuple[int, ...]]:
    """The masters' groups: a Pigeon config's, else ``masters`` near-equal blocks of consecutive ids.

    A Megha config lists the same workers in the same order as the Pigeon one
    (docs/authors-simulators.md#config-files), so consecutive blocks of it are the Pigeon groups.
    """
    topo = cluster.topology
    if topo is not None and cluster.extra.get("layout") == "pigeon":
        groups = topo.groups
        if masters is not None and masters != len(groups):
            raise InputError("param masters", f"the config has {len(groups)} masters, not {masters}")
        return groups
    k = masters if masters is not None else max(1, math.ceil(cluster.n / GROUP_SIZE))
    return split_groups(cluster.n, k).groups


class MasterSupply:
    """How many workers of each master can run a task of a given constraint mask (cached per mask)."""

    def __init__(self, masks: list[int], groups: list[tuple[int, ...]]) -> None:
        self.index = ConstraintBitsets(range(len(masks)), masks)
        group_of = np.empty(len(masks), dtype=np.int64)
        for k, g in enumerate(groups):
            group_of[list(g)] = k
        self.group_at = group_of[np.asarray(self.index.order, dtype=np.int64)]  # by bit position
        self.num = len(groups)
        self._counts: dict[int, np.ndarray] = {}

    def counts(self, mask: int) -> np.ndarray:
        c = self._counts.get(mask)
        if c is None:
            ids = set_bits_array(self.index.eligible(mask), self.index.size)
            c = self._counts[mask] = np.bincount(self.group_at[ids], minlength=self.num)
        return c


class AuthorsKeyWeights:
    """The authors' PigeonC master weights over "constraint-set keys" (docs/authors-simulators.md#pigeonc).

    Per master, workers are visited in order; a worker whose constraint set is a
    subset of one or more existing keys adds 1 to each of them, otherwise its set
    becomes a new key with count 1. A task's weight for the master is the sum of
    the counts of the keys that contain the task's set — workers whose sets are
    *subsets* of those keys, not the workers that satisfy the task.
    """

    def __init__(self, masks: list[int], groups: list[tuple[int, ...]]) -> None:
        keys: list[int] = []
        counts: list[int] = []
        owner: list[int] = []
        for k, g in enumerate(groups):
            mine: list[int] = []  # indices into keys for this master
            for w in g:
                wm = masks[w]
                hit = False
                for i in mine:
                    if not wm & ~keys[i]:
                        counts[i] += 1
                        hit = True
                if not hit:
                    mine.append(len(keys))
                    keys.append(wm)
                    counts.append(1)
                    owner.append(k)
        self.keys = np.asarray(keys, dtype=np.int64)
        self.key_counts = np.asarray(counts, dtype=np.float64)
        self.owner = np.asarray(owner, dtype=np.int64)
        self.num = len(groups)
        self._w: dict[int, np.ndarray] = {}

    def weights(self, mask: int) -> np.ndarray:
        w = self._w.get(mask)
        if w is None:
            sel = (self.keys & mask) == mask
            w = self._w[mask] = np.bincount(self.owner[sel], weights=self.key_counts[sel], minlength=self.num)
        return w


class CumulativeWeights(dict):
    """mask -> (cumulative master weights, total), computed on first use from ``weights(mask)``.

    Shared by all distributors (the weights depend only on the data center), so
    each constraint mask costs one computation per run.
    """

    def __init__(self, weights: Callable[[int], np.ndarray]) -> None:
        super().__init__()
        self.weights = weights

    def __missing__(self, mask: int) -> tuple[list[float], float]:
        cum = np.cumsum(self.weights(mask), dtype=np.float64).tolist()
        v = self[mask] = (cum, cum[-1])
        return v


class Distributor(Component):
    """Receives jobs, sends each task to a master, and learns of completions (JRT is measured here)."""

    def __init__(self, d: int, sched: _PigeonBase) -> None:
        super().__init__(distributor_address(d), sched.rt)
        self.d = d
        self.s = sched
        self.rng = sched.rt.rng(f"{sched.name}:distributor:{d}")

    def handlers(self):
        return {TasksFinished: self._on_finished}

    def submit(self, job: Job) -> None:
        s = self.s
        short = job.mean_duration < s.cutoff
        per_master: dict[int, list[int]] = {}
        masters = s.choose_masters(self, job)
        for tid, k in zip(job.tids, masters, strict=True):
            lst = per_master.get(k)
            if lst is None:
                per_master[k] = [tid]
            else:
                lst.append(tid)
        self.rt.send(MASTERS_ADDRESS, TaskBatch(self.d, short, per_master))

    def weighted_choice(self, mask: int, table: CumulativeWeights) -> int:
        """A master drawn with probability proportional to the table's weights for ``mask``."""
        cum, total = table[mask]
        return bisect_right(cum, self.rng.random() * total)

    def _on_finished(self, msg: TasksFinished) -> None:
        self.s.rec.tasks_reported(msg.group, self.rt.now())


class Master:
    """One group's master: exact availability, bitset matching, two FIFO queues with WFQ (and reservation).

    Sans-IO logic with two inputs — tasks from a distributor (:meth:`on_tasks`)
    and completions in its group (:meth:`on_finished`) — whose outputs are the
    launches it appends to ``out`` (distributor → ``(tid, worker)`` list). It
    reads nothing but its own state and its inputs.
    """

    extra_short_turns = 0  # the paper's WFQ: FQW short tasks per long one

    def __init__(self, k: int, workers: tuple[int, ...], sched: _PigeonBase, reserve: int) -> None:
        self.k = k
        self.s = sched
        self.index = ConstraintBitsets(workers, sched.cluster.machine_masks, min_constraints_order=True)
        self.order = self.index.order
        self.position = self.index.position
        self.wmask = self.index.masks  # by position
        self.avail = self.index.all
        # Reserved for short tasks: the group's `reserve` lowest worker ids (the Pigeon simulator's first DNUM).
        res = 0
        for w in sorted(workers)[:reserve]:
            res |= 1 << self.position[w]
        self.reserved = res
        self.general = self.index.all & ~res
        self.short_q = WaitingClasses()
        self.long_q = WaitingClasses()
        self.dist_of: dict[int, int] = {}  # queued task -> its distributor
        self.served_short = 0  # queued short tasks served by general workers since the last long one
        self.short_turns = sched.fqw + self.extra_short_turns  # WFQ: short tasks served per long one
        self.rng = sched.rt.rng(f"{sched.name}:master:{k}")
        self.choose = worker_choice(sched.choice_name, self.rng).pick  # the worker-choice policy (placement)
        self.queued = 0
        self.reserved_launches = 0
        self.long_turns = 0

    def on_tasks(self, dist: int, short: bool, tids: list[int], now: float, out: dict[int, list[tuple[int, int]]]) -> None:
        s = self.s
        mark = s.rec.mark
        tmask = s.tasks.mask
        eligible = self.index.eligible
        general, reserved = self.general, self.reserved
        avail = self.avail
        order = self.order
        q = self.short_q if short else self.long_q
        placed = out.get(dist)
        if placed is None:
            placed = out[dist] = []
        for tid in tids:
            mark(tid, now, COMMUNICATION)
            m = tmask[tid]
            e = eligible(m) & avail
            cand = e & general
            if not cand and reserved and (short or not eligible(m) & general):
                # a short task may use a reserved worker; so may a long one no general worker can ever run
                cand = e & reserved
                if cand:
                    self.reserved_launches += 1
            if cand:
                pos = self.choose(cand)
                avail ^= 1 << pos
                placed.append((tid, order[pos]))
            else:
                q.add(tid, (m,))
                self.dist_of[tid] = dist
                self.queued += 1
        self.avail = avail

    def _serve(self, pos: int) -> int:
        """The worker at ``pos`` is free: the queued task it should run (WFQ, reservation), or -1."""
        lacking = ~self.wmask[pos]
        sq, lq = self.short_q, self.long_q
        if self.reserved >> pos & 1:
            tid = sq.pop_first_mask(lacking) if sq.count else -1
            if tid < 0 and lq.count:
                eligible, general = self.index.eligible, self.general
                tid = lq.pop_first(lambda key: not key[0] & lacking and not eligible(key[0]) & general)
            return tid
        if not lq.count:
            if not sq.count:
                return -1
            tid = sq.pop_first_mask(lacking)
            if tid >= 0:
                self.served_short += 1
            return tid
        short_turn = self.served_short < self.short_turns
        if short_turn and sq.count:
            tid = sq.pop_first_mask(lacking)
            if tid >= 0:
                self.served_short += 1
                return tid
        tid = lq.pop_first_mask(lacking)
        if tid >= 0:
            self.served_short = 0
            self.long_turns += 1
            return tid
        if not short_turn and sq.count:
            tid = sq.pop_first_mask(lacking)
            if tid >= 0:
                self.served_short += 1
            return tid
        return -1

    def on_finished(self, workers: list[int], now: float, out: dict[int, list[tuple[int, int]]]) -> None:
        """These workers of the group finished their tasks: give each the next queued task, or mark it free."""
        position = self.position
        mark = self.s.rec.mark
        queued = self.short_q.count or self.long_q.count
        for w in workers:
            pos = position[w]
            nxt = self._serve(pos) if queued else -1
            if nxt < 0:
                self.avail |= 1 << pos
                continue
            mark(nxt, now, FRAMEWORK_QUEUING)
            d = self.dist_of.pop(nxt)
            lst = out.get(d)
            if lst is None:
                out[d] = [(nxt, w)]
            else:
                lst.append((nxt, w))
            queued = self.short_q.count or self.long_q.count


class Masters(Component):
    """Hosts every master and carries their messages, one envelope per instant (as WorkerPool does for workers).

    Masters are independent: each sees only its own part of a message and
    decides alone. Delivering the parts that travel at the same instant in one
    envelope changes no timing — only the number of simulation events.
    """

    def __init__(self, sched: _PigeonBase, masters: list[Master], group_of: list[int]) -> None:
        super().__init__(MASTERS_ADDRESS, sched.rt)
        self.s = sched
        self.masters = masters
        self.group_of = group_of

    def handlers(self):
        return {TaskBatch: self._on_tasks, TasksFinished: self._on_finished}

    def _on_tasks(self, msg: TaskBatch) -> None:
        now = self.rt.now()
        out: dict[int, list[tuple[int, int]]] = {}
        masters = self.masters
        for k, tids in msg.parts.items():
            masters[k].on_tasks(msg.dist, msg.short, tids, now, out)
        self._launch(out)

    def _on_finished(self, msg: TasksFinished) -> None:
        now = self.rt.now()
        group_of = self.group_of
        per_master: dict[int, list[int]] = {}
        for _tid, w in msg.group:
            k = group_of[w]
            lst = per_master.get(k)
            if lst is None:
                per_master[k] = [w]
            else:
                lst.append(w)
        out: dict[int, list[tuple[int, int]]] = {}
        masters = self.masters
        for k, ws in per_master.items():
            masters[k].on_finished(ws, now, out)
        self._launch(out)

    def _launch(self, out: dict[int, list[tuple[int, int]]]) -> None:
        send = self.rt.send
        dist_addr = self.s.dist_addr
        for d, items in out.items():
            if items:
                send(POOL_ADDRESS, LaunchBatch(items, (MASTERS_ADDRESS, dist_addr[d])))


class AuthorsMaster(Master):
    """A master as the authors' PigeonC simulator runs it (``compat="authors"``).

    Its WFQ test is ``served <= FQW``: one short task more per long one than
    the paper's FQW (docs/authors-simulators.md#pigeonc). The profile's other
    differences are the scheduler's: the config's cutoff, min-constraints
    worker choice, and master weights over constraint-set keys
    (:class:`AuthorsKeyWeights`).
    """

    extra_short_turns = 1


class _PigeonBase(Scheduler):
    """What Pigeon and PigeonC share: wiring of distributors and masters, job routing."""

    authors = False
    reserve_fraction = 0.0

    def __init__(self, ctx: SchedulerContext, params: PigeonParams | PigeonCParams) -> None:
        super().__init__(ctx, params)
        cluster = ctx.cluster
        if not cluster.slot_mode:
            raise InputError("--resources", f"{self.name} allocates whole worker slots: it runs in slot mode only")
        self.rt: Runtime = ctx.runtime
        self.cluster = cluster
        self.tasks: TaskTable = ctx.tasks
        self.rec: Recorder = ctx.recorder
        extra = cluster.extra
        groups = pigeon_groups(cluster, params.masters)
        self.groups = groups
        nd = params.distributors if params.distributors is not None else int(extra.get("num_distributors") or 10)
        self.fqw = params.fqw if params.fqw is not None else int(extra.get("FQW") or 20)
        if params.cutoff is not None:
            self.cutoff = params.cutoff
        elif self.authors:
            self.cutoff = float(extra.get("cutoff", AUTHORS_CUTOFF))
        else:
            self.cutoff = SHORT_JOB_CUTOFF
        # the authors' simulator's masters take the first fit in min-constraints order, whatever the config says
        self.choice_name = "min-constraints" if self.authors else params.worker_choice
        self.supply = MasterSupply(cluster.machine_masks, groups)
        self.dist_addr = [distributor_address(d) for d in range(nd)]
        # Never reserve a whole group: its long tasks could not run at all.
        master_cls = AuthorsMaster if self.authors else Master
        self.masters = [master_cls(k, g, self, min(round(self.reserve_fraction * len(g)), len(g) - 1)) for k, g in enumerate(groups)]
        group_of = [0] * cluster.n
        for k, g in enumerate(groups):
            for w in g:
                group_of[w] = k
        self.master_set = Masters(self, self.masters, group_of)
        self.distributors = [Distributor(d, self) for d in range(nd)]
        self.job_rng = self.rt.rng(f"{self.name}:jobs")

    def submit(self, job: Job) -> None:
        d = self.distributors[int(self.job_rng.random() * len(self.distributors))]
        d.submit(job)

    def choose_masters(self, dist: Distributor, job: Job) -> list[int]:
        raise NotImplementedError

    def counters(self) -> dict[str, int]:
        ms = self.masters
        return {
            "masters": len(ms),
            "distributors": len(self.distributors),
            "queued_at_master": sum(m.queued for m in ms),
            "reserved_launches": sum(m.reserved_launches for m in ms),
            "wfq_long_turns": sum(m.long_turns for m in ms),
        }


class PigeonScheduler(_PigeonBase):
    name = "pigeon"
    summary = "distributors spread tasks evenly over group masters; WFQ short/long, reserved workers (Pigeon)"
    Params = PigeonParams

    def __init__(self, ctx: SchedulerContext, params: PigeonParams) -> None:
        self.reserve_fraction = params.reserve
        super().__init__(ctx, params)
        self.redirected = 0
        self._feasible = CumulativeWeights(lambda mask: (self.supply.counts(mask) > 0).astype(np.float64))

    def choose_masters(self, dist: Distributor, job: Job) -> list[int]:
        n = job.num_tasks
        m = len(self.masters)
        out = [i % m for i in range(n - n % m)]
        if n % m:
            out.extend(dist.rng.sample(range(m), n % m))
        tmask = self.tasks.mask
        for i, tid in enumerate(job.tids):
            mask = tmask[tid]
            if mask and not self.supply.counts(mask)[out[i]]:
                # Keep the run valid: no worker of that group can ever run the task.
                out[i] = dist.weighted_choice(mask, self._feasible)
                self.redirected += 1
        return out

    def counters(self) -> dict[str, int]:
        return {**super().counters(), "tasks_redirected_infeasible_master": self.redirected}


class PigeonCScheduler(_PigeonBase):
    name = "pigeonc"
    summary = "constraint-aware Pigeon: masters drawn by constraint supply, WFQ, bitset matching (PigeonC)"
    Params = PigeonCParams

    def __init__(self, ctx: SchedulerContext, params: PigeonCParams) -> None:
        self.authors = params.compat == "authors"
        super().__init__(ctx, params)
        weights = AuthorsKeyWeights(self.cluster.machine_masks, self.groups).weights if self.authors else self.supply.counts
        self._weights = CumulativeWeights(weights)

    def choose_masters(self, dist: Distributor, job: Job) -> list[int]:
        tmask = self.tasks.mask
        table = self._weights
        r = dist.rng.random
        out = []
        for tid in job.tids:
            cum, total = table[tmask[tid]]
            out.append(bisect_right(cum, r() * total))
        return out
