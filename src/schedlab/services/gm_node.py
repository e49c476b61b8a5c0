"""A Global Master as a service: the simulator's GM, its job queue, its recovery and its links to the LMs.

``schedlab serve gm --id N`` runs one (:mod:`~.node`). It consumes
``<name>.gm.N`` (completions, state updates, holdings reports) and
``<name>.submit.N`` (jobs, durable, each acknowledged when its last task
completes: :class:`~.recovery.DurableJobs`); it reaches the LMs over HTTP.
Around the simulator's :class:`~schedlab.schedulers.megha.gm.GlobalMaster`:

* :class:`GMFrontend` files a submitted job's tasks and gives their ids to the
  GM, as the simulator's engine calls ``GlobalMaster.submit``;
* :class:`~.failures.GMPlacements` remembers where each task was placed, so
  a completion or loss from elsewhere is dropped (exactly once);
* :class:`~.recovery.GMRecovery` rebuilds the view from the LMs at every
  start; :class:`~.links.LaunchLinks` handles requests that got no answer;
* :class:`~.fairness.GMFairness` with ``shares`` (Algorithm 2);
* :class:`~.cancel.JobCancels`: cancelled jobs (requests come on the completion log).
"""

from __future__ import annotations

from typing import Any

from schedlab.schedulers.megha.gm import GlobalMaster, gm_address
from schedlab.schedulers.megha.messages import LaunchRejected, StateUpdate
from schedlab.services.cancel import JobCancels
from schedlab.services.failures import GMPlacements
from schedlab.services.fairness import GMFairness
from schedlab.services.links import REQUEST_TIMEOUT, REQUEST_TRIES, LaunchLinks, Questions
from schedlab.services.messages import CancelJob, Done, SubmitJob, log_address, submit_address
from schedlab.services.nodes import NodeEnv, PortTaken, RecordsPublisher, ServiceNode
from schedlab.services.records import EventObserver
from schedlab.services.recovery import DurableJobs, GMRecovery
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.stepcosts import SUBMISSION
from schedlab.services.tasks import RecentIds, TaskStore
from schedlab.services.timings import ComponentTimer
from schedlab.services.wire import Frame
from schedlab.sim.runtime import Component
from schedlab.workers.protocol import TasksFinished


class GMFrontend(Component):
    """A GM's submission endpoint: stores the job's tasks, then gives their ids to the GM."""

    rt: ServiceRuntime

    def __init__(self, g: int, runtime: ServiceRuntime, gm: GlobalMaster, store: TaskStore) -> None:
        super().__init__(submit_address(g), runtime)
        self.gm = gm
        self.store = store
        self.jobs = 0
        self.tasks = 0
        self.duplicates = 0
        self.seen = RecentIds()

    def handlers(self):
        return {SubmitJob: self._on_submit}

    def _on_submit(self, msg: SubmitJob) -> None:
        if msg.jid in self.seen:  # the broker delivered it again (a link dropped before it was acknowledged)
            self.duplicates += 1
            return
        self.admit(msg)

    def admit(self, msg: SubmitJob, submit: Any = None) -> None:
        """File the job; queue its tasks at the GM — all of them, or only ``submit`` (a recovering GM's)."""
        self.seen.add(msg.jid)
        # its arrival: when it reached this process (before its decoding, where that is measured)
        self.store.add_job(msg.jid, self.rt.handling_since(), msg.tids, msg.durations, msg.masks, msg.requests, msg.specs, msg.user)
        self.jobs += 1
        self.tasks += len(msg.tids)
        tids = msg.tids if submit is None else list(submit)
        if tids:
            self.gm.submit(tids)


def update_entries(gm: Any, msg: StateUpdate) -> int:
    """How many worker entries a GM folds from a state update — the unit the simulator charges
    ``update_cost_per_worker`` by (a snapshot: every worker of its partitions; a delta: those it changes)."""
    if msg.bits:
        if msg.snapshot:
            return sum(gm.layout.index[p].size for p in msg.bits)
        return sum((free | busy).bit_count() for free, busy in msg.bits.values())
    if msg.free:
        return sum(len(changes) for changes in msg.free.values())
    return sum(len(busy) + len(avail) for busy, avail in msg.lists.values())


class GMNode(ServiceNode):
    """One Global Master process."""

    role = "gm"

    def __init__(self, env: NodeEnv, ident: int) -> None:
        super().__init__(env, ident)
        self.address = gm_address(ident)
        self.last_update: dict[int, float] = {}  # when each LM's last state update arrived
        self.gm: GlobalMaster | None = None
        self.fair: GMFairness | None = None
        self.placements: GMPlacements | None = None
        self.jobs: DurableJobs | None = None
        self.recovery: GMRecovery | None = None
        self.links: LaunchLinks | None = None
        self.publisher: RecordsPublisher | None = None
        self.timer: ComponentTimer | None = None
        self.cancels: JobCancels | None = None
        # job_done(jid, kind, extra): a job of this GM ended ("ended") or was cancelled ("cancelled"; extra: what
        # its record says) — a real process appends it to the job ledger
        self.job_done: Any = None

    def build(self) -> None:
        from schedlab.services.assembly import build_gm

        env, rt, plan, p = self.env, self.rt, self.plan, self.plan.params
        publisher = self.publisher = RecordsPublisher(rt, self.broker)
        self.broker.at_flush = publisher.at_flush  # a consumed message is acknowledged once its output reached the broker
        self.broker.holding = self.router.in_order.holding  # ... and not while the ordered link holds one back
        store = self.store
        self.timer = ComponentTimer(publisher.emit, store.arrival.get, store)  # spans of allocation time, for /metrics
        gm = self.gm = self.component = build_gm(self.id, rt, plan, self.store, EventObserver(self.timer.emit))
        frontend = GMFrontend(self.id, rt, gm, self.store)
        self.placements = GMPlacements(rt, gm, publisher.emit)
        self.placements.after_records = publisher.after
        # each request names the LM process this GM knows of: an older one (its standby elsewhere took over) that
        # gets it learns it was replaced and refuses it unread
        incarnations = self.placements.incarnations
        self.router.incarnation_of = lambda dst: incarnations.get(dst[1]) if dst[0] == "lm" else None
        if p.shares is not None:
            self.fair = GMFairness(rt, [gm], p, plan.layout, plan.cluster, self.store)
        rt.after_delivery(TasksFinished, lambda _dst, msg: self.store.forget(t for t, _w in msg.group))
        rt.after_delivery(StateUpdate, lambda _dst, msg: self.last_update.__setitem__(msg.lm, rt.now()))
        # the steps the simulator charges, measured where this runtime measures (:mod:`~.stepcosts`)
        rt.time_step(StateUpdate, "update_per_worker", lambda msg: update_entries(gm, msg))
        rt.time_step(LaunchRejected, "gm_match", lambda msg: len(msg.items))
        broker = self.broker
        questions = Questions(rt, gm)
        log = log_address(self.id)
        self.jobs = DurableJobs(rt, gm, frontend, self.placements, self.store, plan.num_lms, publisher.emit,
                                ack=lambda m: publisher.after(lambda: broker.ack(m)), questions=questions,
                                log=lambda tids: self.log_done(log, tids), ack_log=lambda m: publisher.after(lambda: broker.ack(m)))
        self.jobs.on_done = self._job_ended
        self.cancels = JobCancels(rt, gm, self.jobs, self.placements, store, publisher.emit, lambda m: publisher.after(lambda: broker.ack(m)))
        self.recovery = GMRecovery(rt, gm, self.placements, plan.num_lms, self.fair)
        # what this GM's queue holds is read before a task is counted lost or run again (see GMRecovery, DurableJobs)
        own_queue = env.queue(self.address)
        self.recovery.barrier = self.jobs.barrier = lambda: self.drain(own_queue)
        self.links = LaunchLinks(rt, gm, self.placements, questions, self.recovery)
        router = env.router
        router.on_undelivered = self.links.undelivered
        self.links.request_sent = router.request_sent
        placements = self.placements
        router.sent_of = lambda _msg: placements.last_sent
        # a message from an LM lost for good (a state update queued in the broker when it restarted):
        # with delta updates the view would stay stale there; that LM's full state replaces it
        recovery = self.recovery
        router.in_order.on_gap = lambda src, _dst: recovery.ask_again(src[1]) if src[0] == "lm" else None
        router.tries["lm"] = (REQUEST_TIMEOUT, REQUEST_TRIES)
        router.restarting = lambda: not self.serving  # found by the deterministic simulation: see Router.restarting

    def _job_ended(self, jid: int) -> None:
        assert self.cancels is not None
        cancelled = self.cancels.settled(jid)
        if self.job_done is not None:
            self.job_done(jid, "ended" if cancelled is None else "cancelled", cancelled or {})

    def log_done(self, log: Any, tids: list[int]) -> None:
        """Tasks completed: into the completion log, after every record emitted so far. One link keeps the order,
        so the log never names a completion whose record (an end this GM verified) the broker never got — a GM
        killed with both unconfirmed loses both, and the verification comes again (found by the deterministic
        simulation, seed 15588: the log kept, the end's record lost with the GM)."""
        assert self.publisher is not None
        if self.publisher.pending:
            self.publisher.flush()
        self.rt.send(log, Done(self.id, tids))

    async def start(self) -> None:
        if not self.env.bind():
            raise PortTaken(self)
        await self.broker.connect()
        self.build()
        assert self.recovery is not None and self.jobs is not None
        await self.recovery.run()
        # what this GM's predecessors left, in this order: the completion log, the completions and updates of the
        # GM's queue (ends of tasks whose jobs are still in the queue are kept), then the jobs they had not finished
        q, broker = self.env.queue, self.broker
        await broker.consume_held(q(log_address(self.id)), self.on_log, self.on_bad_broker)
        await self.drain(q(log_address(self.id)))
        await broker.consume(q(self.address), self.on_broker, self.on_bad_broker)
        await self.drain(q(self.address))
        await broker.consume_held(q(submit_address(self.id)), self.on_job, self.on_bad_broker, transit=SUBMISSION)
        await self.drain(q(submit_address(self.id)))
        self.jobs.drained()
        self.serving = True
        self.started_at = self.rt.now()

    async def stop(self) -> None:
        if self.fair is not None:
            self.fair.stop()
        if self.recovery is not None:
            self.recovery.stop()
        if self.cancels is not None:
            self.cancels.stop()
        if self.publisher is not None and self.publisher.pending:
            self.publisher.flush()

    def on_log(self, frame: Frame, redelivered: bool, handle: Any) -> None:
        """A message of this GM's completion log (:class:`~.recovery.DurableJobs`), or a job's cancellation
        (:mod:`~.cancel`)."""
        assert self.jobs is not None and self.cancels is not None
        msg = frame[2]
        if self.marker(msg):
            self.broker.ack(handle)
            return
        if isinstance(msg, CancelJob) and msg.gm == self.id:
            self.rt.guarded(self.cancels.request, msg.jid, handle)
            return
        if not isinstance(msg, Done) or msg.gm != self.id:
            self.refusals.refuse("not for this service", f"{msg.__class__.__name__} on GM {self.id}'s completion log")
            self.broker.ack(handle)
            return
        self.rt.guarded(self.jobs.on_log, msg.tids, redelivered, handle)

    def on_job(self, frame: Frame, redelivered: bool, handle: Any) -> None:
        """A job from this GM's submission queue (acknowledged by :class:`~.recovery.DurableJobs` when it is done)."""
        assert self.jobs is not None
        _src, dst, msg, _tasks, _seq, _meta = frame
        if self.marker(msg):
            self.broker.ack(handle)
            return
        if not isinstance(msg, SubmitJob) or dst != submit_address(self.id):
            self.refusals.refuse("not for this service", f"{msg.__class__.__name__} for {dst!r} on a submission queue")
            self.broker.ack(handle)
            return
        self.rt.timed("gm_match", len(msg.tids), self.jobs.on_job, msg, redelivered, handle)

    def status(self) -> dict[str, Any]:
        out = super().status()
        gm = self.gm
        if gm is None:
            return out
        out.update({"waiting": gm.waiting_count(), **gm.counters(), "gm_holdings": gm.view.holdings()})
        if self.fair is not None:
            out.update(self.fair.counters())
            out["holdings_reports"] = self.fair.reports
        if self.placements is not None:
            out.update(self.placements.counters())
        if self.recovery is not None and self.jobs is not None and self.links is not None:
            out.update(self.recovery.counters())
            out.update(self.jobs.counters())
            out.update(self.links.counters())
        if self.cancels is not None:
            out.update(self.cancels.counters())
            out["lms_suspended"] = sorted(gm.suspended)
        if self.last_update:
            out["last_heartbeat_age"] = self.rt.now() - min(self.last_update.values())
        return out

