"""Synthetic workloads in the trace model: constant-rate (like syn_N), Poisson and MMPP-2 arrivals.

:func:`generate_jobs` draws inter-arrival times from an arrival spec, and per job
a task count and task durations from :class:`~schedlab.workload.distributions.Dist`
specs; jobs come out as :class:`~schedlab.workload.trace.TraceJob` so they can be
written as a trace or fed straight to a simulation. Arrival specs (mean
inter-arrival times in seconds):

* ``constant:INTERVAL`` — one job every INTERVAL seconds (syn_N: ``constant:1``
  with ``const:N`` tasks of ``const:1`` second, starting at t = 1);
* ``poisson:MEAN`` — exponential inter-arrival times;
* ``mmpp:MEAN,SCV,IDC[,P]`` — a fitted 2-state MMPP (:func:`~schedlab.workload.arrivals.fit_mmpp2`);
  the optional ``P`` is the share of time in the high-rate state (default 0.5).

Task durations are drawn independently per task by default. With
``job_duration_spread=S`` a job draws *one* duration ``d`` from the duration
distribution and each of its tasks takes ``d × U(1 − S, 1 + S)``: the tasks of a
production job are alike (the Yahoo and Google traces' jobs have one mean task
duration each), so a heavy-tailed duration then makes whole jobs long — a long
job holds as many workers as it has tasks for the whole of its duration, which
per-task draws average away. ``S`` is our choice of spread; the traces give no
within-job distribution in the format the papers use.

All randomness comes from the numpy generator passed in (a named stream of the
run's seed), so a generated workload is a pure function of its spec and seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from schedlab.errors import InputError
from schedlab.workload.arrivals import MMPP2, fit_mmpp2
from schedlab.workload.distributions import Dist
from schedlab.workload.trace import TraceJob

ARRIVAL_KINDS = ("constant", "poisson", "mmpp")


@dataclass(frozen=True)
class ArrivalSpec:
    kind: str
    mean: float
    mmpp: MMPP2 | None = None

    @classmethod
    def parse(cls, spec: str, field: str = "arrivals") -> ArrivalSpec:
        kind, _, rest = str(spec).strip().partition(":")
        if kind not in ARRIVAL_KINDS:
            raise InputError(field, f"unknown arrival process {kind!r} (choose from {', '.join(ARRIVAL_KINDS)})")
        try:
            args = [float(a) for a in rest.split(",")] if rest else []
        except ValueError:
            raise InputError(field, f"arguments of {spec!r} must be numbers") from None
        wanted = (3, 4) if kind == "mmpp" else (1,)
        if len(args) not in wanted:
            what = "mean inter-arrival time, SCV, IDC[, high-state share]" if kind == "mmpp" else "mean inter-arrival time"
            raise InputError(field, f"{kind} takes {' or '.join(map(str, wanted))} argument(s) ({what}), got {len(args)}")
        if not args[0] > 0:
            raise InputError(field, f"mean inter-arrival time must be > 0, got {args[0]}")
        if kind == "mmpp":
            return cls(kind, args[0], fit_mmpp2(*args))
        return cls(kind, args[0])

    def interarrivals(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "constant":
            return np.full(n, self.mean)
        if self.kind == "poisson":
            return rng.exponential(self.mean, size=n)
        assert self.mmpp is not None
        return self.mmpp.sample(n, rng)


def constant_rate_jobs(
    jobs: int, tasks_per_job: int = 250, duration: float = 1.0, interval: float = 1.0, start: float = 1.0
) -> Iterator[TraceJob]:
    """Jobs like the syn_N traces: one every ``interval`` s from ``start``, each ``tasks_per_job`` tasks of ``duration`` s."""
    if jobs < 1 or tasks_per_job < 1 or duration < 0 or interval < 0:
        raise InputError("constant_rate", "need jobs >= 1, tasks_per_job >= 1, duration >= 0, interval >= 0")
    for k in range(jobs):
        yield TraceJob(start + k * interval, float(duration), [float(duration)] * tasks_per_job, k + 1)


def generate_jobs(
    jobs: int,
    arrivals: str | ArrivalSpec,
    tasks_per_job: str | Dist,
    duration: str | Dist,
    rng: np.random.Generator,
    start: float = 0.0,
    job_duration_spread: float | None = None,
) -> Iterator[TraceJob]:
    """``jobs`` jobs with the given arrival process, task-count and task-duration distributions
    (durations per task, or per job with ``job_duration_spread``: see the module's docstring)."""
    if jobs < 1:
        raise InputError("jobs", f"must be >= 1, got {jobs}")
    if job_duration_spread is not None and not 0 <= job_duration_spread < 1:
        raise InputError("job_duration_spread", f"must be in [0, 1), got {job_duration_spread}")
    arr = arrivals if isinstance(arrivals, ArrivalSpec) else ArrivalSpec.parse(arrivals)
    ntask = tasks_per_job if isinstance(tasks_per_job, Dist) else Dist.parse(tasks_per_job, "tasks_per_job", integer=True)
    dur = duration if isinstance(duration, Dist) else Dist.parse(duration, "duration")
    gaps = arr.interarrivals(jobs, rng)
    gaps[0] = 0.0
    times = start + np.cumsum(gaps)
    counts = ntask.sample(jobs, rng)
    for k in range(jobs):
        if job_duration_spread is None:
            ds = dur.sample(int(counts[k]), rng)
        else:
            ds = float(dur.sample(1, rng)[0]) * rng.uniform(1 - job_duration_spread, 1 + job_duration_spread, int(counts[k]))
        durations = [float(x) for x in ds]
        yield TraceJob(float(times[k]), float(np.mean(ds)), durations, k + 1)
