"""``megha``: federated scheduling with Global Masters on an eventually-consistent view and validating Local Masters.

Implements Megha as described in "Megha: Decentralized Global Fair Scheduling
for Federated Clusters" (Sections III–IV) with the enhancements of
"Constraint-Aware Federated Scheduling for Data Center Workloads" (Section 4):
bitset matching with random or minimum-constraints worker choice, per-GM delta
updates that leave out a GM's own completions, internal-partitions-first
matching with repartitioning, rescheduling, and global fair sharing
(Algorithm 2, :mod:`~schedlab.schedulers.megha.fairness`).

Components (all sans-IO, talking only through the Runtime):
:class:`~.gm.GlobalMaster` × G, :class:`~.lm.LocalMaster` × L and the worker
pool. This module wires them to a run: the topology (a Megha config, or
``lms`` × ``gms`` blocks of workers), jobs to GMs (round-robin by arrival, or
each user's queue to its GM when fair sharing is on) and the LMs' heartbeats.

``compat="authors"`` switches to the behaviour of the authors' own simulator
(docs/authors-simulators.md#megha; :mod:`~schedlab.schedulers.megha.compat`).

Choices where the papers are silent, and defaults:

* ``worker_choice="random"`` (the constraint-aware paper's recommendation).
* ``heartbeat=5`` s (the constraint-aware paper's simulator; the Megha paper
  uses 10 s).
* ``piggyback=False``: LMs send state after inconsistencies and at heartbeats,
  as the constraint-aware paper describes the (original and enhanced) designs
  (Section 4.4). The Megha paper also has LMs piggyback updates on their
  replies to launch requests (IV-A); ``piggyback=True`` does that. On the
  reference data center it shortens the JRT-delay tail, but under sustained
  high load on a small data center it makes a GM's view accurately pessimistic
  and queues grow faster than with optimistic staleness corrected by rejections. Heartbeats start one period after the first arrival (phased like
  the authors' simulator, first arrival − 0.05 s + k·period, in compat mode)
  and stop once the workload is over and every task's completion is known.
* ``updates``: ``delta`` is the constraint-aware paper's enhanced design
  (Section 4.4: per-GM deltas that leave out the GM's own completions, which its
  completion messages already carry), ``snapshot`` the original. Two more
  values exist only to measure what leaving the own completions out is worth
  (``schedlab reproduce megha-updates-ablation``): ``delta+own`` puts them back
  in each GM's delta; since a GM here also keeps a worker its own in-flight or
  running task holds taken whatever an update says (the own-task guard,
  :mod:`~.gm`), ``delta+own-unguarded`` drops that guard too — the paper's
  double-assignment scenario: a completion, then an update saying the same
  worker is free, after the GM has given it to a new task.
* Processing costs are per operation — ``gm_match_cost`` per task a GM handles,
  ``update_cost_per_worker`` per worker entry in a state update it folds in,
  ``lm_verify_cost`` per request an LM validates, ``message_cost`` per message
  handled — and all default to 0, the convention of the papers' simulators
  whose numbers we reproduce (their JRT-delay median of 3·ND = 1.5 ms holds
  only without processing costs). The Megha paper's own experiments include
  processing overheads; ``MEGHA_PAPER_COSTS`` gives an estimated profile for them.
  A measured profile with spreads (``cost_spread``: each step lognormal around its
  median) comes from a cost-profile file (:mod:`.costs`, ``simulate --costs``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from schedlab.cluster.model import Cluster
from schedlab.errors import InputError
from schedlab.metrics.observer import Observer
from schedlab.schedulers.base import (
    Scheduler,
    SchedulerContext,
    SchedulerParams,
    WorkerChoiceName,
    added_field,
    compat_field,
    worker_choice_field,
)
from schedlab.schedulers.megha.build import build_gm, build_lm
from schedlab.schedulers.megha.compat import DEPARTURES
from schedlab.schedulers.megha.costs import Step as CostStep
from schedlab.schedulers.megha.fairness import FairSharing, UserAssignment
from schedlab.schedulers.megha.gm import GlobalMaster
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.partitions import Layout, megha_topology
from schedlab.sim.runtime import Runtime
from schedlab.workers.protocol import LocalWorkers
from schedlab.workload.model import Job, TaskLookup

if TYPE_CHECKING:
    from schedlab.schedulers.megha.fairness import FairSharing

# Per-operation costs of the order of the Megha paper's Python prototype (HTTP requests,
# RabbitMQ updates, dict-based state): a GM spends ~50 µs matching a task, an LM ~20 µs
# validating one, ~5 µs folding one worker's entry of a state update, and ~100 µs per
# message handled. The paper gives no figures; these are our estimates, used to show
# the overhead effects of its Figs. 6, 8 and 9 (``schedlab reproduce megha-overheads``).
MEGHA_PAPER_COSTS = {
    "gm_match_cost": 50e-6,
    "lm_verify_cost": 20e-6,
    "update_cost_per_worker": 5e-6,
    "message_cost": 100e-6,
}


Departure = Literal["search_order", "batching", "retry_on_freed_worker", "rejection_to_front", "event_lists",
                    "discarded_update", "heartbeat_phase", "update_order"]


class MeghaParams(SchedulerParams):
    gms: int | None = Field(None, ge=1, description="number of Global Masters (default 5, or the config's)")
    lms: int | None = Field(None, ge=1, description="number of Local Masters (default 5, or the config's)")
    worker_choice: WorkerChoiceName = worker_choice_field("random")
    choice_scope: Literal["partition", "group"] = Field(
        "partition", description="worker choice among the first partition's candidates, or among every candidate of the "
        "internal (else external) partitions (slot mode)")
    heartbeat: float = Field(5.0, gt=0, description="seconds between LM state updates")
    updates: Literal["delta", "snapshot", "delta+own", "delta+own-unguarded"] = Field(
        "delta", description="LM state updates: delta (the enhanced design) or snapshot (the original); for the ablation of "
                             "constraint-aware paper 4.4 (slot mode): delta+own (deltas also carry the GM's own completions), "
                             "delta+own-unguarded (and the GM folds them without its own-task guard)")
    piggyback: bool = Field(False, description="LMs answer accepted launches with the GM's pending update (Megha paper IV-A)")
    compat: Literal["none", "authors"] = compat_field()
    departures: list[Departure] | None = Field(
        None, description="with compat=authors: only these of the authors' simulator's departures (default: all of them: "
        + ", ".join(DEPARTURES) + ")")
    gm_match_cost: float = Field(0.0, ge=0, description="seconds a GM spends matching one task")
    lm_verify_cost: float = Field(0.0, ge=0, description="seconds an LM spends validating one task")
    update_cost_per_worker: float = Field(0.0, ge=0, description="seconds a GM spends folding one worker's entry of a state update")
    message_cost: float = Field(0.0, ge=0, description="seconds a GM or LM spends handling one message")
    cost_spread: dict[CostStep, float] | None = added_field(
        None, description="lognormal sigma of each processing step's cost (gm_match, lm_verify, update_per_worker, message) "
        "around its *_cost median; from a cost profile: simulate --costs")
    cost_per_input: dict[Literal["gm_match", "lm_verify", "update_per_worker"], float] | None = added_field(
        None, description="seconds of a processing step's cost per input beside its per-item *_cost (an input of n items "
        "costs per_input + n x *_cost, scaled by one draw); from a measured cost profile's fit: simulate --costs")
    shares: list[float] | None = Field(None, description="fair sharing: each user queue's share of the data center")
    queue_gms: list[int] | None = Field(None, description="fair sharing: the GM (1-based) serving each user queue")
    user_assignment: Literal["round-robin", "by-share"] = Field("round-robin", description="fair sharing: how jobs are given to user queues")

    @model_validator(mode="after")
    def _check(self) -> MeghaParams:
        if self.cost_per_input is not None and any(not (v >= 0) for v in self.cost_per_input.values()):
            raise ValueError("cost_per_input: a cost is >= 0 seconds")
        if self.shares is not None:
            if not self.shares or any(s <= 0 for s in self.shares) or sum(self.shares) > 1 + 1e-9:
                raise ValueError("shares must be positive and sum to at most 1")
            if self.queue_gms is not None and len(self.queue_gms) != len(self.shares):
                raise ValueError("queue_gms needs one GM per share")
        elif self.queue_gms is not None:
            raise ValueError("queue_gms needs shares")
        if self.departures is not None and self.compat != "authors":
            raise ValueError("departures are the authors' simulator's: they need compat='authors'")
        if self.compat == "authors" and self.piggyback:
            raise ValueError("the authors' simulator sends no reply to accepted launches: piggyback needs compat='none'")
        if self.compat == "authors" and self.shares is not None:
            raise ValueError("the authors' simulator has no fair sharing: use compat='none' with shares")
        return self

    def authors_departures(self) -> frozenset[str]:
        """The authors' simulator's departures in force (:mod:`~schedlab.schedulers.megha.compat`)."""
        if self.compat != "authors":
            return frozenset()
        return frozenset(DEPARTURES if self.departures is None else self.departures)


@dataclass
class MeghaShared:
    """What a GM or LM is built with (read-only after construction).

    In a simulation every component of the run shares one; a real service
    builds its own from the cluster file, with the service's runtime, task
    store and observer (:mod:`schedlab.services`). ``workers`` is needed only
    by LMs that preempt (fair sharing).
    """

    runtime: Runtime
    layout: Layout
    cluster: Cluster
    tasks: TaskLookup
    observer: Observer
    workers: LocalWorkers | None
    params: MeghaParams
    slot_mode: bool
    # a real process's handling takes time of its own: when the input being handled reached the process. A GM then
    # marks a task's framework queuing until then and its processing until its request leaves; an LM the request's
    # flight until then and its processing until its answers leave — the spans the simulator marks when it charges
    # processing costs (None: handling takes no time, or the simulator charges it)
    handling_since: Callable[[], float] | None = None


class MeghaScheduler(Scheduler):
    name = "megha"
    summary = "GMs match on an eventually-consistent global view; LMs validate (Megha, with PigeonC-paper enhancements)"
    Params = MeghaParams

    def __init__(self, ctx: SchedulerContext, params: MeghaParams) -> None:
        super().__init__(ctx, params)
        topo = megha_topology(ctx.cluster, params.gms, params.lms)
        layout = Layout(ctx.cluster, topo)
        if params.queue_gms is not None and max(params.queue_gms) > layout.num_gms or (params.queue_gms and min(params.queue_gms) < 1):

            raise InputError("param queue_gms", f"GMs are numbered 1..{layout.num_gms}")
        self.shared = MeghaShared(ctx.runtime, layout, ctx.cluster, ctx.tasks, ctx.recorder, ctx.pool, params, ctx.cluster.slot_mode)
        rt = ctx.runtime
        self.gms: list[GlobalMaster] = [build_gm(g, self.shared) for g in range(layout.num_gms)]
        self.lms: list[LocalMaster] = [build_lm(i, self.shared) for i in range(layout.num_lms)]
        self.fairness: FairSharing | None = None
        if params.shares is not None:

            self.users = UserAssignment(params.shares, params.queue_gms, layout.num_gms, params.user_assignment, rt.rng("megha:users"))
            self.fairness = FairSharing(params.shares, self.users.queue_gm, layout, ctx.cluster, ctx.tasks, self.gms)
            for lm in self.lms:
                lm.fairness = self.fairness  # the run-wide truth, told at once (a real cluster sends it)
            ctx.pool.allow_preemption()  # Algorithm 2 kills running tasks
        self.rt = rt
        # the authors' event queue hands out events of one instant last in, first out: each GM folds the LMs'
        # updates of a heartbeat last LM first
        lifo = "update_order" in params.authors_departures()
        self.heartbeat_order = self.lms[::-1] if lifo else self.lms
        self.heartbeats_started = False
        self.rounds = 0
        self._progress_mark = (-1, -1)
        self._stalled_rounds = 0
        self.stalled = False

    # -- jobs ----------------------------------------------------------------------------------------
    def submit(self, job: Job) -> None:
        if not self.heartbeats_started:
            self.heartbeats_started = True
            phased = "heartbeat_phase" in self.params.authors_departures()  # type: ignore[attr-defined]
            first = self.params.heartbeat - (0.05 if phased else 0.0)  # type: ignore[attr-defined]
            self.rt.call_later(first, self._heartbeat_round)
        if self.fairness is not None:
            u = job.user = self.users.next()
            self.ctx.recorder.j_user[job.jid] = u
            self.gms[self.users.queue_gm[u]].submit(job.tids)
            return
        self.gms[job.jid % len(self.gms)].submit(job.tids)

    # -- heartbeats ----------------------------------------------------------------------------------
    def _heartbeat_round(self) -> None:
        ctx = self.ctx
        if not ctx.active():
            return
        # A run whose waiting tasks can make no progress (nothing running, nothing reported for
        # several rounds, no jobs to come) would heartbeat forever: stop and report them unfinished.
        progress = (ctx.recorder.reported, ctx.pool.busy_workers)
        if progress == self._progress_mark and ctx.pool.busy_workers == 0 and not ctx.more_jobs():
            self._stalled_rounds += 1
            if self._stalled_rounds >= 3:
                self.stalled = True
                return
        else:
            self._stalled_rounds = 0
        self._progress_mark = progress
        self.rounds += 1
        for lm in self.heartbeat_order:
            lm.heartbeat()
        if self.fairness is not None:
            self.fairness.round()
        self.rt.call_later(self.params.heartbeat, self._heartbeat_round)  # type: ignore[attr-defined]

    # -- observation ---------------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        out: dict[str, int] = {"heartbeat_rounds": self.rounds, "stalled": int(self.stalled)}
        # What GMs still believe they hold once the run is over: must be 0 (a bookkeeping leak otherwise).
        out["gm_holdings_at_end"] = sum(gm.view.holdings() for gm in self.gms)
        comps: list[GlobalMaster | LocalMaster] = [*self.gms, *self.lms]
        for comp in comps:
            for k, v in comp.counters().items():
                out[k] = out.get(k, 0) + v
        if self.fairness is not None:
            out.update(self.fairness.counters())
            out["preemptions"] = self.ctx.recorder.counters.get("preemptions", 0)
        return out
