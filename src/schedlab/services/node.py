"""One service process of a cluster file: a GM, an LM or a worker host, with its HTTP server and broker link.

``schedlab serve gm|lm|worker --cluster FILE --id N`` runs one :class:`Node`.
Each builds, from the cluster file, the same data center and layout as every
other process, then its own component(s) — the simulator's
:class:`~schedlab.schedulers.megha.gm.GlobalMaster` or
:class:`~schedlab.schedulers.megha.lm.LocalMaster`, or a
:class:`~schedlab.services.worker.WorkerHost` — on an
:class:`~schedlab.services.runtime.AsyncRuntime` over the
:class:`~schedlab.services.net.NetTransport`.

=========  ========================================  ==========================================
role       HTTP (POST /v1/message)                    RabbitMQ queues consumed
=========  ========================================  ==========================================
gm N       —                                          ``<name>.gm.N`` (completions, state
                                                      updates, holdings reports),
                                                      ``<name>.submit.N`` (jobs)
lm N       launch / preemption requests from GMs      ``<name>.lm.N`` (completions)
worker N   task launches and kills from its LM        —
=========  ========================================  ==========================================

Every node also answers ``GET /v1/health`` and ``GET /v1/status`` (queue
lengths, running tasks, counters, refused input by reason).

**Starting is recovering.** A GM starts with an empty view and asks every LM
for its state before it consumes its queues (:class:`~.recovery.GMRecovery`);
an LM binds its port first (the fence), asks its worker hosts what they run,
drains its queue and announces its state to the GMs
(:class:`~.recovery.LMTakeover`) before it serves; a standby LM (``serve lm
--standby``) first waits for the active one's lease and port
(:mod:`~.lease`). A fresh cluster and a crashed component take the same path.

**Bad input** never reaches a component: a body that is not a list of valid
envelopes, an unknown message type or version, a message for a component not
hosted here, a launch naming a partition or position this LM does not have or
a worker this host does not run — each is answered 4xx with a one-line
reason, counted by reason in the status and logged once per reason; no task
state changes.

**Bookkeeping.** A service forgets a task once it is done with it: a GM when
it learns the task finished, an LM when it finished or when the LM rejected
it, a worker host when it ended — so memory follows the tasks in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import Any

from aiohttp import web

from schedlab.errors import InputError
from schedlab.schedulers.megha import MeghaShared
from schedlab.schedulers.megha.compat import AuthorsGM, AuthorsLM
from schedlab.schedulers.megha.gm import GlobalMaster, gm_address, lm_address
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.messages import LaunchRequest, PreemptRequest, StateUpdate
from schedlab.schedulers.megha.partitions import Layout, megha_topology
from schedlab.services.auth import TIME, AuthError, Signer, Verifier
from schedlab.services.clusterfile import LoadedCluster, require_secret
from schedlab.services.embedded import GMFrontend, parse_params
from schedlab.services.failures import (
    CompletionRelay,
    GMPlacements,
    HostBeacon,
    HostMonitor,
)
from schedlab.services.fairness import GMFairness, HostWorkers, holding_event
from schedlab.services.lease import Lease, bind, lease_queue, wait_to_serve
from schedlab.services.links import (
    REQUEST_FRESH,
    REQUEST_TIMEOUT,
    REQUEST_TRIES,
    LaunchLinks,
    Questions,
)
from schedlab.services.messages import (
    HostReport,
    HostState,
    KillTask,
    RecordEvents,
    Recover,
    Resolve,
    SubmitJob,
    submit_address,
)
from schedlab.services.net import STALE_REQUEST, AmqpLink, Directory, LocalBus, NetTransport
from schedlab.services.records import EventObserver
from schedlab.services.recovery import DurableJobs, GMRecovery, LMRecovery, LMTakeover
from schedlab.services.runtime import AsyncRuntime
from schedlab.services.tasks import RecentIds, TaskStore
from schedlab.services.wire import MAX_MESSAGE_BYTES, Codec, WireError, address_str
from schedlab.services.worker import WorkerHost
from schedlab.sim.runtime import Component
from schedlab.workers.protocol import POOL_ADDRESS, LaunchBatch, LaunchTask, TasksFinished

log = logging.getLogger("schedlab.services.node")

ROLES = ("gm", "lm", "worker")  # and "all": every component of the file in one process (cluster up --embedded)


def reason_key(reason: str) -> str:
    """The counter a refusal goes to: its reason's leading words, without the values that vary
    ("unknown partition 99 (LM 0 has 0..0)" -> "unknown partition"), so counters stay few."""
    head = reason.split(":")[0]
    return re.split(r"\s*['\"\d(\[{]", head, maxsplit=1)[0].strip() or head


def host_address(h: int) -> tuple[str, int]:
    return ("host", h)


ENDS_PUBLISHED_WITHIN = 5.0  # seconds a host answering a takeover waits for its earlier ends to reach the broker
RECORDS_EVERY = 0.02  # seconds a service gathers lifecycle events before sending them to their client


class RecordsPublisher:
    """Batches a service's lifecycle events per run and sends them to the run's client every ``RECORDS_EVERY`` s.

    The events carry their own timestamps, so holding them back costs the
    measurements nothing; batching saves the client most of its per-message
    broker work, which is what limits a busy client.
    """

    def __init__(self, runtime: AsyncRuntime, amqp: AmqpLink | None = None) -> None:
        self.rt = runtime
        self.amqp = amqp
        self.pending: dict[int, list[tuple]] = defaultdict(list)
        self.waiting: list[Callable[[], None]] = []
        self.scheduled = False

    def emit(self, run: int, ev: tuple) -> None:
        self.pending[run].append(ev)
        if not self.scheduled:
            self.scheduled = True
            self.rt.loop.call_later(RECORDS_EVERY, self.rt._guarded, self.flush, ())

    def after(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once every event emitted so far has reached the broker (a GM acknowledges a finished
        job only then: killed in between, it would take the job's last completion records with it)."""
        self.at_flush(lambda: self.amqp.when_published(fn) if self.amqp is not None else fn())

    def at_flush(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` at the next flush, once the events emitted so far are handed to the publisher."""
        self.waiting.append(fn)
        if not self.scheduled:
            self.scheduled = True
            self.rt.loop.call_later(RECORDS_EVERY, self.rt._guarded, self.flush, ())

    def flush(self) -> None:
        self.scheduled = False
        pending, self.pending = self.pending, defaultdict(list)
        for run, events in pending.items():
            self.rt.send(("run", run), RecordEvents(run, events))
        waiting, self.waiting = self.waiting, []
        for fn in waiting:
            fn()


class WorkerRouter(Component):
    """In an LM process, "the workers": splits each launch batch by the host running its workers."""

    def __init__(self, runtime: AsyncRuntime, host_of_worker: list[int]) -> None:
        super().__init__(POOL_ADDRESS, runtime)
        self.host_of_worker = host_of_worker

    def handlers(self):
        return {LaunchBatch: self._on_batch, LaunchTask: self._on_launch, KillTask: self._on_kill}

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


class Node:
    """One GM, LM or worker host process."""

    def __init__(self, loaded: LoadedCluster, role: str, ident: int, bus: LocalBus | None = None, standby: bool = False) -> None:
        if role not in ROLES:
            raise InputError("role", f"unknown role {role!r} (choose from {', '.join(ROLES)})")
        spec = loaded.spec
        count = {"gm": len(spec.gms), "lm": len(spec.lms), "worker": len(loaded.hosts)}[role]
        ids = range(count) if role != "worker" else sorted(loaded.hosts)
        if ident not in ids:
            raise InputError("--id", f"the cluster file has no {role} {ident} ({role} ids: {', '.join(map(str, ids))})")
        self.loaded = loaded
        self.role = role
        self.id = ident
        self.bus = bus
        self.params = parse_params(loaded.megha_params())
        if role == "gm":
            self.endpoint = spec.gms[ident]
        elif role == "lm":
            self.endpoint = spec.lms[ident]
        else:
            self.endpoint = loaded.hosts[ident][1]
        self.address = {"gm": gm_address, "lm": lm_address, "worker": host_address}[role](ident)
        self.refused: dict[str, int] = defaultdict(int)
        self.refused_by_peer: dict[str, int] = defaultdict(int)
        self._logged: set[str] = set()
        self.started_at = 0.0
        self.runner: Any = None
        self.amqp: AmqpLink | None = None
        self.rt: AsyncRuntime | None = None
        self.component: Any = None
        self.publisher: RecordsPublisher | None = None
        self.store = TaskStore()
        self._stop = asyncio.Event()
        self.last_update: dict[int, float] = {}  # GM: when each LM's last state update arrived
        self.launched_ids = RecentIds()  # LM: tasks it accepted (a request delivered twice launches them once)
        self.launch_ids = RecentIds()  # worker host: launches it took (an HTTP retry of one is not run again)
        self.duplicate_requests = 0
        self.last_heartbeat = 0.0  # LM: when it last sent its heartbeat round
        self.fair: GMFairness | None = None  # GM with fair sharing
        self.placements: GMPlacements | None = None  # GM: where each task runs (failures)
        self.monitor: HostMonitor | None = None  # LM: its worker hosts' leases
        self.beacon: HostBeacon | None = None  # worker host: its lease
        self.relay: Any = None  # LM: hosts' task ends, recorded and passed on to the GMs
        self.workers: HostWorkers | None = None  # LM with fair sharing: preemptions as kills on the hosts
        self.standby = standby  # LM: wait for the active one to die, then take over
        self.lease: Lease | None = None  # LM: its lease (lease.py)
        self._sock: Any = None
        self._keep_lease: asyncio.Task | None = None
        self.takeover: LMTakeover | None = None  # LM: its state rebuilt from the hosts at start
        self.amqp_handled = 0
        self.lm_incarnation: int | None = None  # worker host: the LM process it takes launches from (once one asked)
        self.recovery: GMRecovery | None = None  # GM: its view from the LMs at start
        self.jobs: DurableJobs | None = None  # GM: its jobs, acknowledged when done
        self.lm_recovery: LMRecovery | None = None  # LM: its answers to restarted GMs
        self.links: LaunchLinks | None = None  # GM: requests its LMs did not answer

    # -- life cycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        loaded, p = self.loaded, self.params
        secret = require_secret(loaded)
        identity = address_str(self.address)
        ep = self.endpoint
        if self.role == "lm" and self.standby:  # wait for the active LM to die: its lease, then its port
            log.info("LM %d standby: waiting for %s", self.id, lease_queue(loaded.name, self.id))
            self.lease, self._sock = await wait_to_serve(loaded.broker, lease_queue(loaded.name, self.id), ep.host, ep.port)
            log.warning("LM %d standby: the active LM is gone; taking over", self.id)
        else:
            self._sock = bind(ep.host, ep.port)
            if self._sock is None:
                raise InputError(f"{self.role} {self.id}", f"port {ep.host}:{ep.port} is already in use")
            if self.role == "lm":
                self.lease = Lease(loaded.broker, lease_queue(loaded.name, self.id))
                if not await self.lease.try_acquire():
                    log.warning("LM %d: lease held elsewhere (a standby trying its luck); serving anyway: the port is ours", self.id)
        self.verifier = Verifier(secret)
        self.signer = Signer(secret, identity)
        self.amqp = AmqpLink(loaded.broker, Signer(secret, identity), Verifier(secret), self._refused_message)
        await self.amqp.connect()
        codec = Codec(self.store)
        transport = NetTransport(identity, Directory(loaded, self.role), codec, self.amqp, self.bus, secret=secret)
        rt = self.rt = AsyncRuntime(transport, loaded.spec.seed)
        self.transport = transport
        cl = loaded.cluster
        publisher = self.publisher = RecordsPublisher(rt, self.amqp)
        self.amqp.at_flush = publisher.at_flush  # a consumed message is acknowledged once its output reached the broker
        queues: list[Any] = []
        if self.role in ("gm", "lm"):
            layout = Layout(cl, megha_topology(cl, p.gms, p.lms))
            self.layout = layout
            fair = p.shares is not None
            workers = self.workers = HostWorkers(rt, self.store) if fair and self.role == "lm" else None
            shared = MeghaShared(rt, layout, cl, self.store, EventObserver(publisher.emit), workers, p, cl.slot_mode)
            if self.role == "gm":
                gm_cls = GlobalMaster
                if p.compat == "authors":
                    gm_cls = AuthorsGM
                gm = self.component = gm_cls(self.id, shared, rt.rng(f"megha:gm:{self.id}"))
                frontend = GMFrontend(self.id, rt, gm, self.store)
                self.placements = GMPlacements(rt, gm, publisher.emit)
                if fair:
                    self.fair = GMFairness(rt, [gm], p, layout, cl, self.store)
                rt.after_delivery(TasksFinished, lambda _dst, msg: self.store.forget(t for t, _w in msg.group))
                rt.after_delivery(StateUpdate, lambda _dst, msg: self.last_update.__setitem__(msg.lm, time.time()))
                amqp = self.amqp
                questions = Questions(rt, gm)
                self.jobs = DurableJobs(rt, gm, frontend, self.placements, self.store, layout.num_lms, publisher.emit,
                                        ack=lambda m: publisher.after(lambda: amqp.ack(m)), questions=questions)
                self.recovery = GMRecovery(rt, gm, self.placements, layout.num_lms, self.fair)
                self.links = LaunchLinks(rt, gm, self.placements, questions, self.recovery)
                transport.on_undelivered = self.links.undelivered
                transport.sent_of = lambda _msg: self.placements.last_sent
                # a message from an LM lost for good (a state update queued in the broker when it restarted):
                # with delta updates the view would stay stale there; that LM's full state replaces it
                transport.in_order.on_gap = lambda src, _dst: self.recovery.ask_again(src[1]) if src[0] == "lm" else None
                transport.tries["lm"] = (REQUEST_TIMEOUT, REQUEST_TRIES)
                await self.recovery.run()
                queues = [self.address]
            else:
                lm_cls = LocalMaster
                if p.compat == "authors":
                    lm_cls = AuthorsLM
                lm = self.component = lm_cls(self.id, shared)
                WorkerRouter(rt, loaded.host_of_worker)
                rt.after_delivery(TasksFinished, lambda _dst, msg: self.store.forget(t for t, _w in msg.group))
                rt.after_delivery(LaunchRequest, lambda _dst, msg: self._accepted(msg, lm))
                rt.before_delivery(LaunchRequest, self._screen_launches)
                self.relay = CompletionRelay(rt, [lm], publisher.emit)
                self.relay.completed = RecentIds()
                self.lm_recovery = LMRecovery(rt, lm, self.relay.completed, partial(holding_event, self.store) if fair else None)
                mine = {h: list(ws) for h, ws in loaded.workers_of_host.items() if loaded.hosts[h][0] == self.id}
                self.monitor = HostMonitor(rt, lm, mine, loaded.spec.worker_lease)
                self.monitor.on_lost = self.launched_ids.discard
                transport.incarnation_of = lambda dst: self.monitor.incarnation.get(dst[1]) if dst[0] == "host" else None
                self.takeover = LMTakeover(rt, lm, self.monitor, self.monitor.positions, transport.incarnation,
                                           partial(holding_event, self.store) if fair else None)
                transport.on_undelivered = self._undelivered_to_host
                if workers is not None:
                    workers.add(lm, layout.num_gms)
                    workers.on_killed = self.launched_ids.discard  # its relaunch is not a repeat
                    rt.before_delivery(PreemptRequest, self._screen_preemption)
                    rt.after_delivery(PreemptRequest, lambda _dst, msg: self._preemption_done(msg, lm))
                queues = []
                await self.takeover.rebuild(loaded.spec.worker_lease)
                # what waited in the LM's queue: ends of adopted tasks as usual, the others to their GMs to verify
                self.relay.takeover = True
                backlog = await self.amqp.consume(transport.directory.queue(self.address), self._on_amqp)
                await self._drain(backlog)
                self.relay.takeover = False
                self.takeover.announce()
                self._heartbeat_timer = rt.loop.call_later(p.heartbeat, self._heartbeat)
                assert self.lease is not None  # an LM took its lease above, as a standby or not
                self._keep_lease = asyncio.get_running_loop().create_task(self.lease.keep(self._stop))
        else:
            host = self.component = WorkerHost(self.address, rt, cl, loaded.workers_of_host[self.id], self.store, publisher.emit,
                                               forget_finished=True)
            self.beacon = HostBeacon(rt, self.id, loaded.hosts[self.id][0], lambda: [(t, e[0]) for t, e in host.active.items()],
                                     loaded.spec.worker_lease / 3)
            rt.add_handler(self.address, HostState, self._host_state)
        for addr in queues:
            await self.amqp.consume(transport.directory.queue(addr), self._on_amqp)
        if self.jobs is not None:
            await self.amqp.consume_held(transport.directory.queue(submit_address(self.id)), self._on_job)
        await self._serve_http()
        self.started_at = time.time()
        log.info("%s %d listening on %s", self.role, self.id, self.endpoint.url)

    async def _drain(self, backlog: int, idle: float = 0.3, limit: float = 10.0) -> None:
        """Wait until the ``backlog`` messages that waited in this LM's queue are handled (or nothing came for
        ``idle`` seconds: some were for a process that is gone, or were taken by it before it died)."""
        start = self.amqp_handled
        deadline = time.monotonic() + limit
        last, quiet_since = start, time.monotonic()
        while self.amqp_handled - start < backlog and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            if self.amqp_handled != last:
                last, quiet_since = self.amqp_handled, time.monotonic()
            elif time.monotonic() - quiet_since > idle:
                break

    def _undelivered_to_host(self, dst: Any, msgs: list[Any], outcome: str) -> None:
        """A worker host an LM process taking over cannot reach runs nothing it could adopt: down, now."""
        if self.takeover is not None and dst[0] == "host" and any(isinstance(m, HostState) for m in msgs):
            self.takeover.unreachable(dst[1])

    def _host_state(self, msg: HostState) -> None:
        """An LM process taking over asks what this host runs; launches from any other LM process are refused."""
        assert self.rt is not None and self.beacon is not None
        self.lm_incarnation = msg.incarnation
        host: WorkerHost = self.component
        running = [(tid, w, next((a[1] for a in reply_to if isinstance(a, tuple) and a[0] == "gm"), 0))
                   for tid, (w, reply_to, _h) in host.active.items()]
        self.rt.send(lm_address(msg.lm), HostReport(self.id, self.beacon.incarnation, running))

    def _screen_launches(self, _dst: Any, msg: LaunchRequest) -> LaunchRequest | None:
        """A launch request delivered again (an HTTP retry after a lost reply) names tasks this LM already
        accepted: those are left out — the requester heard no rejection, so it counts them launched."""
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

    def _preemption_done(self, msg: PreemptRequest, lm: Any) -> None:
        if msg.tid in lm.running:
            self.launched_ids.add(msg.tid)
        else:  # refused: the task's description came only for this request
            self.store.forget((msg.tid,))

    def _accepted(self, msg: LaunchRequest, lm: Any) -> None:
        running = lm.running
        for t, _p, _pos in msg.items:
            if t in running:
                self.launched_ids.add(t)
        self.store.forget(t for t, _p, _pos in msg.items if t not in running)

    def _heartbeat(self) -> None:
        assert self.rt is not None
        self.heartbeats = getattr(self, "heartbeats", 0) + 1
        self.last_heartbeat = time.time()
        self.rt._guarded(self.component.heartbeat, ())
        self._heartbeat_timer = self.rt.loop.call_later(self.params.heartbeat, self._heartbeat)

    def _on_amqp(self, body: bytes) -> None:
        assert self.rt is not None
        self.amqp_handled += 1
        try:
            src, dst, msg, seq = self.transport.codec.decode_seq(body)
        except WireError as e:
            self._refuse("bad message", e.reason)
            return
        if not self.rt.accepts(dst, msg.__class__):
            self._refuse("not for this service", f"{msg.__class__.__name__} for {dst!r}")
            return
        self.transport.receive(src, dst, msg, seq)

    def _on_job(self, body: bytes, redelivered: bool, message: Any) -> None:
        """A job from this GM's submission queue (acknowledged by :class:`DurableJobs` when it is done)."""
        assert self.rt is not None and self.jobs is not None and self.amqp is not None
        try:
            _src, dst, msg, _seq = self.transport.codec.decode_seq(body)
        except WireError as e:
            self._refuse("bad message", e.reason)
            self.amqp.ack(message)
            return
        if not isinstance(msg, SubmitJob) or dst != submit_address(self.id):
            self._refuse("not for this service", f"{msg.__class__.__name__} for {dst!r} on a submission queue")
            self.amqp.ack(message)
            return
        self.rt._guarded(self.jobs.on_job, (msg, redelivered, message))

    async def _serve_http(self) -> None:
        app = web.Application(client_max_size=MAX_MESSAGE_BYTES)
        app.router.add_get("/v1/health", self._health)
        app.router.add_get("/v1/status", self._status)
        app.router.add_post("/v1/message", self._message)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.SockSite(self.runner, self._sock)  # bound at the start: the port is this process's (the fence)
        await site.start()

    async def run_forever(self) -> None:
        await self._stop.wait()

    def request_stop(self) -> None:
        self._stop.set()

    async def stop(self) -> None:
        self._stop.set()
        if self._keep_lease is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._keep_lease, 2.0)
        if self.lease is not None:
            await self.lease.release()
        if getattr(self, "_heartbeat_timer", None) is not None:
            self._heartbeat_timer.cancel()
        if self.fair is not None:
            self.fair.stop()
        if self.recovery is not None:
            self.recovery.stop()
        for watcher in (self.monitor, self.beacon):
            if watcher is not None:
                watcher.stop()
        if isinstance(self.component, WorkerHost):
            self.component.stop()
        if self.publisher is not None and self.publisher.pending:
            self.publisher.flush()
            if self.amqp is not None:
                await self.amqp.drain(1.0)
        if self.runner is not None:
            await self.runner.cleanup()
        if getattr(self, "transport", None) is not None:
            await self.transport.close()
        if self.amqp is not None:
            await self.amqp.close()

    # -- HTTP -------------------------------------------------------------------------------------
    def _refused_message(self, e: AuthError) -> None:
        """A broker message that failed authentication (never decoded, never delivered)."""
        self._refuse(e.reason, e.detail, e.sender or "broker")

    def _authenticate(self, request: Any, body: bytes) -> Any:
        """None if the request is authentic, else the 401 response (counted per peer)."""
        try:
            self.verifier.verify(request.headers, body)
        except AuthError as e:
            peer = e.sender if e.reason != "unauthenticated" else (request.remote or "unknown")
            return web.Response(status=401, text=self._refuse(e.reason, e.detail, peer) + "\n")
        return None

    def _signed(self, payload: Any) -> Any:
        body = json.dumps(payload, separators=(",", ":")).encode()
        return web.Response(body=body, content_type="application/json", headers=self.signer.headers(body))

    def _refuse(self, reason: str, detail: str, peer: str | None = None) -> str:
        self.refused[reason] += 1
        if peer is not None:
            self.refused_by_peer[peer] += 1
        if reason not in self._logged:
            self._logged.add(reason)
            log.warning("refused input (%s): %s", reason, detail)
        return f"{reason}: {detail}"

    async def _health(self, request: Any) -> Any:
        return web.json_response({"ok": True, "role": self.role, "id": self.id, "cluster": self.loaded.name, "pid": os.getpid()})

    async def _status(self, request: Any) -> Any:
        refusal = self._authenticate(request, b"")
        if refusal is not None:
            return refusal
        return self._signed(self.status())

    async def _message(self, request: Any) -> Any:
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.Response(status=413, text=self._refuse("oversize", f"body over {MAX_MESSAGE_BYTES} bytes", request.remote) + "\n")
        refusal = self._authenticate(request, body)
        if refusal is not None:
            return refusal
        try:
            frames = self.transport.codec.decode_frames(body)
            for _src, dst, msg, tasks, _seq, (inc, bid, sent) in frames:
                self._check(dst, msg, tasks)
                if isinstance(msg, LaunchRequest | PreemptRequest):
                    # the fence (links): act only on a request first sent less than REQUEST_FRESH ago, and after
                    # this process took over — an older one was meant for another process, or its sender may
                    # have given up on it; either way its fate is settled by this LM's truth, never by acting on it
                    first = float(request.headers[TIME]) if sent is None else sent
                    age = time.time() - first
                    if age > REQUEST_FRESH or (self.takeover is not None and first < self.takeover.started):
                        why = (f"first sent {age:.1f} s ago (acted on within {REQUEST_FRESH:g} s)" if age > REQUEST_FRESH
                               else "first sent before this LM process took over")
                        return web.Response(status=409, text=self._refuse(STALE_REQUEST, why) + "\n")
                if inc is not None and self.beacon is not None and inc != self.beacon.incarnation:
                    return web.Response(status=409, text=self._refuse(
                        "stale launch", f"meant for incarnation {inc}; this host restarted as {self.beacon.incarnation}") + "\n")
                if bid is not None and self.lm_incarnation is not None and bid >> 32 != self.lm_incarnation:
                    return web.Response(status=409, text=self._refuse(
                        "stale launch", f"from an LM process that has been replaced ({bid >> 32}, now {self.lm_incarnation})") + "\n")
            if self.beacon is not None:  # a worker host: a launch delivered again (an HTTP retry) runs once
                fresh = []
                for frame in frames:
                    bid = frame[5][1]
                    if bid is not None and bid in self.launch_ids:
                        self.component.duplicate_launches += 1
                        continue
                    if bid is not None:
                        self.launch_ids.add(bid)
                    fresh.append(frame)
                frames = fresh
        except WireError as e:
            status = 404 if e.reason.startswith("unknown ") else 400
            return web.Response(status=status, text=self._refuse(reason_key(e.reason), e.reason) + "\n")
        replies = self.transport.handle_frames(frames)
        if self.beacon is not None and any(isinstance(f[2], HostState) for f in frames):
            try:
                await asyncio.wait_for(self._ends_published(), ENDS_PUBLISHED_WITHIN)
            except TimeoutError:  # the broker is away: no answer rather than one that hides ends (the LM asks again)
                log.warning("takeover question from an LM not answered: ends not in the broker after %g s", ENDS_PUBLISHED_WITHIN)
                return web.Response(status=503, text="broker away: ends not yet in the broker\n")
        return self._signed({"replies": replies})

    async def _ends_published(self) -> None:
        """A worker host answering an LM process taking over: every end it reported before this answer is in
        the broker first. The answer leaves out tasks that already ended; were their ends still on their way
        (in the outbox or the publisher's queue), the new LM would neither adopt them nor find their ends in
        its queue's backlog, and their GMs would request them again — run twice (seen under load)."""
        host: WorkerHost = self.component
        host.flush_ends()
        if self.amqp is None:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def published() -> None:
            if not done.done():
                done.set_result(None)

        self.amqp.when_published(published)
        await done

    def _check(self, dst: Any, msg: Any, tasks: Any) -> None:
        """Refuse what the component must never see (raised as WireError, before anything changes)."""
        assert self.rt is not None
        name = msg.__class__.__name__
        if not self.rt.accepts(dst, msg.__class__) or dst in (POOL_ADDRESS,):
            raise WireError(f"unknown destination: no {name} handler for {address_str(dst)} here")
        known = {t.tid for t in tasks or ()}
        if isinstance(msg, LaunchRequest | PreemptRequest):
            lay = self.layout
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
        elif isinstance(msg, Recover | Resolve):
            if not 0 <= msg.gm < self.layout.num_gms:
                raise WireError(f"unknown GM {msg.gm}")
        elif isinstance(msg, HostState):
            if msg.lm != self.loaded.hosts[self.id][0]:
                raise WireError(f"unknown LM {msg.lm} (host {self.id} belongs to LM {self.loaded.hosts[self.id][0]})")
        elif isinstance(msg, LaunchBatch | LaunchTask):
            host: WorkerHost = self.component
            launches = msg.items if isinstance(msg, LaunchBatch) else [(msg.tid, msg.worker)]
            for tid, w in launches:
                if w not in host.workers:
                    raise WireError(f"unknown worker {w} (not on host {self.id})")
                if tid not in known and tid not in self.store:
                    raise WireError(f"bad request: task {tid} comes without its description")

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "role": self.role,
            "id": self.id,
            "url": self.endpoint.url,
            "pid": os.getpid(),
            "uptime": time.time() - self.started_at if self.started_at else 0.0,
            "tasks_known": len(self.store),
            "refused": dict(self.refused),
            "refused_by_peer": dict(self.refused_by_peer),
            "refused_total": sum(self.refused.values()),
        }
        comp = self.component
        if self.role == "gm":
            out.update({"waiting": comp.waiting_count(), **comp.counters(), "gm_holdings": sum(r.bit_count() for r in comp.reserved) + len(comp.mine)})
            if self.fair is not None:
                out.update(self.fair.counters())
                out["holdings_reports"] = self.fair.reports
            if self.placements is not None:
                out.update(self.placements.counters())
            if self.recovery is not None and self.jobs is not None and self.links is not None:
                out.update(self.recovery.counters())
                out.update(self.jobs.counters())
                out.update(self.links.counters())
                out["lms_suspended"] = sorted(comp.suspended)
            if self.last_update:
                out["last_heartbeat_age"] = time.time() - min(self.last_update.values())
        elif self.role == "lm":
            out.update({"running": len(comp.running), "heartbeats": getattr(self, "heartbeats", 0), **comp.counters(),
                        "duplicate_requests": self.duplicate_requests})
            if self.workers is not None:
                out.update(self.workers.counters())
            if self.monitor is not None:
                out.update(self.monitor.counters())
                out["hosts_down_now"] = sorted(self.monitor.down)
            out["completions_dropped"] = self.relay.dropped
            out["ends_sent_to_verify"] = self.relay.verify_sent
            out["standby_took_over"] = self.standby
            if self.takeover is not None:
                out.update(self.takeover.counters())
            if self.lm_recovery is not None:
                out.update(self.lm_recovery.counters())
            out["lent_workers"] = sum(1 for _t, (p, _pos, g) in comp.running.items() if self.layout.owner[p] != g)
            if self.last_heartbeat:
                out["last_heartbeat_age"] = time.time() - self.last_heartbeat
        else:
            out.update(comp.status())
        if self.rt is not None:
            out["handler_errors"] = self.rt.handler_errors
            out["messages_sent"] = dict(self.rt.sent)
            out["transport"] = dict(self.transport.counters)
        if self.amqp is not None:
            out["publish_errors"] = self.amqp.publish_errors
        return out


async def serve(loaded: LoadedCluster, role: str, ident: int, ready: Any = None, standby: bool = False) -> None:
    """Run one node — or, with ``role="all"``, every node of the file on one loop — until SIGTERM/SIGINT.

    ``ready(node)`` is called once each listens. ``standby`` (an LM): wait until the active LM is gone, then
    take over (:mod:`~.lease`).
    """

    if role == "all":
        spec = loaded.spec
        bus = LocalBus({("gm", g.id) for g in spec.gms} | {("lm", lm.id) for lm in spec.lms} | {("host", h.id) for _lm, h in spec.hosts()})
        # worker hosts first: an LM starts by asking them what they run; GMs last: no launch before all are up
        nodes = [Node(loaded, "worker", h.id, bus) for _lm, h in spec.hosts()]
        nodes += [Node(loaded, "lm", lm.id, bus) for lm in spec.lms] + [Node(loaded, "gm", g.id, bus) for g in spec.gms]
    else:
        nodes = [Node(loaded, role, ident, standby=standby)]
    stop = asyncio.Event()
    started: list[Node] = []
    try:
        for node in nodes:
            await node.start()
            started.append(node)
            if ready is not None:
                ready(node)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        for node in reversed(started):
            await node.stop()
