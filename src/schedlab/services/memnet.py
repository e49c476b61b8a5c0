"""An in-memory network and RabbitMQ-like broker for service nodes, with faults injected per link.

The embedded cluster (:mod:`~.embedded`) and the deterministic simulation
(:mod:`~.dst`) run the services' own nodes (:mod:`~.assembly`) with no socket
and no broker process: each node is a :class:`MemProcess` with its own runtime,
and this module carries its messages as the real network and RabbitMQ would —
with the behaviour the protocol depends on, and the faults it must survive.

**HTTP** (:class:`MemHttp`, the :class:`~.transport.HttpPort` of a process). A
request reaches whichever process has bound the destination's address at
that moment (the fence: a standby that took the port over gets the old
process's retries); an address no live process has bound refuses the
connection. Per link (directed pair of hosts): a one-way delay with jitter,
loss, and cuts — a request or a response that is lost or cut is simply never
seen, and the requester's timeout decides (HTTP over a TCP connection that
stalls behaves so). A request that arrives is handled even if its sender has
given up on it: the requester cannot know, and that is what the links'
"in doubt" handles. Signatures older than the receiver's freshness window
(:data:`~.auth.MAX_SKEW`, a matter of clock skew here) are refused with 401.

**Broker** (:class:`MemBroker`, :class:`MemLink`). Queues of messages, each
persistent or not, durable or not, consumed with a prefetch window and
acknowledged (cumulatively) or not; a connection's traffic is in order each
way and *stalls* while its hosts are cut off (TCP holds it; RabbitMQ's
heartbeat, 60 s, is beyond these partitions). Publishes are confirmed in order;
a publisher holds what is unconfirmed and sends it again after a reconnection
(so a message whose confirmation was lost is queued twice, as for real). When
a connection closes — its process died, or the broker restarted — the messages
it had not acknowledged go back to their queues marked *redelivered*, and its
exclusive queues are deleted (an LM's lease). A broker restart loses the
messages that were not persistent and every non-durable queue; links
reconnect every :data:`RECONNECT_EVERY` seconds (aio-pika's robust connection)
and restore their consumers.

Choices: unroutable messages (to a queue not declared yet) are dropped, as by
RabbitMQ's default exchange; queue expiry is not modelled (no run here lasts
its 10 minutes); loss applies to HTTP only (TCP retransmits what the broker's
connections lose, which is only delay).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schedlab.services.acks import Acknowledger, AcksAfterOutput
from schedlab.services.auth import MAX_SKEW, skew_text
from schedlab.services.transport import Unreachable
from schedlab.services.wire import Frame, WireError
from schedlab.sim.kernel import Kernel

RECONNECT_EVERY = 5.0  # seconds between a robust link's attempts to reconnect (aio-pika's default)
BROKER = "broker"  # the broker's host


class BrokerUnreachable(Exception):
    """The broker is down or cut off from this host."""


# -- the clock the network's own events run on ---------------------------------------------------
class KernelClock:
    """The network's events on the discrete-event kernel (deterministic simulation)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def now(self) -> float:
        return self.kernel.now

    def post(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        k = self.kernel
        k.post(k.now + delay, fn, *args)


class LoopClock:
    """The network's events on an asyncio loop (the embedded cluster, in real time)."""

    def __init__(self, loop: Any) -> None:
        self.loop = loop

    def now(self) -> float:
        return float(self.loop.time())

    def post(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        if delay > 0:
            self.loop.call_later(delay, fn, *args)
        else:
            self.loop.call_soon(fn, *args)


@dataclass
class LinkFault:
    """What is wrong with one direction of a link now."""

    cut: bool = False
    loss: float = 0.0
    delay: float = 0.0
    jitter: float = 0.0


class MemProcess:
    """A simulated process: its host, its runtime, and what it holds of the network (ports, connections)."""

    def __init__(self, name: str, host: str, rt: Any) -> None:
        self.name = name
        self.host = host
        self.rt = rt
        self.alive = True
        self.endpoints: list[str] = []
        self.connections: list[MemConnection] = []


# -- the network -----------------------------------------------------------------------------------
class MemNet:
    """Hosts, links with faults, and who serves at each HTTP address."""

    def __init__(self, clock: Any, latency: float = 0.0, rng: random.Random | None = None) -> None:
        self.clock = clock
        self.latency = latency
        self.rng = rng if rng is not None else random.Random(0)
        self.host_of_url: dict[str, str] = {}
        self.endpoints: dict[str, tuple[MemProcess, Any]] = {}  # url -> (process, node) serving there
        self.backlog: dict[str, list[tuple]] = {}  # url -> requests that arrived before its node served
        self.faults: dict[tuple[str, str], LinkFault] = {}
        self.pipes: dict[tuple[str, str], list[Pipe]] = {}
        self.counters: dict[str, int] = {"requests": 0, "requests_lost": 0, "responses_lost": 0, "refused_connections": 0, "reset_connections": 0,
                                         "stale_signatures": 0}

    # -- faults -----------------------------------------------------------------------------
    def fault(self, a: str, b: str) -> LinkFault:
        f = self.faults.get((a, b))
        if f is None:
            f = self.faults[(a, b)] = LinkFault()
        return f

    def cut(self, a: str, b: str, oneway: bool = False) -> None:
        """Packets from ``a`` to ``b`` (and, unless ``oneway``, back) are dropped."""
        self.fault(a, b).cut = True
        if not oneway:
            self.fault(b, a).cut = True

    def heal(self, a: str, b: str) -> None:
        for x, y in ((a, b), (b, a)):
            f = self.faults.get((x, y))
            if f is not None:
                f.cut = False
            for pipe in self.pipes.get((x, y), ()):
                pipe.release()

    def is_cut(self, a: str, b: str) -> bool:
        f = self.faults.get((a, b))
        return f is not None and f.cut

    def delay(self, a: str, b: str, lossy: bool = True) -> float | None:
        """The one-way delay of a message from ``a`` to ``b`` now, or None if it is lost."""
        f = self.faults.get((a, b))
        if f is None:
            return self.latency
        if f.cut:
            return None
        if lossy and f.loss and self.rng.random() < f.loss:
            return None
        d = self.latency + f.delay
        if f.jitter:
            d += self.rng.random() * f.jitter
        return d

    # -- HTTP ------------------------------------------------------------------------------
    def bind(self, url: str, proc: MemProcess, node: Any) -> bool:
        """``proc`` serves ``url`` (False while another live process does: the fence)."""
        held = self.endpoints.get(url)
        if held is not None and held[0].alive:
            return held[0] is proc
        self.endpoints[url] = (proc, node)
        proc.endpoints.append(url)
        return True

    def serving(self, url: str) -> None:
        """The node at ``url`` answers from now on: what waited for it is handled."""
        for args in self.backlog.pop(url, []):
            self._arrive(*args)

    def request(self, sender: MemProcess, url: str, packed: list[Any], fut: Any) -> None:
        self.counters["requests"] += 1
        dst = self.host_of_url[url]
        d = self.delay(sender.host, dst)
        if d is None:
            self.counters["requests_lost"] += 1
            return
        self.clock.post(d, self._arrive, sender, url, dst, packed, fut, sender.rt.now())

    def _arrive(self, sender: MemProcess, url: str, dst: str, packed: list[Any], fut: Any, signed_at: float,
                waited_in: MemProcess | None = None) -> None:
        held = self.endpoints.get(url)
        if waited_in is not None and (held is None or held[0] is not waited_in):
            # it waited in a frozen process's socket, and that process died: the connection was reset (a process
            # started since at that address never reads it — found by the deterministic simulation, seed 409161:
            # a beacon of a host's earlier incarnation, read by its LM's next process, declared the host restarted)
            self.counters["reset_connections"] += 1
            self._respond(dst, sender, fut, Unreachable("connection reset"))
            return
        if held is None or not held[0].alive:
            self.counters["refused_connections"] += 1
            self._respond(dst, sender, fut, Unreachable("connection refused"))
            return
        proc, node = held
        left = paused_for(proc)
        if left > 0:  # a frozen process: the request waits in its socket until it runs again
            self.clock.post(left, self._arrive, sender, url, dst, packed, fut, signed_at, proc)
            return
        if not node.serving:  # bound, not answering yet: the connection waits in the listen backlog
            self.backlog.setdefault(url, []).append((sender, url, dst, packed, fut, signed_at))
            return
        if abs(proc.rt.now() - signed_at) > MAX_SKEW:
            self.counters["stale_signatures"] += 1
            reason = node.refusals.refuse("stale", skew_text(signed_at, proc.rt.now()), sender.name)
            self._respond(dst, sender, fut, (401, reason))
            return
        try:
            frames = [node.router.wire.unpack(p) for p in packed]
        except WireError as e:
            self._respond(dst, sender, fut, (400, node.refusals.refuse("bad message", e.reason)))
            return
        answer = node.handle(frames, signed_at)
        if isinstance(answer, tuple):  # most requests are answered at once
            self._respond(dst, sender, fut, answer)
        else:  # the answer waits (a worker host answering a takeover)
            proc.rt.spawn(self._serve(proc, dst, sender, answer, fut), "request")

    async def _serve(self, proc: MemProcess, dst: str, sender: MemProcess, answer: Any, fut: Any) -> None:
        result = await answer
        if proc.alive:
            self._respond(dst, sender, fut, result)

    def _respond(self, src: str, sender: MemProcess, fut: Any, result: Any) -> None:
        d = self.delay(src, sender.host)
        if d is None:
            self.counters["responses_lost"] += 1
            return
        self.clock.post(d, _resolve, fut, result)

    # -- processes -------------------------------------------------------------------------
    def crash(self, proc: MemProcess) -> None:
        """The process dies: its runtime stops, its ports are free, its connections close."""
        proc.alive = False
        halt = getattr(proc.rt, "halt", None)
        if halt is not None:
            halt()
        for url in proc.endpoints:
            held = self.endpoints.get(url)
            if held is not None and held[0] is proc:
                del self.endpoints[url]
                self.backlog.pop(url, None)
        proc.endpoints.clear()
        for conn in list(proc.connections):
            conn.drop()
        proc.connections.clear()


def paused_for(proc: MemProcess) -> float:
    """Seconds until a paused (frozen) process runs again; 0 if it runs (:meth:`~.simruntime.SimServiceRuntime.pause`)."""
    fn = getattr(proc.rt, "paused_for", None)
    return float(fn()) if fn is not None else 0.0


def _resolve(fut: Any, result: Any) -> None:
    if fut.done():
        return
    if isinstance(result, BaseException):
        fut.set_exception(result)
    else:
        fut.set_result(result)


class MemHttp:
    """A process's :class:`~.transport.HttpPort` on the in-memory network."""

    def __init__(self, net: MemNet, proc: MemProcess) -> None:
        self.net = net
        self.proc = proc

    async def post(self, url: str, packed: list[Any], timeout: float) -> tuple[int, Any]:
        rt = self.proc.rt
        fut = rt.future()
        self.net.request(self.proc, url, packed, fut)
        timer = rt.call_later(timeout, _resolve, fut, Unreachable(f"no answer within {timeout:g} s"))
        try:
            result: tuple[int, Any] = await fut
        finally:
            timer.cancel()
        return result

    async def close(self) -> None:
        return None


# -- the broker ----------------------------------------------------------------------------------
class Pipe:
    """One direction of a TCP connection: in order, held while its hosts are cut off from each other.

    What is on the wire waits in ``flying``, and each arrival runs the oldest: the order never rests on the
    timers' times, which float rounding can invert (``now + (arrive - now)`` is not always ``arrive``: found by
    the deterministic simulation — a publish overtook three sent before it under a slow link, the broker's
    cumulative confirmation then named an earlier one, and the publisher waited for ever)."""

    __slots__ = ("net", "src", "dst", "last", "held", "flying", "closed")

    def __init__(self, net: MemNet, src: str, dst: str) -> None:
        self.net = net
        self.src = src
        self.dst = dst
        self.last = 0.0
        self.held: deque[tuple] = deque()
        self.flying: deque[tuple] = deque()
        self.closed = False
        net.pipes.setdefault((src, dst), []).append(self)

    def send(self, fn: Callable[..., Any], *args: Any) -> None:
        if self.closed:
            return
        if self.held or self.net.is_cut(self.src, self.dst):
            self.held.append((fn, args))
            return
        self._post(fn, args)

    def _post(self, fn: Callable[..., Any], args: tuple) -> None:
        net = self.net
        d = net.delay(self.src, self.dst, lossy=False)
        t0 = net.clock.now()
        arrive = max(t0 + (d or 0.0), self.last)
        self.last = arrive
        self.flying.append((fn, args))
        net.clock.post(arrive - t0, self._arrive)

    def _arrive(self) -> None:
        if not self.closed and self.flying:
            fn, args = self.flying.popleft()
            fn(*args)

    def release(self) -> None:
        while self.held and not self.net.is_cut(self.src, self.dst):
            fn, args = self.held.popleft()
            self._post(fn, args)

    def close(self) -> None:
        self.closed = True
        self.held.clear()
        self.flying.clear()
        pipes = self.net.pipes.get((self.src, self.dst))
        if pipes is not None and self in pipes:
            pipes.remove(self)


class Message:
    __slots__ = ("payload", "persistent", "redelivered", "order")

    def __init__(self, payload: Any, persistent: bool, order: int) -> None:
        self.payload = payload
        self.persistent = persistent
        self.redelivered = False
        self.order = order


class Consumer:
    __slots__ = ("conn", "queue", "deliver", "prefetch", "no_ack", "unacked", "tag")

    def __init__(self, conn: MemConnection, queue: Queue, deliver: Callable[..., None], prefetch: int, no_ack: bool) -> None:
        self.conn = conn
        self.queue = queue
        self.deliver = deliver
        self.prefetch = prefetch
        self.no_ack = no_ack
        self.unacked: dict[int, Message] = {}
        self.tag = 0


class Queue:
    __slots__ = ("name", "durable", "exclusive", "ready", "consumers", "rr")

    def __init__(self, name: str, durable: bool, exclusive: MemConnection | None) -> None:
        self.name = name
        self.durable = durable
        self.exclusive = exclusive
        self.ready: deque[Message] = deque()
        self.consumers: list[Consumer] = []
        self.rr = 0


class MemConnection:
    """A connection between a process and the broker: two ordered pipes and, at the broker, its consumers."""

    def __init__(self, broker: MemBroker, proc: MemProcess, on_lost: Callable[[MemConnection], None] | None) -> None:
        net = broker.net
        self.broker = broker
        self.proc = proc
        self.up = Pipe(net, proc.host, BROKER)
        self.down = Pipe(net, BROKER, proc.host)
        self.open = True
        self.consumers: list[Consumer] = []
        self.exclusive: list[Queue] = []
        self.confirming: list[int] | None = None  # the confirmation on its way to the publisher (it carries the latest)
        self.on_lost = on_lost
        proc.connections.append(self)
        broker.connections.append(self)

    def drop(self) -> None:
        """The connection is gone (its process died, or the broker went down, or it was closed)."""
        if not self.open:
            return
        self.open = False
        self.up.close()
        self.down.close()
        self.broker.closed(self)
        if self in self.proc.connections:
            self.proc.connections.remove(self)
        if self.on_lost is not None and self.proc.alive:
            self.on_lost(self)


class MemBroker:
    """The broker: queues, consumers, acknowledgements, restarts."""

    def __init__(self, net: MemNet) -> None:
        self.net = net
        self.up = True
        self.queues: dict[str, Queue] = {}
        self.connections: list[MemConnection] = []
        self._order = 0
        self.counters: dict[str, int] = {"published": 0, "unroutable": 0, "delivered": 0, "redelivered": 0, "restarts": 0,
                                         "lost_transient": 0}

    def reachable(self, host: str) -> bool:
        return self.up and not self.net.is_cut(host, BROKER) and not self.net.is_cut(BROKER, host)

    def connect(self, proc: MemProcess, on_lost: Callable[[MemConnection], None] | None = None) -> MemConnection:
        if not self.reachable(proc.host):
            raise BrokerUnreachable(f"{proc.name}: the broker is {'down' if not self.up else 'cut off'}")
        return MemConnection(self, proc, on_lost)

    # -- queues -------------------------------------------------------------------------------
    def declare(self, name: str, durable: bool = True, exclusive: MemConnection | None = None) -> Queue | None:
        """The queue (made if new); None if it is another live connection's exclusive queue."""
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = Queue(name, durable, exclusive)
            if exclusive is not None:
                exclusive.exclusive.append(q)
            return q
        if q.exclusive is not None and q.exclusive is not exclusive:
            return None
        return q

    def consume(self, conn: MemConnection, q: Queue, deliver: Callable[..., None], prefetch: int, no_ack: bool) -> Consumer:
        c = Consumer(conn, q, deliver, prefetch, no_ack)
        q.consumers.append(c)
        conn.consumers.append(c)
        self._dispatch(q)
        return c

    def publish(self, conn: MemConnection, queue: str, payload: Any, persistent: bool) -> bool:
        """At the broker: store and route; False if the connection is gone (the publisher will send it again)."""
        if not self.up or not conn.open:
            return False
        q = self.queues.get(queue)
        self.counters["published"] += 1
        if q is None:
            self.counters["unroutable"] += 1
            return True
        self._order += 1
        q.ready.append(Message(payload, persistent, self._order))
        self._dispatch(q)
        return True

    def tally(self, name: str) -> int:
        """One more persistent message in durable queue ``name`` (nobody consumes it): the queue's count after."""
        q = self.declare(name, durable=True)
        assert q is not None
        self._order += 1
        q.ready.append(Message(None, True, self._order))
        return len(q.ready)

    def _dispatch(self, q: Queue) -> None:
        while q.ready and q.consumers:
            n = len(q.consumers)
            for k in range(n):
                c = q.consumers[(q.rr + k) % n]
                if c.no_ack or c.prefetch == 0 or len(c.unacked) < c.prefetch:
                    q.rr = (q.rr + k + 1) % n
                    break
            else:
                return  # every consumer's window is full
            msg = q.ready.popleft()
            c.tag += 1
            if not c.no_ack:
                c.unacked[c.tag] = msg
            self.counters["delivered"] += 1
            if msg.redelivered:
                self.counters["redelivered"] += 1
            c.conn.down.send(c.deliver, c.conn, c, c.tag, msg.payload, msg.redelivered)

    def ack(self, conn: MemConnection, consumer: Consumer, tag: int, multiple: bool) -> None:
        if not self.up or not conn.open or consumer not in conn.consumers:
            return
        if multiple:
            for t in [t for t in consumer.unacked if t <= tag]:
                del consumer.unacked[t]
        else:
            consumer.unacked.pop(tag, None)
        self._dispatch(consumer.queue)

    def closed(self, conn: MemConnection) -> None:
        """A connection closed: its unacknowledged messages go back, its exclusive queues go."""
        if conn in self.connections:
            self.connections.remove(conn)
        touched = []
        for c in conn.consumers:
            q = c.queue
            if c in q.consumers:
                q.consumers.remove(c)
            back = sorted(c.unacked.values(), key=lambda m: m.order)
            for m in back:
                m.redelivered = True
            q.ready.extendleft(reversed(back))
            c.unacked.clear()
            touched.append(q)
        conn.consumers.clear()
        for q in conn.exclusive:
            self.queues.pop(q.name, None)
        conn.exclusive.clear()
        for q in touched:
            if q.name in self.queues:
                self._dispatch(q)

    # -- restarts -----------------------------------------------------------------------------
    def stop(self) -> None:
        """The broker goes down: every connection drops; what was not persistent, or not durable, is gone."""
        self.up = False
        self.counters["restarts"] += 1
        for conn in list(self.connections):
            conn.drop()
        for name in list(self.queues):
            q = self.queues[name]
            if not q.durable:
                del self.queues[name]
                continue
            kept = deque(m for m in q.ready if m.persistent)
            self.counters["lost_transient"] += len(q.ready) - len(kept)
            q.ready = kept

    def start(self) -> None:
        self.up = True


class MemLink(AcksAfterOutput):
    """A process's link to the broker (the :class:`~.nodes.BrokerLink` of the in-memory world): robust — it
    reconnects, restores its consumers and sends again what the broker had not confirmed."""

    def __init__(self, broker: MemBroker, proc: MemProcess, unpack: Callable[[Any], Frame] | None = None) -> None:
        self.broker = broker
        self.proc = proc
        self.unpack = unpack  # a payload to a frame (None: payloads are frames)
        self.conn: MemConnection | None = None
        self.closing = False
        self.publish_errors = 0
        self.failovers = 0  # the in-memory broker is one node: there is no other to move to
        self.unconfirmed: deque[tuple[int, str, Any, bool]] = deque()
        # publishes held behind a fenced one (sent only once everything before it is confirmed), with their fence
        self.fenced: deque[tuple[tuple[int, str, Any, bool], bool]] = deque()
        self._seq = 0
        self._waiters: deque[tuple[int, Callable[[], None]]] = deque()
        self.subscriptions: list[tuple] = []  # (kind, queue, callback...) restored after a reconnection
        self.acks = Acknowledger(self._ack_upto, self.when_published, proc.rt.call_later)
        self.reconnects = 0

    # -- connection ---------------------------------------------------------------------------
    async def connect(self) -> None:
        self.conn = self.broker.connect(self.proc, self._lost)

    def _lost(self, conn: MemConnection) -> None:
        if conn is self.conn:
            self.conn = None
            if not self.closing:
                self.proc.rt.call_later(RECONNECT_EVERY, self._reconnect)

    def _reconnect(self) -> None:
        if self.conn is not None or self.closing or not self.proc.alive:
            return
        try:
            conn = self.conn = self.broker.connect(self.proc, self._lost)
        except BrokerUnreachable:
            self.proc.rt.call_later(RECONNECT_EVERY, self._reconnect)
            return
        self.reconnects += 1
        for sub in self.subscriptions:
            self._subscribe(conn, *sub)
        for entry in self.unconfirmed:
            self._transmit(conn, entry)

    # -- publishing -----------------------------------------------------------------------------
    def publish(self, queue: str, packed: Any, persistent: bool = False, fence: bool = False) -> None:
        """Sent at once and confirmed later, as the real link's pipeline does; a ``fence``d message (and whatever
        follows it) only once everything before it is confirmed."""
        self._seq += 1
        entry = (self._seq, queue, packed, persistent)
        if self.fenced or (fence and self.unconfirmed):
            self.fenced.append((entry, fence))
            return
        self._send(entry)

    def _send(self, entry: tuple[int, str, Any, bool]) -> None:
        self.unconfirmed.append(entry)
        if self.conn is not None:
            self._transmit(self.conn, entry)

    def _transmit(self, conn: MemConnection, entry: tuple) -> None:
        conn.up.send(self._at_broker, conn, entry)

    def _at_broker(self, conn: MemConnection, entry: tuple) -> None:
        if self.broker.publish(conn, entry[1], entry[2], entry[3]):
            # confirmations are cumulative: one on its way already says this one too (it is told the latest)
            if conn.confirming is not None:
                conn.confirming[0] = entry[0]
                return
            conn.confirming = box = [entry[0]]
            conn.down.send(self._confirmed, conn, box)

    def _confirmed(self, conn: MemConnection, box: list[int]) -> None:
        left = paused_for(self.proc)
        if left > 0:  # a frozen process reads the confirmation when it runs again
            self.broker.net.clock.post(left, self._confirmed, conn, box)
            return
        seq = box[0]
        if conn.confirming is box:
            conn.confirming = None
        if conn is not self.conn:
            return
        while self.unconfirmed and self.unconfirmed[0][0] <= seq:
            self.unconfirmed.popleft()
        fenced = self.fenced
        while fenced and not (fenced[0][1] and self.unconfirmed):
            self._send(fenced.popleft()[0])
        done = self.unconfirmed[0][0] if self.unconfirmed else fenced[0][0][0] if fenced else self._seq + 1
        while self._waiters and self._waiters[0][0] < done:
            _s, fn = self._waiters.popleft()
            self.proc.rt.guarded(fn)

    def when_published(self, fn: Callable[[], None]) -> None:
        """``fn()`` once everything published so far is confirmed by the broker."""
        if not self.unconfirmed and not self.fenced:
            self.proc.rt.call_soon(fn)
        else:
            self._waiters.append((self._seq, fn))

    # -- consuming -----------------------------------------------------------------------------
    def _subscribe(self, conn: MemConnection, kind: str, queue: str, on_frame: Callable[..., None], on_bad: Any) -> int:
        q = self.broker.declare(queue, durable=True)
        assert q is not None
        backlog = len(q.ready)
        prefetch, no_ack = {"ack": (256, False), "held": (0, False)}[kind]
        deliver = {"ack": self._on_acked, "held": self._on_held}[kind]
        self.broker.consume(conn, q, lambda c, consumer, tag, payload, red: deliver(c, consumer, tag, payload, red, on_frame, on_bad),
                            prefetch, no_ack)
        return backlog

    async def _sub(self, kind: str, queue: str, on_frame: Callable[..., None], on_bad: Any = None) -> int:
        await self.proc.rt.sleep(2 * self.broker.net.latency)  # a round trip to declare and consume
        self.subscriptions.append((kind, queue, on_frame, on_bad))
        if self.conn is None:
            return 0
        return self._subscribe(self.conn, kind, queue, on_frame, on_bad)

    async def consume(self, queue: str, on_frame: Callable[[Frame], None], on_bad: Callable[[str], None]) -> int:
        return await self._sub("ack", queue, on_frame, on_bad)

    async def consume_held(self, queue: str, on_frame: Callable[[Frame, bool, Any], None], on_bad: Callable[[str], None],
                           transit: str | None = None) -> int:  # transit: measured by real links only (no clock here)
        return await self._sub("held", queue, on_frame, on_bad)

    async def consume_records(self, queue: str, on_frame: Callable[[Frame], None]) -> None:
        """A client's run queue: durable, its messages acknowledged once handled (as :mod:`~.net`'s)."""
        await self._sub("ack", queue, on_frame)

    def _live(self, conn: MemConnection) -> bool:
        return conn is self.conn and self.proc.alive

    def _open(self, payload: Any, on_bad: Any) -> Any:
        if self.unpack is None:
            return payload
        try:
            return self.unpack(payload)
        except WireError as e:
            if on_bad is not None:
                on_bad(e.reason)
            return None

    def _on_acked(self, conn: MemConnection, consumer: Consumer, tag: int, payload: Any, red: bool, on_frame: Callable,
                  on_bad: Any) -> None:
        left = paused_for(self.proc)
        if left > 0:  # a frozen process reads it when it runs again, in order
            self.broker.net.clock.post(left, self._on_acked, conn, consumer, tag, payload, red, on_frame, on_bad)
            return
        if self._live(conn):
            frame = self._open(payload, on_bad)
            if frame is not None:
                self.proc.rt.guarded(on_frame, frame)
            self.acks.handled((conn, consumer, tag))

    def _on_held(self, conn: MemConnection, consumer: Consumer, tag: int, payload: Any, red: bool, on_frame: Callable,
                 on_bad: Any) -> None:
        left = paused_for(self.proc)
        if left > 0:
            self.broker.net.clock.post(left, self._on_held, conn, consumer, tag, payload, red, on_frame, on_bad)
            return
        if self._live(conn):
            frame = self._open(payload, on_bad)
            if frame is None:
                self.ack((conn, consumer, tag))
                return
            self.proc.rt.guarded(on_frame, frame, red, (conn, consumer, tag))

    def _ack_upto(self, handle: tuple) -> None:
        conn, consumer, tag = handle
        if conn.open:
            conn.up.send(self.broker.ack, conn, consumer, tag, True)

    def ack(self, handle: Any) -> None:
        conn, consumer, tag = handle
        if conn.open:
            conn.up.send(self.broker.ack, conn, consumer, tag, False)

    async def drain(self, timeout: float = 5.0) -> None:
        rt = self.proc.rt
        deadline = rt.now() + timeout
        while self.unconfirmed and self.conn is not None and rt.now() < deadline:
            await rt.sleep(0.005)

    async def delete_queues(self, names: list[str]) -> None:
        for name in names:
            q = self.broker.queues.pop(name, None)
            if q is not None:
                for c in list(q.consumers):
                    if c in c.conn.consumers:
                        c.conn.consumers.remove(c)

    async def close(self) -> None:
        self.closing = True
        self.publish_errors += len(self.unconfirmed) if self.conn is None else 0
        if self.conn is not None:
            self.conn.drop()
            self.conn = None


class MemLease:
    """An LM's lease on the in-memory broker: an exclusive queue on a connection of its own (not robust)."""

    def __init__(self, broker: MemBroker, proc: MemProcess, name: str) -> None:
        self.broker = broker
        self.proc = proc
        self.name = name
        self.conn: MemConnection | None = None
        self.taken = False  # the latest try failed because another connection holds the lease

    @property
    def held(self) -> bool:
        conn = self.conn
        if conn is None or not conn.open:
            return False
        q = self.broker.queues.get(self.name)
        return q is not None and q.exclusive is conn

    async def try_acquire(self) -> bool:
        await self.proc.rt.sleep(2 * self.broker.net.latency)
        if not self.proc.alive:
            return False
        try:
            if self.conn is None or not self.conn.open:
                self.conn = self.broker.connect(self.proc)
        except BrokerUnreachable:
            self.taken = False
            return False
        self.taken = self.broker.declare(self.name, durable=False, exclusive=self.conn) is None
        return not self.taken

    async def token(self) -> int | None:
        """A fencing token (see :meth:`~.lease.Lease.token`): the count of a durable queue after one more message."""
        from schedlab.services.lease import tokens_queue

        await self.proc.rt.sleep(4 * self.broker.net.latency)  # declare, publish and confirm, declare again
        if not self.proc.alive or not self.broker.reachable(self.proc.host):
            return None
        return self.broker.tally(tokens_queue(self.name))

    async def release(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.drop()
