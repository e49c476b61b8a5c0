"""One service process of a cluster file: a GM, an LM or a worker host on a real network.

``schedlab serve gm|lm|worker --cluster FILE --id N`` runs one
:class:`ProcessNode`: the role's node (:mod:`~.assembly`, the same code the
embedded cluster and the deterministic simulation run) on the real world —
an :class:`~.runtime.AsyncRuntime`, HTTP with aiohttp (its port bound first:
the fence), RabbitMQ with aio-pika, and the lease of :mod:`~.lease`.

=========  ========================================  ==========================================
role       HTTP (POST /v1/message)                    RabbitMQ queues consumed
=========  ========================================  ==========================================
gm N       —                                          ``<name>.gm.N`` (completions, state
                                                      updates, holdings reports),
                                                      ``<name>.submit.N`` (jobs)
lm N       launch / preemption requests from GMs      ``<name>.lm.N`` (completions)
worker N   task launches and kills from its LM        —
=========  ========================================  ==========================================

Every process also answers ``GET /v1/health``, ``GET /v1/status`` (queue
lengths, running tasks, counters, refused input by reason) and ``GET /metrics``
(the same as Prometheus text exposition, for the cluster's bearer token:
:mod:`~.metrics`).

What this module adds to the node is only IO: every HTTP request and response
authenticated (:mod:`~.auth`) and size-limited before it is decoded, envelopes
checked (:mod:`~.wire`), and answers signed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import sys
import time
from typing import Any

from aiohttp import web

from schedlab.errors import InputError
from schedlab.schedulers.megha.gm import gm_address, lm_address
from schedlab.services.assembly import build_node, parse_params
from schedlab.services.auth import TIME, AuthError, Signer, Verifier, metrics_token
from schedlab.services.clock import WallClock, clock_file
from schedlab.services.clusterfile import Listen, LoadedCluster, require_secret
from schedlab.services.lease import LEASE_HEARTBEAT, Lease, bind, lease_queue
from schedlab.services.net import AioHttpPort, AmqpFrames, AmqpLink, Directory
from schedlab.services.nodes import (
    ROLES,
    NodeEnv,
    Plan,
    PortTaken,
    ServiceNode,
    host_address,
    reason_key,
)
from schedlab.services.runtime import AsyncRuntime
from schedlab.services.tasks import TaskStore
from schedlab.services.transport import JsonWire, Router
from schedlab.services.wire import MAX_MESSAGE_BYTES, Codec, WireError, address_str

log = logging.getLogger("schedlab.services.node")


class ProcessNode:
    """One GM, LM or worker host process: its node on aiohttp, RabbitMQ and a socket of its own."""

    def __init__(self, loaded: LoadedCluster, role: str, ident: int, standby: bool = False,
                 local: dict[str, Any] | None = None, standby_host: bool = False) -> None:
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
        self.standby = standby
        self.standby_host = standby_host
        self.params = parse_params(loaded.megha_params())
        self.endpoint: Listen
        if role == "gm":
            self.endpoint = spec.gms[ident]
        elif role == "lm":
            self.endpoint = spec.lms[ident]
            if standby_host:
                elsewhere = spec.lms[ident].standby
                if elsewhere is None:
                    raise InputError("--standby-host", f"lms[{ident}] has no standby: entry in {loaded.source}")
                self.endpoint = elsewhere
        else:
            self.endpoint = loaded.hosts[ident][1]
        self.address = {"gm": gm_address, "lm": lm_address, "worker": host_address}[role](ident)
        self.node: ServiceNode | None = None
        self.runner: Any = None
        self.amqp: AmqpLink | None = None
        self._sock: Any = None
        self.local = local  # the request handlers of the nodes this process serves (cluster up --embedded)
        self.metrics: Any = None  # its /metrics registry (metrics.NodeMetrics), made at the first scrape

    # -- life cycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        loaded = self.loaded
        secret = require_secret(loaded)
        identity = address_str(self.address)
        # the wall clock every stamp comes from: a campaign may set it off (clock skew, :mod:`~.clock`)
        clock = self.clock = WallClock(clock_file(loaded.source, self.role, self.id))
        self.verifier = Verifier(secret, clock)
        self.metrics_token = metrics_token(secret)  # /metrics: a bearer token derived from the secret
        self.signer = Signer(secret, identity, clock)
        elsewhere = self.role == "lm" and self.local is None and loaded.spec.lms[self.id].standby is not None
        self.amqp = AmqpLink(loaded.brokers, Signer(secret, identity, clock), Verifier(secret, clock), self._refused_message,
                             quorum=loaded.quorum, heartbeat=LEASE_HEARTBEAT if elsewhere else None)
        store = TaskStore()
        codec = Codec(store)
        directory = Directory(loaded, self.role)
        http = AioHttpPort(Signer(secret, identity, clock), Verifier(secret, clock), self.local)
        router = Router(self.address, JsonWire(codec), directory.url, directory.queue, http, None, secrets.randbits(31))
        broker = AmqpFrames(self.amqp, codec)
        router.broker = broker
        rt = AsyncRuntime(router, loaded.spec.seed, clock=clock)
        self.rt = rt
        if self.role in ("gm", "lm"):  # the processing steps the simulator charges (stepcosts): messages too
            broker.steps = rt.steps
            broker.received = rt.handle_received
            self.amqp.step_clock = time.perf_counter
        self.router = router
        env = NodeEnv(Plan.from_loaded(loaded, self.params), rt, router, store, broker, directory.queue, self._bind,
                      lambda name: Lease(loaded.brokers, name, quorum=loaded.quorum), lambda: secrets.randbits(31), standby=self.standby,
                      lease_queue=lease_queue(loaded.name, self.id))
        if elsewhere:
            env.step_down = self._step_down  # no port fences an LM whose standby serves elsewhere (lm_node)
        node = self.node = build_node(self.role, env, self.id)
        if self.role == "gm":  # the job ledger (:mod:`~.ledger`): each job this GM finishes, appended
            from schedlab.services.ledger import ended_record, ledger_queue

            amqp, queue = self.amqp, ledger_queue(loaded.name)
            node.job_done = lambda jid, kind, extra: amqp.publish(queue, ended_record(jid, rt.now(), self.id, kind, extra),  # type: ignore[attr-defined]
                                                                  persistent=True)
        self.codec = codec
        if self.role == "lm" and self.standby:
            log.info("LM %d standby: waiting for %s", self.id, env.lease_queue)
        try:
            await node.start()
        except PortTaken:
            ep = self.endpoint
            raise InputError(f"{self.role} {self.id}", f"port {ep.host}:{ep.port} is already in use") from None
        if self.role == "lm" and self.standby:
            log.warning("LM %d standby: the active LM is gone; took over", self.id)
        await self._serve_http()
        if self.local is not None:
            self.local[self.endpoint.url] = self._local_request
        log.info("%s %d listening on %s", self.role, self.id, self.endpoint.url)

    async def _local_request(self, packed: list[Any]) -> tuple[int, Any]:
        """A request from a node of this same process: its envelopes, without the socket and the signature."""
        node = self.node
        assert node is not None
        try:
            frames = [self.codec.decode_envelope(env) for env in packed]
        except WireError as e:
            return 400, node.refusals.refuse(reason_key(e.reason), e.reason) + "\n"
        return await node.handle_request(frames, self.rt.now())

    def _step_down(self, why: str) -> None:
        """A newer process serves as this LM: stop at once, as if killed — nothing acknowledged or sent after
        this (the broker gives back what this process had not acknowledged) — and start again in its place, on
        the same host and port, as a standby (the same pid: ``cluster down`` and the pid files still find it)."""
        log.warning("LM %d (pid %d) steps down: %s; waiting as a standby from now on", self.id, os.getpid(), why)
        for handler in logging.getLogger().handlers:
            with contextlib.suppress(Exception):
                handler.flush()
        argv = [sys.executable, "-m", "schedlab", "serve", "lm", "--cluster", str(self.loaded.source), "--id", str(self.id),
                "--standby", *(["--standby-host"] if self.standby_host else [])]
        os.execv(sys.executable, argv)  # the sockets are not inherited: peers see them close as after a kill

    def _bind(self) -> bool:
        """The fence: this process's port, bound before anything else (None while another process listens)."""
        if self._sock is None:
            self._sock = bind(self.endpoint.host, self.endpoint.port)
        return self._sock is not None

    async def _serve_http(self) -> None:
        app = web.Application(client_max_size=MAX_MESSAGE_BYTES)
        app.router.add_get("/v1/health", self._health)
        app.router.add_get("/v1/status", self._status)
        app.router.add_get("/metrics", self._metrics)
        if self.role == "gm":
            app.router.add_get("/v1/jobs", self._jobs)
        app.router.add_post("/v1/message", self._message)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.SockSite(self.runner, self._sock)  # bound at the start: the port is this process's (the fence)
        await site.start()

    async def stop(self) -> None:
        node = self.node
        if node is not None:
            await node.stop()
            if self.amqp is not None:
                await self.amqp.drain(1.0)
        if self.runner is not None:
            await self.runner.cleanup()
        if getattr(self, "rt", None) is not None:
            self.rt.stop_tasks()
        if getattr(self, "router", None) is not None:
            await self.router.close()
        if self.amqp is not None:
            await self.amqp.close()
        if self.runner is None and self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()

    # -- HTTP -------------------------------------------------------------------------------------
    def _refused_message(self, e: AuthError) -> None:
        """A broker message that failed authentication (never decoded, never delivered)."""
        if self.node is not None:
            self.node.refusals.refuse(e.reason, e.detail, e.sender or "broker")

    def _authenticate(self, request: Any, body: bytes) -> Any:
        """None if the request is authentic, else the 401 response (counted per peer)."""
        try:
            self.verifier.verify(request.headers, body)
        except AuthError as e:
            assert self.node is not None
            peer = e.sender if e.reason != "unauthenticated" else (request.remote or "unknown")
            return web.Response(status=401, text=self.node.refusals.refuse(e.reason, e.detail, peer) + "\n")
        return None

    def _signed(self, payload: Any) -> Any:
        body = json.dumps(payload, separators=(",", ":")).encode()
        return web.Response(body=body, content_type="application/json", headers=self.signer.headers(body))

    async def _health(self, request: Any) -> Any:
        return web.json_response({"ok": True, "role": self.role, "id": self.id, "cluster": self.loaded.name, "pid": os.getpid()})

    async def _metrics(self, request: Any) -> Any:
        """Prometheus text exposition (:mod:`~.metrics`), for the cluster's bearer token only."""
        if self.metrics is None:
            from schedlab.services.metrics import NodeMetrics, node_collector

            self.metrics = NodeMetrics(node_collector(self.loaded.name, self.role, self.id, self.status, self.node), self.metrics_token)
        if not self.metrics.authorized(request.headers.get("Authorization")):
            assert self.node is not None
            text = self.node.refusals.refuse("unauthenticated", "/metrics without the cluster's bearer token", request.remote or "unknown")
            return web.Response(status=401, text=text + "\n", headers={"WWW-Authenticate": "Bearer"})
        body, content_type = self.metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _jobs(self, request: Any) -> Any:
        """A GM's open jobs (:meth:`~.recovery.DurableJobs.open_jobs`), for ``schedlab jobs`` (signed, like the status)."""
        refusal = self._authenticate(request, b"")
        if refusal is not None:
            return refusal
        jobs = getattr(self.node, "jobs", None)
        return self._signed({"gm": self.id, "serving": bool(self.node and self.node.serving),
                             "open": [] if jobs is None else jobs.open_jobs()})

    async def _status(self, request: Any) -> Any:
        refusal = self._authenticate(request, b"")
        if refusal is not None:
            return refusal
        return self._signed(self.status())

    async def _message(self, request: Any) -> Any:
        node = self.node
        assert node is not None
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.Response(status=413, text=node.refusals.refuse("oversize", f"body over {MAX_MESSAGE_BYTES} bytes", request.remote) + "\n")
        t0 = time.perf_counter()
        refusal = self._authenticate(request, body)
        if refusal is not None:
            return refusal
        try:
            frames = self.codec.decode_frames(body)
        except WireError as e:
            status = 404 if e.reason.startswith("unknown ") else 400
            return web.Response(status=status, text=node.refusals.refuse(reason_key(e.reason), e.reason) + "\n")
        steps = self.rt.steps
        if steps is not None and frames:
            # a message's transit (its signature's time, its sender's clock, to here) and, at a GM or LM, its handling
            # step (stepcosts)
            steps.observe("transit", self.clock() - float(request.headers[TIME]), 1, sum(len(f[3] or ()) for f in frames))
            if self.role in ("gm", "lm"):
                spent = (time.perf_counter() - t0) / len(frames)
                for _ in frames:
                    steps.observe("message", spent)
        if steps is None:
            status, payload = await node.handle_request(frames, float(request.headers[TIME]))
        else:  # its handling began when it was read (a GM's and an LM's processing marks: MeghaShared)
            answer = self.rt.handle_received(time.perf_counter() - t0, node.handle, frames, float(request.headers[TIME]))
            status, payload = answer if isinstance(answer, tuple) else await answer
        if status != 200:
            return web.Response(status=status, text=payload)
        return self._signed({"replies": payload})

    def status(self) -> dict[str, Any]:
        assert self.node is not None
        out = {"role": self.role, "id": self.id, "url": self.endpoint.url, "pid": os.getpid(), **self.node.status()}
        return out


async def serve(loaded: LoadedCluster, role: str, ident: int, ready: Any = None, standby: bool = False,
                standby_host: bool = False) -> None:
    """Run one node — or, with ``role="all"``, every node of the file in this process — until SIGTERM/SIGINT.

    ``ready(process)`` is called once each listens. ``standby`` (an LM): wait until the active LM is gone, then
    take over (:mod:`~.lease`); ``standby_host``: at the LM's ``standby:`` address (a host of its own).
    """
    if role == "all":
        spec = loaded.spec
        local: dict[str, Any] = {}  # requests between them skip the sockets
        # worker hosts first: an LM starts by asking them what they run; GMs last: no launch before all are up
        nodes = [ProcessNode(loaded, "worker", h.id, local=local) for _lm, h in spec.hosts()]
        nodes += [ProcessNode(loaded, "lm", lm.id, local=local) for lm in spec.lms]
        nodes += [ProcessNode(loaded, "gm", g.id, local=local) for g in spec.gms]
    else:
        nodes = [ProcessNode(loaded, role, ident, standby=standby, standby_host=standby_host)]
    stop = asyncio.Event()
    started: list[ProcessNode] = []
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
