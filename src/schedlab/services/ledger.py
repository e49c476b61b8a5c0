"""The cluster's job ledger: who submitted which job when, and when each ended — a RabbitMQ stream.

A job's state must outlive the client that submitted it (``submit
--detach`` returns at once) and any GM crash. It is read from two durable
places, never from the client:

* the **ledger**, ``<name>.jobs``: a RabbitMQ *stream* (an append-only,
  replicated log that every reader reads from its start without consuming it).
  The submitter appends ``submitted`` (job id, user, tasks, time, GM) once the
  job is in its GM's durable submission queue; a GM appends ``ended`` when it
  acknowledges a job whose last task completed (through its own broker link,
  in order with its other messages: a second connection per GM shifted the
  services' timing enough to change placements a test compares with the
  simulator's). The stream is declared by its readers and by ``submit
  --detach``, never by a GM (a GM's start stays as fast as before): while no
  detached submission made it, the broker drops a GM's ``ended`` records — of
  jobs no ledger lists anyway (a GM that dies in between
  gets the job back from its queue, finds its tasks completed and appends
  ``ended`` again: readers keep the first);
* the **GMs' open jobs** (``GET /v1/jobs`` of each GM, signed like
  ``/v1/status``): the jobs in their submission queues, with how many tasks are
  placed (running) and how many completed. A restarted GM rebuilds them from
  its queue and the LMs' answers (:mod:`~.recovery`).

A detached submission's run records (starts, ends with their outcome: status,
exit code, the tails of stdout and stderr the hosts keep) go to a stream of
their own, ``<name>.run.<run>``, declared by the submitter before it submits
(an attached ``submit`` reads them from an exclusive queue instead): ``job
logs`` and the ``failed`` state read it.

A job's state (:func:`job_state`): ``done`` once ended (``failed`` if one of
its tasks ended otherwise than ok: its exit code is kept); ``cancelled`` once
its GM carried out a cancellation (``job cancel``, :mod:`~.cancel`: the client
appends ``cancel`` once its request is in the GM's durable log, the GM
appends ``cancelled`` when the job's every task has ended — whichever of
``ended`` and ``cancelled`` a job got first is its end); ``cancelling`` between
the two; ``running`` while open with a task placed or completed; ``queued``
while open with none, or not yet delivered to its GM; ``unknown`` when its GM
does not answer.

``submitted`` records come from detached submissions and from attached ones
(``"attached": true``: their run records went to the client, so no run
stream of theirs exists and ``job logs`` has no outcomes for them).

Records are JSON, framed and signed with the cluster's secret like every
broker message (:mod:`~.auth`); a record that fails the check is skipped and
counted. The stream keeps :data:`MAX_AGE` of history.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from schedlab.services.auth import AuthError, Signer, Verifier
from schedlab.services.net import BrokerUnreachable

MAX_AGE = "7D"  # how long the stream keeps records (RabbitMQ's x-max-age)
IDLE = 0.3  # past the start of a stream's last chunk, a read ends after this long without a record
POLL = 0.05  # how often a read looks whether the consumer of the stream's last chunk has been sent one
ACK_EVERY = 100  # a read acknowledges this many messages at once (fewer frames; the prefetch is 500)
EMPTY_WAIT = 1.0  # a stream of which neither end is sent anything within this long is empty
READ_PATIENCE = 60.0  # seconds a read may take to reach the stream's end before it gives up (StreamReadTimeout): 16 reads of
# 5,200 records at once in one process on a busy 2-core machine took 29 s at the median and 33 s at most (the
# old reads, ended by an idle gap: 44 s and 61 s)


class StreamReadTimeout(BrokerUnreachable):
    """A stream not read to its end in time: one line for the user (``reason``), as for a broker not reached."""


async def _close(channel: Any) -> None:
    """Close a channel of a read's own (its consumer and what it was sent go with it)."""
    if not channel.is_closed:
        with contextlib.suppress(Exception):
            await channel.close()


def _offset(message: Any) -> int:
    """A stream message's offset (RabbitMQ sets the header on every message it delivers from a stream)."""
    return int((message.headers or {}).get("x-stream-offset", -1))


def ledger_queue(cluster_name: str) -> str:
    return f"{cluster_name}.jobs"


class SignedStream:
    """One RabbitMQ stream of signed records, appended to and read from its start (aio-pika; one connection)."""

    def __init__(self, url: str, queue_name: str, secret: str, sender: str) -> None:
        self.url = url
        self.queue_name = queue_name
        self.signer = Signer(secret, sender)
        self.verifier = Verifier(secret)
        self.conn: Any = None  # the connection this stream opened (closed with it)
        self.connection: Any = None  # the connection its channels are on (this one's, or one lent to connect)
        self.channel: Any = None
        self.queue: Any = None
        self.bad_records = 0

    async def connect(self, passive: bool = False, connection: Any = None) -> bool:
        """Connect (or open a channel on ``connection``, left open by :meth:`close`), and declare the stream (a
        no-op if it exists); ``passive``: only if it exists (False if not)."""
        import aio_pika

        if connection is None:
            try:
                self.conn = await asyncio.wait_for(aio_pika.connect_robust(self.url), 10.0)
            except Exception as e:
                raise BrokerUnreachable(self.url, f"cannot connect: {str(e).strip() or type(e).__name__}") from None
        self.connection = connection or self.conn  # a read opens a second channel on it
        self.channel = await self.connection.channel(publisher_confirms=True)
        await self.channel.set_qos(prefetch_count=500)  # a stream is read with acknowledgements and a prefetch
        if passive:
            try:
                self.queue = await self.channel.declare_queue(self.queue_name, passive=True)
            except aio_pika.exceptions.ChannelClosed:  # no such stream (the channel is closed with it)
                return False
            return True
        self.queue = await self.declare(self.queue_name)
        return True

    async def declare(self, name: str) -> Any:
        """Declare another stream on this connection (a detached submission's run records)."""
        return await self.channel.declare_queue(name, durable=True, arguments={"x-queue-type": "stream", "x-max-age": MAX_AGE})

    async def close(self) -> None:
        self.connection = None
        if self.conn is not None:
            await self.conn.close()
            self.conn = None
        elif self.channel is not None and not self.channel.is_closed:
            await self.channel.close()
        self.channel = None

    async def append(self, record: dict[str, Any]) -> None:
        """One JSON record, persistent, confirmed by the broker before this returns."""
        import aio_pika

        body = self.signer.frame(json.dumps(record, separators=(",", ":")).encode())
        await self.channel.default_exchange.publish(aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
                                                    routing_key=self.queue_name)

    async def read_bodies(self, patience: float | None = None) -> list[bytes]:
        """The body of every authentic record from the stream's start to its end when the read began, in append
        order (the others are counted). Raises :class:`StreamReadTimeout` (one line, no traceback) if the end
        is not reached within ``patience`` seconds (default :data:`READ_PATIENCE`).

        A stream has no end marker and RabbitMQ 3.10 reports no message count for it, so the end is found with
        a second consumer from ``last`` (the stream's last chunk): the read is complete once the reader from
        ``first`` has passed that chunk's first offset and the rest of the chunk, sent with it, has come. A
        stream on which neither consumer gets anything within :data:`EMPTY_WAIT` is empty. (An idle gap of
        0.3 s used to end the read: under load that cut reads short, and ending it through aio-pika's queue
        iterator nacked the messages still buffered, which a stream refuses by closing the channel.)
        """
        patience = READ_PATIENCE if patience is None else patience
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        # the end: one message from 'last', on a channel of its own, closed as soon as it has said it (no
        # acknowledgement to keep apart from the reader's, which acknowledges many at once)
        tail: asyncio.Queue[Any] = asyncio.Queue()
        tail_channel = await self.connection.channel()
        await tail_channel.set_qos(prefetch_count=1)
        tail_queue = await tail_channel.get_queue(self.queue_name, ensure=False)
        await tail_queue.consume(tail.put, arguments={"x-stream-offset": "last"})
        inbox: asyncio.Queue[Any] = asyncio.Queue()
        tag = await self.queue.consume(inbox.put, arguments={"x-stream-offset": "first"})
        out: list[bytes] = []
        bound: int | None = None  # the first offset of the stream's last chunk (once its consumer said it)
        seen = -1  # the highest offset read from the start
        last: Any = None  # the last message received and not acknowledged yet (and how many up to it)
        unacked = 0
        started = loop.time()
        try:
            while True:
                if bound is None and not tail.empty():
                    bound = _offset(tail.get_nowait())
                    await _close(tail_channel)
                now = loop.time()
                if bound is None and seen < 0 and now - started >= EMPTY_WAIT:
                    return out  # nothing from either end: an empty stream
                if now >= deadline:
                    raise StreamReadTimeout(self.url, f"stream {self.queue_name}: its end not reached within {patience:g} s "
                                                      f"({len(out)} records read); the broker is busy or unreachable, try again")
                if inbox.empty():
                    if last is not None:  # acknowledged before waiting: a stream sends more only for acknowledgements
                        await last.ack(multiple=True)
                        last, unacked = None, 0
                    wait = min(IDLE if bound is not None and seen >= bound else POLL, deadline - now)
                    try:
                        message = await asyncio.wait_for(inbox.get(), wait)
                    except TimeoutError:
                        if bound is not None and seen >= bound:
                            return out  # past the last chunk's start and nothing more of it came: the end
                        continue
                else:
                    message = inbox.get_nowait()
                last, unacked = message, unacked + 1
                if unacked >= ACK_EVERY:
                    await message.ack(multiple=True)
                    last, unacked = None, 0
                seen = max(seen, _offset(message))
                try:
                    _sender, body = self.verifier.unframe(message.body, fresh=False)
                except AuthError:
                    self.bad_records += 1
                    continue
                out.append(body)
        finally:
            await _close(tail_channel)
            await self._stop(tag, inbox, last)

    async def _stop(self, tag: str, inbox: asyncio.Queue[Any], last: Any) -> None:
        """Cancel the reader's consumer and acknowledge what it was sent (``last``: the last message received and
        not acknowledged yet): a stream refuses nack and requeue by closing the channel."""
        if self.channel is None or self.channel.is_closed:
            return
        with contextlib.suppress(Exception):  # a channel closing under us: nothing of it is needed any more
            await self.queue.cancel(tag)
            while not inbox.empty():
                last = inbox.get_nowait()
            if last is not None:
                await last.ack(multiple=True)

    async def read(self) -> list[dict[str, Any]]:
        """Every JSON record (an object) from the stream's start."""
        out = []
        for body in await self.read_bodies():
            try:
                record = json.loads(body)
            except ValueError:
                self.bad_records += 1
                continue
            if isinstance(record, dict):
                out.append(record)
        return out


def job_ledger(url: str, cluster_name: str, secret: str, sender: str) -> SignedStream:
    """The cluster's job ledger stream."""
    return SignedStream(url, ledger_queue(cluster_name), secret, sender)


def ended_record(job: int, time: float, gm: int, kind: str = "ended", extra: dict[str, Any] | None = None) -> bytes:
    """A GM's ``ended`` (or ``cancelled``) record, unsigned (the GM's broker link signs what it publishes)."""
    return json.dumps({"kind": kind, "job": job, "time": time, "gm": gm, **(extra or {})}, separators=(",", ":")).encode()


STATES = ("queued", "running", "done", "failed", "cancelling", "cancelled", "unknown")
ENDS = ("ended", "cancelled")  # the kinds of record that end a job (its first one counts)


def job_state(submitted: dict[str, Any], ended: dict[str, Any] | None, open_job: dict[str, Any] | None, gm_up: bool,
              outcomes: dict[int, dict[str, Any]] | None = None, cancel: dict[str, Any] | None = None) -> dict[str, Any]:
    """One job as ``schedlab jobs`` shows it, from its ledger records (``ended``: its ``ended`` or ``cancelled``
    record; ``cancel``: a cancellation requested), its GM's view and its tasks' outcomes (local task id -> the
    outcome the hosts reported: a ``failed`` job is one that ended with a task not ok)."""
    tasks = int(submitted.get("tasks", 0))
    row = {"job": submitted["job"], "user": submitted.get("user", 0), "gm": submitted.get("gm"), "tasks": tasks,
           "submitted": submitted.get("time"), "ended": None, "running": 0, "completed": 0, "queued": 0,
           "attached": bool(submitted.get("attached", False))}
    if ended is not None and ended.get("kind") == "cancelled":
        killed = sum(1 for o in (outcomes or {}).values() if o.get("status") == "cancelled" and o.get("launched", True))
        return {**row, "state": "cancelled", "ended": ended.get("time"), "completed": tasks, "dropped": int(ended.get("dropped", 0)),
                "killed": killed}
    if ended is not None:
        failed = [o for o in (outcomes or {}).values() if o.get("status", "ok") != "ok"]
        if failed:
            return {**row, "state": "failed", "ended": ended.get("time"), "completed": tasks, "failed_tasks": len(failed),
                    "exit_code": failed[0].get("exit_code")}
        return {**row, "state": "done", "ended": ended.get("time"), "completed": tasks}
    if open_job is not None:
        running, completed = int(open_job["running"]), int(open_job["completed"])
        state = "cancelling" if cancel is not None else "running" if running or completed else "queued"
        return {**row, "state": state, "running": running, "completed": completed, "queued": tasks - running - completed}
    if cancel is not None:
        return {**row, "state": "cancelling" if gm_up else "unknown", "cancel_requested": cancel.get("time")}
    if not gm_up:
        return {**row, "state": "unknown"}
    return {**row, "state": "queued", "queued": tasks}  # in its GM's queue, not delivered yet
