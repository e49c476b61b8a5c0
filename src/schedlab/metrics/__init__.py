"""Metrics: the lifecycle recorder, summaries (percentiles, JRT delay, allocation components, utilization), export.

Submodules load on first use: the recorder needs nothing heavy, summaries and
export need pandas — a service process that only records does not pay for it.
"""

from schedlab.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "COMMUNICATION": "recorder",
        "COMPONENTS": "recorder",
        "FRAMEWORK_QUEUING": "recorder",
        "PROCESSING": "recorder",
        "WORKER_QUEUING": "recorder",
        "Recorder": "recorder",
        "STAT_KEYS": "summary",
        "build_summary": "summary",
        "jobs_frame": "summary",
        "inconsistencies_frame": "summary",
        "stats": "summary",
        "tasks_frame": "summary",
        "utilization_frame": "summary",
        "write_json": "export",
        "write_run": "export",
        "write_table": "export",
    },
)
