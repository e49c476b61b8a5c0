"""Metrics: the lifecycle recorder, summaries (percentiles, JRT delay, allocation components, utilization), export."""

from schedlab.metrics.export import write_json, write_run, write_table
from schedlab.metrics.recorder import (
    COMMUNICATION,
    COMPONENTS,
    FRAMEWORK_QUEUING,
    PROCESSING,
    WORKER_QUEUING,
    Recorder,
)
from schedlab.metrics.summary import (
    STAT_KEYS,
    build_summary,
    jobs_frame,
    stats,
    tasks_frame,
    utilization_frame,
)

__all__ = [
    "COMMUNICATION",
    "COMPONENTS",
    "FRAMEWORK_QUEUING",
    "PROCESSING",
    "STAT_KEYS",
    "WORKER_QUEUING",
    "Recorder",
    "build_summary",
    "jobs_frame",
    "stats",
    "tasks_frame",
    "utilization_frame",
    "write_json",
    "write_run",
    "write_table",
]
