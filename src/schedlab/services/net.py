"""The network transport: HTTP for the synchronous calls, RabbitMQ for everything asynchronous.

As in the Megha paper's prototype (Section V-D):

* **HTTP** carries launch and preemption requests (GM → LM), task launches
  and kills (LM → worker host) and worker hosts' beacons (host → LM: a
  broker outage must not look like dead hosts). A request is answered synchronously: whatever the
  receiver sends back to the requester while handling it — a
  :class:`~schedlab.schedulers.megha.messages.LaunchRejected`, a piggybacked
  :class:`~schedlab.schedulers.megha.messages.StateUpdate` — travels in the
  HTTP response. Messages queued for one peer go in one POST (a JSON list of
  envelopes), in order, so a busy GM does not pay one round trip per request.
* **RabbitMQ** (aio-pika) carries LM state updates (heartbeats), fair
  sharing's holdings reports, task completions, job submission and the run
  records clients collect. Each
  component consumes its own queue, ``<cluster>.<kind>.<index>`` (e.g.
  ``demo.gm.0``); messages are published, in order, to the default exchange.

aiohttp serves and sends HTTP: one mature asyncio package for both ends, with
connection keep-alive, a request-size limit and few dependencies (the
alternative, starlette + uvicorn + httpx, is three).

Which way a message goes depends only on its type (:data:`HTTP_TYPES`) and
whether its destination is hosted in this process (then it is delivered on
the next loop turn, like the in-process transport).

**Order on the LM → GM link.** The decision code assumes what the simulator
gives it: messages from one component to another arrive in the order they
were sent. An LM reaches a GM by two channels — state updates through
RabbitMQ, rejections and piggybacked state in HTTP responses — which can
overtake each other; and with delta updates, an old update applied after a
newer one makes the GM believe a stale state that no later delta corrects (a
task then waits for good for a worker it believes busy). So every message on
that link carries ``seq = (sender incarnation, number)`` and the GM side
delivers them in order (:class:`InOrder`), holding back one that arrives
early until the gap closes — or, if a message was lost, until
:data:`GAP_TIMEOUT` has passed (counted as ``gaps_skipped``). A message lost
for good — a state update still queued in the broker when it restarted (state
updates are not persistent) — would leave a GM's view stale where that delta
changed it, so a GM whose link skipped a gap asks that LM for its whole state
(``Recover``, :mod:`~.recovery`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from schedlab.services.auth import AuthError, Signer, Verifier
from schedlab.services.clusterfile import LoadedCluster
from schedlab.services.runtime import Address, AsyncRuntime
from schedlab.services.wire import Codec, Frame, WireError, address_str
from schedlab.workers.protocol import POOL_ADDRESS

log = logging.getLogger("schedlab.services.net")

HTTP_TYPES = frozenset({"LaunchRequest", "PreemptRequest", "LaunchBatch", "LaunchTask", "KillTask", "HostAlive", "Recover", "Resolve",
                        "HostState"})
HTTP_PATH = "/v1/message"
HTTP_TIMEOUT = 10.0
HTTP_RETRIES = 5
GAP_TIMEOUT = 2.0
STALE_REQUEST = "stale request"  # the start of a 409's text: a request refused unread because it is too old (links)
ORDERED_LINKS = frozenset({("lm", "gm")})  # (sender kind, receiver kind) delivered in send order


ACK_EVERY = 0.005  # seconds: handled messages are acknowledged together
# Broker messages that need not survive a broker restart: a lost state update or beacon is
# superseded by the next one. Everything else (jobs, completions, losses, holdings, records) is
# persistent in durable queues.
TRANSIENT_TYPES = frozenset({"StateUpdate", "HostAlive"})
RUN_QUEUE_EXPIRES_MS = 600_000  # a client's run queue outlives a broker restart, not a dead client (10 min)


def _modes() -> dict[bool, Any]:
    import aio_pika  # aio-pika loads only when a broker is used (cluster status goes without)

    return {True: aio_pika.DeliveryMode.PERSISTENT, False: aio_pika.DeliveryMode.NOT_PERSISTENT}


class _LazyModes(dict):
    def __missing__(self, key: bool) -> Any:
        self.update(_modes())
        return self[key]


_MODES: dict[bool, Any] = _LazyModes()


def _message(body: bytes, persistent: bool) -> Any:
    import aio_pika  # (idem)

    return aio_pika.Message(body, delivery_mode=_MODES[persistent])


def _log_ack_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("acknowledgement failed: %s", task.exception())


class BrokerUnreachable(Exception):
    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


class Directory:
    """Where each address of a cluster lives: URLs of LMs and worker hosts, queue names of the rest."""

    def __init__(self, loaded: LoadedCluster, role: str | None = None) -> None:
        spec = loaded.spec
        self.name = spec.name
        # a GM reaches an LM at its gm_url when the cluster file gives one (a proxy, another network)
        self.urls: dict[Address, str] = {("lm", lm.id): (lm.gm_url if role == "gm" and lm.gm_url else lm.url) for lm in spec.lms}
        self.urls.update({("host", h.id): h.url for _lm, h in spec.hosts()})
        self.urls.update({("gm", g.id): g.url for g in spec.gms})

    def url(self, dst: Address) -> str | None:
        return self.urls.get(dst)

    def queue(self, dst: Address) -> str:
        if isinstance(dst, tuple):
            return f"{self.name}.{dst[0]}.{dst[1]}"
        return f"{self.name}.{dst}"


class AmqpLink:
    """One RabbitMQ connection: consumers for this process's queues, an ordered publisher.

    With a ``signer`` every published message carries its authentication
    headers (:mod:`~.auth`); with a ``verifier`` every consumed message is
    checked first, and one that fails goes to ``on_refused(error)`` instead of
    its consumer (and is acknowledged: a stranger's message is not retried).
    """

    def __init__(self, url: str, signer: Signer | None = None, verifier: Verifier | None = None,
                 on_refused: Callable[[AuthError], None] | None = None) -> None:
        self.url = url
        self.signer = signer
        self.verifier = verifier
        self.on_refused = on_refused
        self.connection: Any = None
        self.channel: Any = None
        self._out: asyncio.Queue[tuple[str, bytes, Any] | None] = asyncio.Queue()
        self._publisher: asyncio.Task | None = None
        self.published = 0
        self.publish_errors = 0  # messages given up (only when closing during an outage)
        self.publish_retries = 0
        self._outage: float | None = None
        self._closing = False
        self.queues: dict[str, Any] = {}
        self._to_ack: Any = None  # the latest message handled and not yet acknowledged
        # a service: acknowledge only once what handling caused has reached the broker — at_flush(fn) runs fn when
        # the service's pending output (its run records) is handed to the publisher (:class:`~.node.RecordsPublisher`)
        self.at_flush: Callable[[Callable[[], None]], None] | None = None

    async def connect(self, timeout: float = 5.0) -> None:
        import aio_pika  # (idem)

        # aio-pika logs a failed first attempt itself; the caller reports it in one line instead
        quiet = [logging.getLogger(n) for n in ("aio_pika", "aiormq")]
        levels = [lg.level for lg in quiet]
        for lg in quiet:
            lg.setLevel(logging.CRITICAL)
        try:
            self.connection = await asyncio.wait_for(aio_pika.connect_robust(self.url, timeout=timeout), timeout)
        except TimeoutError:
            raise BrokerUnreachable(self.url, f"cannot connect: no answer within {timeout:g} s") from None
        except Exception as e:  # aio-pika/aiormq raise their own classes for refused connections, logins, vhosts
            raise BrokerUnreachable(self.url, f"cannot connect: {str(e).strip() or type(e).__name__}") from None
        finally:
            for lg, level in zip(quiet, levels, strict=True):
                lg.setLevel(level)
        self.channel = await self.connection.channel()
        await self.channel.set_qos(prefetch_count=256)
        self._publisher = asyncio.get_running_loop().create_task(self._publish_loop())

    async def consume(self, queue: str, on_body: Callable[[bytes], None], *, durable: bool = True, exclusive: bool = False) -> int:
        """Deliver every message of ``queue`` to ``on_body``; returns how many were waiting in it.

        A service's queue is durable and its messages are acknowledged once
        handled (a service that dies before that gets them again when it comes
        back; the handlers take a message twice without harm). A client's own
        run queue (``exclusive``) is durable too — it must outlive a broker
        restart — but expires 10 minutes after its client stops consuming; it is
        consumed without acknowledgements, which would only cost the client time.
        """
        if exclusive:  # a client's run records: kept through a broker restart, expired if the client is gone
            q = await self.channel.declare_queue(queue, durable=True, arguments={"x-expires": RUN_QUEUE_EXPIRES_MS})
        else:
            q = await self.channel.declare_queue(queue, durable=durable)
        if exclusive:

            async def on_message(message: Any) -> None:
                body = self._authentic(message)
                if body is not None:
                    on_body(body)

            self.queues[queue] = (q, await q.consume(on_message, no_ack=True))
            return 0

        # Acknowledged in batches — one ack for everything handled on the channel in a few
        # milliseconds — after the handler ran (what was handled but not yet acknowledged when a
        # service dies comes again; the faults work makes the handlers idempotent). Delivery tags
        # are per channel, so one tracker serves every queue of the channel: handlers run in
        # delivery order, and a "multiple" ack of the latest covers exactly what was handled.
        async def on_ack_message(message: Any) -> None:
            body = self._authentic(message)
            if body is not None:
                on_body(body)
            if self._to_ack is None:
                if self.at_flush is not None:
                    self.at_flush(self._ack_when_published)
                else:
                    asyncio.get_running_loop().call_later(ACK_EVERY, self._ack_handled)
            self._to_ack = message

        self.queues[queue] = (q, await q.consume(on_ack_message))
        return int(getattr(q.declaration_result, "message_count", 0) or 0)

    async def consume_transient(self, queue: str, on_body: Callable[[bytes], None]) -> None:
        """Deliver ``queue``'s messages to ``on_body``, the queue this connection's alone and deleted with it
        (exclusive, auto-deleted, not durable: a dashboard's live figures, :mod:`~.live`). Another consumer
        holding it raises aio-pika's ``ChannelLockedResource``."""

        async def on_message(message: Any) -> None:
            body = self._authentic(message)
            if body is not None:
                on_body(body)

        q = await self.channel.declare_queue(queue, durable=False, exclusive=True, auto_delete=True)
        self.queues[queue] = (q, await q.consume(on_message, no_ack=True))

    async def consume_held(self, queue: str, on_message: Callable[[bytes, bool, Any], None]) -> None:
        """Deliver every message of the durable ``queue`` as ``on_message(body, redelivered, message)``, on a
        channel of its own with no prefetch limit, and leave its acknowledgement to the consumer
        (:meth:`ack`) — a GM's jobs, acknowledged when they are done (:mod:`~.recovery`).

        A message that fails authentication is acknowledged at once (a stranger's is not retried).
        """
        channel = await self.connection.channel()
        await channel.set_qos(prefetch_count=0)  # a GM holds every job it has not finished
        q = await channel.declare_queue(queue, durable=True)

        async def on_raw(message: Any) -> None:
            body = self._authentic(message)
            if body is None:
                self.ack(message)
                return
            on_message(body, bool(message.redelivered), message)

        self.queues[queue] = (q, await q.consume(on_raw))

    def ack(self, message: Any) -> None:
        """Acknowledge one message of :meth:`consume_held` (a failure — the channel closed by a broker
        restart — is harmless: the broker delivers the message again and the consumer recognises it)."""
        task = asyncio.get_running_loop().create_task(message.ack())
        task.add_done_callback(_log_ack_failure)

    def _authentic(self, message: Any) -> bytes | None:
        """The message's body if it is authentic (always, without a verifier), else None (reported)."""
        if self.verifier is None:
            return message.body
        try:
            return self.verifier.unframe(message.body, fresh=not message.redelivered)[1]
        except AuthError as e:
            if self.on_refused is not None:
                self.on_refused(e)
            return None

    def _ack_when_published(self) -> None:
        """Everything handled so far has put its output in the publish queue: acknowledge it once that is
        confirmed (a service killed before then gets the messages again — its output may be lost, not its input)."""
        last, self._to_ack = self._to_ack, None
        if last is not None:
            self.when_published(lambda: self._ack_now(last))

    def _ack_now(self, message: Any) -> None:
        task = asyncio.get_running_loop().create_task(message.ack(multiple=True))
        task.add_done_callback(_log_ack_failure)

    def _ack_handled(self) -> None:
        last, self._to_ack = self._to_ack, None
        if last is not None:
            self._ack_now(last)

    def publish(self, queue: str, body: bytes, persistent: bool = False) -> None:
        self._out.put_nowait((queue, body, persistent))

    def when_published(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once everything published so far is confirmed by the broker."""
        self._out.put_nowait(("", b"", fn))

    async def _publish_loop(self) -> None:
        """Publish in order, one message after the other (the broker confirms each).

        While the broker is away (restarting, unreachable) the message waits and
        is tried again with a growing pause — nothing queued is dropped — while
        aio-pika's robust connection reconnects and restores the consumers. Each
        try is signed afresh (a long outage would otherwise make it stale).
        """
        while True:
            item = await self._out.get()
            if item is None:
                return
            queue, body, persistent = item
            if callable(persistent):  # when_published: everything before it is confirmed
                try:
                    persistent()
                except Exception as e:
                    log.error("after publishing: %s: %s", type(e).__name__, e)
                continue
            delay = 0.05
            while True:
                try:
                    data = body if self.signer is None else self.signer.frame(body)
                    await self.channel.default_exchange.publish(_message(data, persistent), routing_key=queue)
                    self.published += 1
                    if self._outage is not None:
                        log.warning("broker back after %.1f s: publishing again", time.monotonic() - self._outage)
                        self._outage = None
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    self.publish_retries += 1
                    if self._outage is None:
                        self._outage = time.monotonic()
                        log.warning("publish to %s failed (%s): holding messages until the broker is back", queue, e)
                    if self._closing:
                        self.publish_errors += 1
                        break
                    await asyncio.sleep(delay)
                    delay = min(2 * delay, 2.0)

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait until everything queued so far has been published."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not self._out.empty() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.005)

    async def delete_queues(self, names: list[str]) -> None:
        for name in names:
            consumed = self.queues.pop(name, None)
            if consumed is not None:  # stop consuming first: the broker would cancel us with a warning
                q, tag = consumed
                with contextlib.suppress(Exception):
                    await q.cancel(tag)
            try:
                await self.channel.queue_delete(name)
            except Exception as e:  # already gone
                log.debug("queue %s: %s", name, e)

    async def close(self) -> None:
        self._closing = True
        if self._publisher is not None:
            await self.drain(2.0)
            self._out.put_nowait(None)
            try:
                await asyncio.wait_for(self._publisher, 2.0)
            except (TimeoutError, asyncio.CancelledError):
                self._publisher.cancel()
        if self.connection is not None:
            await self.connection.close()


class InOrder:
    """Delivers each sender's sequenced messages in order; a gap waits at most ``GAP_TIMEOUT`` seconds."""

    def __init__(self, counters: dict[str, int]) -> None:
        self.counters = counters
        self.links: dict[tuple[Any, Any], list] = {}  # (src, dst) -> [incarnation, expected, {n: deliver}, timer]
        # on_gap(src, dst): a gap timed out — a message of the link is lost for good (a state update queued in the
        # broker when it restarted: those are not persistent), so the receiver should ask for the sender's state
        self.on_gap: Callable[[Any, Any], None] | None = None

    def accept(self, src: Any, dst: Any, seq: tuple[int, int] | None, deliver: Callable[[], None]) -> None:
        if seq is None:
            deliver()
            return
        incarnation, n = seq
        key = (src, dst)
        st = self.links.get(key)
        if st is None or st[0] != incarnation:
            if st is not None:  # the sender restarted: what it sent before comes first
                self._flush(key, skip=True)
            # a sender numbers each link from 1: start there, not at the first number seen — the first
            # to arrive may have overtaken earlier ones (an HTTP reply beating a broker message)
            st = self.links[key] = [incarnation, 1, {}, None, set()]  # [.., skipped numbers]
        if n < st[1]:
            if n in st[4]:  # skipped when its gap timed out: late, deliver it now
                st[4].discard(n)
                self.counters["late_after_gap"] += 1
                deliver()
            else:  # delivered already (the broker redelivers what was not acknowledged when a link dropped)
                self.counters["duplicates_dropped"] += 1
            return
        st[2][n] = deliver
        self._drain(st)
        if st[2] and st[3] is None:
            st[3] = asyncio.get_running_loop().call_later(GAP_TIMEOUT, self._gap_timed_out, key)
        elif not st[2] and st[3] is not None:
            st[3].cancel()
            st[3] = None

    def restart_at(self, src: Any, dst: Any, seq: tuple[int, int]) -> None:
        """The receiver restarted and ``seq`` answers its first question to ``src``: the link continues from
        there; anything numbered before it was sent to its predecessor and is dropped when it comes.

        Only a first answer restarts the link: the receiver has no state for the sender's incarnation yet
        (a new process, or a sender that restarted or was taken over). A later answer of the same incarnation
        — a running GM asking again after a gap timed out (``on_gap``) — leaves the link as it is: what was
        numbered before it was sent to this very receiver, and some of it says what the answer does not (a
        launch rejected, a task finished); it is delivered, late if its gap was skipped. (Dropping it lost
        tasks under overload: a dropped ``LaunchRejected`` left its tasks with their GM for ever.)"""
        incarnation, n = seq
        key = (src, dst)
        st = self.links.get(key)
        if st is None or st[0] != incarnation:
            self.links[key] = [incarnation, n, {}, None, set()]

    def _drain(self, st: list) -> None:
        held = st[2]
        while st[1] in held:
            held.pop(st[1])()
            st[1] += 1

    def _gap_timed_out(self, key: tuple[Any, Any]) -> None:
        if self._flush(key, True) and self.on_gap is not None:
            self.on_gap(*key)

    def _flush(self, key: tuple[Any, Any], skip: bool) -> int:
        """Deliver what is held, skipping the gaps; returns how many numbers were skipped."""
        st = self.links.get(key)
        if st is None:
            return 0
        if st[3] is not None:
            st[3].cancel()
            st[3] = None
        held = st[2]
        gaps = 0
        while held:
            first = min(held)
            gaps += first - st[1]
            self.counters["gaps_skipped"] += first - st[1]
            skipped = st[4]
            skipped.update(range(st[1], first))
            if len(skipped) > 100_000:  # bounded: the oldest gaps are given up
                for n in sorted(skipped)[: len(skipped) - 100_000]:
                    skipped.discard(n)
            st[1] = first
            self._drain(st)
        return gaps


class _Capture:
    """Replies to the sender of the HTTP request being handled go into its response."""

    __slots__ = ("dst", "frames")

    def __init__(self, dst: Address) -> None:
        self.dst = dst
        self.frames: list[dict] = []


class LocalBus:
    """Services sharing one process (``cluster up --embedded``): their messages skip sockets and the broker.

    A message between two of them still goes through its wire form (the
    sender's codec attaches the task descriptions, the receiver's files them
    in its own store), is delivered on a later loop turn, and a request is
    answered as over HTTP — only the socket is gone.
    """

    def __init__(self, expected: set | None = None) -> None:
        self.routes: dict[Address, NetTransport] = {}
        # every address that will join (all of a cluster file's components): a message to one not started yet
        # waits for it rather than taking a socket
        self.expected: set = expected or set()


class NetTransport:
    """Routes every message of one process: locally, over HTTP, or through RabbitMQ."""

    def __init__(self, identity: str, directory: Directory, codec: Codec, amqp: AmqpLink | None, bus: LocalBus | None = None,
                 secret: str | None = None) -> None:
        self.identity = identity
        self.signer = None if secret is None else Signer(secret, identity)
        # an LM: the current incarnation of a destination that is one of its worker hosts (Any: it looks inside addresses)
        self.incarnation_of: Callable[[Any], int | None] | None = None
        # a GM: told of requests that got no answer — on_undelivered(dst, messages, outcome) (:mod:`~.links`)
        self.on_undelivered: Callable[[Address, list[Any], str], None] | None = None
        # a GM: the time its request was first sent (stamped in the envelope; every retry carries it)
        self.sent_of: Callable[[Any], float] | None = None
        self.tries: dict[str, tuple[float, int]] = {}  # destination kind -> (timeout per try, tries); default HTTP_*
        self._launches = 0
        self.verifier = None if secret is None else Verifier(secret)
        self.directory = directory
        self.codec = codec
        self.amqp = amqp
        self.local: dict[Address, AsyncRuntime] = {}
        self.capture: _Capture | None = None
        self._http_out: dict[str, list[tuple[dict, Any, Address]]] = defaultdict(list)  # url -> (envelope, message, dst)
        self._senders: dict[str, asyncio.Task] = {}
        self._wake: dict[str, asyncio.Event] = {}
        self.session: Any = None
        self.counters: dict[str, int] = defaultdict(int)
        self.in_order = InOrder(self.counters)
        self.bus = bus
        self.incarnation = secrets.randbits(31)
        self._next_seq: dict[Address, int] = defaultdict(int)
        self._kind = identity.partition(":")[0]

    def _seq(self, dst: Address) -> tuple[int, int] | None:
        if isinstance(dst, tuple) and (self._kind, dst[0]) in ORDERED_LINKS:
            self._next_seq[dst] += 1
            return (self.incarnation, self._next_seq[dst])
        return None

    def bind(self, address: Address, runtime: AsyncRuntime) -> None:
        self.local[address] = runtime
        if self.bus is not None and address != POOL_ADDRESS:
            self.bus.routes[address] = self

    def send(self, dst: Address, msg: Any) -> None:
        cap = self.capture
        if cap is not None and dst == cap.dst:
            cap.frames.append(self.codec.envelope(self.identity, dst, msg, self._seq(dst)))
            return
        rt = self.local.get(dst)
        if rt is not None:
            rt.loop.call_soon(rt.deliver, dst, msg)
            return
        peer = None if self.bus is None else self.bus.routes.get(dst)
        if peer is None and self.bus is not None and dst in self.bus.expected:
            asyncio.get_running_loop().call_later(0.01, self.send, dst, msg)  # its component is still starting
            return
        if peer is not None:
            env = self.codec.envelope(self.identity, dst, msg, self._seq(dst))
            asyncio.get_running_loop().call_soon(peer._from_bus, env, self)
            return
        name = msg.__class__.__name__
        if name in HTTP_TYPES:
            url = self.directory.url(dst)
            if url is None:
                raise KeyError(f"no HTTP endpoint for {dst!r}")
            env = self.codec.envelope(self.identity, dst, msg)
            if self.sent_of is not None and name in ("LaunchRequest", "PreemptRequest"):
                env["sent"] = self.sent_of(msg)
            if self.incarnation_of is not None:
                inc = self.incarnation_of(dst)
                if inc is not None:  # stamped now: a retry must not reach a process that started since
                    env["inc"] = inc
                if name in ("LaunchBatch", "LaunchTask"):  # a retry repeats it; a relaunch is a new launch
                    self._launches += 1
                    env["bid"] = self.incarnation << 32 | self._launches
            self._http_out[url].append((env, msg, dst))
            self._kick(url)
            return
        if self.amqp is None:
            raise KeyError(f"{name} to {dst!r} needs the broker, and this process has none")
        data = self.codec.encode(self.identity, dst, msg, self._seq(dst))
        self.amqp.publish(self.directory.queue(dst), data, persistent=name not in TRANSIENT_TYPES)

    # -- HTTP client ------------------------------------------------------------------------------
    def _kick(self, url: str) -> None:
        ev = self._wake.get(url)
        if ev is None:
            ev = self._wake[url] = asyncio.Event()
            self._senders[url] = asyncio.get_running_loop().create_task(self._http_sender(url, ev))
        ev.set()

    async def _http_sender(self, url: str, wake: asyncio.Event) -> None:
        import aiohttp  # aiohttp only to send over HTTP (cluster down goes without)

        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=HTTP_TIMEOUT))
        target = url + HTTP_PATH
        while True:
            await wake.wait()
            wake.clear()
            while self._http_out[url]:
                items = self._http_out[url]
                self._http_out[url] = []
                body = json.dumps([env for env, _m, _d in items], separators=(",", ":")).encode()
                timeout, tries = self.tries.get(items[0][2][0] if isinstance(items[0][2], tuple) else "", (HTTP_TIMEOUT, HTTP_RETRIES))
                replies, outcome = await self._post(target, body, len(items), timeout, tries)
                for env in replies:
                    self._deliver_reply(env)
                if outcome in ("stale", "unreachable") and self.on_undelivered is not None:
                    self._undelivered(items, outcome)
                    if outcome == "unreachable":  # what waited behind it was never sent: certainly not acted on
                        waiting, self._http_out[url] = self._http_out[url], []
                        if waiting:
                            self._undelivered(waiting, "unsent")

    def _undelivered(self, items: list[tuple[dict, Any, Address]], outcome: str) -> None:
        per_dst: dict[Any, list[Any]] = {}
        for _env, msg, dst in items:
            per_dst.setdefault(dst, []).append(msg)
        on_undelivered = self.on_undelivered
        assert on_undelivered is not None  # the only caller checked it, and nothing ran since
        for dst, msgs in per_dst.items():
            try:
                on_undelivered(dst, msgs, outcome)
            except Exception as e:  # a bug in the handler must not stop this link's sender
                log.error("handling undelivered messages to %r: %s: %s", dst, type(e).__name__, e)

    async def _post(self, target: str, body: bytes, n: int, timeout: float = HTTP_TIMEOUT, tries: int = HTTP_RETRIES) -> tuple[list, str]:
        """POST ``body``: ``(replies, outcome)``, outcome ``ok``, ``stale`` (the peer refused it unread as too
        old), ``refused`` (any other 4xx) or ``unreachable`` (no answer after ``tries`` tries)."""
        import aiohttp  # aiohttp only to send over HTTP (cluster down goes without)

        delay = 0.05
        for attempt in range(tries):
            try:
                headers = {"Content-Type": "application/json"}
                if self.signer is not None:  # a retry is a new message: a fresh time and nonce
                    headers.update(self.signer.headers(body))
                async with self.session.post(target, data=body, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                    text = await resp.read()
                    if resp.status == 200:
                        if self.verifier is not None:
                            try:
                                self.verifier.verify(resp.headers, text)
                            except AuthError as e:  # not our peer's answer: its replies are not applied
                                self.counters["http_replies_refused"] += 1
                                log.error("%s: reply refused (%s)", target, e)
                                return [], "refused"
                        self.counters["http_requests"] += 1
                        return json.loads(text).get("replies", []), "ok"
                    if resp.status == 409 and text.startswith(STALE_REQUEST.encode()):  # a slow link: refused unread
                        self.counters["http_stale"] += n
                        return [], "stale"
                    # refused by the peer: a bug or a mismatch of cluster files; retrying cannot help
                    self.counters["http_refused"] += n
                    log.error("%s refused %d message(s): %d %s", target, n, resp.status, text[:200].decode(errors="replace"))
                    return [], "refused"
            except (aiohttp.ClientError, TimeoutError, OSError) as e:
                self.counters["http_retries"] += 1
                if attempt == tries - 1:
                    self.counters["http_lost"] += n
                    log.error("%s unreachable, %d message(s) undelivered: %s", target, n, str(e) or type(e).__name__)
                    return [], "unreachable"
                await asyncio.sleep(delay)
                delay *= 2
        return [], "unreachable"

    def _deliver_reply(self, env: dict) -> None:
        try:
            src, dst, msg, tasks, seq, _inc = self.codec.decode_frames(json.dumps([env]).encode())[0]
        except WireError as e:
            self.counters["bad_replies"] += 1
            log.error("bad reply: %s", e.reason)
            return
        self.codec.file(tasks)
        rt = self.local.get(dst)
        if rt is None:
            self.counters["misrouted_replies"] += 1
            return
        if seq is not None and msg.__class__.__name__ == "Recovered":
            self.in_order.restart_at(src, dst, seq)
        self.in_order.accept(src, dst, seq, lambda: rt.deliver(dst, msg))

    def _from_bus(self, env: dict, sender: NetTransport) -> None:
        try:
            frame = self.codec.decode_envelope(env)
        except WireError as e:  # a bug: the sender's own codec wrote it
            self.counters["bad_bus_messages"] += 1
            log.error("bad message from %s: %s", sender.identity, e.reason)
            return
        if frame[2].__class__.__name__ in HTTP_TYPES:
            for reply in self.handle_frames([frame]):
                sender._deliver_reply(reply)
            return
        src, dst, msg, tasks, seq, _inc = frame
        self.codec.file(tasks)
        self.receive(src, dst, msg, seq)

    def receive(self, src: Any, dst: Any, msg: Any, seq: tuple[int, int] | None) -> None:
        """A message that came in from the broker, for a component of this process."""
        rt = self.local[dst]
        self.in_order.accept(src, dst, seq, lambda: rt.deliver(dst, msg))

    # -- HTTP server side -----------------------------------------------------------------------
    def handle_frames(self, frames: list[Frame]) -> list[dict]:
        """Deliver a request's messages now; return what the handlers sent back to the requester."""
        replies: list[dict] = []
        for src, dst, msg, tasks, _seq, _inc in frames:
            self.codec.file(tasks)
            rt = self.local[dst]
            self.capture = cap = _Capture(src)
            try:
                rt.deliver(dst, msg)
            finally:
                self.capture = None
            replies.extend(cap.frames)
        return replies

    async def close(self) -> None:
        for task in self._senders.values():
            task.cancel()
        if self.session is not None:
            await self.session.close()
            self.session = None


def identity_of(addr: Address) -> str:
    return address_str(addr)
