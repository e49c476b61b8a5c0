"""Standard Workload Format (Parallel Workloads Archive) → schedlab's trace formats.

The SWF reader is :func:`schedlab.workload.swf.read_swf` (the grid module's
job streams use it too), with its choices: unknown or non-positive runtimes
and sizes, and unknown (-1) submit times, are skipped and counted, a runtime above the requested time is cut
to it, arrivals start at 0. Here each SWF job becomes one job of ``size``
tasks (one per processor it asked for), each running the job's runtime.

What is lost, said here because the output cannot say it: an SWF job is a
gang (its processors start together); schedlab's tasks start when each finds
a worker. The requested time (the user's estimate) has no column in the
columnar format and is dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from schedlab.workload.converters.common import Drops
from schedlab.workload.swf import read_swf
from schedlab.workload.trace import TraceJob

SKIPPED = {
    "unknown_runtime_or_size": "jobs with an unknown or non-positive runtime or size",
    "unknown_submit_time": "jobs with an unknown (-1) submit time",
}


def convert_swf(path: Path, drops: Drops) -> Iterator[TraceJob]:
    """The file's usable jobs, in arrival order; what it skips goes to ``drops`` by reason."""
    jobs = read_swf(path)
    for reason, n in jobs.skipped.items():
        drops.add(SKIPPED.get(reason, reason), n)
    for k, (arrival, size, runtime) in enumerate(zip(jobs.arrival.tolist(), jobs.size.tolist(), jobs.runtime.tolist(), strict=True)):
        yield TraceJob(arrival, runtime, [runtime] * size, job_id=k)
