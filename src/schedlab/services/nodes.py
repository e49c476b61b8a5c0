"""What every service of a Megha cluster is made of, whatever its role and whatever runs it.

A GM, an LM or a worker host (:mod:`~.gm_node`, :mod:`~.lm_node`,
:mod:`~.host_node`) is a :class:`ServiceNode`: the simulator's component(s)
and the services around them, built on a :class:`NodeEnv` — its runtime, its
router, its broker link, its lease and its port. The env is the only thing
that differs between a real process (:mod:`~.node`: asyncio, aiohttp,
RabbitMQ), the embedded cluster and the deterministic simulation with injected
faults (:mod:`~.memnet`, :mod:`~.dst`): the nodes themselves are the same
code in all three.

**Starting is recovering.** A GM starts with an empty view and asks every LM
for its state before it consumes its queues (:class:`~.recovery.GMRecovery`);
an LM binds its port first (the fence), asks its worker hosts what they run,
drains its queue and announces its state to the GMs
(:class:`~.recovery.LMTakeover`) before it serves; a standby LM first waits
for the active one's lease and port (:mod:`~.lease`). A fresh cluster and a
crashed component take the same path.

**Bad input** never reaches a component: a request that is not a list of
valid envelopes, an unknown message type or version, a message for a
component not hosted here, a launch naming a partition or position this LM
does not have or a worker this host does not run — each is answered 4xx with
a one-line reason, counted by reason in the status and logged once per
reason; no task state changes.

**Bookkeeping.** A service forgets a task once it is done with it: a GM when
it learns the task finished, an LM when it finished or when the LM rejected
it, a worker host when it ended — so memory follows the tasks in flight.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from schedlab.cluster.model import Cluster
from schedlab.schedulers.megha import MeghaParams
from schedlab.schedulers.megha.partitions import Layout, megha_topology
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.tasks import TaskStore
from schedlab.services.transport import Router
from schedlab.services.wire import Frame, WireError

log = logging.getLogger("schedlab.services.node")

ROLES = ("gm", "lm", "worker")
RECORDS_EVERY = 0.02  # seconds a service gathers lifecycle events before sending them to their client
MARKER_AGAIN = 3.0  # seconds a drain's marker may take to come back before another is sent (see ServiceNode.drain)


def reason_key(reason: str) -> str:
    """The counter a refusal goes to: its reason's leading words, without the values that vary
    ("unknown partition 99 (LM 0 has 0..0)" -> "unknown partition"), so counters stay few."""
    head = reason.split(":")[0]
    return re.split(r"\s*['\"\d(\[{]", head, maxsplit=1)[0].strip() or head


def host_address(h: int) -> tuple[str, int]:
    return ("host", h)


@dataclass
class Plan:
    """The cluster every node of it derives the same way: data center, layout, parameters, worker hosts."""

    name: str
    cluster: Cluster
    params: MeghaParams
    seed: int = 0
    worker_lease: float = 2.0
    hosts: dict[int, int] = field(default_factory=dict)  # worker host -> its LM
    workers_of_host: dict[int, Any] = field(default_factory=dict)  # worker host -> its workers (global ids)
    host_of_worker: list[int] = field(default_factory=list)
    layout: Layout = field(init=False)

    def __post_init__(self) -> None:
        p = self.params
        self.layout = Layout(self.cluster, megha_topology(self.cluster, p.gms, p.lms))

    @property
    def num_gms(self) -> int:
        return self.layout.num_gms

    @property
    def num_lms(self) -> int:
        return self.layout.num_lms

    @classmethod
    def from_loaded(cls, loaded: Any, params: MeghaParams) -> Plan:
        """The plan of a cluster file (:class:`~.clusterfile.LoadedCluster`)."""
        spec = loaded.spec
        return cls(spec.name, loaded.cluster, params, spec.seed, spec.worker_lease,
                   {h: lm for h, (lm, _spec) in loaded.hosts.items()}, dict(loaded.workers_of_host), list(loaded.host_of_worker))

    @classmethod
    def one_host_per_lm(cls, name: str, cluster: Cluster, params: MeghaParams, seed: int = 0, worker_lease: float = 2.0) -> Plan:
        """Every LM's workers on one worker host of its own (host ``i`` belongs to LM ``i``): a data center
        given as a :class:`~schedlab.cluster.model.Cluster`, as the simulator takes it."""
        plan = cls(name, cluster, params, seed, worker_lease)
        lay = plan.layout
        host_of = [0] * cluster.n
        for i in range(lay.num_lms):
            ws = sorted(w for p in lay.partitions_of_lm(i) for w in lay.order[p])
            plan.hosts[i] = i
            plan.workers_of_host[i] = ws
            for w in ws:
                host_of[w] = i
        plan.host_of_worker = host_of
        return plan


class Lease(Protocol):
    """An LM's hold on its lease (:mod:`~.lease`): exclusive, lost when its holder's connection closes."""

    @property
    def held(self) -> bool: ...

    async def try_acquire(self) -> bool: ...

    async def token(self) -> int | None: ...

    async def release(self) -> None: ...


class BrokerLink(Protocol):
    """A service's link to the broker (:class:`~.net.AmqpFrames` for real, :class:`~.memnet.MemLink` in memory)."""

    at_flush: Callable[[Callable[[], None]], None] | None
    holding: Callable[[], bool] | None  # received messages held back, not delivered yet: acknowledge nothing

    @property
    def publish_errors(self) -> int: ...

    @property
    def failovers(self) -> int: ...

    async def connect(self) -> None: ...

    def publish(self, queue: str, packed: Any, persistent: bool = False, fence: bool = False) -> None:
        """Publish ``packed`` to ``queue``, in order; ``fence``: only once everything published before is
        confirmed (its consumer takes it as proof of what came before: :data:`~.transport.FENCED_TYPES`)."""
        ...

    def when_published(self, fn: Callable[[], None]) -> None: ...

    async def consume(self, queue: str, on_frame: Callable[[Frame], None], on_bad: Callable[[str], None]) -> int: ...

    async def consume_held(self, queue: str, on_frame: Callable[[Frame, bool, Any], None], on_bad: Callable[[str], None],
                           transit: str | None = None) -> int: ...

    def ack(self, handle: Any) -> None: ...

    async def drain(self, timeout: float = 5.0) -> None: ...

    async def close(self) -> None: ...


@dataclass
class NodeEnv:
    """What a node is given to run on: everything else in it is the same code in every runtime."""

    plan: Plan
    rt: ServiceRuntime
    router: Router
    store: TaskStore  # what this node knows of tasks (the router's wire files the descriptions that come in)
    broker: BrokerLink
    queue: Callable[[Any], str]  # the broker queue of an address
    bind: Callable[[], bool]  # take this node's port (the fence); False while another process serves there
    lease: Callable[[str], Lease]  # a lease on the named queue
    incarnation: Callable[[], int]  # a fresh random incarnation (a worker host's, per process)
    standby: bool = False  # an LM: wait for the active one to go, then take over
    lease_queue: str = ""  # an LM: its lease's queue
    # an LM whose standby serves at another address (no port fences the two): what the process does once it learns
    # that a newer process serves as this LM — it stops at once, as if killed, and waits as a standby (:mod:`~.lease`)
    step_down: Callable[[str], None] | None = None


class Refusals:
    """Refused input, counted by reason and by peer, each reason logged once."""

    def __init__(self) -> None:
        self.by_reason: dict[str, int] = defaultdict(int)
        self.by_peer: dict[str, int] = defaultdict(int)
        self._logged: set[str] = set()

    def refuse(self, reason: str, detail: str, peer: str | None = None) -> str:
        self.by_reason[reason] += 1
        if peer is not None:
            self.by_peer[peer] += 1
        if reason not in self._logged:
            self._logged.add(reason)
            log.warning("refused input (%s): %s", reason, detail)
        return f"{reason}: {detail}"

    def status(self) -> dict[str, Any]:
        return {"refused": dict(self.by_reason), "refused_by_peer": dict(self.by_peer), "refused_total": sum(self.by_reason.values())}


class RecordsPublisher:
    """Batches a service's lifecycle events per run and sends them to the run's client every ``RECORDS_EVERY`` s.

    The events carry their own timestamps, so holding them back costs the
    measurements nothing; batching saves the client most of its per-message
    broker work, which is what limits a busy client.
    """

    def __init__(self, rt: ServiceRuntime, broker: BrokerLink | None = None) -> None:
        from schedlab.services.messages import RecordEvents

        self.rt = rt
        self.broker = broker
        self.pending: dict[int, list[tuple]] = defaultdict(list)
        self.waiting: list[Callable[[], None]] = []
        self.scheduled = False
        self._records = RecordEvents

    def emit(self, run: int, ev: tuple) -> None:
        self.pending[run].append(ev)
        if not self.scheduled:
            self.scheduled = True
            self.rt.call_later(RECORDS_EVERY, self.flush)

    def after(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once every event emitted so far has reached the broker (a GM acknowledges a finished
        job only then: killed in between, it would take the job's last completion records with it)."""
        broker = self.broker
        self.at_flush(lambda: broker.when_published(fn) if broker is not None else fn())

    def at_flush(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` at the next flush, once the events emitted so far are handed to the publisher."""
        self.waiting.append(fn)
        if not self.scheduled:
            self.scheduled = True
            self.rt.call_later(RECORDS_EVERY, self.flush)

    def flush(self) -> None:
        self.scheduled = False
        pending, self.pending = self.pending, defaultdict(list)
        for run, events in pending.items():
            self.rt.send(("run", run), self._records(run, events))
        waiting, self.waiting = self.waiting, []
        for fn in waiting:
            fn()


class PortTaken(Exception):
    """Another process serves at this node's address (the fence)."""

    def __init__(self, node: ServiceNode) -> None:
        super().__init__(f"{node.role} {node.id}: its port is already in use")
        self.node = node


Response = tuple[int, Any]  # (200, replies) or (4xx/5xx, one-line reason)


class ServiceNode:
    """The parts every role shares: identity, refusals, the broker consumer, the HTTP request path."""

    role = ""

    def __init__(self, env: NodeEnv, ident: int) -> None:
        self.env = env
        self.id = ident
        self.plan = env.plan
        self.rt = env.rt
        self.router = env.router
        self.broker = env.broker
        self.refusals = Refusals()
        self.store = env.store
        self.started_at = 0.0
        self.serving = False  # true once start() is over: requests are answered
        self.amqp_handled = 0
        self._marker = 0
        self._markers: dict[int, Any] = {}
        self.markers_sent_again = 0
        self.component: Any = None
        self.address: Any = None

    # -- life cycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        """Stop timers and flush what is pending (the shell closes the broker and the server)."""

    # -- requests (the HTTP server side) --------------------------------------------------------
    async def handle_request(self, frames: list[Frame], signed_at: float) -> Response:
        """A request's messages, all checked before any is delivered: ``(200, replies)`` or a refusal."""
        answer = self.handle(frames, signed_at)
        if isinstance(answer, tuple):
            return answer
        return await answer

    def handle(self, frames: list[Frame], signed_at: float) -> Response | Coroutine[Any, Any, Response]:
        """:meth:`handle_request` without a coroutine when the answer does not wait (most requests): the answer,
        or a coroutine that gives it."""
        try:
            for src, dst, msg, tasks, _seq, meta in frames:
                self.check(dst, msg, tasks)
                refusal = self.screen(src, msg, meta, signed_at)
                if refusal is not None:
                    return 409, self.refusals.refuse(*refusal) + "\n"
            frames = self.admit(frames)
        except WireError as e:
            status = 404 if e.reason.startswith("unknown ") else 400
            return status, self.refusals.refuse(reason_key(e.reason), e.reason) + "\n"
        replies = self.router.handle_frames(frames)
        wait = self.after_request(frames)
        if wait is None:
            return 200, replies
        return self._answer_after(wait, replies)

    async def _answer_after(self, wait: Coroutine[Any, Any, Response | None], replies: list[Any]) -> Response:
        problem = await wait
        return problem if problem is not None else (200, replies)

    def check(self, dst: Any, msg: Any, tasks: Any) -> None:
        """Refuse what the component must never see (raise :class:`~.wire.WireError`, before anything changes)."""
        from schedlab.workers.protocol import POOL_ADDRESS

        if not self.rt.accepts(dst, msg.__class__) or dst == POOL_ADDRESS:
            raise WireError(f"unknown destination: no {msg.__class__.__name__} handler for {dst!r} here")

    def screen(self, src: Any, msg: Any, meta: tuple, signed_at: float) -> tuple[str, str] | None:
        """A reason to refuse this authentic, well-formed message unread (409), or None."""
        return None

    def admit(self, frames: list[Frame]) -> list[Frame]:
        """The frames to deliver (a worker host leaves out launches it already took)."""
        return frames

    def after_request(self, frames: list[Frame]) -> Coroutine[Any, Any, Response | None] | None:
        """A wait before the answer leaves, which may refuse it (a worker host answering an LM taking over), or None."""
        return None

    # -- the broker -------------------------------------------------------------------------------
    async def drain(self, queue: str) -> None:
        """Wait until everything that waited in ``queue`` (this node consumes it) has been delivered: a
        :class:`~.messages.Marker` published to it comes back after all of it — redeliveries after a broker
        restart included, which go back to their places before it.

        Another consumer of the queue may take the marker — the process this one replaces, still running for a
        moment (its link to the broker back from a cut before it learns it is replaced): a marker not back within
        :data:`MARKER_AGAIN` seconds is sent again (found by the deterministic simulation, seed 3010388: a standby
        taking over waited for ever, its marker taken by the old LM process one poll before it stepped down)."""
        from schedlab.services.messages import Marker

        done = self.rt.event()
        tokens = []
        try:
            while True:
                self._marker += 1
                tokens.append(self._marker)
                self._markers[self._marker] = done
                self.broker.publish(queue, self.router.wire.pack(self.address, ("marker", 0), Marker(self._marker), None, None), True)
                if await self.rt.wait(done, MARKER_AGAIN):
                    return
                self.markers_sent_again += 1
        finally:
            for token in tokens:
                self._markers.pop(token, None)

    def marker(self, msg: Any) -> bool:
        """True (and the waiting :meth:`drain` told) if ``msg`` is this node's marker."""
        from schedlab.services.messages import Marker

        if not isinstance(msg, Marker):
            return False
        ev = self._markers.get(msg.token)
        if ev is not None:
            ev.set()
        return True

    def on_broker(self, frame: Frame) -> None:
        """A message consumed from this node's queue."""
        self.amqp_handled += 1
        src, dst, msg, tasks, seq, _meta = frame
        if self.marker(msg):
            return
        if not self.rt.accepts(dst, msg.__class__):
            self.refusals.refuse("not for this service", f"{msg.__class__.__name__} for {dst!r}")
            return
        self.router.wire.file(tasks)
        self.router.receive(src, dst, msg, seq)

    def on_bad_broker(self, reason: str) -> None:
        self.amqp_handled += 1
        self.refusals.refuse("bad message", reason)

    # -- status -----------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "role": self.role,
            "id": self.id,
            "uptime": self.rt.now() - self.started_at if self.started_at else 0.0,
            "tasks_known": len(self.store),
            **self.refusals.status(),
            "handler_errors": self.rt.handler_errors,
            "messages_sent": dict(self.rt.sent),
            "transport": dict(self.router.counters),
            "publish_errors": self.broker.publish_errors,
            "broker_failovers": self.broker.failovers,  # connections moved to another node of a RabbitMQ cluster
        }
        if self.rt.steps is not None:
            out["step_costs"] = self.rt.steps.status()  # what each processing step costs here, messages' transit (stepcosts)
        return out


# status fields summed over nodes into a run's counters (the simulator's names)
SUMMED = ("requests", "repartition_requests", "rejected_requests", "launched", "repartitions", "inconsistencies",
          "state_updates", "piggybacked_updates", "state_update_entries", "refused_launches", "handler_errors", "refused_total")
SUMMED_IF_FAIR = ("preemption_attempts", "preemptions_refused", "preemptions", "preemptions_too_late")  # fair sharing only
COUNTER_STATES = ("gm_holdings_at_end", "stalled", "nodes_unreachable")  # of sum_statuses' counters, states rather than counts


def sum_statuses(statuses: list[dict[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    """A run's counters from every node's status (a status with ``error`` counts as unreachable), and the
    messages every node sent by type."""
    out: dict[str, int] = {k: 0 for k in SUMMED}
    out.update({"gm_holdings_at_end": 0, "heartbeat_rounds": 0, "stalled": 0, "nodes_unreachable": 0})
    messages: dict[str, int] = {}
    for st in statuses:
        if "error" in st:
            out["nodes_unreachable"] += 1
            continue
        for k in SUMMED:
            out[k] += int(st.get(k, 0))
        for k in SUMMED_IF_FAIR:
            if k in st:
                out[k] = out.get(k, 0) + int(st[k])
        out["gm_holdings_at_end"] += int(st.get("gm_holdings", 0))
        out["heartbeat_rounds"] = max(out["heartbeat_rounds"], int(st.get("heartbeats", 0)))
        for name, n in st.get("messages_sent", {}).items():
            messages[name] = messages.get(name, 0) + int(n)
    return out, dict(sorted(messages.items()))
