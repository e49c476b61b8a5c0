"""A Local Master as a service: the simulator's LM, its worker hosts, its takeover and its lease.

``schedlab serve lm --id N`` runs one (:mod:`~.node`); ``--standby`` runs one
that waits for the active LM to go (:mod:`~.lease`). It takes launch and
preemption requests from GMs over HTTP, launches tasks on its worker hosts
over HTTP, and consumes ``<name>.lm.N`` (the hosts' task ends). Around the
simulator's :class:`~schedlab.schedulers.megha.lm.LocalMaster`:

* :class:`WorkerRouter` splits each launch batch by the worker host running
  its workers;
* :class:`~.failures.CompletionRelay` records each task end and tells the
  task's GM (one witness of ends); :class:`~.failures.HostMonitor` keeps its
  hosts' leases; :class:`~.recovery.LMTakeover` rebuilds the LM's state from
  the hosts at every start; :class:`~.recovery.LMRecovery` answers restarted
  GMs;
* **the fence** on requests: an LM process acts only on a request first sent
  less than :data:`~.links.REQUEST_FRESH` seconds ago and after it took over
  (:mod:`~.links`); a request delivered twice (an HTTP retry after a lost
  reply) launches its tasks once.
* **A standby on another host** (``standby:`` in the cluster file) cannot be
  fenced by the LM's port. Every process of LM *i* has a larger incarnation
  (a fencing token, :mod:`~.lease`), and what reaches an LM names the newest
  one its sender knows: requests of GMs and beacons of worker hosts (stamped
  by their routers), task ends (``HostFinished.lm_incarnation``: the process
  the host answered last). A process that reads a newer incarnation than its
  own, or finds its lease held by another process, **steps down**: it stops
  at once, as if killed (nothing acknowledged, nothing more sent), and waits
  as a standby. Worker hosts keep the newest incarnation that asked them and
  refuse launches and questions of older ones. A process taking over waits
  :data:`STEP_DOWN_GRACE` before it acts, for the one it replaces to notice
  the lease is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from schedlab.schedulers.megha.gm import lm_address
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.messages import (
    LaunchRejected,
    LaunchRequest,
    PreemptRequest,
    StateUpdate,
    TaskLost,
)
from schedlab.services.failures import CompletionRelay, HostMonitor
from schedlab.services.fairness import HostWorkers, holding_event
from schedlab.services.lease import POLL, keep, wait_to_serve
from schedlab.services.links import REQUEST_FRESH, REQUEST_TIMEOUT, REQUEST_TRIES
from schedlab.services.messages import (
    CancelRuns,
    HostFinished,
    KillTask,
    Recover,
    Resolve,
    StaleRuns,
)
from schedlab.services.nodes import NodeEnv, PortTaken, RecordsPublisher, ServiceNode, host_address
from schedlab.services.records import EventObserver
from schedlab.services.recovery import LMRecovery, LMTakeover
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.tasks import RecentIds
from schedlab.services.timings import ComponentTimer
from schedlab.services.transport import STALE_REQUEST
from schedlab.services.wire import Frame, WireError
from schedlab.sim.runtime import Component
from schedlab.workers.protocol import POOL_ADDRESS, LaunchBatch, LaunchTask, TasksFinished

# seconds a process taking over LM i waits before it acts, when its standby serves elsewhere: the process it replaces
# checks its lease every POLL seconds and steps down when another holds it (a frozen process is fenced by the tokens)
STEP_DOWN_GRACE = 3 * POLL


class WorkerRouter(Component):
    """In an LM process, "the workers": splits each launch batch by the host running its workers."""

    def __init__(self, runtime: ServiceRuntime, host_of_worker: list[int]) -> None:
        super().__init__(POOL_ADDRESS, runtime)
        self.host_of_worker = host_of_worker

    def handlers(self):
        return {LaunchBatch: self._on_batch, LaunchTask: self._on_launch, KillTask: self._on_kill, CancelRuns: self._on_cancel}

    def _on_batch(self, msg: LaunchBatch) -> None:
        per_host: dict[int, list[tuple[int, int]]] = {}
        for item in msg.items:
            per_host.setdefault(self.host_of_worker[item[1]], []).append(item)
        for h, items in per_host.items():
            self.rt.send(host_address(h), LaunchBatch(items, msg.reply_to))

    def _on_launch(self, msg: LaunchTask) -> None:
        self.rt.send(host_address(self.host_of_worker[msg.worker]), msg)

    def _on_kill(self, msg: KillTask) -> None:
        self.rt.send(host_address(self.host_of_worker[msg.worker]), msg)

    def _on_cancel(self, msg: CancelRuns) -> None:
        per_host: dict[int, list[tuple[int, int]]] = {}
        for item in msg.items:
            per_host.setdefault(self.host_of_worker[item[1]], []).append(item)
        for h, items in per_host.items():
            self.rt.send(host_address(h), CancelRuns(msg.gm, items))


@dataclass(slots=True)
class RejectAgain:
    """Within an LM process: answer again, as rejected, these items of a request rejected before (never sent)."""

    gm: int
    items: list[tuple[int, int, int]]
    sent: float


class LMNode(ServiceNode):
    """One Local Master process (active, or a standby waiting to take over)."""

    role = "lm"

    def __init__(self, env: NodeEnv, ident: int) -> None:
        super().__init__(env, ident)
        self.address = lm_address(ident)
        self.standby = env.standby
        self.lm: LocalMaster | None = None
        self.launched_ids = RecentIds()  # tasks it accepted (a request delivered twice launches them once)
        self.answered = RecentIds()  # (task, first send time) of every request item answered: a later copy is not acted on
        self.rejected_before = RecentIds()  # (task, first send time) of the items it rejected: a later copy is rejected again
        self.sent_of_request: dict[int, float] = {}  # id of a request being admitted -> its first send time
        self._current_sent: float | None = None  # the first send time of the request being handled
        self.duplicate_requests = 0
        self.heartbeats = 0
        self.stale_runs_dropped = 0  # adopted runs a GM named stale (StaleRuns)
        self.last_heartbeat = 0.0
        self.lease: Any = None
        self.relay: CompletionRelay | None = None
        self.monitor: HostMonitor | None = None
        self.takeover: LMTakeover | None = None
        self.lm_recovery: LMRecovery | None = None
        self.workers: HostWorkers | None = None
        self.publisher: RecordsPublisher | None = None
        self.timer: ComponentTimer | None = None
        self._heartbeat_timer: Any = None
        self._stop = self.rt.event()
        self.in_doubt: dict[int, tuple[int, int, float, int]] = {}  # tid -> (host, worker, deadline, launch id): no answer
        self.launch_of: dict[int, int] = {}  # tid -> the id of the launch of its current run (from the router, or a host)
        self.kills_again: set[tuple[int, int]] = set()  # (tid, launch) of kills refused beside stale launches, sent again
        self._numbered: dict[int, int] = {}  # GM -> messages numbered to it at the last heartbeat
        self.request_sent: dict[int, float] = {}  # tid -> when the request that launched its run was first sent
        self.adopted_runs: dict[int, int] = {}  # tid -> the launch id of a run this process adopted from its host at its start
        self.launches_handed_back = 0
        self.launches_dropped = 0  # launches on their way to hosts whose tasks were vacated meanwhile
        self.replaced_by: str | None = None  # why this process stepped down (a newer one serves as this LM)

    def build(self) -> None:
        from schedlab.services.assembly import build_lm

        env, rt, plan, p = self.env, self.rt, self.plan, self.plan.params
        publisher = self.publisher = RecordsPublisher(rt, self.broker)
        self.broker.at_flush = publisher.at_flush
        fair = p.shares is not None
        workers = self.workers = HostWorkers(rt, self.store) if fair else None
        self.timer = ComponentTimer(publisher.emit, store=self.store)  # spans of allocation time between this LM's marks, for /metrics
        lm = self.lm = self.component = build_lm(self.id, rt, plan, self.store, EventObserver(self.timer.emit), workers)
        WorkerRouter(rt, plan.host_of_worker)
        rt.after_delivery(TasksFinished, self._ended)
        rt.before_delivery(HostFinished, self._screen_ends)
        rt.before_delivery(LaunchBatch, self._still_running)
        rt.before_delivery(LaunchTask, self._still_running)
        rt.after_delivery(LaunchRequest, lambda _dst, msg: self._accepted(msg))
        rt.before_delivery(LaunchRequest, self._screen_launches)
        rt.time_step(LaunchRequest, "lm_verify", lambda msg: len(msg.items))  # measured where the runtime measures
        rt.before_send(LaunchRejected, self._stamp_rejection)
        rt.before_send(TaskLost, self._stamp_loss)
        rt.add_handler(lm.address, RejectAgain, self._reject_again)
        rt.add_handler(lm.address, CancelRuns, lambda msg: rt.send(POOL_ADDRESS, msg))  # a cancelled job's runs (cancel)
        rt.add_handler(lm.address, StaleRuns, self._stale_runs)
        relay = self.relay = CompletionRelay(rt, [lm], self.timer.emit)
        relay.completed = RecentIds()
        relay.vouch = self._vouch
        relay.flush_records = publisher.flush
        relay.on_refused = self._hand_back
        holding = partial(holding_event, self.store) if fair else None
        self.lm_recovery = LMRecovery(rt, lm, relay.completed, holding)
        self.lm_recovery.after_records = publisher.after
        self.lm_recovery.sent_of = self._run_sent
        mine = {h: list(plan.workers_of_host[h]) for h, owner in plan.hosts.items() if owner == self.id}
        monitor = self.monitor = HostMonitor(rt, lm, mine, plan.worker_lease)
        monitor.on_lost = self._lost
        monitor.on_alive = self._settle_doubts
        router = env.router
        router.incarnation_of = lambda dst: monitor.incarnation.get(dst[1]) if dst[0] == "host" else None
        router.until_of = lambda dst: monitor.launch_deadline(dst[1]) if dst[0] == "host" else None
        router.on_launch = self._launched
        router.sent_of = self._request_sent
        router.tries["host"] = (REQUEST_TIMEOUT, REQUEST_TRIES)
        self.takeover = LMTakeover(rt, lm, monitor, monitor.positions, router.incarnation, holding)
        self.lm_recovery.process = self.takeover
        self.takeover.launch_of = self.launch_of
        self.takeover.sent_of = self._run_sent
        relay.found_ended = self.takeover.found_ended
        self.takeover.adopted_runs = self.adopted_runs
        relay.adopted = self._adopted_end
        relay.let_go = self._let_go
        router.on_undelivered = self._undelivered_to_host
        if workers is not None:
            workers.add(lm, plan.num_gms)
            workers.on_killed = self._lost  # its relaunch is not a repeat
            rt.before_delivery(PreemptRequest, self._screen_preemption)
            rt.after_delivery(PreemptRequest, lambda _dst, msg: self._preemption_done(msg))

    async def start(self) -> None:
        env, rt = self.env, self.rt
        if self.standby or env.step_down is not None:  # wait for the active LM to die: its lease, then its port
            self.lease = await wait_to_serve(env.lease(env.lease_queue), env.bind, rt)
        else:
            if not env.bind():
                raise PortTaken(self)
            self.lease = env.lease(env.lease_queue)
            await self.lease.try_acquire()  # held elsewhere: a standby trying its luck; serving anyway, the port is ours
        on_taken = None
        if env.step_down is not None:  # from now on, a lease found held by another process makes this one step down
            on_taken = lambda: self.step_down("its lease is held by another process")  # noqa: E731
            rt.spawn(keep(self.lease, rt, self._stop, on_taken), "lease")
        # this process's incarnation is a fencing token: every later LM i process has a larger one, so a GM tells
        # what an earlier process sent (still in its queue) from news (found by the deterministic simulation)
        while (token := await self.lease.token()) is None:
            await rt.sleep(POLL)
        self.router.incarnation = token
        if env.step_down is not None:  # the process it replaces may still run elsewhere: it steps down within POLL
            await rt.sleep(STEP_DOWN_GRACE)
            # frozen, say, since it took the lease, or the broker restarted meanwhile: another may serve by now
            # (found by the deterministic simulation) — it serves only with the lease in hand
            while not self.lease.held and not await self.lease.try_acquire():
                if self.lease.taken:
                    self.step_down("its lease was taken while it started")
                    return
                await rt.sleep(POLL)
        await self.broker.connect()
        self.build()
        assert self.takeover is not None and self.relay is not None
        await self.takeover.rebuild(self.plan.worker_lease)
        # what waited in the LM's queue: ends of adopted tasks as usual, the others to their GMs to verify
        self.relay.takeover = True
        await self.broker.consume(env.queue(self.address), self.on_broker, self.on_bad_broker)
        await self.drain(env.queue(self.address))
        self.relay.takeover = False
        self.takeover.announce()
        self._heartbeat_timer = rt.call_later(self.plan.params.heartbeat, self._heartbeat)
        if on_taken is None:
            rt.spawn(keep(self.lease, rt, self._stop), "lease")
        self.serving = True
        self.started_at = rt.now()

    def step_down(self, why: str) -> None:
        """A newer process serves as this LM (a standby elsewhere took over): stop at once, as if killed."""
        if self.replaced_by is not None or self.env.step_down is None:
            return
        self.replaced_by = why
        self._stop.set()
        self.env.step_down(why)

    def _newer(self, incarnation: int | None) -> bool:
        """``incarnation`` (named by a sender) is a newer process of this LM: this one steps down."""
        if incarnation is None or incarnation <= self.router.incarnation or self.env.step_down is None:
            return False
        self.step_down(f"a sender knows a newer process of LM {self.id} ({incarnation}; this one is {self.router.incarnation})")
        return True

    def _still_running(self, _dst: Any, msg: Any) -> Any:
        """A launch on its way to the worker hosts leaves out tasks vacated since the LM decided it: a host
        found restarted in between had its tasks counted lost, and would otherwise start this one too, which
        its GM is requesting again (found by the deterministic simulation, seed 11960 with pauses)."""
        lm = self.lm
        assert lm is not None
        running, order = lm.running, self.plan.layout.order
        if isinstance(msg, LaunchTask):
            e = running.get(msg.tid)
            return msg if e is not None and order[e[0]][e[1]] == msg.worker else None
        items = [(t, w) for t, w in msg.items if (e := running.get(t)) is not None and order[e[0]][e[1]] == w]
        if len(items) == len(msg.items):
            return msg
        self.launches_dropped += len(msg.items) - len(items)
        return LaunchBatch(items, msg.reply_to) if items else None

    def _screen_ends(self, _dst: Any, msg: HostFinished) -> HostFinished | None:
        """Ends from a host that answered a newer process of this LM are that process's to relay."""
        return None if self._newer(msg.lm_incarnation) else msg

    async def stop(self) -> None:
        self._stop.set()
        if self.lease is not None:
            await self.lease.release()
        if self._heartbeat_timer is not None:
            self._heartbeat_timer.cancel()
        if self.monitor is not None:
            self.monitor.stop()
        if self.publisher is not None and self.publisher.pending:
            self.publisher.flush()

    def _heartbeat(self) -> None:
        self._heartbeat_timer = self.rt.call_later(self.plan.params.heartbeat, self._heartbeat)
        self.heartbeats += 1
        self.last_heartbeat = self.rt.now()
        lm = self.lm
        assert lm is not None
        lm.heartbeat()
        # a GM that heard nothing from this LM over a heartbeat gets an empty update: its ordered link then shows
        # a gap if the last message was lost (a state in a reply its requester had given up on, which reset the
        # GM's pending delta), and the gap makes the GM ask for this LM's whole state (found by the simulation)
        for g, addr in enumerate(lm.gm_addr):
            n = self.router.numbered(addr)
            if n == self._numbered.get(g) and n:
                self.rt.send(addr, StateUpdate(lm.i, False))
                n = self.router.numbered(addr)
            self._numbered[g] = n

    # -- requests -------------------------------------------------------------------------------
    def check(self, dst: Any, msg: Any, tasks: Any) -> None:
        super().check(dst, msg, tasks)
        lay = self.plan.layout
        known = {t.tid for t in tasks or ()}
        if isinstance(msg, LaunchRequest | PreemptRequest):
            parts = set(lay.partitions_of_lm(self.id))
            items = msg.items if isinstance(msg, LaunchRequest) else [(msg.tid, msg.p, msg.pos)]
            if not 0 <= msg.gm < lay.num_gms:
                raise WireError(f"unknown GM {msg.gm}")
            for tid, p, pos in items:
                if p not in parts:
                    raise WireError(f"unknown partition {p} (LM {self.id} has {min(parts)}..{max(parts)})")
                if not 0 <= pos < lay.index[p].size:
                    raise WireError(f"unknown worker position {pos} in partition {p}")
                if tid not in known and tid not in self.store:
                    raise WireError(f"bad request: task {tid} comes without its description")
            if len({t for t, _p, _pos in items}) != len(items):
                raise WireError("bad request: a task is named twice")
        elif isinstance(msg, Recover | Resolve) and not 0 <= msg.gm < lay.num_gms:
            raise WireError(f"unknown GM {msg.gm}")
        elif isinstance(msg, CancelRuns | StaleRuns):
            hosts, of = self.plan.hosts, self.plan.host_of_worker
            bad = next((w for _t, w in msg.items if not 0 <= w < len(of) or hosts.get(of[w]) != self.id), None)
            if not 0 <= msg.gm < lay.num_gms or bad is not None:
                raise WireError(f"unknown GM {msg.gm}" if bad is None else f"unknown worker {bad} (not on LM {self.id}'s hosts)")

    def screen(self, src: Any, msg: Any, meta: tuple, signed_at: float) -> tuple[str, str] | None:
        if self._newer(meta[0]):
            return STALE_REQUEST, f"meant for a newer process of LM {self.id} ({meta[0]}): this one steps down"
        if not isinstance(msg, LaunchRequest | PreemptRequest):
            return None
        # the fence (links): act only on a request first sent less than REQUEST_FRESH ago, and after this
        # process took over — an older one was meant for another process, or its sender may have given up
        # on it; either way its fate is settled by this LM's truth, never by acting on it
        sent = meta[2]
        first = signed_at if sent is None else sent
        age = self.rt.now() - first
        if age > REQUEST_FRESH:
            return STALE_REQUEST, f"first sent {age:.1f} s ago (acted on within {REQUEST_FRESH:g} s)"
        if self.takeover is not None and first < self.takeover.started:
            return STALE_REQUEST, "first sent before this LM process took over"
        return None

    def admit(self, frames: list[Frame]) -> list[Frame]:
        """A copy of a request this LM has answered already — a retry after a lost answer, or the original,
        late, after a retry that overtook it — is answered as the first time and never acted on again: items
        accepted then are left out (the requester counts them launched), items rejected then are rejected
        again (found by the deterministic simulation with slow and one-way GM-LM links). A rejection carries
        the request's first send time, so the GM applies it only if it has not requested the task again."""
        out: list[Frame] = []
        for frame in frames:
            msg, sent = frame[2], frame[5][2]
            if isinstance(msg, LaunchRequest) and sent is not None:
                items = [it for it in msg.items if (it[0], sent) not in self.answered]
                if len(items) != len(msg.items):
                    self.duplicate_requests += len(msg.items) - len(items)
                    again = [it for it in msg.items if (it[0], sent) in self.rejected_before]
                    if again:
                        out.append((frame[0], frame[1], RejectAgain(msg.gm, again, sent), None, None, frame[5]))
                    if not items:
                        continue
                    frame = (frame[0], frame[1], LaunchRequest(msg.gm, items), *frame[3:])
                for it in items:
                    self.answered.add((it[0], sent))
                self.sent_of_request[id(frame[2])] = sent
            elif isinstance(msg, PreemptRequest) and sent is not None:
                if (msg.tid, sent) in self.answered:
                    self.duplicate_requests += 1
                    continue
                self.answered.add((msg.tid, sent))
            out.append(frame)
        return out

    def _undelivered_to_host(self, dst: Any, msgs: list[Any], outcome: str) -> None:
        """Requests to a worker host that got no answer.

        * A takeover's question: the host runs nothing it could adopt — down, now.
        * Launches refused unread (the host restarted, or the launch came after this LM's lease on the host
          ran out): certainly never started — handed back to their GMs now (``LocalMaster.hand_back``).
        * Launches with no answer at all: in doubt — the host may have started them and lost only the answer.
          Each is settled by the host's first beacon sent after the launch's deadline: a task it does not list
          never started (or ended, its end on its way: then it runs twice, and completes once) — handed back.
        """
        from schedlab.services.messages import HostState

        if dst[0] != "host":
            return
        if self.takeover is not None and any(isinstance(m, HostState) for m in msgs):
            self.takeover.unreachable(dst[1])
        if outcome in ("refused", "stale"):
            # a kill refused unread beside launches the host refused (they came after this LM's lease on it ran out)
            # still stands: the lost run goes on otherwise, on a worker this LM counts free (found by the
            # deterministic simulation, seed 2205242: the next launch there was refused) — sent again, alone, once
            for m in msgs:
                if isinstance(m, KillTask) and (m.tid, m.launch) not in self.kills_again:
                    self.kills_again.add((m.tid, m.launch))
                    self.rt.send(dst, KillTask(m.tid, m.worker, m.reply_to, m.launch))
        launch_id = self.router.launch_id
        launches = [(item, launch_id(m)) for m in msgs if isinstance(m, LaunchBatch) for item in m.items]
        launches += [((m.tid, m.worker), launch_id(m)) for m in msgs if isinstance(m, LaunchTask)]
        # only the launch that failed is in question: a task launched again since (it was handed back or lost, then
        # requested anew, perhaps onto the same worker) is another run (found by the deterministic simulation)
        launches = [(item, launch) for item, launch in launches if self.launch_of.get(item[0], 0) == launch]
        if not launches or self.lm is None:
            return
        if outcome in ("unreachable", "reply refused"):  # the host may run it: in doubt until it says or its lease ends
            assert self.monitor is not None
            until = self.monitor.deadline(dst[1])  # no later than the launches' own deadlines
            for (tid, w), launch in launches:
                self.in_doubt[tid] = (dst[1], w, until, launch)
            return
        self._hand_back([item for item, _launch in launches])

    def _hand_back(self, launches: list[tuple[int, int]]) -> None:
        assert self.lm is not None
        back = self.lm.hand_back(launches)
        self.launches_handed_back += len(back)
        for tid in back:
            self._lost(tid)

    def _lost(self, tid: int) -> None:
        """A task this LM no longer runs (lost with its host, or handed back): its next launch is a new one."""
        self.launched_ids.discard(tid)
        self.launch_of.pop(tid, None)

    def _launched(self, msg: Any, launch: int) -> None:
        """The router's report of a launch it sends: the id of each task's run."""
        items = msg.items if isinstance(msg, LaunchBatch) else [(msg.tid, msg.worker)]
        for tid, _w in items:
            self.launch_of[tid] = launch

    def _run_sent(self, tid: int) -> float:
        """The first send time of the GM's request that started the task's run here (0: unknown)."""
        return self.request_sent.get(tid, 0.0)

    def _request_sent(self, msg: Any) -> float:
        """The first send time of the GM's request a launch carries out (0: unknown, a preemption's)."""
        tid = msg.items[0][0] if isinstance(msg, LaunchBatch) else msg.tid
        return self.request_sent.get(tid, 0.0)

    def _stale_runs(self, msg: StaleRuns) -> None:
        """Runs this process adopted from its hosts that their GM placed elsewhere since, or completed: each is
        stopped by its launch and forgotten, its worker free again for every GM (``LocalMaster.drop_run``)."""
        lm = self.lm
        assert lm is not None
        order = lm.layout.order
        for tid, w in msg.items:
            where = lm.running.get(tid)
            if where is None or order[where[0]][where[1]] != w or where[2] != msg.gm:
                continue
            self.rt.send(POOL_ADDRESS, KillTask(tid, w, lm.address, self.launch_of.pop(tid, 0)))
            self.adopted_runs.pop(tid, None)
            lm.drop_run(tid)
            self.stale_runs_dropped += 1

    def _adopted_end(self, tid: int, launch: int) -> bool:
        """Is this the end of a run this process adopted at its start? (Its GM judges it: CompletionRelay.adopted.)"""
        return bool(launch) and self.adopted_runs.get(tid) == launch

    def _let_go(self, tid: int) -> None:
        """An adopted run ended, its end sent to its GM to judge: the worker is free again, for every GM."""
        lm = self.lm
        assert lm is not None
        self.adopted_runs.pop(tid, None)
        self.launch_of.pop(tid, None)
        self.request_sent.pop(tid, None)
        lm.drop_run(tid)

    def _vouch(self, tid: int, launch: int) -> bool:
        mine = self.launch_of.get(tid)
        return not launch or mine is None or mine == launch

    def _ended(self, _dst: Any, msg: TasksFinished) -> None:
        for t, _w in msg.group:
            self.launch_of.pop(t, None)
            self.request_sent.pop(t, None)
            self.adopted_runs.pop(t, None)
        self.store.forget(t for t, _w in msg.group)

    def _settle_doubts(self, msg: Any) -> None:
        """A beacon of a host: launches to it in doubt whose deadline it was sent after are settled by it."""
        if not self.in_doubt:
            return
        running = {t for t, _w in msg.running}
        settled = [(tid, w, launch) for tid, (h, w, until, launch) in self.in_doubt.items() if h == msg.host and msg.at >= until]
        for tid, _w, _l in settled:
            del self.in_doubt[tid]
        # only the launch in doubt is settled: a task launched again since (lost, requested anew) is another run
        self._hand_back([(tid, w) for tid, w, launch in settled if tid not in running and self.launch_of.get(tid, 0) == launch])

    def _screen_launches(self, _dst: Any, msg: LaunchRequest) -> LaunchRequest | None:
        """A launch request delivered again (an HTTP retry after a lost reply) names tasks this LM already
        accepted: those are left out — the requester heard no rejection, so it counts them launched."""
        self._current_sent = self.sent_of_request.pop(id(msg), None)
        items = [item for item in msg.items if item[0] not in self.launched_ids]
        if len(items) == len(msg.items):
            return msg
        self.duplicate_requests += len(msg.items) - len(items)
        return LaunchRequest(msg.gm, items) if items else None

    def _screen_preemption(self, _dst: Any, msg: PreemptRequest) -> PreemptRequest | None:
        """A preemption request delivered again (an HTTP retry) whose task this LM already launched: carried out once."""
        if msg.tid in self.launched_ids:
            self.duplicate_requests += 1
            return None
        return msg

    def _preemption_done(self, msg: PreemptRequest) -> None:
        assert self.lm is not None
        if msg.tid in self.lm.running:
            self.launched_ids.add(msg.tid)
        else:  # refused: the task's description came only for this request
            self.store.forget((msg.tid,))

    def _accepted(self, msg: LaunchRequest) -> None:
        assert self.lm is not None
        running = self.lm.running
        sent = self._current_sent
        for t, p, pos in msg.items:
            if t in running and running[t][:2] == (p, pos):
                self.launched_ids.add(t)
                if sent is not None:
                    self.request_sent[t] = sent
            elif sent is not None:
                self.rejected_before.add((t, sent))
        self.store.forget(t for t, _p, _pos in msg.items if t not in running)
        self._current_sent = None

    def _reject_again(self, msg: RejectAgain) -> None:
        assert self.lm is not None
        self._current_sent = msg.sent
        self.lm.reject_again(msg.gm, msg.items)
        self._current_sent = None

    def _stamp_loss(self, _dst: Any, msg: TaskLost) -> TaskLost:
        msg.sent = self.request_sent.pop(msg.tid, 0.0)
        return msg

    def _stamp_rejection(self, _dst: Any, msg: LaunchRejected) -> LaunchRejected:
        if self._current_sent is not None:
            msg.sent = self._current_sent
        return msg

    def status(self) -> dict[str, Any]:
        out = super().status()
        lm = self.lm
        if lm is None:
            out["standby_waiting"] = self.standby
            return out
        out.update({"running": len(lm.running), "heartbeats": self.heartbeats, **lm.counters(),
                    "duplicate_requests": self.duplicate_requests, "launches_handed_back": self.launches_handed_back,
                    "launches_in_doubt": len(self.in_doubt), "launches_of_vacated_tasks": self.launches_dropped})
        if self.workers is not None:
            out.update(self.workers.counters())
        if self.monitor is not None:
            out.update(self.monitor.counters())
            out["hosts_down_now"] = sorted(self.monitor.down)
        if self.relay is not None:
            out["completions_dropped"] = self.relay.dropped
            out["launches_refused"] = self.relay.refusals
            out["ends_sent_to_verify"] = self.relay.verify_sent
            out["adopted_ends_verified"] = self.relay.adopted_verified
            out["stale_runs_dropped"] = self.stale_runs_dropped
        out["standby_took_over"] = self.standby
        if self.replaced_by is not None:
            out["stepped_down"] = self.replaced_by
        if self.takeover is not None:
            out.update(self.takeover.counters())
        if self.lm_recovery is not None:
            out.update(self.lm_recovery.counters())
        owner = self.plan.layout.owner
        out["lent_workers"] = sum(1 for _t, (p, _pos, g) in lm.running.items() if owner[p] != g)
        if self.last_heartbeat:
            out["last_heartbeat_age"] = self.rt.now() - self.last_heartbeat
        return out
