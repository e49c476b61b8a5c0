"""A client's handle on a cluster running as services: submit over RabbitMQ, records back over RabbitMQ.

:class:`RemoteCluster` is what ``schedlab submit --cluster FILE`` and
:class:`schedlab.services.Client` use. Jobs go to a GM's durable submission
queue (``<name>.submit.<g>``, persistent messages, so a job waits there if its
GM is down); each run gets its own exclusive, auto-deleted queue
(``<name>.run.<id>``) for the lifecycle events the services send back, so
several clients can use one cluster at once and nothing is left behind when a
client goes away. Counters are read from every node's ``/v1/status`` at the
end of a run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import aiohttp

from schedlab.schedulers.megha import MeghaParams
from schedlab.services.assembly import parse_params
from schedlab.services.auth import AuthError, Signer, Verifier
from schedlab.services.clusterfile import LoadedCluster, require_secret
from schedlab.services.live import LIVE_KIND, live_queue
from schedlab.services.messages import RecordEvents, SubmitJob, submit_address
from schedlab.services.net import AmqpFrames, AmqpLink, Directory
from schedlab.services.nodes import sum_statuses
from schedlab.services.records import RunRecords
from schedlab.services.runtime import AsyncRuntime
from schedlab.services.transport import JsonWire, Router
from schedlab.services.wire import Codec, WireError

log = logging.getLogger("schedlab.services.remote")
RECORDS_ACK_EVERY = 0.1  # seconds between a client's acknowledgements of its run records


class RemoteCluster:
    """A running cluster reached through its cluster file."""

    transport_name = "http+amqp"

    def __init__(self, loaded: LoadedCluster) -> None:
        self.loaded = loaded
        self.cluster = loaded.cluster
        self.params: MeghaParams = parse_params(loaded.megha_params())
        self.amqp: AmqpLink | None = None
        self.rt: AsyncRuntime | None = None
        self.runs: dict[int, RunRecords] = {}
        self._messages: dict[str, int] = {}
        self.bad_records = 0
        self.ledger: Any = None  # the job ledger's appender while a run is open (attached jobs are listed: jobs)

    @property
    def num_gms(self) -> int:
        return len(self.loaded.spec.gms)

    async def __aenter__(self) -> RemoteCluster:
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def connect(self, timeout: float = 5.0) -> None:
        secret = require_secret(self.loaded)
        self.amqp = AmqpLink(self.loaded.brokers, Signer(secret, "client"), Verifier(secret), self._refused,
                             quorum=self.loaded.quorum)
        # the run's records: acknowledged ten times a second, not every 5 ms as a service's input (a record
        # delivered again after a crash is recognised; each acknowledgement cost the client CPU at low rates)
        self.amqp.acks.every = RECORDS_ACK_EVERY
        await self.amqp.connect(timeout)
        self.codec = Codec(None)
        self.directory = Directory(self.loaded)
        self.transport = Router("client", JsonWire(self.codec), self.directory.url, self.directory.queue, None,
                                AmqpFrames(self.amqp, self.codec))
        self.rt = AsyncRuntime(self.transport, 0)

    async def close(self) -> None:
        if self.amqp is not None:
            await self.amqp.close()
            self.amqp = None

    # -- the client's handle ------------------------------------------------------------------------
    def now(self) -> float:
        return time.time()

    async def open_run(self, run: int) -> RunRecords:
        assert self.amqp is not None, "connect() first"
        records = self.runs[run] = RunRecords(run)
        queue = self.directory.queue(("run", run))

        def on_body(body: bytes) -> None:
            try:
                _src, _dst, msg = self.codec.decode(body)
            except WireError as e:
                self._bad(records, e.reason)
                return
            if not isinstance(msg, RecordEvents) or msg.run != run:
                self._bad(records, f"{type(msg).__name__} on run {run}'s queue")
                return
            for ev in msg.events:
                records.event(tuple(ev))

        await self.amqp.consume(queue, on_body, durable=False, exclusive=True)
        if self.ledger is None:
            from schedlab.services.jobs import DRAIN_SECONDS, LedgerAppender

            amqp = self.amqp
            self.ledger = LedgerAppender(self.loaded, lambda: amqp.drain(DRAIN_SECONDS))
            await self.ledger.open()
        return records

    def job_submitted(self, record: dict[str, Any]) -> None:
        """A job of an open run was submitted: its ``submitted`` record goes to the job ledger once the broker has it."""
        if self.ledger is not None:
            self.ledger.add(record)

    def _refused(self, e: AuthError) -> None:
        """A message on a run's queue that failed authentication: counted in every open run, never applied.
        One whose only fault is its sender's clock (``skewed``) is applied, and counted apart."""
        for records in self.runs.values():
            if e.reason == "skewed":
                records.counters["skewed_records"] = records.counters.get("skewed_records", 0) + 1
            else:
                self._bad(records, f"refused ({e})")

    def _bad(self, records: RunRecords, reason: str) -> None:
        """A message on the run's queue that is not one of its records: counted in the run's summary, logged once."""
        self.bad_records += 1
        records.counters["bad_record_messages"] = records.counters.get("bad_record_messages", 0) + 1
        if self.bad_records == 1:
            log.warning("ignored a message on the run's queue: %s", reason)

    async def close_run(self, run: int) -> None:
        self.runs.pop(run, None)
        if self.ledger is not None and not self.runs:
            ledger, self.ledger = self.ledger, None
            await ledger.close()
        if self.amqp is not None:
            await self.amqp.delete_queues([self.directory.queue(("run", run))])

    def publish_live(self, snapshot: dict[str, Any]) -> None:
        """A run's live figures to the cluster's dashboard, if one listens (:mod:`~.live`)."""
        if self.amqp is not None:
            self.amqp.publish(live_queue(self.loaded.name), json.dumps({"kind": LIVE_KIND, **snapshot}, separators=(",", ":")).encode())

    def submit(self, job: SubmitJob, gm: int) -> None:
        assert self.rt is not None, "connect() first"
        self.rt.send(submit_address(gm), job)

    async def statuses(self, timeout: float = 3.0) -> list[dict[str, Any]]:
        """Every node's ``/v1/status`` (a node that does not answer gives ``{"role", "id", "error"}``)."""
        return await fetch_statuses(self.loaded, timeout)

    async def collect_counters(self) -> dict[str, int]:
        out, self._messages = sum_statuses(await self.statuses())
        return out

    def message_counts(self) -> dict[str, int]:
        return self._messages


async def fetch_statuses(loaded: LoadedCluster, timeout: float = 3.0, session: aiohttp.ClientSession | None = None,
                         path: str = "/v1/status", roles: tuple[str, ...] = ("gm", "lm", "worker")) -> list[dict[str, Any]]:
    """Every node's ``/v1/status`` (or another signed ``path`` of the ``roles`` given), signed and checked with the
    cluster's secret (a node that does not answer gives ``{"role", "id", "url", "error"}``). ``session``: one kept
    open between calls (a dashboard reading the cluster every second reuses its connections instead of opening
    one per node and read)."""
    if session is None:
        async with aiohttp.ClientSession() as own:
            return await fetch_statuses(loaded, timeout, own, path, roles)
    # an LM with a standby elsewhere serves at either of its addresses: the first that answers
    nodes: list[tuple[str, int, list[str]]] = [("gm", g.id, [g.url]) for g in loaded.spec.gms]
    nodes += [("lm", lm.id, lm.urls) for lm in loaded.spec.lms]
    nodes += [("worker", h.id, [h.url]) for _lm, h in loaded.spec.hosts()]
    nodes = [n for n in nodes if n[0] in roles]
    secret = loaded.secret
    signer = None if not secret else Signer(secret, "client")
    verifier = None if not secret else Verifier(secret)
    limit = aiohttp.ClientTimeout(total=timeout)

    async def one(role: str, ident: int, urls: list[str]) -> dict[str, Any]:
        for url in urls[:-1]:
            got = await at(role, ident, url)
            if "error" not in got:
                return got
        return await at(role, ident, urls[-1])

    async def at(role: str, ident: int, url: str) -> dict[str, Any]:
        try:
            async with session.get(url + path, headers=None if signer is None else signer.headers(b""), timeout=limit) as resp:
                body = await resp.read()
                if resp.status != 200:
                    return {"role": role, "id": ident, "url": url, "error": f"HTTP {resp.status}: {body.decode(errors='replace').strip()}"}
                if verifier is not None:
                    try:
                        verifier.verify(resp.headers, body)
                    except AuthError as e:
                        return {"role": role, "id": ident, "url": url, "error": f"answer refused: {e}"}
                return json.loads(body)
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as e:
            return {"role": role, "id": ident, "url": url, "error": f"{type(e).__name__}: {e}" if str(e) else type(e).__name__}

    return list(await asyncio.gather(*(one(*n) for n in nodes)))
