"""One grid run on the event kernel: sites, local and global job streams, a global scheduler; and its summary.

:class:`GridConfig` holds every knob of a run with the paper's defaults
(8 sites × 64 processors, conservative backfilling, 100,000 local jobs per site
at load 0.6, 100,000 global jobs, remote submission delay 1 s, invalidation
penalty 1 s). :func:`simulate_grid` runs it; :func:`simulate_with_ideal` also
runs the ideal — Act.QT, zero delay, no duplication — on the very same
workload and adds the performance gap of Eq. (1).

Arrivals are fed by one pending kernel event per stream (a "pump" that
schedules the stream's next arrival when it fires), which keeps the event heap
small: at any time it holds about one event per stream and per site.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from schedlab.algorithms import Algorithm, AlgorithmParams, AlgorithmRegistry
from schedlab.errors import InputError
from schedlab.grid.metrics import perf_gap, queue_time_buckets
from schedlab.grid.selection import (
    RANKINGS,
    TIE_BREAKS,
    GlobalJob,
    GlobalScheduler,
    check_scheduler,
)
from schedlab.grid.site import POLICIES, Entry, Site, make_site
from schedlab.grid.workload import (
    DEFAULT_ESTIMATE_FACTOR,
    DEFAULT_RUNTIME,
    DEFAULT_SIZE,
    GridWorkload,
    JobModel,
    make_workload,
    parse_arrivals,
)
from schedlab.metrics.summary import stats
from schedlab.sim.kernel import Kernel
from schedlab.sim.runtime import NetworkModel, SimRuntime

#: Fields of GridConfig that determine the workload (runs that agree on them share jobs).
WORKLOAD_FIELDS = (
    "sites",
    "processors",
    "local_jobs",
    "local_load",
    "global_jobs",
    "arrivals",
    "size",
    "runtime",
    "estimate_factor",
    "local_swf",
    "global_swf",
    "seed",
)


@dataclass(frozen=True)
class GridConfig:
    """All the parameters of one grid run (defaults: the paper's setup)."""

    sites: int = 8
    processors: int = 64
    policy: str = "conservative"
    scheduler: str = "qlen"
    duplications: int = 0
    delay: float = 1.0
    penalty: float = 1.0
    query_interval: float = 0.0
    tie_break: str = "first"
    local_jobs: int = 100_000
    local_load: float = 0.6
    global_jobs: int = 100_000
    arrivals: str = "strong"
    size: str = DEFAULT_SIZE
    runtime: str = DEFAULT_RUNTIME
    estimate_factor: float = DEFAULT_ESTIMATE_FACTOR
    local_swf: Sequence[str] = ()  # kept as a tuple (a list given is converted)
    global_swf: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.local_swf, tuple):
            object.__setattr__(self, "local_swf", tuple(self.local_swf))
        self.check()

    def check(self) -> None:
        """Raise :class:`InputError` naming the first bad field."""
        if self.sites < 1:
            raise InputError("sites", f"must be >= 1, got {self.sites}")
        if self.processors < 1:
            raise InputError("processors", f"must be >= 1, got {self.processors}")
        if self.policy not in POLICIES:
            raise InputError("policy", f"unknown queue policy {self.policy!r} (choose from {', '.join(POLICIES)})")
        check_scheduler(self.scheduler)
        if not 0 <= self.duplications < self.sites:
            raise InputError("duplications", f"must be in 0..{self.sites - 1} with {self.sites} sites, got {self.duplications}")
        for name in ("delay", "penalty", "query_interval", "estimate_factor"):
            v = getattr(self, name)
            if not v >= 0:
                raise InputError(name, f"must be >= 0, got {v}")
        if self.tie_break not in TIE_BREAKS:
            raise InputError("tie_break", f"unknown tie break {self.tie_break!r} (choose from {', '.join(TIE_BREAKS)})")
        if self.local_jobs < 0 or self.global_jobs < 0:
            raise InputError("jobs", "job counts must be >= 0")
        if not (0 <= self.local_load < 1):
            raise InputError("local_load", f"must be in [0, 1), got {self.local_load}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise InputError("seed", f"must be a non-negative integer, got {self.seed!r}")
        if not self.global_swf:
            parse_arrivals(self.arrivals)

    def ideal(self) -> GridConfig:
        """The reference of Eq. (1): Act.QT, zero delay, no duplication, same workload."""
        return replace(self, scheduler="act_qt", delay=0.0, duplications=0, query_interval=0.0)

    def workload_key(self) -> tuple:
        return tuple(getattr(self, f) for f in WORKLOAD_FIELDS)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["local_swf"] = list(self.local_swf)
        return d


def build_workload(config: GridConfig) -> GridWorkload:
    return make_workload(
        sites=config.sites,
        processors=config.processors,
        local_jobs=config.local_jobs,
        local_load=config.local_load,
        global_jobs=config.global_jobs,
        arrivals=config.arrivals,
        job_model=JobModel(config.size, config.runtime, config.estimate_factor),
        seed=config.seed,
        local_swf=config.local_swf,
        global_swf=config.global_swf,
    )


@dataclass
class GridResult:
    """A finished run: its configuration, summary and per-job columns."""

    config: GridConfig
    summary: dict[str, Any]
    global_arrival: np.ndarray
    global_start: np.ndarray
    global_site: np.ndarray
    global_size: np.ndarray
    local_queue_times: list[np.ndarray] = field(default_factory=list)

    @property
    def global_queue_time(self) -> np.ndarray:
        return self.global_start - self.global_arrival

    def jobs_frame(self) -> pd.DataFrame:
        """One row per global job: arrival, size, execution start, queue time, site."""
        return pd.DataFrame(
            {
                "job": np.arange(len(self.global_arrival), dtype=np.int64),
                "arrival": self.global_arrival,
                "size": self.global_size,
                "start": self.global_start,
                "queue_time": self.global_queue_time,
                "site": self.global_site,
            }
        )


class _LocalPump:
    """Feeds one site's local jobs, one pending arrival event at a time."""

    __slots__ = ("kernel", "site", "arrival", "size", "estimate", "runtime", "i", "n")

    def __init__(self, kernel: Kernel, site: Site, arrival: list, size: list, estimate: list, runtime: list) -> None:
        self.kernel = kernel
        self.site = site
        self.arrival = arrival
        self.size = size
        self.estimate = estimate
        self.runtime = runtime
        self.i = 0
        self.n = len(arrival)
        if self.n:
            kernel.call_at(arrival[0], self.fire)

    def fire(self) -> None:
        i = self.i
        self.site.submit(Entry(self.size[i], self.estimate[i], self.runtime[i], i))
        i += 1
        self.i = i
        if i < self.n:
            self.kernel.call_at(self.arrival[i], self.fire)


class _GlobalPump:
    __slots__ = ("kernel", "scheduler", "jobs", "i", "n")

    def __init__(self, kernel: Kernel, scheduler: GlobalScheduler, jobs: list[GlobalJob]) -> None:
        self.kernel = kernel
        self.scheduler = scheduler
        self.jobs = jobs
        self.i = 0
        self.n = len(jobs)
        if self.n:
            kernel.call_at(jobs[0].arrival, self.fire)

    def fire(self) -> None:
        i = self.i
        self.scheduler.on_arrival(self.jobs[i])
        i += 1
        self.i = i
        if i < self.n:
            self.kernel.call_at(self.jobs[i].arrival, self.fire)


def simulate_grid(
    config: GridConfig,
    workload: GridWorkload | None = None,
    progress: Callable[[float, int], None] | None = None,
    check_allocation: bool = True,
) -> GridResult:
    """Run one configuration (generating its workload unless one is given) and summarise it."""
    t0 = time.perf_counter()
    wl = workload if workload is not None else build_workload(config)
    t_workload = time.perf_counter() - t0
    kernel = Kernel()
    rt = SimRuntime(seed=config.seed, network=NetworkModel(latency=0.0), kernel=kernel)
    sites = [make_site(config.policy, i, config.processors, kernel) for i in range(config.sites)]
    for s in sites:
        s.check_allocation = check_allocation
    scheduler = GlobalScheduler(
        "grid-scheduler",
        rt,
        sites,
        config.scheduler,
        duplications=config.duplications,
        delay=config.delay,
        penalty=config.penalty,
        query_interval=config.query_interval,
        tie_break=config.tie_break,
    )
    g = wl.global_jobs
    jobs = [
        GlobalJob(i, a, s, e, r)
        for i, (a, s, e, r) in enumerate(
            zip(g.arrival.tolist(), g.size.tolist(), g.estimate.tolist(), g.runtime.tolist(), strict=True)
        )
    ]
    for site, stream in zip(sites, wl.local, strict=True):
        _LocalPump(kernel, site, stream.arrival.tolist(), stream.size.tolist(), stream.estimate.tolist(), stream.runtime.tolist())
    _GlobalPump(kernel, scheduler, jobs)
    scheduler.start(len(jobs))
    t1 = time.perf_counter()
    kernel.run(progress=progress)
    t_sim = time.perf_counter() - t1

    horizon = kernel.now
    start = np.array([j.start for j in jobs], dtype=float)
    site_of = np.array([j.site for j in jobs], dtype=np.int64)
    if len(jobs) and (start < 0).any():  # pragma: no cover - every job runs once the kernel is drained
        raise AssertionError("a global job never started")
    qt = start - g.arrival
    local_qt = [np.asarray(s.local_queue_times, dtype=float) for s in sites]
    all_local = np.concatenate(local_qt) if local_qt else np.zeros(0)
    utilization = [s.utilization(horizon) for s in sites]
    n_jobs = len(jobs) + sum(len(x) for x in local_qt)
    summary: dict[str, Any] = {
        "scheduler": config.scheduler,
        "policy": config.policy,
        "arrivals": config.arrivals if not config.global_swf else f"swf:{config.global_swf}",
        "duplications": config.duplications,
        "delay": config.delay,
        "seed": config.seed,
        "global_jobs": len(jobs),
        "local_jobs": int(sum(len(x) for x in local_qt)),
        "mean_queue_time": float(qt.mean()) if len(qt) else float("nan"),
        "queue_time_buckets": queue_time_buckets(qt),
        "queue_time": stats(qt),
        "local_queue_time": stats(all_local),
        "utilization": {
            "mean": float(np.mean(utilization)) if utilization else 0.0,
            "per_site": [round(u, 6) for u in utilization],
        },
        "global_jobs_per_site": np.bincount(site_of[site_of >= 0], minlength=config.sites).tolist() if len(jobs) else [0] * config.sites,
        "counters": {
            "copies_submitted": scheduler.copies_submitted,
            "invalidations": scheduler.invalidations,
            "refused_copies": scheduler.refused,
            "load_queries": scheduler.queries,
            "max_queued": [s.max_queued for s in sites],
            "compressions": sum(getattr(s, "compressions", 0) for s in sites),
            "reservation_moves": sum(getattr(s, "moves", 0) for s in sites),
            "events": kernel.events,
        },
        "horizon": horizon,
        "workload": wl.info,
        "config": config.as_dict(),
        "wall_seconds": round(time.perf_counter() - t0, 3),
        "simulation_seconds": round(t_sim, 3),
        "workload_seconds": round(t_workload, 3),
        "jobs_per_second": round(n_jobs / t_sim, 1) if t_sim > 0 else None,
    }
    return GridResult(config, summary, g.arrival.copy(), start, site_of, g.size.copy(), local_qt)


def simulate_with_ideal(
    config: GridConfig,
    workload: GridWorkload | None = None,
    ideal: GridResult | None = None,
) -> tuple[GridResult, GridResult]:
    """Run ``config`` and its ideal on the same workload; adds ``perf_gap`` and ``ideal_mean_queue_time``."""
    wl = workload if workload is not None else build_workload(config)
    if ideal is None:
        ideal = simulate_grid(config.ideal(), wl)
    result = ideal if config == config.ideal() else simulate_grid(config, wl)
    add_perf_gap(result, ideal)
    return result, ideal


def add_perf_gap(result: GridResult, ideal: GridResult) -> None:
    if result.config.workload_key() != ideal.config.workload_key():
        raise ValueError("the ideal run must use the same workload")
    im = ideal.summary["mean_queue_time"]
    result.summary["ideal_mean_queue_time"] = im
    result.summary["perf_gap"] = perf_gap(result.summary["mean_queue_time"], im)


def config_from(params: dict[str, Any]) -> GridConfig:
    """A :class:`GridConfig` from a mapping, refusing unknown keys by name."""
    known = {f.name for f in fields(GridConfig)}
    for k in params:
        if k not in known:
            raise InputError(k, f"unknown grid parameter (known: {', '.join(sorted(known))})")
    return GridConfig(**params)


# -- the schedulers as a registry ----------------------------------------------------------------------------
class GridSchedulerParams(AlgorithmParams):
    """What every grid scheduler takes besides its ranking rule (Sections II-A, III-A)."""

    duplications: int = Field(0, ge=0, description="copies beyond the first (7 = flooding 8 sites)")
    delay: float = Field(1.0, ge=0, description="remote submission delay (s)")
    penalty: float = Field(1.0, ge=0, description="invalidation penalty per duplication (s)")
    query_interval: float = Field(0.0, ge=0, description="load refresh period (s); 0 reads the loads at each arrival")
    tie_break: Literal["random", "first"] = Field("first", description="order of sites with equal load")


def _runner(name: str) -> Callable[[GridConfig, int, GridSchedulerParams], GridResult]:
    def run(config: GridConfig, seed: int, params: GridSchedulerParams) -> GridResult:
        return simulate_grid(replace(config, scheduler=name, seed=seed, **params.model_dump()))

    return run


#: The grid schedulers in the registry format of every domain: ``SCHEDULERS.run(name, config, seed=, params=)``
#: simulates ``config`` with that scheduler (its ranking rule: :data:`schedlab.grid.selection.RANKINGS`).
SCHEDULERS: AlgorithmRegistry[GridConfig, GridResult] = AlgorithmRegistry(
    "grid",
    [Algorithm(name, r.label, r.kind, r.summary, _runner(name), GridSchedulerParams, seeded=True) for name, r in RANKINGS.items()],
    where="scheduler",
)


__all__ = [
    "SCHEDULERS",
    "GridSchedulerParams",
    "GridConfig",
    "GridResult",
    "add_perf_gap",
    "build_workload",
    "config_from",
    "simulate_grid",
    "simulate_with_ideal",
]
