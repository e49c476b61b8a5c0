"""Workload: jobs and tasks, trace reader/writer, synthetic generators, arrival processes, constraints, stats.

Exports load on first use, so the run configuration and the CLI can read the
defaults here without numpy.
"""

from schedlab.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "MMPP2": "arrivals",
        "fit_mmpp2": "arrivals",
        "index_of_dispersion": "arrivals",
        "poisson_interarrivals": "arrivals",
        "PAPER_CONSTRAINT_SEED": "constraints",
        "TaskConstraintSampler": "constraints",
        "Dist": "distributions",
        "Job": "model",
        "TaskTable": "model",
        "DEFAULT_REQUESTS": "requests",
        "RequestModel": "requests",
        "SHORT_JOB_CUTOFF": "stats",
        "per_constraint_load": "stats",
        "per_second_load": "stats",
        "ArrivalSpec": "synthetic",
        "constant_rate_jobs": "synthetic",
        "generate_jobs": "synthetic",
        "TraceConventions": "trace",
        "TraceJob": "trace",
        "read_trace": "trace",
        "write_trace": "trace",
    },
)
