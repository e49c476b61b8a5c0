"""``schedlab.simulate``: one run — a workload through a scheduler on a data center — and its results.

What to run is one :class:`~schedlab.run_config.RunConfig` (the CLI, the
Python API and experiment specs all build one); :func:`run` carries it out and
:func:`simulate` is its keyword form. The engine wires the layers together and
owns the conventions of a run:

1. **Data center.** ``config`` (a papers' config file, or the bundled
   ``reference``) gives the exact workers; otherwise ``workers`` workers are
   generated with machine constraints from the Sharma frequencies (stream
   ``machines``). Without ``workers``, a bundled trace uses its paper's size
   (10,000; 20,000 for Google). ``resource_mode="multi"`` gives every worker a
   capacity vector (default 64 cores, 16 GB; Megha paper V-B) and every task a
   request (:mod:`schedlab.workload.requests`).
2. **Workload.** The trace is streamed — one job read ahead — with the papers'
   conventions (truncated durations, dephased equal arrivals). Task constraints
   are synthesised in trace order with the constraint seed (default 42, as in
   the papers). A task no worker could ever run (constraints no machine has, or
   a request larger than any worker) is dropped from its job, and a job left
   empty is never submitted; both are counted (``tasks_dropped_unsatisfiable``,
   ``jobs_unschedulable``), as the authors' simulators do.
3. **Run.** At each job's arrival the scheduler's ``submit`` is called; the
   kernel runs until no event is left.
4. **Results.** Per-task and per-job tables, per-second utilization, and the
   summary (one JSON schema for simulated and real runs): run identification, statistics of
   JRT delay, JRT, ideal JRT, allocation time and its components, utilization,
   counters, messages by type, ``wall_seconds``, ``events`` and the
   ``config`` block the RunConfig writes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.cluster.bitsets import ConstraintBitsets
from schedlab.cluster.config import load_config
from schedlab.cluster.generate import MACHINE_MODELS, generate_machine_masks
from schedlab.cluster.machines import (
    ConstraintCatalog,
    cluster_from_machines,
    read_machines,
    trace_constraints,
)
from schedlab.cluster.model import Cluster
from schedlab.datafiles import BUNDLED_TRACES, DEFAULT_WORKERS, PAPER_WORKERS
from schedlab.defaults import DEFAULT_CAPACITY, MULTI_RESOURCES
from schedlab.dropped import DropReasons
from schedlab.errors import InputError
from schedlab.memory import BYTES_PER_WORKER, check_fits
from schedlab.metrics.recorder import Recorder
from schedlab.metrics.summary import (
    Columns,
    TaskRecords,
    frame,
    inconsistencies_columns,
    jobs_columns,
    metric_summary,
    task_summary,
    utilization_columns,
)
from schedlab.run_config import RESOURCE_MODES, RunConfig
from schedlab.schedulers import registry
from schedlab.schedulers.base import Scheduler, SchedulerContext, SchedulerParams
from schedlab.sim.gc_policy import quiet_gc
from schedlab.sim.rng import RngStreams
from schedlab.sim.runtime import NetworkModel, SimRuntime
from schedlab.workers.simulated import WorkerPool
from schedlab.workload.constraints import TaskConstraintSampler
from schedlab.workload.model import TaskTable
from schedlab.workload.requests import RequestModel
from schedlab.workload.trace import (
    TraceJob,
    is_columnar,
    read_trace,
    request_resources,
    resolve_trace,
)

if TYPE_CHECKING:
    import pandas as pd


class Result:
    """A finished run: ``summary`` (dict), ``tasks``, ``jobs``, ``utilization`` and ``inconsistencies`` (DataFrames), ``extra``.

    ``inconsistencies`` is the inconsistencies-over-time series (per second and GM,
    :func:`~schedlab.metrics.summary.inconsistencies_frame`); empty for schedulers that have none.

    ``tasks`` may be given as :class:`~schedlab.metrics.summary.TaskRecords`
    (a simulation's, read from its recorder and spill): the DataFrame is then
    built on first access, and :meth:`save` streams it without building it.
    The other tables may be given as their columns
    (:data:`~schedlab.metrics.summary.Columns`): each becomes a DataFrame on
    first access, so a run whose tables nobody reads never loads pandas.
    """

    def __init__(
        self,
        summary: dict[str, Any],
        tasks: pd.DataFrame | TaskRecords,
        jobs: pd.DataFrame | Columns,
        utilization: pd.DataFrame | Columns,
        extra: dict[str, Any] | None = None,
        inconsistencies: pd.DataFrame | Columns | None = None,
    ) -> None:
        self.summary = summary
        self._tasks = tasks
        self._tables: dict[str, pd.DataFrame | Columns] = {
            "jobs": jobs,
            "utilization": utilization,
            "inconsistencies": inconsistencies if inconsistencies is not None else inconsistencies_columns(Recorder()),
        }
        self.extra: dict[str, Any] = {} if extra is None else extra

    @property
    def tasks(self) -> pd.DataFrame:
        if isinstance(self._tasks, TaskRecords):
            self._tasks = self._tasks.frame()
        return self._tasks

    def _table(self, name: str) -> pd.DataFrame:
        table = self._tables[name]
        if isinstance(table, dict):
            table = self._tables[name] = frame(table)
        return table

    @property
    def jobs(self) -> pd.DataFrame:
        return self._table("jobs")

    @property
    def utilization(self) -> pd.DataFrame:
        return self._table("utilization")

    @property
    def inconsistencies(self) -> pd.DataFrame:
        return self._table("inconsistencies")

    def tables(self) -> dict[str, Any]:
        """The run's tables for :func:`~schedlab.metrics.export.write_run` (tasks streamed when not built yet)."""
        return {"tasks": self._tasks, "jobs": self.jobs, "utilization": self.utilization, "inconsistencies": self.inconsistencies}

    def save(self, out_dir: str | os.PathLike, formats: Iterable[str] = ("parquet",)) -> list[Path]:
        """Write tasks, jobs, utilization, inconsistencies (one file per format) and summary.json, each atomically."""
        from schedlab.metrics.export import write_run

        return write_run(out_dir, self.tables(), self.summary, formats)


def build_cluster(
    workers: int | None,
    config: str | os.PathLike | None,
    seed: int,
    machine_model: str = "independent",
    constraints: bool = True,
    resource_mode: str = "slots",
    capacity: tuple[float, ...] = DEFAULT_CAPACITY,
    resources: tuple[str, ...] = MULTI_RESOURCES,
    data_center_from: str | os.PathLike | None = None,
    catalog: ConstraintCatalog | None = None,
) -> Cluster:
    """The data center of a run (see the module docstring); from a machines file, ``catalog`` numbers the
    trace's constraints (``None``: no constraints)."""
    if resource_mode not in RESOURCE_MODES:
        raise InputError("resource_mode", f"unknown mode {resource_mode!r} (choose from {', '.join(RESOURCE_MODES)})")
    if data_center_from is not None:
        if config is not None:
            raise InputError("--data-center-from", "give a data-center config or a machines file, not both")
        path = str(data_center_from)
        cl: Cluster = cluster_from_machines(read_machines(path), catalog if constraints else None, resource_mode, source=path, workers=workers)
        return cl
    if config is not None:
        cl = load_config(config)
        if workers is not None and workers != cl.n:
            raise InputError("--workers", f"{workers} workers requested but config {config} has {cl.n}")
        masks = cl.machine_masks if constraints else [0] * cl.n
        topo, source, extra = cl.topology, cl.source, cl.extra
    else:
        if workers is None:
            raise InputError("--workers", "give a number of workers or a --config")
        if workers < 1:
            raise InputError("--workers", f"must be >= 1, got {workers}")
        check_fits("--workers", workers, BYTES_PER_WORKER, "workers")
        if machine_model not in MACHINE_MODELS:
            raise InputError("--machine-model", f"unknown model {machine_model!r} (choose from {', '.join(MACHINE_MODELS)})")

        masks = generate_machine_masks(workers, RngStreams(seed).np_rng("machines"), machine_model) if constraints else [0] * workers
        topo, source, extra = None, f"generated:{machine_model}", {}
    if resource_mode == "slots":
        return Cluster(list(masks), None, ("slots",), topo, source, dict(extra))
    return Cluster.multi_resource(masks, capacity, resources, source=source, topology=topo)


@dataclass
class PreparedJob:
    """A trace job as it enters the framework: the tasks kept, with their constraints and requests."""

    arrival: float
    durations: list[float]
    masks: list[int] | None
    requests: list[tuple[float, ...]] | None
    mean_duration: float
    line: int


class JobPreparer:
    """Turns trace jobs into submitted jobs with the run's conventions (shared by the simulated and real runtimes).

    Task constraints are synthesised in trace order (or taken from the job),
    requests drawn in multi-resource mode (stream ``requests``), and tasks no
    worker could ever run are dropped; a job left empty is not submitted.
    """

    def __init__(
        self,
        cluster: Cluster,
        sampler: TaskConstraintSampler | None,
        requests: RequestModel | None,
        req_rng: np.random.Generator,
        trace_states_requests: bool = False,
        catalog: ConstraintCatalog | None = None,
    ) -> None:
        self.sampler = sampler
        self.catalog = catalog  # the trace's own constraints as constraint bits (a data center from the trace)
        self.trace_constrained = 0  # tasks with constraints of their own, matched against the machines
        self.requests = requests
        self.req_rng = req_rng
        self.satisfiable = _Satisfiable(cluster.bitsets())
        self.max_capacity = None if cluster.capacity is None else cluster.capacity.max(axis=0)
        self.trace_jobs = 0
        self.trace_tasks = 0
        self.dropped_tasks = 0
        self.unschedulable_jobs = 0
        self.drops = DropReasons()  # the same, by reason (see schedlab.dropped)
        self.stated_requests = trace_states_requests  # the trace carries requests (a columnar trace's, or a job stated some)
        # a columnar trace's own (attribute, operator, value) constraints need machines with attributes, which
        # generated and config data centers do not have: such tasks run with the run's usual constraints, counted
        self.trace_constraints_unused = 0
        self.drawn_requests = 0  # tasks of such jobs whose request the trace leaves out (drawn instead)

    def check(self, tj: TraceJob, previous_arrival: float) -> None:
        """Refuse a job that arrives before the previous one or has no task."""
        if not tj.arrival >= previous_arrival:
            raise InputError(f"job {self.trace_jobs + 1}", f"arrival {tj.arrival} is earlier than the previous job's {previous_arrival}")
        if not tj.durations:
            raise InputError(f"job {self.trace_jobs + 1}", "a job needs at least one task")

    def prepare(self, tj: TraceJob) -> PreparedJob | None:
        """The job's runnable tasks, or None when none is (counted as unschedulable)."""
        n = tj.num_tasks
        self.trace_jobs += 1
        self.trace_tasks += n
        durations = tj.durations
        masks = None
        if self.sampler is not None:
            # Draw even when the job brings its own masks, so the stream stays aligned with trace order.
            masks = self.sampler.sample(n)
        if tj.masks is not None:
            masks = list(tj.masks)
        reqs = None
        if self.requests is not None:
            # Draw even when the job states its requests, so the stream stays aligned with trace order;
            # a task the trace states no request for keeps its drawn one (counted).
            drawn = list(map(tuple, np.asarray(self.requests.sample(n, self.req_rng), dtype=float).tolist()))
            reqs = drawn
            if tj.requests is None:
                if self.stated_requests:  # a trace that carries requests states none for this job
                    self.drawn_requests += n
            else:
                if len(tj.requests) != n:
                    raise InputError(f"job {self.trace_jobs}", f"{len(tj.requests)} requests for {n} tasks")
                reqs = [d if r is None else tuple(map(float, r)) for r, d in zip(tj.requests, drawn, strict=True)]
                self.stated_requests = True
                self.drawn_requests += sum(r is None for r in tj.requests)
        if tj.constraints is not None:
            if self.catalog is not None:
                if len(tj.constraints) != n:
                    raise InputError(f"job {self.trace_jobs}", f"{len(tj.constraints)} constraint sets for {n} tasks")
                masks = [self.catalog.mask(c) for c in tj.constraints]
                self.trace_constrained += sum(1 for c in tj.constraints if c)
            else:
                self.trace_constraints_unused += sum(1 for c in tj.constraints if c)
        keep = self._runnable(masks, reqs, n)
        if keep is not None:
            self.dropped_tasks += n - len(keep)
            if not keep:
                self.unschedulable_jobs += 1
                self.drops.empty_jobs += 1
                return None
            durations = [durations[i] for i in keep]
            masks = [masks[i] for i in keep] if masks is not None else None
            reqs = [reqs[i] for i in keep] if reqs is not None else None
        return PreparedJob(tj.arrival, durations, masks, reqs, tj.mean_duration, tj.line)

    def counters(self) -> dict[str, int]:
        out = {
            "trace_jobs": self.trace_jobs,
            "trace_tasks": self.trace_tasks,
            "tasks_dropped_unsatisfiable": self.dropped_tasks,
            "jobs_unschedulable": self.unschedulable_jobs,
        }
        if self.stated_requests:  # only traces that carry requests have this count
            out["tasks_request_drawn"] = self.drawn_requests
        if self.trace_constraints_unused:
            out["tasks_trace_constraints_unused"] = self.trace_constraints_unused
        if self.catalog is not None:  # only runs on a trace's own machines have these
            out["tasks_trace_constrained"] = self.trace_constrained
            out["trace_constraint_bits"] = len(self.catalog)
        return out

    def _runnable(self, masks: list[int] | None, reqs: list[tuple[float, ...]] | None, n: int) -> list[int] | None:
        """Indices of the tasks some worker could ever run, or None when all can."""
        ok: list[bool] | None = None
        if masks is not None:
            sat = self.satisfiable
            if not all(map(sat.__getitem__, masks)):
                ok = [sat[m] for m in masks]
                self.drops.add("constraints", ok.count(False))
        if reqs is not None and self.max_capacity is not None:
            cap = tuple(self.max_capacity)
            fits = [all(x <= c for x, c in zip(r, cap, strict=True)) for r in reqs]
            if not all(fits):
                self.drops.add("request", sum(1 for i, f in enumerate(fits) if not f and (ok is None or ok[i])))
                ok = fits if ok is None else [a and b for a, b in zip(ok, fits, strict=True)]
        return None if ok is None else [i for i in range(n) if ok[i]]


class _Feeder:
    """Streams jobs into the simulation: each job is prepared and submitted at its arrival, then the next is read."""

    def __init__(
        self,
        jobs: Iterator[TraceJob],
        runtime: SimRuntime,
        tasks: TaskTable,
        recorder: Recorder,
        submit: Callable,
        preparer: JobPreparer,
    ) -> None:
        self.jobs = jobs
        self.kernel = runtime.kernel
        self.tasks = tasks
        self.rec = recorder
        self.submit = submit
        self.preparer = preparer
        self.exhausted = False

    @property
    def trace_jobs(self) -> int:
        return self.preparer.trace_jobs

    def start(self) -> None:
        self._schedule_next()

    def _schedule_next(self) -> None:
        tj = next(self.jobs, None)
        if tj is None:
            self.exhausted = True
        else:
            self.preparer.check(tj, self.kernel.now)
            self.kernel.call_at(tj.arrival, self._arrive, tj)

    def _arrive(self, tj: TraceJob) -> None:
        pj = self.preparer.prepare(tj)
        if pj is not None:
            job = self.tasks.add_job(pj.arrival, pj.durations, pj.masks, pj.requests, pj.mean_duration, 0, pj.line)
            self.rec.add_job(job.jid, job.arrival, pj.durations, job.ideal_jrt, job.user, pj.mean_duration)
            self.submit(job)
        self._schedule_next()


class _Satisfiable(dict):
    """mask -> whether any worker has all of its constraints (computed on first use)."""

    def __init__(self, index: ConstraintBitsets) -> None:
        super().__init__()
        self.index = index

    def __missing__(self, mask: int) -> bool:
        v = self[mask] = self.index.eligible(mask) != 0
        return v


def simulate(
    scheduler: str | RunConfig = "ideal",
    trace: str | os.PathLike | Iterable[TraceJob] = "google",
    workers: int | None = None,
    seed: int = 0,
    *,
    progress: Callable[[float, int, int, int], None] | None = None,
    trace_label: str | None = None,
    cluster: Cluster | None = None,
    **settings: Any,
) -> Result:
    """Run ``scheduler`` on ``trace`` with a data center of ``workers`` workers (or ``config``) and ``seed``.

    ``trace`` is a bundled name (``google``, ``syn_250``, ``syn_500``,
    ``syn_1000``), a trace file path, or an iterable of
    :class:`~schedlab.workload.trace.TraceJob` (e.g. from
    :func:`~schedlab.workload.synthetic.generate_jobs`), called
    ``trace_label`` in the summary. ``settings`` are the other fields of
    :class:`~schedlab.run_config.RunConfig` (``config``, ``params`` — the
    scheduler's own parameters —, ``constraints``, ``latency``, …); a
    ``RunConfig`` may be given instead of the scheduler name.
    ``progress(sim_time, events, jobs_submitted, tasks_done)`` is called periodically.
    ``cluster`` replaces the generated or configured data center (its resource
    mode wins over ``resource_mode``).
    """
    jobs: Iterable[TraceJob] | None = None
    if isinstance(trace, str | os.PathLike):
        name = str(trace)
    else:
        jobs, name = trace, trace_label or "custom"
    if isinstance(scheduler, RunConfig):
        # a RunConfig names its own trace: a second, different trace file or name would be ignored silently
        other_trace = jobs is None and name not in ("google", scheduler.trace)
        if settings or workers is not None or seed != 0 or other_trace:
            raise InputError("simulate", "give a RunConfig or settings (trace, workers, seed, …), not both")
        cfg = scheduler if jobs is None else scheduler.model_copy(update={"trace": name})
    else:
        cfg = RunConfig.build(scheduler=scheduler, trace=name, workers=workers, seed=seed, **settings)
    return run(cfg, jobs, progress=progress, cluster=cluster)


def _trace_constraints(trace: str) -> set[tuple[str, str, str]]:
    """A columnar trace's distinct constraints (other traces state none)."""
    path = resolve_trace(trace)[1]
    return trace_constraints(path) if is_columnar(path) else set()


def _data_center(cfg: RunConfig, jobs_given: bool) -> tuple[Cluster, ConstraintCatalog | None]:
    """The run's data center (generated, configured or from a machines file) and the constraint catalogue of a
    machines file's attributes."""
    workers = cfg.workers
    if workers is None and cfg.config is None:
        workers = DEFAULT_WORKERS if jobs_given else PAPER_WORKERS.get(cfg.trace, DEFAULT_WORKERS)
    catalog = None
    if cfg.data_center_from is not None:
        if cfg.constraints:
            catalog = ConstraintCatalog(_trace_constraints(cfg.trace) if not jobs_given else ())
        if cfg.workers is None:
            workers = None  # the machines file decides
    cluster = build_cluster(
        workers, cfg.config, cfg.seed, cfg.machine_model, cfg.constraints, cfg.resource_mode, cfg.capacity,
        data_center_from=cfg.data_center_from, catalog=catalog,
    )  # fmt: skip
    return cluster, catalog


def _wire(cfg: RunConfig, cls: type[Scheduler], sched_params: SchedulerParams, cluster: Cluster) -> tuple[
        SimRuntime, Recorder, TaskTable, SchedulerContext, Scheduler]:
    """The runtime, recorder, task table and simulated workers of a run, and its scheduler built on them."""
    runtime = SimRuntime(cfg.seed, NetworkModel(cfg.latency, dict(cfg.processing_costs), cfg.latency_spread, cfg.latency_per_task))
    recorder = Recorder()
    tasks = TaskTable()
    pool = WorkerPool(runtime, cluster, tasks, recorder)
    ctx = SchedulerContext(runtime, cluster, tasks, recorder, pool)
    return runtime, recorder, tasks, ctx, cls(ctx, sched_params)


def check_run(cfg: RunConfig, jobs_given: bool = False) -> None:
    """Build what :func:`run` builds before its first event — the data center and the scheduler on it — and drop it.

    A configuration the scheduler refuses (a topology that does not fit the data center, a resource mode it cannot
    run) raises its :class:`InputError` here, so a sweep can refuse a spec before it touches its results store.
    """
    cls = registry.get(cfg.scheduler)
    cluster, _catalog = _data_center(cfg, jobs_given)
    _wire(cfg, cls, registry.parse_params(cls, cfg.params), cluster)


def run(
    cfg: RunConfig,
    jobs: Iterable[TraceJob] | None = None,
    *,
    progress: Callable[[float, int, int, int], None] | None = None,
    cluster: Cluster | None = None,
) -> Result:
    """The run ``cfg`` describes; ``jobs``, when given, is its workload (``cfg.trace`` is then only its label)."""
    t_wall = time.perf_counter()
    cls = registry.get(cfg.scheduler)
    sched_params = registry.parse_params(cls, cfg.params)
    job_iter = read_trace(cfg.trace, cfg.conventions()) if jobs is None else iter(jobs)
    catalog = None
    if cluster is None:
        cluster, catalog = _data_center(cfg, jobs is not None)
    elif cfg.data_center_from is not None and cfg.constraints:
        catalog = ConstraintCatalog(_trace_constraints(cfg.trace) if jobs is None else ())
    multi = not cluster.slot_mode
    req_model = RequestModel.parse(cfg.requests, len(cluster.resources)) if multi else None
    stated: tuple[str, ...] = ()
    if multi and jobs is None:
        stated = request_resources(cfg.trace)
        if stated and stated != tuple(cluster.resources):
            raise InputError(cfg.trace, f"the trace's requests are in ({', '.join(stated)}) but the data center's resources are ({', '.join(cluster.resources)})")

    runtime, recorder, tasks, ctx, sched = _wire(cfg, cls, sched_params, cluster)
    # machines from a trace have attributes, not Sharma's constraints: their tasks bring their own
    sampler = TaskConstraintSampler(cfg.constraint_seed) if cfg.constraints and cfg.data_center_from is None else None
    preparer = JobPreparer(cluster, sampler, req_model, runtime.streams.np_rng("requests"), trace_states_requests=bool(stated), catalog=catalog)
    feeder = _Feeder(job_iter, runtime, tasks, recorder, sched.submit, preparer)
    ctx.more_jobs = lambda: not feeder.exhausted
    feeder.start()
    kernel = runtime.kernel
    report = None
    if progress is not None:

        def report(now: float, events: int) -> None:
            progress(now, events, feeder.trace_jobs, recorder.reported)

    with quiet_gc():
        kernel.run(progress=report)
    wall = time.perf_counter() - t_wall
    if preparer.trace_jobs == 0:
        raise InputError(cfg.trace, "the trace has no jobs: nothing to simulate")

    messages = runtime.message_counts()
    head = {"scheduler": cfg.scheduler, "trace": cfg.trace, "seed": cfg.seed}
    counters = preparer.counters()
    if "machines_without_capacity" in cluster.extra:  # a data center from a trace: machines a multi-resource run left out
        counters["machines_without_capacity"] = cluster.extra["machines_without_capacity"]
    tdf, jdf, udf, summary = summarize_run(recorder, tasks, cluster, head, counters, messages, sched.counters())
    summary.update(
        {
            "wall_seconds": wall,
            "events": kernel.events,
            "sim_time": kernel.now,
            "config": cfg.summary_block(sched_params.dump(), cluster.source, cluster.resources, multi),
        }
    )
    # what the tables do not carry, for checks that trust nothing but the run's own records
    extra = {"requests": tasks.request, "preempted_runs": list(recorder.preempted_runs), "dropped": preparer.drops}
    return Result(summary, tdf, jdf, udf, extra, inconsistencies_columns(recorder))


def summarize_run(
    recorder: Recorder,
    tasks: TaskTable,
    cluster: Cluster,
    head: dict[str, Any],
    workload_counters: dict[str, int],
    messages: dict[str, int],
    scheduler_counters: dict[str, int],
) -> tuple[TaskRecords, Columns, Columns, dict[str, Any]]:
    """Tables and summary of a finished run, simulated or real (the same schema for both).

    ``head`` gives the run's identification (scheduler, trace, seed); the
    caller adds timing and configuration. The task table is returned as
    :class:`~schedlab.metrics.summary.TaskRecords`: per-task statistics are
    read a column at a time, so a run of 10⁸ tasks is summarised without
    holding its table.
    """
    task_part = task_summary(recorder)
    jdf = jobs_columns(recorder)
    multi = not cluster.slot_mode
    req_arr = np.array(tasks.request, dtype=float) if multi and len(tasks) else None
    udf = utilization_columns(recorder, cluster.total_capacity(), cluster.resources, req_arr)
    del req_arr
    counters: dict[str, int] = dict(workload_counters)
    counters.update(
        {
            "tasks_unfinished": task_part["tasks_unfinished"],
            "jobs_incomplete": int(np.isnan(jdf["completion"]).sum()),
            "messages": sum(messages.values()),
        }
    )
    counters.update(recorder.counters)
    counters.update(scheduler_counters)
    summary: dict[str, Any] = {
        "scheduler": head["scheduler"],
        "trace": head["trace"],
        "workers": cluster.n,
        "seed": head["seed"],
        "jobs": recorder.num_jobs,
        "tasks": recorder.num_tasks,
    }
    summary.update(metric_summary(task_part, jdf, udf, cluster.resources))
    summary.update({"counters": counters, "messages": messages})
    return TaskRecords(recorder, tasks.mask), jdf, udf, summary


def bundled_traces() -> list[str]:
    return list(BUNDLED_TRACES)
