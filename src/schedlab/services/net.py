"""The real network: HTTP with aiohttp and RabbitMQ with aio-pika, under the services' routing.

:mod:`~.transport` decides where each message goes and holds everything the
protocol depends on (request queues, retries, outcomes, ordering); this module
is the IO it runs on in a real process:

* :class:`AioHttpPort` posts a request — a JSON list of envelopes, signed
  (:mod:`~.auth`) — and checks the signature of the answer;
* :class:`AmqpLink` is one RabbitMQ connection: consumers for this process's
  queues (acknowledged once their output is in the broker: :mod:`~.acks`) and
  an ordered publisher with confirms that holds messages while the broker is
  away;
* :class:`AmqpFrames` is the broker port of a service: envelopes in, frames
  out.

aiohttp serves and sends HTTP: one mature asyncio package for both ends, with
connection keep-alive, a request-size limit and few dependencies (the
alternative, starlette + uvicorn + httpx, is three).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from schedlab.services.acks import Acknowledger, AcksAfterOutput
from schedlab.services.auth import FRAME, AuthError, Signer, Verifier
from schedlab.services.clusterfile import LoadedCluster
from schedlab.services.runtime import Address
from schedlab.services.stepcosts import StepCosts
from schedlab.services.transport import REPLY_REFUSED, Frame, Unreachable
from schedlab.services.wire import Codec, WireError

log = logging.getLogger("schedlab.services.net")

HTTP_PATH = "/v1/message"
UNCONFIRMED_WARNING = 5.0  # seconds a publish may wait for its confirm before the link says it is holding messages
UNCONFIRMED_RESEND = 10.0  # seconds after which an unconfirmed publish is sent again on a fresh channel (see _publish_loop)
PUBLISH_WINDOW = 256  # publishes in flight at once, their confirms awaited together (see _publish_loop)
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


@contextlib.contextmanager
def quiet_amqp_logs() -> Iterator[None]:
    """aio-pika and aiormq log failed connection attempts themselves; where a failure is expected or reported
    by the caller in one line, they are silenced meanwhile."""
    quiet = [logging.getLogger(n) for n in ("aio_pika", "aiormq")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(quiet, levels, strict=True):
            lg.setLevel(level)


def quiet_client_logs() -> None:
    """A client command (submit, chaos, jobs, status …) says in one line of its own what happens to its broker
    links (``broker connection … lost: connecting to another broker``, ``broker back after …``): the libraries'
    own logs of the same events — aiormq's tracebacks of a connection reset when a broker node dies — are
    silenced for the process (a service's log, ``serve``, keeps them)."""
    for name in ("aio_pika", "aiormq"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _host_port(url: str) -> str:
    """A broker URL's host:port (no user, no password), for messages."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 5672}"


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
        # a GM reaches an LM at its gm_url when the cluster file gives one (a proxy, another network); an LM with a
        # standby elsewhere at either of its two addresses (the router fails over: transport)
        self.urls: dict[Address, str | tuple[str, ...]] = {
            ("lm", lm.id): (lm.gm_url if role == "gm" and lm.gm_url else lm.url) for lm in spec.lms}
        for lm in spec.lms:
            if lm.standby is not None:
                self.urls[("lm", lm.id)] = (str(self.urls[("lm", lm.id)]), lm.standby.url)
        self.urls.update({("host", h.id): h.url for _lm, h in spec.hosts()})
        self.urls.update({("gm", g.id): g.url for g in spec.gms})

    def url(self, dst: Address) -> str | tuple[str, ...] | None:
        return self.urls.get(dst)

    def queue(self, dst: Address) -> str:
        if isinstance(dst, tuple):
            return f"{self.name}.{dst[0]}.{dst[1]}"
        return f"{self.name}.{dst}"


class AmqpLink(AcksAfterOutput):
    """One RabbitMQ connection: consumers for this process's queues, an ordered publisher.

    With a ``signer`` every published message carries its authentication
    headers (:mod:`~.auth`); with a ``verifier`` every consumed message is
    checked first, and one that fails goes to ``on_refused(error)`` instead of
    its consumer (and is acknowledged: a stranger's message is not retried).

    **Several brokers** (the members of one RabbitMQ cluster, ``urls``): the
    link connects to the first that answers and, when its connection is lost
    (its node killed, restarted, cut off), to the next that answers — our own
    loop over the URLs, not aio-pika's robust connection, which only ever
    reconnects to the one URL it was given. Each consumer is registered once
    and declared and consumed again on every new connection; the publisher
    holds its messages meanwhile. Publishes go out on a channel of their own,
    replaced after a nack (:meth:`_publish_channel` says why: a quorum queue's
    leader killed made RabbitMQ nack a channel's publishes until that member
    was back). What was delivered on the lost connection
    and not acknowledged the broker delivers again (the handlers take a
    message twice without harm); acknowledgements meant for the lost channel
    are dropped with it.

    **Queue types** (``quorum``): on a cluster of three brokers or more every
    durable queue is a quorum queue (``x-queue-type: quorum``: Raft-replicated
    on every member, so the loss of one member loses no message and stops no
    queue); a lone broker keeps classic durable queues. Quorum queues are
    always durable and never exclusive; they store every message on disk
    whatever its delivery mode (so a "transient" state update there survives
    a restart too: harmless, a later one supersedes it). What stays classic:
    the dashboard's live queue (exclusive, auto-deleted, declared again on
    each connection: figures, not facts) and an LM's lease (exclusive, see
    :mod:`~.lease`).
    """

    def __init__(self, url: str | Sequence[str], signer: Signer | None = None, verifier: Verifier | None = None,
                 on_refused: Callable[[AuthError], None] | None = None, *, quorum: bool = False,
                 heartbeat: int | None = None) -> None:
        self.urls = [url] if isinstance(url, str) else list(url)
        # the AMQP heartbeat asked for (None: the broker's, 60 s); an LM whose standby serves elsewhere asks the
        # lease's, so that the broker gives back what a frozen or vanished process holds as soon as its lease goes
        self.heartbeat = heartbeat
        if not self.urls:
            raise ValueError("no broker URL")
        self.url = self.urls[0]  # the broker of the current connection
        self.quorum = quorum
        self.failovers = 0  # connections replaced after a loss
        self._subs: dict[str, Callable[[], Awaitable[Any]]] = {}  # each consumed queue's (re)declaration, run on every connection
        self._reconnecting: asyncio.Task | None = None
        self._connected: asyncio.Event | None = None  # set while connected: a held publish waits on it, not a full pause
        self.signer = signer
        self.verifier = verifier
        self.on_refused = on_refused
        self.connection: Any = None
        self.channel: Any = None  # consumers and declarations
        self._pub: Any = None  # the publisher's own channel (see _publish_channel)
        self._pub_on: Any = None  # the connection it belongs to
        self.publish_nacks = 0
        self._telling: asyncio.Task | None = None
        self._out: asyncio.Queue[tuple[str, bytes, Any] | None] = asyncio.Queue()
        self._in_flight = 0  # publishes taken from _out and not confirmed yet
        self._acks: set[asyncio.Task] = set()  # acknowledgements running
        self._closed = False
        self.step_clock: Callable[[], float] | None = None  # set where messages' handling is measured (stepcosts)
        self.checked_in = 0.0  # seconds the last message's authentication took (with a step_clock)
        self._checked_body = b""  # the last authentic message as it came (its credentials line: signed_time)
        self._publisher: asyncio.Task | None = None
        self.published = 0
        self.publish_errors = 0  # messages given up (only when closing during an outage)
        self.publish_retries = 0
        self._outage: float | None = None
        self._closing = False
        self.queues: dict[str, Any] = {}
        # a service: acknowledge only once what handling caused has reached the broker (acks); its records
        # publisher sets ``at_flush``
        self.acks = Acknowledger(self._ack_now, self.when_published, self._call_later)

    @staticmethod
    def _call_later(delay: float, fn: Callable[..., Any], *args: Any) -> Any:
        return asyncio.get_running_loop().call_later(delay, fn, *args)

    async def connect(self, timeout: float = 5.0) -> None:
        """Connect to the first broker that answers, from a random one on — the processes of a cluster spread
        over its nodes — (BrokerUnreachable, naming each one's problem, if none does)."""
        await self._open(timeout, random.randrange(len(self.urls)))
        self._connected = asyncio.Event()
        self._connected.set()
        self._publisher = asyncio.get_running_loop().create_task(self._publish_loop())

    async def _open(self, timeout: float, first: int = 0) -> None:
        """A connection to the first of the brokers, from ``urls[first]`` on, that answers, and its channel."""
        import aio_pika  # (idem)

        problems = []
        for k in range(len(self.urls)):
            url = self.urls[(first + k) % len(self.urls)]
            try:
                with quiet_amqp_logs():  # aio-pika logs a failed attempt itself; the caller reports it in one line instead
                    asked = url if self.heartbeat is None else f"{url}{'&' if '?' in url else '?'}heartbeat={self.heartbeat}"
                    connection = await asyncio.wait_for(aio_pika.connect(asked, timeout=timeout), timeout)
            except TimeoutError:
                problems.append((url, f"cannot connect: no answer within {timeout:g} s"))
                continue
            except Exception as e:  # aio-pika/aiormq raise their own classes for refused connections, logins, vhosts
                problems.append((url, f"cannot connect: {str(e).strip() or type(e).__name__}"))
                continue
            try:
                channel = await connection.channel()
                await channel.set_qos(prefetch_count=256)
            except Exception as e:
                with contextlib.suppress(Exception):
                    await connection.close()
                problems.append((url, f"no channel: {str(e).strip() or type(e).__name__}"))
                continue
            self.url, self.connection, self.channel = url, connection, channel
            self._watch(connection)
            self._watch(channel)
            return
        if len(problems) == 1:
            raise BrokerUnreachable(*problems[0])
        raise BrokerUnreachable(problems[-1][0], f"none of the {len(problems)} brokers answered: " +
                                "; ".join(f"{_host_port(u)}: {why}" for u, why in problems))

    def _watch(self, closable: Any) -> None:
        """When ``closable`` (the connection or one of its channels) closes, :meth:`_lost` the connection."""
        connection = self.connection
        closable.close_callbacks.add(lambda *_a: self._lost(connection))

    def _lost(self, connection: Any) -> None:
        """``connection`` (or a channel of it) closed: unless we closed it, or it is an earlier one, connect again
        (to another broker first)."""
        if self._closing or self._reconnecting is not None or connection is not self.connection:
            return
        if self._connected is not None:
            self._connected.clear()
        self._reconnecting = asyncio.get_running_loop().create_task(self._reconnect(connection))

    async def _reconnect(self, old: Any) -> None:
        delay = 0.05
        at = self.urls.index(self.url) if self.url in self.urls else 0
        log.warning("broker connection to %s lost: connecting to %s", _host_port(self.url),
                    "another broker" if len(self.urls) > 1 else "it again")
        with contextlib.suppress(Exception):
            await old.close()
        try:
            while not self._closing:
                try:
                    await self._open(2.0, at + 1)
                except BrokerUnreachable:
                    await asyncio.sleep(delay)
                    delay = min(2 * delay, 1.0)
                    continue
                if not await self._restore():  # e.g. a quorum queue without its majority yet: again, later
                    with contextlib.suppress(Exception):
                        await self.connection.close()
                    await asyncio.sleep(delay)
                    delay = min(2 * delay, 1.0)
                    continue
                self.failovers += 1
                if self._connected is not None:
                    self._connected.set()
                log.warning("broker connection: now at %s", _host_port(self.url))
                return
        finally:
            self._reconnecting = None

    async def _restore(self) -> bool:
        """Declare and consume every queue again on the new connection; False if one failed (tried again on
        another connection), except a queue another connection holds exclusively (another dashboard took the
        live queue meanwhile: that one is given up, said once)."""
        for queue, sub in list(self._subs.items()):
            try:
                await sub()
            except Exception as e:
                if "locked" in str(e).lower():
                    log.warning("after reconnecting: %s is held by another connection: not consumed any more", queue)
                    self._subs.pop(queue, None)
                    continue
                log.warning("after reconnecting to %s: %s not consumed yet (%s): trying again", _host_port(self.url), queue, e)
                return False
        return True

    def _declare_args(self, arguments: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """A durable queue's arguments: quorum on a cluster (see the class)."""
        if not self.quorum:
            return arguments
        return {**(arguments or {}), "x-queue-type": "quorum"}

    async def consume(self, queue: str, on_body: Callable[[bytes], None], *, durable: bool = True, exclusive: bool = False) -> int:
        """Deliver every message of ``queue`` to ``on_body``; returns how many were waiting in it.

        A service's queue is durable and its messages are acknowledged once
        handled (a service that dies before that gets them again when it comes
        back; the handlers take a message twice without harm). A client's own
        run queue (``exclusive``) is durable too — it must outlive a broker
        restart — but expires 10 minutes after its client stops consuming; it is
        consumed with acknowledgements too: records consumed without them were
        lost when the connection dropped with some on their way to the client
        (a broker restart), which then waited for ever for a task's end (found
        by the deterministic simulation, seed 111692); a record delivered twice
        is recognised (:mod:`~.records`).
        """
        # Acknowledged in batches — one ack for everything handled on the channel in a few
        # milliseconds — after the handler ran (what was handled but not yet acknowledged when a
        # service dies comes again; the faults work makes the handlers idempotent). Delivery tags
        # are per channel, so one tracker serves every queue of the channel: handlers run in
        # delivery order, and a "multiple" ack of the latest covers exactly what was handled.
        async def on_ack_message(message: Any) -> None:
            body = self._authentic(message)
            if body is not None:
                on_body(body)
            self.acks.handled(message)

        async def subscribe() -> int:
            if exclusive:  # a client's run records: kept through a broker restart, expired if the client is gone
                args = self._declare_args({"x-expires": RUN_QUEUE_EXPIRES_MS})
            else:
                args = self._declare_args() if durable else None
            q = await self.channel.declare_queue(queue, durable=durable or exclusive, arguments=args)
            self.queues[queue] = (q, await q.consume(on_ack_message))
            return int(getattr(q.declaration_result, "message_count", 0) or 0)

        waiting = await subscribe()
        self._subs[queue] = subscribe
        return waiting

    async def consume_transient(self, queue: str, on_body: Callable[[bytes], None]) -> None:
        """Deliver ``queue``'s messages to ``on_body``, the queue this connection's alone and deleted with it
        (exclusive, auto-deleted, not durable: a dashboard's live figures, :mod:`~.live`). Another consumer
        holding it raises aio-pika's ``ChannelLockedResource``."""

        async def on_message(message: Any) -> None:
            body = self._authentic(message)
            if body is not None:
                on_body(body)

        async def subscribe() -> None:
            q = await self.channel.declare_queue(queue, durable=False, exclusive=True, auto_delete=True)
            self.queues[queue] = (q, await q.consume(on_message, no_ack=True))

        await subscribe()
        self._subs[queue] = subscribe

    async def consume_held(self, queue: str, on_message: Callable[[bytes, bool, Any], None]) -> int:
        """Deliver every message of the durable ``queue`` as ``on_message(body, redelivered, message)``, on a
        channel of its own with no prefetch limit, and leave its acknowledgement to the consumer
        (:meth:`ack`) — a GM's jobs, acknowledged when they are done (:mod:`~.recovery`).

        A message that fails authentication is acknowledged at once (a stranger's is not retried).
        """
        async def on_raw(message: Any) -> None:
            body = self._authentic(message)
            if body is None:
                self.ack(message)
                return
            on_message(body, bool(message.redelivered), message)

        async def subscribe() -> int:
            channel = await self.connection.channel()
            await channel.set_qos(prefetch_count=0)  # a GM holds every job it has not finished
            self._watch(channel)
            q = await channel.declare_queue(queue, durable=True, arguments=self._declare_args())
            self.queues[queue] = (q, await q.consume(on_raw))
            return int(getattr(q.declaration_result, "message_count", 0) or 0)

        waiting = await subscribe()
        self._subs[queue] = subscribe
        return waiting

    def ack(self, message: Any) -> None:
        """Acknowledge one message of :meth:`consume_held` (a failure — the channel closed by a broker
        restart — is harmless: the broker delivers the message again and the consumer recognises it)."""
        self._acking(message.ack())

    def _acking(self, ack: Any) -> None:
        """Run an acknowledgement; :meth:`close` lets the ones still running finish before the connection goes."""
        if self._closed:  # a timer's, after close: nothing can be acknowledged on a closed channel (and need not be)
            ack.close()
            return
        task = asyncio.get_running_loop().create_task(ack)
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)
        task.add_done_callback(_log_ack_failure)

    def _authentic(self, message: Any) -> bytes | None:
        """The message's body if it is authentic (always, without a verifier), else None (reported). With a
        ``step_clock``, the time the check took is left in ``checked_in`` for the message's decoder to count."""
        if self.verifier is None:
            return message.body
        clock = self.step_clock
        if clock is None:
            return self._checked(message)
        t0 = clock()
        body = self._checked(message)
        self.checked_in = clock() - t0
        if body is not None:
            self._checked_body = message.body
        return body

    def signed_time(self) -> float:
        """The signature time of the last authentic message (with a ``step_clock``; 0: none), read from its
        credentials line (FRAME, then the sender, the time, …) only when asked: a GM's job queue asks."""
        raw, self._checked_body = self._checked_body, b""
        with contextlib.suppress(ValueError, IndexError):
            return float(raw[len(FRAME) : raw.find(b"\n", 0, 1024)].split(b" ", 2)[1])
        return 0.0

    def _checked(self, message: Any) -> bytes | None:
        verifier = self.verifier
        assert verifier is not None  # _authentic's caller checked
        try:
            return verifier.unframe(message.body, fresh=not message.redelivered)[1]
        except AuthError as e:
            if e.reason == "stale":
                # authentic (the signature is checked first), its time off by more than the window: its sender's
                # clock is wrong. Taken and counted ("skewed"): the broker path's freshness is no boundary (its
                # redeliveries are checked for the signature only) and the handlers are idempotent, while a durable
                # message dropped here would be a task never reported (found on the testbed, a GM's clock 45 s off)
                if self.on_refused is not None:
                    self.on_refused(AuthError("skewed", f"{e.detail}; taken (a broker message)", e.sender))
                return verifier.unframe(message.body, fresh=False)[1]
            if self.on_refused is not None:
                self.on_refused(e)
            return None

    def _ack_now(self, message: Any) -> None:
        self._acking(message.ack(multiple=True))

    def publish(self, queue: str, body: bytes, persistent: bool = False, fence: bool = False) -> None:
        """Queue a publish; ``fence``: only once everything queued before it is confirmed (see _publish_loop)."""
        if fence:
            self._out.put_nowait(("", b"", _fence))
        self._out.put_nowait((queue, body, persistent))

    def when_published(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once everything published so far is confirmed by the broker."""
        self._out.put_nowait(("", b"", fn))

    async def _publish_loop(self) -> None:
        """Publish in order, a window of messages at a time, each window's confirms awaited together.

        Everything queued meanwhile (up to :data:`PUBLISH_WINDOW`) goes out at
        once on the publisher's channel, in order, and the link waits for all
        their confirms: one round trip to the broker per window, not per
        message — publishing one message after the other's confirm cost 361 µs
        of CPU a message and capped a process at about 400 publishes/s (a quorum
        queue confirms in about 1 ms), a window 135 µs and 2,700/s (measured
        2026-11-28, issue 48). ``when_published(fn)`` and a **fenced** publish end
        a window: ``fn`` runs, or the fenced message leaves, only once everything
        before is confirmed. A fence is for a message whose consumer takes it as
        proof that what was published before it is in the broker (an LM's
        ``TasksFinished`` after the records of those ends, a GM's completion log
        after its records): within a window, a quorum queue may refuse a publish
        (a nack) and accept a later one to another queue.

        While the broker is away (restarting, unreachable) the window waits and
        is tried again from its first unconfirmed message, with a growing pause —
        nothing queued is dropped — while the link connects again (to another
        broker of a cluster) and restores the consumers. Each try is signed
        afresh (a long outage would otherwise make it stale). A quorum queue that
        lost its majority (two of three members down) confirms nothing: the
        publisher waits for it, in order, and says so in one line (how many
        brokers answer). A nacked publish (never enqueued) is sent again on a
        fresh channel, and so is one left unconfirmed for
        :data:`UNCONFIRMED_RESEND` s: RabbitMQ 3.10 sends a channel's pending
        enqueues again only when a queue's leader *changes*, so a message sent to
        a leader that died with two of three members and came back as leader
        again is never confirmed on that channel (found by the two-nodes-down
        test: the client's submission held for good). Sent again, a message may
        be enqueued twice (the first copy sat in a live member's log, or a later
        message of its window was confirmed): the handlers and the client's
        records take a message twice without harm, as after a lost confirm in a
        broker restart, and ordered links put their messages back in order.
        """
        while True:
            item = await self._out.get()
            if item is None:
                return
            window = [item]
            stop = False
            while len(window) < PUBLISH_WINDOW and not self._out.empty():
                nxt = self._out.get_nowait()
                if nxt is None:
                    stop = True
                    break
                window.append(nxt)
            self._in_flight = len(window)
            run: list[tuple[str, bytes, bool]] = []
            for queue, body, persistent in window:
                if callable(persistent):  # when_published or a fence: everything before it is confirmed first
                    if run:
                        await self._publish_run(run)
                        run = []
                    try:
                        persistent()
                    except Exception as e:
                        log.error("after publishing: %s: %s", type(e).__name__, e)
                    continue
                run.append((queue, body, persistent))
            if run:
                await self._publish_run(run)
            self._in_flight = 0
            if stop:
                return

    async def _publish_run(self, run: list[tuple[str, bytes, bool]]) -> None:
        """Publish ``run`` in order and wait for every confirm; what is not confirmed is tried again, from the first
        such message on (see :meth:`_publish_loop`)."""
        loop = asyncio.get_running_loop()
        delay = 0.05
        while run:
            # a quorum queue without its majority neither confirms nor refuses: say so once it lasts
            slow = loop.call_later(UNCONFIRMED_WARNING, self._unconfirmed, run[0][0], time.monotonic())
            sends: list[asyncio.Future] = []
            error: BaseException | None = None
            try:
                channel = await self._publish_channel()
                exchange = channel.default_exchange
                sign = self.signer
                for queue, body, persistent in run:
                    data = body if sign is None else sign.frame(body)
                    send = asyncio.ensure_future(exchange.publish(_message(data, persistent), routing_key=queue))
                    send.add_done_callback(_retrieve)
                    sends.append(send)
                await asyncio.wait(sends, timeout=UNCONFIRMED_RESEND)
            except asyncio.CancelledError:
                for send in sends:
                    send.cancel()
                raise
            except Exception as e:  # no channel: the connection is gone
                error = e
            finally:
                slow.cancel()
            ok = 0
            for send in sends:
                if not send.done():
                    error = error or TimeoutError(f"not confirmed within {UNCONFIRMED_RESEND:g} s")
                    break
                if send.cancelled() or send.exception() is not None:
                    error = error or (send.exception() if not send.cancelled() else asyncio.CancelledError())
                    break
                ok += 1
            for send in sends[ok:]:
                send.cancel()
            self.published += ok
            self._in_flight -= ok
            run = run[ok:]
            if not run:
                if self._outage is not None:
                    log.warning("broker back after %.1f s: publishing again", time.monotonic() - self._outage)
                    self._outage = None
                return
            self.publish_retries += 1
            if error is not None and (_is_nack(error) or isinstance(error, TimeoutError)):
                self._renew_publish_channel()
            if self._outage is None:
                self._outage = time.monotonic()
                self._tell(run[0][0], f"failed ({str(error).strip() or type(error).__name__})")
            if self._closing:
                self.publish_errors += len(run)
                return
            await self._pause(delay)
            delay = min(2 * delay, 2.0)

    async def _publish_channel(self) -> Any:
        """The channel publishes go out on: one of their own on the current connection, opened when first needed.

        Why not the consumers' channel: RabbitMQ keeps, per channel and quorum queue, the members and leader it
        read from the queue's record at the channel's first publish to it, and registers the publisher with the
        queue on that first publish by asking that leader first. A channel that first publishes to a queue just
        after the queue's leader died (a link that failed over from the killed member, faster than the election
        updated the record) has its registration refused — a nack — and every later publish on that channel
        asks the same dead member again and is nacked too, until that member is back: 10 s and more (a
        member takes 13-41 s to return here). A nacked publish was never enqueued, so it is safely sent again
        on a fresh channel, which reads the record afresh; the consumers' channel cannot be replaced that
        cheaply (its unacknowledged deliveries would all come again).
        """
        if self._pub is None or self._pub_on is not self.connection or self._pub.is_closed:
            self._pub = await self.connection.channel()  # publisher confirms: aio-pika's default
            self._pub_on = self.connection
        return self._pub

    def _renew_publish_channel(self) -> None:
        """After a nack or a publish unconfirmed too long: the next publish opens a fresh channel (see
        :meth:`_publish_channel` and :meth:`_publish_loop`)."""
        self.publish_nacks += 1
        old, self._pub = self._pub, None
        if old is not None and not old.is_closed:
            task = asyncio.get_running_loop().create_task(old.close())
            task.add_done_callback(_log_ack_failure)

    def _unconfirmed(self, queue: str, since: float) -> None:
        """A publish the broker has not confirmed for :data:`UNCONFIRMED_WARNING` s: held, not lost (said once
        per outage, in one line; "broker back" follows). With several brokers the line says how many answer: a
        quorum queue confirms nothing while a majority of them is down."""
        if self._outage is None:
            self._outage = since
            self._tell(queue, f"not confirmed for {UNCONFIRMED_WARNING:.0f} s")

    def _tell(self, queue: str, what: str) -> None:
        """Say in one line that publishes are held (once per outage: the caller sets ``_outage``)."""
        self._telling = asyncio.get_running_loop().create_task(self._say_held(queue, what))  # kept: a task only weakly referenced may vanish

    async def _say_held(self, queue: str, what: str) -> None:
        held = f"publish to {queue} {what}"
        if len(self.urls) < 3:
            log.warning("%s: holding messages until the broker is back (nothing is lost)", held)
            return
        up = await asyncio.gather(*(_answers(u) for u in self.urls))
        down = [_host_port(u) for u, ok in zip(self.urls, up, strict=True) if not ok]
        if 2 * len(down) >= len(self.urls):
            log.warning("broker cluster has no quorum: %d of %d brokers down (%s): %s; holding messages until a majority "
                        "is back (nothing is lost)", len(down), len(self.urls), ", ".join(down), held)
        else:
            log.warning("%s (%d of %d brokers answer): holding messages until the broker is back (nothing is lost)",
                        held, len(self.urls) - len(down), len(self.urls))

    async def _pause(self, delay: float) -> None:
        """Before a publish is tried again: ``delay`` seconds, or less if the link connects again meanwhile (a
        publisher that backed off to its longest pause would otherwise sit out most of it after a failover)."""
        if self._connected is None or self._connected.is_set():
            await asyncio.sleep(delay)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), delay)

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait until everything queued so far has been published."""
        deadline = asyncio.get_running_loop().time() + timeout
        while (not self._out.empty() or self._in_flight) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.005)

    async def delete_queues(self, names: list[str]) -> None:
        for name in names:
            self._subs.pop(name, None)
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
        if self._reconnecting is not None:
            self._reconnecting.cancel()
        if self._publisher is not None:
            await self.drain(2.0)
            self._out.put_nowait(None)
            try:
                await asyncio.wait_for(self._publisher, 2.0)
            except (TimeoutError, asyncio.CancelledError):
                self._publisher.cancel()
        self.acks.flush()  # what was handled and waits for its timer, acknowledged before the channel goes
        if self._acks:  # acknowledgements still running (a closed channel would refuse them, and say so)
            await asyncio.wait(set(self._acks), timeout=2.0)
        self._closed = True
        if self.connection is not None:
            await self.connection.close()




def _fence() -> None:
    """The marker of a fenced publish in the publisher's queue (it does nothing: see AmqpLink._publish_loop)."""


def _retrieve(send: asyncio.Future) -> None:
    """A publish's outcome is read by the publisher loop, or given up (cancelled): never left unretrieved."""
    if not send.cancelled():
        send.exception()


def _is_nack(e: BaseException) -> bool:
    """A publish the broker refused (Basic.Nack), as opposed to a lost connection or channel."""
    from aio_pika.exceptions import DeliveryError  # (idem)

    return isinstance(e, DeliveryError)


async def _answers(url: str, timeout: float = 1.0) -> bool:
    """True if something accepts a TCP connection at the broker URL's address (a node that is down refuses it)."""
    parts = urlsplit(url)
    try:
        _r, w = await asyncio.wait_for(asyncio.open_connection(parts.hostname, parts.port or 5672), timeout)
    except (OSError, TimeoutError):
        return False
    w.close()
    with contextlib.suppress(OSError):
        await w.wait_closed()
    return True


class AioHttpPort:
    """Requests over HTTP (aiohttp): a JSON list of envelopes, signed; the answer's signature checked.

    ``local`` maps the URLs of nodes served by this very process (``cluster up --embedded``) to their
    request handlers: a request to one of them is handed over without a socket.
    """

    def __init__(self, signer: Signer | None, verifier: Verifier | None,
                 local: dict[str, Callable[[list[Any]], Awaitable[tuple[int, Any]]]] | None = None) -> None:
        self.signer = signer
        self.verifier = verifier
        self.session: Any = None
        self.local = local if local is not None else {}

    async def post(self, url: str, packed: list[Any], timeout: float) -> tuple[int, Any]:
        import aiohttp  # aiohttp only to send over HTTP (cluster down goes without)

        handler = self.local.get(url)
        if handler is not None:
            return await handler(packed)
        if self.session is None:
            self.session = aiohttp.ClientSession()
        body = json.dumps(packed, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json"}
        if self.signer is not None:  # a retry is a new message: a fresh time and nonce
            headers.update(self.signer.headers(body))
        try:
            async with self.session.post(url + HTTP_PATH, data=body, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                text = await resp.read()
                if resp.status != 200:
                    return resp.status, text.decode(errors="replace")
                if self.verifier is not None:
                    try:
                        self.verifier.verify(resp.headers, text)
                    except AuthError as e:  # not our peer's answer: its replies are not applied
                        return REPLY_REFUSED, str(e)
                return 200, json.loads(text).get("replies", [])
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise Unreachable(str(e) or type(e).__name__) from None

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None


class AmqpFrames(AcksAfterOutput):
    """A service's broker port on a real RabbitMQ connection: envelopes published as JSON, bodies consumed as frames.
    Its consumed messages are its link's, acknowledged by the link's :class:`~.acks.Acknowledger`."""

    def __init__(self, amqp: AmqpLink, codec: Codec) -> None:
        self.amqp = amqp
        self.codec = codec
        self.acks = amqp.acks
        self.steps: StepCosts | None = None  # a GM's or LM's: each message's handling is measured (stepcosts)
        # with steps: the runtime's ServiceRuntime.handle_received, so that a message's handling begins when it came
        self.received: Callable[..., Any] | None = None

    @property
    def publish_errors(self) -> int:
        return self.amqp.publish_errors

    @property
    def failovers(self) -> int:
        return self.amqp.failovers

    async def connect(self) -> None:
        await self.amqp.connect()

    def publish(self, queue: str, packed: Any, persistent: bool = False, fence: bool = False) -> None:
        data = json.dumps(packed, separators=(",", ":")).encode()
        if len(data) > self.codec.max_bytes:
            raise WireError(f"{packed.get('type')} of {len(data)} bytes is over the {self.codec.max_bytes}-byte limit")
        self.amqp.publish(queue, data, persistent, fence)

    def when_published(self, fn: Callable[[], None]) -> None:
        self.amqp.when_published(fn)

    def _opener(self, on_frame: Callable[..., None], on_bad: Callable[[str], None], transit: str | None = None) -> Callable[..., None]:
        """Decode each message's frame for ``on_frame``; with ``transit``, each first delivery's way from its
        signature to here is measured as that (stepcosts: ``submission`` on a GM's job queue)."""
        def on_body(body: bytes, *rest: Any) -> None:
            steps = self.steps
            spent = 0.0
            try:
                if steps is None:
                    frame = self.codec.decode_frame(body)
                else:  # a message's handling step: its authentication and its decoding (stepcosts)
                    clock = time.perf_counter
                    t0 = clock()
                    frame = self.codec.decode_frame(body)
                    spent = clock() - t0 + self.amqp.checked_in
                    steps.observe("message", spent)
                    self.amqp.checked_in = 0.0
                    verifier = self.amqp.verifier
                    if transit is not None and verifier is not None and not (rest and rest[0]):  # not a redelivery
                        signed = self.amqp.signed_time()
                        if signed:  # fitted against the job's tasks too
                            steps.observe(transit, verifier.clock() - signed, 1, len(getattr(frame[2], "tids", None) or ()))
            except WireError as e:
                on_bad(e.reason)
                if rest:  # a held message (a job): not retried
                    self.amqp.ack(rest[1])
                return
            if steps is not None and self.received is not None:
                self.received(spent, on_frame, frame, *rest)
            else:
                on_frame(frame, *rest)

        return on_body

    async def consume(self, queue: str, on_frame: Callable[[Frame], None], on_bad: Callable[[str], None]) -> int:
        return await self.amqp.consume(queue, self._opener(on_frame, on_bad))

    async def consume_held(self, queue: str, on_frame: Callable[[Frame, bool, Any], None], on_bad: Callable[[str], None],
                           transit: str | None = None) -> int:
        return await self.amqp.consume_held(queue, self._opener(on_frame, on_bad, transit))

    def ack(self, handle: Any) -> None:
        self.amqp.ack(handle)

    async def drain(self, timeout: float = 5.0) -> None:
        await self.amqp.drain(timeout)

    async def delete_queues(self, names: list[str]) -> None:
        await self.amqp.delete_queues(names)

    async def close(self) -> None:
        await self.amqp.close()


def identity_of(addr: Address) -> str:
    from schedlab.services.wire import address_str

    return address_str(addr)
