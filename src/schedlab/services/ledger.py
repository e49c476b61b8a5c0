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

A job's state (:func:`job_state`): ``done`` once ended; ``running`` while
open with a task placed or completed; ``queued`` while open with none, or
not yet delivered to its GM; ``unknown`` when its GM does not answer.

Records are JSON, framed and signed with the cluster's secret like every
broker message (:mod:`~.auth`); a record that fails the check is skipped and
counted. The stream keeps :data:`MAX_AGE` of history.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from schedlab.services.auth import AuthError, Signer, Verifier

MAX_AGE = "7D"  # how long the stream keeps records (RabbitMQ's x-max-age)
IDLE = 0.3  # a read ends after this long without a record (a stream has no end marker)


def ledger_queue(cluster_name: str) -> str:
    return f"{cluster_name}.jobs"


class JobLedger:
    """Appends to and reads the ledger of one cluster (aio-pika; one connection)."""

    def __init__(self, url: str, cluster_name: str, secret: str, sender: str) -> None:
        self.url = url
        self.queue_name = ledger_queue(cluster_name)
        self.signer = Signer(secret, sender)
        self.verifier = Verifier(secret)
        self.conn: Any = None
        self.channel: Any = None
        self.queue: Any = None
        self.bad_records = 0

    async def connect(self) -> None:
        import aio_pika

        from schedlab.services.net import BrokerUnreachable

        try:
            self.conn = await asyncio.wait_for(aio_pika.connect_robust(self.url), 10.0)
        except Exception as e:
            raise BrokerUnreachable(self.url, f"cannot connect: {str(e).strip() or type(e).__name__}") from None
        self.channel = await self.conn.channel(publisher_confirms=True)
        await self.channel.set_qos(prefetch_count=500)  # a stream is read with acknowledgements and a prefetch
        self.queue = await self.channel.declare_queue(self.queue_name, durable=True,
                                                      arguments={"x-queue-type": "stream", "x-max-age": MAX_AGE})

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None

    async def append(self, record: dict[str, Any]) -> None:
        """One record, persistent, confirmed by the broker before this returns."""
        import aio_pika

        body = self.signer.frame(json.dumps(record, separators=(",", ":")).encode())
        await self.channel.default_exchange.publish(aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
                                                    routing_key=self.queue_name)

    async def read(self) -> list[dict[str, Any]]:
        """Every record from the stream's start (in append order)."""
        out: list[dict[str, Any]] = []
        async with self.queue.iterator(arguments={"x-stream-offset": "first"}) as it:
            while True:
                try:
                    message = await asyncio.wait_for(it.__anext__(), IDLE)
                except (TimeoutError, StopAsyncIteration):
                    break
                await message.ack()
                try:
                    _sender, body = self.verifier.unframe(message.body, fresh=False)
                    record = json.loads(body)
                except (AuthError, ValueError):
                    self.bad_records += 1
                    continue
                if isinstance(record, dict):
                    out.append(record)
        return out


def ended_record(job: int, time: float, gm: int) -> bytes:
    """A GM's ``ended`` record, unsigned (the GM's broker link signs what it publishes)."""
    return json.dumps({"kind": "ended", "job": job, "time": time, "gm": gm}, separators=(",", ":")).encode()


STATES = ("queued", "running", "done", "unknown")


def job_state(submitted: dict[str, Any], ended: dict[str, Any] | None, open_job: dict[str, Any] | None, gm_up: bool) -> dict[str, Any]:
    """One job as ``schedlab jobs`` shows it, from its ledger records and its GM's view (see the module docstring)."""
    tasks = int(submitted.get("tasks", 0))
    row = {"job": submitted["job"], "user": submitted.get("user", 0), "gm": submitted.get("gm"), "tasks": tasks,
           "submitted": submitted.get("time"), "ended": None, "running": 0, "completed": 0, "queued": 0}
    if ended is not None:
        return {**row, "state": "done", "ended": ended.get("time"), "completed": tasks}
    if open_job is not None:
        running, completed = int(open_job["running"]), int(open_job["completed"])
        return {**row, "state": "running" if running or completed else "queued", "running": running, "completed": completed,
                "queued": tasks - running - completed}
    if not gm_up:
        return {**row, "state": "unknown"}
    return {**row, "state": "queued", "queued": tasks}  # in its GM's queue, not delivered yet
