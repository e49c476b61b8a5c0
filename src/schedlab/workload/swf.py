"""Reader of the Standard Workload Format (SWF) of the Parallel Workloads Archive, for real job streams.

An SWF file has one job per line, 18 whitespace-separated numeric fields
(-1 = unknown); header and comment lines start with ``;``. The fields we use:

====  ==========================  ==============================================
 #    field                       used as
====  ==========================  ==============================================
 2    submit time (s)             arrival time (relative to the first job)
 4    run time (s)                actual runtime
 5    allocated processors        size, when field 8 is unknown
 8    requested processors        size
 9    requested time (s)          user-estimated runtime (the kill limit)
====  ==========================  ==============================================

Choices where the format leaves room (the paper does not use SWF):

* A job whose runtime or size is unknown or not positive (cancelled before it
  ran) is skipped and counted, not an error: such lines are normal in archive
  traces. So is a job wider than a site (it could run nowhere).
* A job whose submit time is unknown (-1, the format's "unknown" for every
  field) is skipped and counted (``unknown_submit_time``): it has no place in
  time, and guessing one would invent load. It does not take part in the
  order check. Any other negative submit time is malformed (an error).
* An unknown requested time makes the estimate exact (estimate = runtime).
* A runtime above the requested time becomes the requested time: real RMSs
  kill a job at its limit, and backfilling's guarantees rest on it.
* Submit times must not decrease (the archive's traces are sorted).

Every malformed line — wrong field count, a non-numeric field, a decreasing
submit time — raises :class:`~schedlab.errors.InputError` as ``file:line``
with the problem, in one line.
"""

from __future__ import annotations

import gzip
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.workload.trace import is_number

SWF_FIELDS = 18
UNKNOWN = -1.0  # the format's value of a field it does not know


@dataclass
class SwfJobs:
    """Jobs read from an SWF file, as columns (arrival times start at 0)."""

    path: str
    arrival: np.ndarray
    size: np.ndarray
    runtime: np.ndarray
    estimate: np.ndarray
    skipped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.arrival)


def read_swf(path: str | os.PathLike, max_processors: int | None = None, limit: int | None = None) -> SwfJobs:
    """Read an SWF trace (``.gz`` allowed); at most ``limit`` usable jobs."""
    p = Path(path)
    if not p.is_file():
        raise InputError(str(path), "no such SWF file")
    opener = gzip.open if p.suffix == ".gz" else open
    arrival: list[float] = []
    size: list[int] = []
    runtime: list[float] = []
    estimate: list[float] = []
    skipped = {"unknown_runtime_or_size": 0, "wider_than_site": 0, "unknown_submit_time": 0}
    last_submit = -math.inf
    with opener(p, "rt", encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith(";"):
                continue
            where = f"{path}:{lineno}"
            parts = s.split()
            if len(parts) != SWF_FIELDS:
                raise InputError(where, f"expected {SWF_FIELDS} fields, got {len(parts)}")
            try:
                v = [float(x) for x in parts]
            except ValueError:
                bad = next(x for x in parts if not is_number(x))
                raise InputError(where, f"field {parts.index(bad) + 1} is not a number: {bad!r}") from None
            if not all(math.isfinite(x) for x in v):
                raise InputError(where, "fields must be finite numbers")
            submit, run, alloc, req_procs, req_time = v[1], v[3], v[4], v[7], v[8]
            if submit == UNKNOWN:
                skipped["unknown_submit_time"] += 1
                continue
            if submit < 0:
                raise InputError(where, f"submit time must be >= 0, got {submit:g}")
            if submit < last_submit:
                raise InputError(where, f"submit time {submit:g} is earlier than the previous job's {last_submit:g}")
            last_submit = submit
            procs = req_procs if req_procs > 0 else alloc
            if run <= 0 or procs <= 0:
                skipped["unknown_runtime_or_size"] += 1
                continue
            if procs != int(procs):
                raise InputError(where, f"processor count must be an integer, got {procs:g}")
            if max_processors is not None and procs > max_processors:
                skipped["wider_than_site"] += 1
                continue
            est = req_time if req_time > 0 else run
            arrival.append(submit)
            size.append(int(procs))
            runtime.append(min(run, est))
            estimate.append(est)
            if limit is not None and len(arrival) >= limit:
                break
    if not arrival:
        raise InputError(str(path), "no usable jobs (every job lacks a submit time, a runtime or a size, or is wider than a site)")
    a = np.asarray(arrival, dtype=float)
    return SwfJobs(
        str(path),
        a - a[0],
        np.asarray(size, dtype=np.int64),
        np.asarray(runtime, dtype=float),
        np.asarray(estimate, dtype=float),
        skipped,
    )
