"""Replaying a trace against a real Megha cluster, and summarising it exactly as a simulation is.

:func:`replay` reads a trace with the simulator's conventions, prepares each
job with the simulator's own :class:`~schedlab.engine.JobPreparer` (task
constraints drawn with the papers' seed, requests in multi-resource mode,
unsatisfiable tasks dropped — so a real run and a simulated one get the same
tasks), submits it when the wall clock reaches its arrival (divided by
``speedup``), and waits until the cluster has reported every task. The result
is an :class:`~schedlab.engine.Result` with the same tables and summary JSON
schema as :func:`schedlab.simulate`, from real timestamps.

Choices:

* Times are seconds since the replay started, shifted so the first job
  arrives at its trace time (divided by ``speedup``). Task durations are what
  the workers executed (trace duration / ``speedup``), so JRT delay compares
  like with like.
* Every task sleeps for its duration unless ``task`` says otherwise:
  ``"cpu"`` runs the Megha paper's synthetic task (holds ``cpus`` CPUs — or,
  with ``cpus_from_request``, its core request — for its duration, so
  co-located tasks interfere); a callable
  ``task(job_index, task_index, duration) -> TaskSpec`` gives anything else.
* The summary's ``runtime`` section says what ran: ``"real"``, the transport,
  wall time and the replay's own counters.
* Long replays: ``progress(p)`` is called about twice a second with a
  :class:`ReplayProgress` (jobs submitted, tasks done, allocation p50 over the
  last minute, the estimate and ETA in wall time); setting ``stop`` (an
  ``asyncio.Event``: the CLI sets it on Ctrl-C or SIGTERM) ends submission and
  waiting at once, and the result is the partial run — what completed, what did
  not (``tasks_unfinished``, ``runtime.stopped``). The estimate is the span
  from the first arrival to the latest arrival plus its job's longest task,
  over ``speedup``: queueing comes on top. ``timeout="auto"`` gives up waiting
  at twice the estimate plus a minute (None waits for ever).
* Task constraints (``constraints``): ``"paper"`` (or ``True``) draws them with
  the papers' statistics, ``"none"`` (or ``False``) draws none, and
  ``"auto"`` — what ``schedlab submit`` uses — draws them only when some
  worker of the cluster declares a machine constraint: on a cluster whose
  workers declare none, every drawn constraint would be unsatisfiable and
  nearly every task dropped (a 400-task trace ran 52). Tasks still dropped
  are counted by reason in ``Result.extra["dropped"]``
  (:class:`~schedlab.dropped.DropReasons`), which ``submit`` prints.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from schedlab.cluster.model import Cluster
from schedlab.engine import JobPreparer, Result, summarize_run
from schedlab.errors import InputError
from schedlab.schedulers.megha import MeghaParams
from schedlab.services.embedded import EmbeddedMegha
from schedlab.services.execution import TaskSpec
from schedlab.services.fairness import user_assignment
from schedlab.services.live import LIVE_EVERY, AllocationWindow
from schedlab.services.messages import SubmitJob
from schedlab.services.nodes import COUNTER_STATES
from schedlab.services.records import RunRecords
from schedlab.services.tasks import split_id
from schedlab.sim.rng import RngStreams
from schedlab.workload.constraints import PAPER_CONSTRAINT_SEED, TaskConstraintSampler
from schedlab.workload.requests import DEFAULT_REQUESTS, RequestModel
from schedlab.workload.trace import TraceConventions, TraceJob, read_trace

TaskFactory = Callable[[int, int, float], Any]


class ClusterHandle(Protocol):
    """A running cluster as a client sees it: an embedded one, or a remote one over the network."""

    cluster: Cluster
    params: MeghaParams
    transport_name: str

    @property
    def num_gms(self) -> int: ...

    def now(self) -> float: ...

    async def open_run(self, run: int) -> RunRecords: ...

    async def close_run(self, run: int) -> None: ...

    def submit(self, job: SubmitJob, gm: int) -> None: ...

    async def collect_counters(self) -> dict[str, int]: ...

    def message_counts(self) -> dict[str, int]: ...


CONSTRAINT_CHOICES = ("auto", "paper", "none")


def since(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    """Counters over a run: the totals' growth, except those that tell a state (:data:`~.nodes.COUNTER_STATES`:
    holdings at the end, nodes stalled or unreachable), as they are at its end."""
    return {k: v if k in COUNTER_STATES else v - before.get(k, 0) for k, v in after.items()}


def draws_constraints(cluster: Cluster, choice: bool | str) -> bool:
    """Whether a replay on ``cluster`` draws the papers' task constraints (``choice``: see the module docstring)."""
    if isinstance(choice, bool):
        return choice
    if choice not in CONSTRAINT_CHOICES:
        raise InputError("--constraints", f"unknown choice {choice!r} (choose from {', '.join(CONSTRAINT_CHOICES)})")
    return choice == "paper" or (choice == "auto" and any(cluster.machine_masks))


@dataclass
class ReplayProgress:
    """Where a replay is, for a progress bar (see the module docstring)."""

    jobs_submitted: int
    jobs_total: int | None
    tasks_submitted: int
    tasks_done: int
    allocation_p50: float | None  # seconds, over the tasks completed in the last minute
    elapsed: float  # wall seconds since the replay started
    estimate: float | None  # wall seconds the whole replay should take (None: not known beforehand)

    @property
    def eta(self) -> float | None:
        return None if self.estimate is None else max(0.0, self.estimate - self.elapsed)


def estimate_wall(jobs: list[TraceJob], speedup: float) -> float | None:
    """Wall seconds from the first submission until the last task should end, without queueing (None: no jobs)."""
    if not jobs:
        return None
    end = max(j.arrival + max(j.durations, default=0.0) for j in jobs)
    return (end - jobs[0].arrival) / speedup


AUTO_TIMEOUT_MARGIN = 60.0


def _task_factory(task: str | TaskFactory | None, cpus: float) -> TaskFactory | None:
    if task is None or task == "sleep":
        return None
    if callable(task):
        return task
    if task == "cpu":
        return lambda _j, _t, d: TaskSpec(kind="cpu", duration=d, cpus=cpus)
    raise InputError("--task", f"unknown task kind {task!r} (choose from sleep, cpu)")


async def replay(
    cluster: ClusterHandle,
    trace: str | os.PathLike | Iterable[TraceJob],
    *,
    max_jobs: int | None = None,
    speedup: float = 1.0,
    seed: int = 0,
    constraints: bool | str = True,
    constraint_seed: int = PAPER_CONSTRAINT_SEED,
    requests: str = DEFAULT_REQUESTS,
    conventions: TraceConventions | None = None,
    task: str | TaskFactory | None = None,
    cpus: float = 1.0,
    cpus_from_request: bool = False,
    timeout: float | str | None = None,
    trace_label: str | None = None,
    progress: Callable[[ReplayProgress], None] | None = None,
    stop: asyncio.Event | None = None,
) -> Result:
    """Submit ``trace`` to ``cluster`` in real time and return the run's tables and summary."""
    if not speedup > 0:
        raise InputError("--speedup", f"must be > 0, got {speedup}")
    if max_jobs is not None and max_jobs < 1:
        raise InputError("--max-jobs", f"must be >= 1, got {max_jobs}")
    t_wall = time.perf_counter()
    if isinstance(trace, str | os.PathLike):
        label = trace_label or str(trace)
        # read (and so validate) everything that will be submitted before one job reaches the cluster
        jobs: Iterable[TraceJob] = list(itertools.islice(read_trace(trace, conventions), max_jobs))
    else:
        label = trace_label or "custom"
        jobs = trace
    listed = jobs if isinstance(jobs, list) else None
    estimate = None if listed is None else estimate_wall(listed[:max_jobs] if max_jobs else listed, speedup)
    if timeout == "auto":
        timeout = None if estimate is None else 2 * estimate + AUTO_TIMEOUT_MARGIN
    elif isinstance(timeout, str):
        raise InputError("--timeout", f"expected seconds or 'auto', got {timeout!r}")
    stop = stop if stop is not None else asyncio.Event()
    cl = cluster.cluster
    constraints = draws_constraints(cl, constraints)
    req_model = None if cl.slot_mode else RequestModel.parse(requests, len(cl.resources))
    sampler = TaskConstraintSampler(constraint_seed) if constraints else None
    preparer = JobPreparer(cl, sampler, req_model, RngStreams(seed).np_rng("requests"))
    factory = _task_factory(task, cpus)
    run = secrets.randbits(31)
    # the nodes' counters are totals since they started: this run's are the difference (a cluster replays many runs)
    counters_before = await cluster.collect_counters()
    messages_before = dict(cluster.message_counts())
    records = await cluster.open_run(run)
    publish_live = getattr(cluster, "publish_live", None)  # a cluster behind a broker: figures for its dashboard
    in_ledger = getattr(cluster, "job_submitted", None)
    live = None
    records.window = AllocationWindow()  # allocation times over the last minute: the dashboard's, the progress bar's
    if publish_live is not None:
        live = asyncio.create_task(_publish_live(records, publish_live))
    counts = {"jobs": 0, "tasks": 0}
    ticker = None
    total = None if listed is None else min(len(listed), max_jobs or len(listed))
    if progress is not None:
        ticker = asyncio.create_task(_tick(records, progress, counts, total, estimate))
    now = cluster.now
    gms = cluster.num_gms
    users = user_assignment(cluster.params, gms, seed)  # fair sharing: the simulator's users, the GM serving each
    submitted = 0
    origin: float | None = None
    previous = float("-inf")
    try:
        for k, tj in enumerate(jobs):
            if max_jobs is not None and k >= max_jobs:
                break
            preparer.check(tj, previous)
            previous = tj.arrival
            if origin is None:
                origin = now() - tj.arrival / speedup
                records.origin = origin
            delay = origin + tj.arrival / speedup - now()
            if delay > 0 and await _stopped(stop, delay):
                break
            if stop.is_set():
                break
            pj = preparer.prepare(tj)
            if pj is None:
                continue
            durations = [d / speedup for d in pj.durations]
            if cpus_from_request and task == "cpu" and pj.requests is not None:
                specs: list[TaskSpec] | None = [TaskSpec(kind="cpu", duration=d, cpus=pj.requests[i][0]) for i, d in enumerate(durations)]
            else:
                specs = None if factory is None else [factory(k, i, d) for i, d in enumerate(durations)]
            arrival = now() - origin
            if users is None:
                user, gm = 0, submitted % gms
            else:
                user = users.next()
                gm = users.queue_gm[user]
            gjid, gtids = records.add_job(arrival, durations, pj.masks, pj.requests, pj.mean_duration / speedup, pj.line, user)
            cluster.submit(SubmitJob(gjid, gtids, durations, pj.masks, pj.requests, specs, user), gm=gm)
            if in_ledger is not None:  # a cluster behind a broker: the job ledger lists attached jobs too (jobs)
                in_ledger({"kind": "submitted", "job": gjid, "user": user, "tasks": len(gtids), "time": time.time(), "gm": gm,
                           "run": run, "first_task": split_id(gtids[0])[1], "attached": True})
            submitted += 1
            counts["jobs"] += 1
            counts["tasks"] += len(gtids)
        if preparer.trace_jobs == 0 and not stop.is_set():
            raise InputError(label, "the trace has no jobs: nothing to submit")
        deadline = None if timeout is None else time.monotonic() + timeout
        while records.open_tasks and not stop.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            changed = asyncio.ensure_future(records.wait_changed())
            stopping = asyncio.ensure_future(stop.wait())
            done, _pending = await asyncio.wait((changed, stopping), timeout=left, return_when=asyncio.FIRST_COMPLETED)
            for f in (changed, stopping):
                if not f.done():
                    f.cancel()
            if not done:
                break
    finally:
        if ticker is not None:
            ticker.cancel()
        if live is not None and publish_live is not None:
            live.cancel()
            publish_live(_live_snapshot(records, done=True))
        await cluster.close_run(run)
    wall = time.perf_counter() - t_wall
    counters = dict(preparer.counters())
    counters.update(records.counters)
    sched_counters = since(await cluster.collect_counters(), counters_before)
    messages = {k: n for k, n in since(cluster.message_counts(), messages_before).items() if n}
    tdf, jdf, udf, summary = summarize_run(
        records.recorder, records.tasks, cl, {"scheduler": "megha", "trace": label, "seed": seed}, counters, messages, sched_counters
    )
    summary.update(
        {
            "wall_seconds": wall,
            "events": sum(messages.values()),
            "sim_time": max(0.0, now() - (origin or now())),
            "config": {
                "params": cluster.params.dump(),
                "data_center": cl.source,
                "resource_mode": "slots" if cl.slot_mode else "multi",
                "resources": list(cl.resources),
                "constraints": constraints,
                "constraint_seed": constraint_seed if constraints else None,
                "latency": getattr(cluster, "latency", None),
                "truncate_durations": (conventions or TraceConventions()).truncate_durations,
                "dephase": (conventions or TraceConventions()).dephase,
                "requests": requests if not cl.slot_mode else None,
            },
            "runtime": {"kind": "real", "transport": cluster.transport_name, "speedup": speedup, "task": task if isinstance(task, str) else "custom" if task else "sleep",
                        "run": run, "outcomes_failed": sum(1 for o in records.outcomes.values() if o.get("status") not in ("ok", "cancelled")),
                        **_cancelled(records),
                        "stopped": stop.is_set(), "jobs_submitted": submitted, "jobs_total": total, "estimate_seconds": estimate, "timeout": timeout},
        }
    )
    return Result(summary, tdf, jdf, udf, extra={"outcomes": records.outcomes, "requests": list(records.tasks.request),
                                                "preempted_runs": list(records.recorder.preempted_runs), "origin": records.origin,
                                                "dropped": preparer.drops})


def _cancelled(records: RunRecords) -> dict[str, int]:
    """How many tasks of the run ended ``cancelled`` (``job cancel``), and of how many jobs."""
    tasks = [local for local, o in records.outcomes.items() if o.get("status") == "cancelled"]
    job_of = records.recorder.job_of
    return {"tasks_cancelled": len(tasks), "jobs_cancelled": len({job_of(t) for t in tasks})}


async def _stopped(stop: asyncio.Event, delay: float) -> bool:
    """Wait ``delay`` seconds; True if ``stop`` was set meanwhile."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=delay)
    except TimeoutError:
        return False
    return True


async def _tick(records: RunRecords, progress: Callable[[ReplayProgress], None], counts: dict[str, int], total: int | None,
                estimate: float | None, every: float = 0.5) -> None:
    """Call ``progress`` every ``every`` seconds while the replay runs."""
    t0 = time.monotonic()
    while True:
        assert records.window is not None
        p50 = records.window.snapshot()["allocation_time"].get("p50")
        progress(ReplayProgress(counts["jobs"], total, counts["tasks"], records.tasks_done, p50, time.monotonic() - t0, estimate))
        await asyncio.sleep(every)


def _live_snapshot(records: RunRecords, done: bool = False) -> dict[str, Any]:
    assert records.window is not None
    return {"run": records.run, "time": time.time(), "done": done, "tasks": records.recorder.num_tasks, "tasks_done": records.tasks_done,
            "jobs": records.recorder.num_jobs, "jobs_done": records.jobs_done, **records.window.snapshot()}


async def _publish_live(records: RunRecords, publish: Callable[[dict[str, Any]], None]) -> None:
    """Every ``LIVE_EVERY`` s, the run's live figures to the cluster's dashboard (:mod:`~.live`)."""
    while True:
        publish(_live_snapshot(records))
        await asyncio.sleep(LIVE_EVERY)


class Client:
    """Work for a running cluster, from Python.

    ``Client("demo.yaml")`` reaches a cluster started with ``schedlab cluster up``
    (through its broker); ``Client("demo.yaml", embedded=True)`` runs the file's
    cluster inside this process for the client's lifetime (no broker)::

        async with Client("demo.yaml") as c:
            result = await c.replay("google", max_jobs=50, speedup=20)
            outcome = await c.run(["python", "-c", "print(42)"])
    """

    def __init__(self, cluster_file: str | os.PathLike, *, embedded: bool = False) -> None:
        from schedlab.services.clusterfile import load_cluster  # only Client reads cluster files

        self.loaded = load_cluster(cluster_file)
        self.embedded = embedded
        self.handle: Any = None

    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def connect(self) -> None:
        if self.embedded:
            self.handle = EmbeddedMegha(self.loaded.cluster, self.loaded.megha_params(), seed=self.loaded.spec.seed)
            await self.handle.start()
            return
        from schedlab.services.net import BrokerUnreachable  # no broker transport when embedded
        from schedlab.services.remote import RemoteCluster  # (idem)
        from schedlab.services.supervise import safe_url  # (idem)

        handle = RemoteCluster(self.loaded)
        try:
            await handle.connect()
        except BrokerUnreachable as e:
            raise InputError(f"broker {safe_url(e.url)}", e.reason) from None
        self.handle = handle

    async def close(self) -> None:
        if self.handle is None:
            return
        if self.embedded:
            await self.handle.stop()
        else:
            await self.handle.close()
        self.handle = None

    async def replay(self, trace: str | os.PathLike | Iterable[TraceJob], **kw: Any) -> Result:
        """:func:`replay` on this client's cluster."""
        if self.handle is None:
            await self.connect()
        return await replay(self.handle, trace, **kw)

    async def run(self, argv: list[str] | str, *, cpus: float = 1.0, constraints: Iterable[int] = (), shell: bool = False,
                  timeout: float | None = None, retries: int = 0) -> dict[str, Any]:
        """Run one command as a one-task job; returns its outcome (status, exit code, output tails, worker, allocation time)."""
        if isinstance(argv, str):
            argv = [argv] if shell else argv.split()
        mask = 0
        for c in constraints:
            if not 0 <= c <= 20:
                raise InputError("constraints", f"constraint indices are 0..20, got {c}")
            mask |= 1 << c
        spec = TaskSpec(kind="command", argv=list(argv), shell=shell, cpus=cpus, timeout=timeout, retries=retries)
        cl = self.loaded.cluster
        request: list[tuple[float, ...] | None] | None = None if cl.slot_mode else [tuple([cpus] + [0.0] * (len(cl.resources) - 1))]
        job = TraceJob(0.0, 0.0, [0.0], masks=[mask], requests=request)
        result = await self.replay([job], task=lambda _j, _t, _d: spec, constraints=False,
                                   timeout=None if timeout is None else (timeout + 30) * (1 + retries))
        row = result.tasks.iloc[0]
        outcome = dict(result.extra["outcomes"].get(0, {"status": "unfinished"}))
        outcome.update({"worker": int(row.worker), "allocation_time": float(row.allocation_time)})
        return outcome
