"""Workload: jobs and tasks, trace reader/writer, synthetic generators, arrival processes, constraints, stats."""

from schedlab.workload.arrivals import MMPP2, fit_mmpp2, index_of_dispersion, poisson_interarrivals
from schedlab.workload.constraints import PAPER_CONSTRAINT_SEED, TaskConstraintSampler
from schedlab.workload.distributions import Dist
from schedlab.workload.model import Job, TaskTable
from schedlab.workload.requests import DEFAULT_REQUESTS, RequestModel
from schedlab.workload.stats import SHORT_JOB_CUTOFF, per_constraint_load, per_second_load
from schedlab.workload.synthetic import ArrivalSpec, constant_rate_jobs, generate_jobs
from schedlab.workload.trace import TraceConventions, TraceJob, read_trace, write_trace

__all__ = [
    "DEFAULT_REQUESTS",
    "MMPP2",
    "PAPER_CONSTRAINT_SEED",
    "SHORT_JOB_CUTOFF",
    "ArrivalSpec",
    "Dist",
    "Job",
    "RequestModel",
    "TaskConstraintSampler",
    "TaskTable",
    "TraceConventions",
    "TraceJob",
    "constant_rate_jobs",
    "fit_mmpp2",
    "generate_jobs",
    "index_of_dispersion",
    "per_constraint_load",
    "per_second_load",
    "poisson_interarrivals",
    "read_trace",
    "write_trace",
]
