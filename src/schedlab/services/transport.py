"""How a service process routes its messages: in the process, over HTTP, or through the broker — sans IO.

As in the Megha paper's prototype (Section V-D):

* **HTTP** carries launch and preemption requests (GM → LM), task launches
  and kills (LM → worker host), worker hosts' beacons (host → LM: a broker
  outage must not look like dead hosts) and the questions of a process that
  (re)starts. A request is answered synchronously: whatever the receiver sends
  back to the requester while handling it — a
  :class:`~schedlab.schedulers.megha.messages.LaunchRejected`, a piggybacked
  :class:`~schedlab.schedulers.megha.messages.StateUpdate` — travels in the
  response. Messages queued for one peer go in one request, in order, one
  request at a time, so a busy GM does not pay one round trip per message.
* **The broker** carries everything else (LM state updates, completions,
  holdings reports, job submission, run records): each component consumes its
  own queue, ``<cluster>.<kind>.<index>``.

Which way a message goes depends only on its type (:data:`HTTP_TYPES`) and
whether its destination is hosted in this process.

:class:`Router` is that decision and everything around it that the protocol
depends on — the request queue per peer, retries with a growing pause, the
outcome of a request that got no answer (``unsent``, ``stale``,
``unreachable``: :mod:`~.links` acts on it), the stamps a request carries
(its first send time, the incarnation and launch id a worker host checks),
the ordered LM → GM link (:class:`InOrder`) and the capture of replies into
a response. It does no IO itself: a :class:`Wire` packs messages, an
:class:`HttpPort` posts a request and a broker port publishes — the real ones
over aiohttp and RabbitMQ (:mod:`~.net`), in-memory ones with injected
faults (:mod:`~.memnet`) — so the same routing runs for real and under
deterministic simulation.

**Order on the LM → GM link.** The decision code assumes what the simulator
gives it: messages from one component to another arrive in the order they
were sent. An LM reaches a GM by two channels — state updates through the
broker, rejections and piggybacked state in HTTP responses — which can
overtake each other; and with delta updates, an old update applied after a
newer one makes the GM believe a stale state that no later delta corrects.
So every message on that link carries ``seq = (sender incarnation, number)``
and the GM side delivers them in order (:class:`InOrder`), holding back one
that arrives early until the gap closes — or, if a message was lost, until
:data:`GAP_TIMEOUT` has passed (counted as ``gaps_skipped``). A message lost
for good — a state update still queued in the broker when it restarted (state
updates are not persistent) — would leave a GM's view stale where that delta
changed it, so a GM whose link skipped a gap asks that LM for its whole state
(``Recover``, :mod:`~.recovery`). An LM's incarnation is a fencing token
(:meth:`~.lease.Lease.token`): a later process of the same LM has a larger
one, so what an earlier process sent — still in the GM's queue when the GM
restarted, or late — is told from news: its states are dropped, its facts
(ends, losses) delivered for the receiver to judge.
"""

from __future__ import annotations

import logging
import secrets
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple, Protocol

from schedlab.schedulers.megha.messages import StateUpdate
from schedlab.services.runtime import Address, ServiceRuntime
from schedlab.services.tasks import TaskStore
from schedlab.services.wire import NAMED_TASKS, Codec, Frame, WireError, address_str
from schedlab.workers.protocol import POOL_ADDRESS

log = logging.getLogger("schedlab.services.transport")

HTTP_TYPES = frozenset({"LaunchRequest", "PreemptRequest", "LaunchBatch", "LaunchTask", "KillTask", "HostAlive", "Recover", "Resolve",
                        "HostState", "CancelRuns", "StaleRuns"})
HTTP_TIMEOUT = 10.0
HTTP_RETRIES = 5
GAP_TIMEOUT = 2.0
STALE_REQUEST = "stale request"  # the start of a 409's text: a request refused unread because it is too old (links)
REPLY_REFUSED = -1  # a post's status when the peer's answer failed authentication (not our peer's: not applied)
ORDERED_LINKS = frozenset({("lm", "gm")})  # (sender kind, receiver kind) delivered in send order
# Broker messages that need not survive a broker restart: a lost state update or beacon is
# superseded by the next one. Everything else (jobs, completions, losses, holdings, records) is
# persistent in durable queues.
TRANSIENT_TYPES = frozenset({"StateUpdate", "HostAlive"})
# Broker messages whose consumer takes them as proof that what their sender published before is in the broker:
# an LM's relayed ends after those ends' run records, a GM's completion log after its records (found by the
# deterministic simulation, seed 15588). They leave only once everything published before is confirmed — the
# publisher pipelines the rest, and within a pipeline a quorum queue may refuse one message and take a later one.
FENCED_TYPES = frozenset({"TasksFinished", "Done"})
# LM -> GM messages that tell of events no snapshot repeats: delivered even if numbered before a restart of the link
FACTS = frozenset({"TasksFinished", "TaskLost", "TaskPreempted", "VerifyEnds"})
# LM -> GM messages that tell a state a later one replaces: one that comes after its gap was skipped is dropped
# (an old snapshot applied after newer news would regress the view; the GM asks again after a skipped gap)
STATES = frozenset({"StateUpdate", "Recovered"})



class Unreachable(Exception):
    """A request that got no answer: the peer is down, cut off, or slower than the timeout."""


class HttpPort(Protocol):
    async def post(self, url: str, packed: list[Any], timeout: float) -> tuple[int, Any]:
        """``(200, replies)`` or ``(status, text)``; raises :class:`Unreachable` when no answer came."""
        ...

    async def close(self) -> None: ...


class BrokerPort(Protocol):
    def publish(self, queue: str, packed: Any, persistent: bool = False, fence: bool = False) -> None: ...


# -- wires: how a message is packed -----------------------------------------------------------------
class Wire(Protocol):
    def pack(self, src: Address, dst: Address, msg: Any, seq: tuple[int, int] | None, meta: dict | None) -> Any: ...

    def unpack(self, packed: Any) -> Frame: ...

    def file(self, tasks: Any) -> None: ...


class JsonWire:
    """For real networks: a JSON-ready envelope (:mod:`~.wire`) carrying the descriptions of the tasks it names."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.unpacked = 0

    def pack(self, src: Address, dst: Address, msg: Any, seq: tuple[int, int] | None, meta: dict | None) -> dict:
        env = self.codec.envelope(src, dst, msg, seq)
        if meta:
            env.update(meta)
        return env

    def unpack(self, packed: Any) -> Frame:
        self.unpacked += 1
        return self.codec.decode_envelope(packed)

    def file(self, tasks: Any) -> None:
        self.codec.file(tasks)


class TaskInfo(NamedTuple):
    """A task's description as it travels in memory (the fields of :class:`~.wire.TaskWire`)."""

    tid: int
    jid: int
    duration: float
    mask: int
    request: tuple[float, ...] | None
    spec: Any
    user: int


class ObjectWire:
    """In memory: the message object itself, with copies of the descriptions of the tasks it names.

    Receivers never change a message (they copy what they keep), so a message
    object can be shared between sender and receiver.
    """

    def __init__(self, store: TaskStore | None) -> None:
        self.store = store

    def pack(self, src: Address, dst: Address, msg: Any, seq: tuple[int, int] | None, meta: dict | None) -> Frame:
        tasks = None
        named = NAMED_TASKS.get(msg.__class__.__name__)
        if named is not None and self.store is not None:
            s = self.store
            tasks = [TaskInfo(t, s.job[t], s.duration[t], s.mask[t], s.request.get(t), s.spec.get(t), s.user.get(t, 0))
                     for t in named(msg) if t in s]
        m = (None, None, None, None) if not meta else (meta.get("inc"), meta.get("bid"), meta.get("sent"), meta.get("until"))
        return (src, dst, msg, tasks, seq, m)

    def unpack(self, packed: Any) -> Frame:
        return packed

    def file(self, tasks: Any) -> None:
        if tasks and self.store is not None:
            add = self.store.add_task
            for t in tasks:
                add(t.tid, t.jid, t.duration, t.mask, t.request, t.spec, t.user)


# -- the ordered LM -> GM link --------------------------------------------------------------------
class InOrder:
    """Delivers each sender's sequenced messages in order; a gap waits at most ``gap_timeout`` seconds.

    ``call_later(delay, fn, *args)`` is the runtime's timer (its handle has ``cancel()``).
    """

    def __init__(self, counters: dict[str, int], call_later: Callable[..., Any], gap_timeout: float | None = None) -> None:
        self.counters = counters
        self.call_later = call_later
        self.gap_timeout = gap_timeout
        # (src, dst) -> [incarnation, expected, {n: deliver}, timer, skipped, numbers held that are facts]
        self.links: dict[tuple[Any, Any], list] = {}
        # on_gap(src, dst): a gap timed out — a message of the link is lost for good (a state update queued in the
        # broker when it restarted: those are not persistent), so the receiver should ask for the sender's state
        self.on_gap: Callable[[Any, Any], None] | None = None

    def holding(self) -> bool:
        """Whether a message received waits for a gap to close (not delivered yet)."""
        return any(st[2] for st in self.links.values())

    def accept(self, src: Any, dst: Any, seq: tuple[int, int] | None, deliver: Callable[[], None], superseded: bool = False,
               fact: bool = False, deliver_fact: Callable[[], None] | None = None) -> None:
        """Deliver in order. ``superseded``: the message is a state that a later one replaces (a state update) —
        if its gap was skipped already, it is dropped, not delivered late: applied after what came since, an
        old state would overwrite newer news, and the snapshot the skipped gap asked for covers it. ``fact``: the
        message tells of an event no snapshot repeats (a task's end or loss) — one numbered before the link
        restarted (sent while the receiver's predecessor was gone) is delivered all the same, not dropped with the
        predecessor's states; its receiver takes it twice without harm (both found by the deterministic simulation).
        ``deliver_fact``: the message carries a fact and a state (a rejection and the LM's state piggybacked on it):
        out of order, only its fact is delivered, by this."""
        if deliver_fact is not None:
            fact = True
        if seq is None:
            deliver()
            return
        incarnation, n = seq
        key = (src, dst)
        st = self.links.get(key)
        if st is not None and incarnation < st[0]:
            # from a process the sender had before the current one (incarnations are fencing tokens): what it
            # tells of a state is old news; a fact is delivered, for the receiver to judge (found by the
            # deterministic simulation: a restarted GM applied a takeover notice meant for its predecessor)
            if fact:
                self.counters["facts_of_earlier_process"] += 1
                (deliver_fact or deliver)()
            else:
                self.counters["states_of_earlier_process_dropped"] += 1
            return
        if st is None or st[0] != incarnation:
            if st is not None:  # the sender restarted: what it sent before comes first
                self._flush(key)
            # a sender numbers each link from 1: start there, not at the first number seen — the first
            # to arrive may have overtaken earlier ones (an HTTP reply beating a broker message)
            st = self.links[key] = [incarnation, 1, {}, None, set(), set()]
        if n < st[1]:
            if n in st[4]:  # skipped when its gap timed out: late, deliver it now (unless it is a superseded state)
                st[4].discard(n)
                if superseded:
                    self.counters["late_states_dropped"] += 1
                    return
                self.counters["late_after_gap"] += 1
                deliver()
                self._late(src, dst)
            elif fact:  # sent before the link restarted, or a repeat: the receiver judges it
                self.counters["facts_before_restart"] += 1
                (deliver_fact or deliver)()
                self._late(src, dst)
            else:  # delivered already (the broker redelivers what was not acknowledged when a link dropped)
                self.counters["duplicates_dropped"] += 1
            return
        if n in st[2]:  # the same message twice while a gap is open
            self.counters["duplicates_dropped"] += 1
            return
        st[2][n] = deliver
        if fact:
            st[5].add(n)
        self._drain(st)
        if st[2] and st[3] is None:
            timeout = GAP_TIMEOUT if self.gap_timeout is None else self.gap_timeout
            st[3] = self.call_later(timeout, self._gap_timed_out, key)
        elif not st[2] and st[3] is not None:
            st[3].cancel()
            st[3] = None

    def _late(self, src: Any, dst: Any) -> None:
        """A message delivered out of its place (after newer ones) may have changed what the receiver believes
        against newer news (a late TaskLost: "believe the worker busy"): the receiver asks the sender's whole
        state again (``on_gap``), which comes after it."""
        if self.on_gap is not None:
            self.on_gap(src, dst)

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
        if st is None or st[0] < incarnation:
            if st is not None:  # an earlier process's messages held for a gap: its facts still count, not its states
                if st[3] is not None:
                    st[3].cancel()
                for m in sorted(st[2]):
                    if m in st[5]:
                        st[2][m]()
            self.links[key] = [incarnation, n, {}, None, set(), set()]

    def _drain(self, st: list) -> None:
        held = st[2]
        while st[1] in held:
            st[5].discard(st[1])
            held.pop(st[1])()
            st[1] += 1

    def _gap_timed_out(self, key: tuple[Any, Any]) -> None:
        st = self.links.get(key)
        if st is not None:
            st[3] = None
        if self._flush(key) and self.on_gap is not None:
            self.on_gap(*key)

    def _flush(self, key: tuple[Any, Any]) -> int:
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
    """Replies to the sender of the request being handled go into its response."""

    __slots__ = ("dst", "frames")

    def __init__(self, dst: Address) -> None:
        self.dst = dst
        self.frames: list[Any] = []


# -- the router -------------------------------------------------------------------------------------
class Router:
    """Routes every message of one process: locally, over HTTP, or through the broker (see the module).

    ``urls(dst)`` and ``queue(dst)`` say where a destination listens; ``http``
    and ``broker`` are the ports (a client without HTTP peers passes none).
    """

    def __init__(self, identity: Address, wire: Wire, urls: Callable[[Address], str | tuple[str, ...] | None], queue: Callable[[Address], str],
                 http: HttpPort | None, broker: BrokerPort | None, incarnation: int | None = None) -> None:
        self.identity = identity
        self.src: str = address_str(identity) if isinstance(identity, tuple) else str(identity)
        self.wire = wire
        self.urls = urls
        self.queue = queue
        self.http = http
        self.broker = broker
        self.rt: ServiceRuntime | None = None
        # the incarnation of a destination's process the sender knows (an LM: of its worker hosts; a GM or a worker
        # host: of an LM), stamped on each request (Any: it looks inside addresses)
        self.incarnation_of: Callable[[Any], int | None] | None = None
        # a GM: told of requests that got no answer — on_undelivered(dst, messages, outcome) (:mod:`~.links`)
        self.on_undelivered: Callable[[Address, list[Any], str], None] | None = None
        # a GM: the time its request was first sent (stamped on it; every retry carries it); an LM: that of the GM's
        # request a launch carries out (the worker host keeps it with the run, for an LM taking over: recovery)
        self.sent_of: Callable[[Any], float] | None = None
        self._request_sent: dict[int, float] = {}  # id of a GM's request being sent -> its first send time
        # an LM: told the id of each launch it sends to a worker host (on_launch(message, id))
        self.on_launch: Callable[[Any, int], None] | None = None
        # an LM: until when a worker host may act on a launch (the LM's lease on it; stamped once, every retry carries it)
        self.until_of: Callable[[Any], float | None] | None = None
        self.tries: dict[str, tuple[float, int]] = {}  # destination kind -> (timeout per try, tries); default HTTP_*
        # a GM: whether an LM's answer to its Recover restarts their ordered link (only while the GM itself starts:
        # what that LM process numbered before the answer went to the GM's predecessor; later, to this very process)
        self.restarting: Callable[[], bool] = lambda: True
        self._launches = 0
        self._launch_ids: dict[int, int] = {}  # id of a launch message still being sent -> its launch id
        self.local: dict[Address, ServiceRuntime] = {}
        self.capture: _Capture | None = None
        self._http_out: dict[str, list[tuple[Any, Any, Address]]] = defaultdict(list)  # url -> (packed, message, dst)
        # a destination served at one of several addresses (an LM and its standby elsewhere): its first url -> all
        # of them, and the index of the one tried now (the next after one that refused or did not answer)
        self._alternates: dict[str, tuple[str, ...]] = {}
        self._at: dict[str, int] = {}
        self._senders: dict[str, Any] = {}
        self._wake: dict[str, Any] = {}
        self.counters: dict[str, int] = defaultdict(int)
        self.in_order = InOrder(self.counters, self._call_later)
        self.incarnation = secrets.randbits(31) if incarnation is None else incarnation
        self._next_seq: dict[Address, int] = defaultdict(int)
        self._kind = self.src.partition(":")[0]

    def attach(self, rt: ServiceRuntime) -> None:
        """The runtime whose timers and coroutines this router uses (it attaches itself when built)."""
        self.rt = rt

    def _call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Any:
        assert self.rt is not None
        return self.rt.call_later(delay, fn, *args)

    def _seq(self, dst: Address) -> tuple[int, int] | None:
        if isinstance(dst, tuple) and (self._kind, dst[0]) in ORDERED_LINKS:
            self._next_seq[dst] += 1
            return (self.incarnation, self._next_seq[dst])
        return None

    def numbered(self, dst: Address) -> int:
        """How many messages of the ordered link to ``dst`` this process has numbered so far."""
        return self._next_seq.get(dst, 0)

    def bind(self, address: Address, runtime: ServiceRuntime) -> None:
        self.local[address] = runtime

    def send(self, dst: Address, msg: Any) -> None:
        cap = self.capture
        if cap is not None and dst == cap.dst:
            cap.frames.append(self.wire.pack(self.identity, dst, msg, self._seq(dst), None))
            return
        rt = self.local.get(dst)
        if rt is not None:
            rt.call_soon(rt.deliver, dst, msg)
            return
        name = msg.__class__.__name__
        if name in HTTP_TYPES:
            url = self.urls(dst)
            if url is None:
                raise KeyError(f"no HTTP endpoint for {dst!r}")
            if isinstance(url, tuple):
                self._alternates[url[0]] = url
                url = url[0]
            meta: dict[str, Any] = {}
            if self.sent_of is not None and name in ("LaunchRequest", "PreemptRequest", "LaunchBatch", "LaunchTask"):
                meta["sent"] = sent = self.sent_of(msg)
                if self.on_undelivered is not None and name in ("LaunchRequest", "PreemptRequest"):
                    self._request_sent[id(msg)] = sent
            if self.incarnation_of is not None:
                inc = self.incarnation_of(dst)
                if inc is not None:  # stamped now: a retry must not reach a process that started since
                    meta["inc"] = inc
                if name in ("LaunchBatch", "LaunchTask"):  # a retry repeats it; a relaunch is a new launch
                    self._launches += 1
                    meta["bid"] = bid = self.incarnation << 32 | self._launches
                    self._launch_ids[id(msg)] = bid
                    if self.on_launch is not None:
                        self.on_launch(msg, bid)
            if self.until_of is not None and name in ("LaunchBatch", "LaunchTask"):
                until = self.until_of(dst)
                if until is not None:
                    meta["until"] = until
            self._http_out[url].append((self.wire.pack(self.identity, dst, msg, None, meta), msg, dst))
            self._kick(url)
            return
        if self.broker is None:
            raise KeyError(f"{name} to {dst!r} needs the broker, and this process has none")
        self.broker.publish(self.queue(dst), self.wire.pack(self.identity, dst, msg, self._seq(dst), None),
                            name not in TRANSIENT_TYPES, name in FENCED_TYPES)

    # -- HTTP client ------------------------------------------------------------------------------
    def _kick(self, url: str) -> None:
        assert self.rt is not None
        ev = self._wake.get(url)
        if ev is None:
            ev = self._wake[url] = self.rt.event()
            self._senders[url] = self.rt.spawn(self._http_sender(url, ev), f"sender to {url}")
        ev.set()

    async def _http_sender(self, url: str, wake: Any) -> None:
        """One request at a time to ``url``, with everything queued for it meanwhile."""
        rt = self.rt
        assert rt is not None
        while True:
            await rt.wait(wake, None)
            wake.clear()
            while self._http_out[url]:
                items = self._http_out[url]
                self._http_out[url] = []
                first = items[0][2]
                timeout, tries = self.tries.get(first[0] if isinstance(first, tuple) else "", (HTTP_TIMEOUT, HTTP_RETRIES))
                replies, outcome = await self._post(url, [p for p, _m, _d in items], timeout, tries)
                for packed in replies:
                    self._deliver_reply(packed)
                if outcome != "ok" and self.on_undelivered is not None:
                    self._undelivered(items, outcome)
                    if outcome == "unreachable":  # what waited behind it was never sent: certainly not acted on
                        waiting, self._http_out[url] = self._http_out[url], []
                        if waiting:
                            self._undelivered(waiting, "unsent")
                            self._sent(waiting)
                self._sent(items)

    def _sent(self, items: list[tuple[Any, Any, Address]]) -> None:
        if self._launch_ids:
            for _p, msg, _d in items:
                self._launch_ids.pop(id(msg), None)
        if self._request_sent:
            for _p, msg, _d in items:
                self._request_sent.pop(id(msg), None)

    def request_sent(self, msg: Any) -> float | None:
        """The first send time of a GM's request being sent (valid within :attr:`on_undelivered`; None: unknown)."""
        return self._request_sent.get(id(msg))

    def launch_id(self, msg: Any) -> int:
        """The id of a launch being sent (valid within :attr:`on_undelivered`; 0 if it has none)."""
        return self._launch_ids.get(id(msg), 0)

    def _undelivered(self, items: list[tuple[Any, Any, Address]], outcome: str) -> None:
        per_dst: dict[Any, list[Any]] = {}
        for _p, msg, dst in items:
            per_dst.setdefault(dst, []).append(msg)
        on_undelivered = self.on_undelivered
        assert on_undelivered is not None and self.rt is not None  # the only caller checked it, and nothing ran since
        for dst, msgs in per_dst.items():
            self.rt.guarded(on_undelivered, dst, msgs, outcome)  # a bug there is counted, and this link's sender goes on

    async def _post(self, url: str, packed: list[Any], timeout: float = HTTP_TIMEOUT, tries: int = HTTP_RETRIES) -> tuple[list, str]:
        """Post ``packed``: ``(replies, outcome)``, outcome ``ok``, ``stale`` (the peer refused it unread: too
        old, or meant for another process), ``refused`` (refused unread for any other reason: a bug or a
        mismatch of cluster files), ``reply refused`` (the peer's answer failed authentication — a clock off by
        more than the signatures' window, say: the peer may have acted on the request) or ``unreachable``
        (no answer after ``tries`` tries)."""
        assert self.rt is not None and self.http is not None
        n = len(packed)
        delay = 0.05
        for attempt in range(tries):
            try:
                status, payload = await self.http.post(self._target(url), packed, timeout)
            except Unreachable as e:
                self._next_target(url)
                self.counters["http_retries"] += 1
                if attempt == tries - 1:
                    self.counters["http_lost"] += n
                    log.error("%s unreachable, %d message(s) undelivered: %s", url, n, str(e) or type(e).__name__)
                    return [], "unreachable"
                await self.rt.sleep(delay)
                delay *= 2
                continue
            if status == 200:
                self.counters["local_requests" if url in getattr(self.http, "local", ()) else "http_requests"] += 1
                return payload, "ok"
            if status == REPLY_REFUSED:  # the peer read it and may have acted on it: in doubt, not refused
                self.counters["http_replies_refused"] += 1
                log.error("%s: reply refused (%s)", url, payload)
                return [], "reply refused"
            if status == 409:  # fenced: refused unread (too old for the peer, or meant for another process)
                self._next_target(url)
                self.counters["http_stale"] += n
                return [], "stale"
            # refused by the peer: a bug or a mismatch of cluster files; retrying cannot help
            self.counters["http_refused"] += n
            log.error("%s refused %d message(s): %d %s", url, n, status, str(payload)[:200])
            return [], "refused"
        return [], "unreachable"

    def _target(self, url: str) -> str:
        """Where a request for ``url`` goes now: ``url``, or the alternate address tried now."""
        alternates = self._alternates.get(url)
        return url if alternates is None else alternates[self._at.get(url, 0)]

    def _next_target(self, url: str) -> None:
        """The address tried now refused or did not answer: the next request for ``url`` tries the next one."""
        alternates = self._alternates.get(url)
        if alternates is not None:
            self._at[url] = (self._at.get(url, 0) + 1) % len(alternates)
            self.counters["http_failovers"] += 1

    def _deliver_reply(self, packed: Any) -> None:
        try:
            src, dst, msg, tasks, seq, _meta = self.wire.unpack(packed)
        except WireError as e:
            self.counters["bad_replies"] += 1
            log.error("bad reply: %s", e.reason)
            return
        self.wire.file(tasks)
        rt = self.local.get(dst)
        if rt is None:
            self.counters["misrouted_replies"] += 1
            return
        if seq is not None and msg.__class__.__name__ == "Recovered" and self.restarting():
            self.in_order.restart_at(src, dst, seq)
        self._accept(src, dst, seq, msg, rt)

    def receive(self, src: Any, dst: Any, msg: Any, seq: tuple[int, int] | None) -> None:
        """A message that came in from the broker, for a component of this process."""
        rt = self.local[dst]
        self._accept(src, dst, seq, msg, rt)

    def _accept(self, src: Any, dst: Any, seq: tuple[int, int] | None, msg: Any, rt: ServiceRuntime) -> None:
        name = msg.__class__.__name__
        as_fact = None
        if name == "LaunchRejected":
            # from an LM process replaced since (a standby elsewhere took over while a GM's request was on its
            # way to the old one), a rejection still says the request was not acted on — the GM requests the task
            # again if nothing newer stands; the state piggybacked on it is old news (found by the simulation)
            as_fact = lambda: rt.deliver(dst, replace(msg, update=StateUpdate(msg.lm, False)))  # noqa: E731
        self.in_order.accept(src, dst, seq, lambda: rt.deliver(dst, msg), name in STATES, name in FACTS, as_fact)

    # -- HTTP server side -----------------------------------------------------------------------
    def handle_frames(self, frames: list[Frame]) -> list[Any]:
        """Deliver a request's messages now; return what the handlers sent back to the requester (packed)."""
        replies: list[Any] = []
        for src, dst, msg, tasks, _seq, _meta in frames:
            self.wire.file(tasks)
            rt = self.local[dst]
            self.capture = cap = _Capture(src)
            try:
                rt.deliver(dst, msg)
            finally:
                self.capture = None
            replies.extend(cap.frames)
        return replies

    def hosts(self, address: Address) -> bool:
        return address in self.local and address != POOL_ADDRESS

    async def close(self) -> None:
        for task in self._senders.values():
            task.cancel()
        self._senders.clear()
        if self.http is not None:
            await self.http.close()
