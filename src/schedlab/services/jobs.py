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

Not here yet (issue 47): ``job cancel``, ``job logs``, ``--retries`` and a
``failed`` state — the ledger's ``ended`` record says the job's tasks
completed, not how (exit codes stay in the run records of an attached
``submit``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any

from schedlab.engine import JobPreparer
from schedlab.services.clusterfile import LoadedCluster, require_secret
from schedlab.services.execution import TaskSpec
from schedlab.services.ledger import STATES, JobLedger, job_state
from schedlab.services.messages import SubmitJob
from schedlab.services.records import RunRecords
from schedlab.sim.rng import RngStreams
from schedlab.workload.constraints import PAPER_CONSTRAINT_SEED, TaskConstraintSampler
from schedlab.workload.requests import DEFAULT_REQUESTS, RequestModel
from schedlab.workload.trace import TraceJob

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
    ledger = JobLedger(loaded.broker, loaded.name, require_secret(loaded), "client")
    rc = RemoteCluster(loaded)
    await rc.connect()
    try:
        await ledger.connect()
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
            submitted.append({"kind": "submitted", "job": jid, "user": user, "tasks": len(tids), "time": now, "gm": gm})
        assert rc.amqp is not None
        await rc.amqp.drain(DRAIN_SECONDS)  # in the GMs' durable queues before the ledger names them
        for record in submitted:
            await ledger.append(record)
    finally:
        await ledger.close()
        await rc.close()
    return ids, preparer


async def list_jobs(loaded: LoadedCluster) -> list[dict[str, Any]]:
    """Every job of the ledger with its state (:func:`~.ledger.job_state`), oldest first."""
    from schedlab.services.remote import fetch_statuses

    ledger = JobLedger(loaded.broker, loaded.name, require_secret(loaded), "client")
    await ledger.connect()
    try:
        records = await ledger.read()
    finally:
        await ledger.close()
    views = await fetch_statuses(loaded, path="/v1/jobs", roles=("gm",))
    up = {v.get("gm", v.get("id")): "error" not in v for v in views}
    open_jobs = {j["job"]: j for v in views if "error" not in v for j in v.get("open", [])}
    submitted: dict[int, dict[str, Any]] = {}
    ended: dict[int, dict[str, Any]] = {}
    for r in records:
        job = r.get("job")
        if not isinstance(job, int):
            continue
        if r.get("kind") == "submitted":
            submitted.setdefault(job, r)
        elif r.get("kind") == "ended":
            ended.setdefault(job, r)  # a GM that died before acknowledging appends it again: the first counts
    return [job_state(s, ended.get(j), open_jobs.get(j), up.get(s.get("gm"), False)) for j, s in submitted.items()]


def check_state(state: str | None) -> None:
    from schedlab.errors import InputError

    if state is not None and state not in STATES:
        raise InputError("--state", f"unknown state {state!r} (choose from {', '.join(STATES)})")
