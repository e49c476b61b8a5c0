"""Jobs on a real cluster after their client has gone: ``submit --detach``, ``schedlab jobs``, ``job status``.

:func:`submit_detached` prepares jobs exactly as a replay does (the
simulator's :class:`~schedlab.engine.JobPreparer`: constraints, requests,
unsatisfiable tasks dropped and counted), publishes them all at once to their
GMs' durable submission queues — trace arrival times are not waited for — and,
once the broker has them, appends a ``submitted`` record per job to the job
ledger (:mod:`~.ledger`). It returns the job ids. Nothing of the job stays in
the client: its run records go to a run queue no one reads (the broker drops
them), and :func:`list_jobs` rebuilds every job's state from the ledger and
the GMs' open jobs.

:func:`job_logs` gives each task's outcome (status, exit code, the tails of
stdout and stderr its host kept) from the submission's run stream.

Retries (``--retries``) are the worker host's (:class:`~.worker.WorkerHost`): a command that fails runs again on
the same worker, its outcome saying how many attempts it took (another worker is not preferred yet).

:func:`cancel_job` reads the job's ``submitted`` record (which GM has it),
publishes :class:`~.messages.CancelJob` to that GM's durable completion log
(confirmed by the broker), appends ``cancel`` to the ledger, and waits a
little for the GM's ``cancelled`` record (:mod:`~.cancel` says what the GM
does). It is idempotent: a job already cancelled, or a cancellation already
requested, is not requested again; a job that already ended is left alone.

Attached submissions (``submit`` without ``--detach``) are in the ledger too:
:class:`LedgerAppender` appends their ``submitted`` records once the broker
has confirmed the jobs (marked ``attached``: their run records went to the
client, no run stream of theirs exists).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any

from schedlab.engine import JobPreparer
from schedlab.services.clusterfile import LoadedCluster, require_secret
from schedlab.services.execution import TaskSpec
from schedlab.services.ledger import ENDS, STATES, SignedStream, job_ledger, job_state
from schedlab.services.messages import CancelJob, SubmitJob, log_address
from schedlab.services.records import RunRecords
from schedlab.services.tasks import split_id
from schedlab.sim.rng import RngStreams
from schedlab.workload.constraints import PAPER_CONSTRAINT_SEED, TaskConstraintSampler
from schedlab.workload.requests import DEFAULT_REQUESTS, RequestModel
from schedlab.workload.trace import TraceJob

log = logging.getLogger("schedlab.services.jobs")

APPEND_PATIENCE = 30.0  # seconds a ledger record is tried on the cluster's brokers before it is given up (and said)

DRAIN_SECONDS = 10.0  # how long a detached submit waits for the broker to take its jobs


async def submit_detached(loaded: LoadedCluster, jobs: Iterable[TraceJob], *, constraints: bool, seed: int = 0,
                          spec: Callable[[int, int, float], TaskSpec | None] | None = None, user: int = 0) -> tuple[list[int], JobPreparer]:
    """Submit ``jobs`` now and return their ids (and the preparer, whose counters say what was dropped)."""
    from schedlab.services.remote import RemoteCluster

    cl = loaded.cluster
    req_model = None if cl.slot_mode else RequestModel.parse(DEFAULT_REQUESTS, len(cl.resources))
    preparer = JobPreparer(cl, TaskConstraintSampler(PAPER_CONSTRAINT_SEED) if constraints else None, req_model,
                           RngStreams(seed).np_rng("requests"))
    records = RunRecords(secrets.randbits(31))  # the ids of this submission (no one collects its records)
    gms = len(loaded.spec.gms)
    ids: list[int] = []
    ledger = job_ledger(loaded.broker, loaded.name, require_secret(loaded), "client")
    rc = RemoteCluster(loaded)
    await rc.connect()
    try:
        await ledger.connect()
        assert rc.directory is not None
        await ledger.declare(rc.directory.queue(("run", records.run)))  # its run records, kept: job logs, failed jobs
        submitted = []
        previous = float("-inf")
        for k, tj in enumerate(jobs):
            preparer.check(tj, previous)
            previous = tj.arrival
            pj = preparer.prepare(tj)
            if pj is None:
                continue
            specs = None if spec is None else [spec(k, i, d) for i, d in enumerate(pj.durations)]
            specs = None if specs is None or all(s is None for s in specs) else specs
            now = time.time()
            jid, tids = records.add_job(0.0, pj.durations, pj.masks, pj.requests, pj.mean_duration, pj.line, user)
            gm = len(ids) % gms
            rc.submit(SubmitJob(jid, tids, pj.durations, pj.masks, pj.requests, specs, user), gm=gm)
            ids.append(jid)
            submitted.append({"kind": "submitted", "job": jid, "user": user, "tasks": len(tids), "time": now, "gm": gm,
                              "run": records.run, "first_task": split_id(tids[0])[1]})
        assert rc.amqp is not None
        await rc.amqp.drain(DRAIN_SECONDS)  # in the GMs' durable queues before the ledger names them
        for record in submitted:
            await ledger.append(record)
    finally:
        await ledger.close()
        await rc.close()
    return ids, preparer


def _index(records: list[dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
    """The ledger's first ``submitted``, first end (``ended`` or ``cancelled``) and first ``cancel`` per job: a GM
    that died before acknowledging appends its record again, and the first counts."""
    submitted: dict[int, dict[str, Any]] = {}
    ended: dict[int, dict[str, Any]] = {}
    cancels: dict[int, dict[str, Any]] = {}
    for r in records:
        job, kind = r.get("job"), r.get("kind")
        if not isinstance(job, int):
            continue
        if kind == "submitted":
            submitted.setdefault(job, r)
        elif kind in ENDS:
            ended.setdefault(job, r)
        elif kind == "cancel":
            cancels.setdefault(job, r)
    return submitted, ended, cancels


async def list_jobs(loaded: LoadedCluster) -> list[dict[str, Any]]:
    """Every job of the ledger with its state (:func:`~.ledger.job_state`), oldest first."""
    from schedlab.services.remote import fetch_statuses

    records = await _read(loaded, ledger_queue_of(loaded))
    views = await fetch_statuses(loaded, path="/v1/jobs", roles=("gm",))
    up = {v.get("gm", v.get("id")): "error" not in v for v in views}
    open_jobs = {j["job"]: j for v in views if "error" not in v for j in v.get("open", [])}
    submitted, ended, cancels = _index(records)
    outcomes: dict[int, dict[int, dict[str, Any]]] = {}
    for run in sorted({s["run"] for j, s in submitted.items() if j in ended and isinstance(s.get("run"), int) and not s.get("attached")}):
        outcomes[run] = await run_outcomes(loaded, run)
    rows = []
    for j, s in submitted.items():
        mine = _job_outcomes(s, outcomes.get(s.get("run", -1), {}))
        rows.append(job_state(s, ended.get(j), open_jobs.get(j), up.get(s.get("gm"), False), mine, cancels.get(j)))
    return rows


CANCEL_WAIT = 10.0  # seconds job cancel waits for the GM to carry the cancellation out


async def cancel_job(loaded: LoadedCluster, job: int, wait: float = CANCEL_WAIT) -> tuple[str, dict[str, Any] | None]:
    """Cancel ``job``. Returns what happened — ``"unknown"`` (no such job in the ledger), ``"ended"`` (it had
    ended: its end record), ``"cancelled"`` (now: the GM's record), ``"already cancelled"`` (its record),
    ``"requested"`` (in the GM's durable log, not carried out within ``wait`` s: its GM is down or busy; it will
    be when it is back) — and the record that says it."""
    from schedlab.services.remote import RemoteCluster

    ledger = job_ledger(loaded.broker, loaded.name, require_secret(loaded), "client")
    await ledger.connect()
    try:
        submitted, ended, cancels = _index(await ledger.read())
        sub = submitted.get(job)
        if sub is None:
            return "unknown", None
        if job in ended:
            end = ended[job]
            return ("already cancelled" if end.get("kind") == "cancelled" else "ended"), end
        if job not in cancels:  # not requested before: the request goes to the GM's durable log, then the ledger
            gm = int(sub.get("gm", 0))
            rc = RemoteCluster(loaded)
            await rc.connect()
            try:
                assert rc.rt is not None and rc.amqp is not None
                rc.rt.send(log_address(gm), CancelJob(job, gm))
                await rc.amqp.drain(DRAIN_SECONDS)
            finally:
                await rc.close()
            await ledger.append({"kind": "cancel", "job": job, "time": time.time(), "gm": gm})
        deadline = time.monotonic() + wait
        while True:
            now_ended = _index(await ledger.read())[1].get(job)
            if now_ended is not None:
                return ("cancelled" if now_ended.get("kind") == "cancelled" else "ended"), now_ended
            if time.monotonic() >= deadline:
                return "requested", None
            await asyncio.sleep(0.2)
    finally:
        await ledger.close()


class LedgerAppender:
    """An attached submission's ``submitted`` records, appended to the job ledger once the broker has its jobs
    (every ``every`` seconds, and at :meth:`close`). ``drain()`` waits for the client's publishes."""

    def __init__(self, loaded: LoadedCluster, drain: Callable[[], Any], every: float = 0.5) -> None:
        self.stream = job_ledger(loaded.broker, loaded.name, require_secret(loaded), "client")
        self.urls = list(loaded.brokers) or [loaded.broker]
        self.drain = drain
        self.every = every
        self.pending: list[dict[str, Any]] = []
        self.not_appended = 0  # records given up on (the broker unreachable for APPEND_PATIENCE seconds)
        self._task: asyncio.Task | None = None

    async def open(self) -> None:
        await self.stream.connect()
        self._task = asyncio.create_task(self._run())

    def add(self, record: dict[str, Any]) -> None:
        self.pending.append(record)

    async def _flush(self) -> None:
        if not self.pending:
            return
        records, self.pending = self.pending, []
        await self.drain()
        for r in records:
            await self._append(r)

    async def _append(self, record: dict[str, Any]) -> None:
        """Append one record, moving to another broker of the cluster while the stream's node is gone (found by
        the broker-node chaos test: the channel died with its node and the replay failed at its last flush).
        A record appended twice is harmless: readers keep a job's first ``submitted``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + APPEND_PATIENCE
        k = self.urls.index(self.stream.url) if self.stream.url in self.urls else 0
        while True:
            try:
                if self.stream.channel is None or self.stream.channel.is_closed:
                    self.stream.url = self.urls[k % len(self.urls)]
                    await self.stream.connect()
                await self.stream.append(record)
                return
            except Exception as e:  # any broker failure: the next node (or this one, back)
                with contextlib.suppress(Exception):
                    await self.stream.close()
                if loop.time() > deadline:
                    self.not_appended += 1
                    log.error("job ledger: a 'submitted' record of job %s not appended (%s): jobs will not list it",
                              record.get("job"), str(e).strip() or type(e).__name__)
                    return
                k += 1
                await asyncio.sleep(0.5)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await self._flush()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        try:
            await self._flush()
        finally:
            await self.stream.close()


def _job_outcomes(sub: dict[str, Any], of_run: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The outcomes of one job's tasks (local ids ``first_task`` …) among its run's."""
    first, n = sub.get("first_task"), int(sub.get("tasks", 0))
    if not isinstance(first, int):
        return {}
    return {k - first: of_run[k] for k in range(first, first + n) if k in of_run}


async def run_outcomes(loaded: LoadedCluster, run: int) -> dict[int, dict[str, Any]]:
    """The last outcome reported per task (local id) in a detached run's records (its stream)."""
    from schedlab.services.net import Directory
    from schedlab.services.records import FINISHED
    from schedlab.services.wire import Codec, WireError

    codec = Codec(None)
    out: dict[int, dict[str, Any]] = {}
    stream = SignedStream(loaded.broker, Directory(loaded).queue(("run", run)), require_secret(loaded), "client")
    await stream.connect()
    try:
        bodies = await stream.read_bodies()
    finally:
        await stream.close()
    for body in bodies:
        try:
            _src, _dst, msg = codec.decode(body)
        except WireError:
            continue
        for ev in getattr(msg, "events", ()):
            if ev[0] == FINISHED and isinstance(ev[3], dict):
                out[int(ev[1])] = ev[3]
    return out


async def job_logs(loaded: LoadedCluster, job: int) -> list[dict[str, Any]] | None:
    """Per task of ``job``: its outcome (status, exit code, stdout and stderr tails); None if no such job."""
    records = await _read(loaded, ledger_queue_of(loaded))
    sub = next((r for r in records if r.get("kind") == "submitted" and r.get("job") == job), None)
    if sub is None:
        return None
    run = sub.get("run")
    mine = _job_outcomes(sub, await run_outcomes(loaded, run)) if isinstance(run, int) and not sub.get("attached") else {}
    return [{"task": k, **mine.get(k, {"status": "not ended"})} for k in range(int(sub.get("tasks", 0)))]


async def ledger_runs(loaded: LoadedCluster, connection: Any = None) -> list[int]:
    """Every run the job ledger names (for ``cluster down`` to delete their queues): those of detached
    submissions keep their records in streams; those of attached ones had a run queue their client read,
    which outlives a killed client by :data:`~.net.RUN_QUEUE_EXPIRES_MS`. ``connection``: an open aio-pika
    connection to use."""
    stream = SignedStream(loaded.broker, ledger_queue_of(loaded), require_secret(loaded), "client")
    try:
        if not await stream.connect(passive=True, connection=connection):
            return []
        return sorted({r["run"] for r in await stream.read() if r.get("kind") == "submitted" and isinstance(r.get("run"), int)})
    finally:
        await stream.close()


def ledger_queue_of(loaded: LoadedCluster) -> str:
    from schedlab.services.ledger import ledger_queue

    return ledger_queue(loaded.name)


async def _read(loaded: LoadedCluster, queue: str) -> list[dict[str, Any]]:
    stream = SignedStream(loaded.broker, queue, require_secret(loaded), "client")
    await stream.connect()
    try:
        return await stream.read()
    finally:
        await stream.close()


def check_state(state: str | None) -> None:
    from schedlab.errors import InputError

    if state is not None and state not in STATES:
        raise InputError("--state", f"unknown state {state!r} (choose from {', '.join(STATES)})")
