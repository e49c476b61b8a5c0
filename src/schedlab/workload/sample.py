"""``schedlab trace sample``: cut a smaller trace from a large one, as the papers cut theirs.

The Megha paper runs samples of production traces (``google_19``: 4,550
tasks, ``alibaba``: 8,000, ``cloudera``: 10,173) without saying how they were
drawn. This module draws whole jobs (a job is never split: its tasks arrive
together):

* ``window=(start, end)`` keeps the jobs arriving in ``[start, end)`` seconds;
* ``jobs=N`` draws N of those jobs uniformly at random (seeded), ``tasks=N``
  draws jobs in the same random order until at least N tasks are taken
  (the last job drawn may overshoot: jobs are never split);
  ``first=True`` takes jobs in arrival order instead of at random;
* the sample keeps arrival order and every field of the input (requests,
  constraints, users); ``rebase=True`` shifts arrivals so the first sampled
  job arrives at 0.

Two streaming passes over the input: the first draws a random key per job in
the window (16 bytes per job held, never the jobs), the second writes the
chosen jobs. Same input, options and seed: the same sample.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.workload.trace import (
    TraceConventions,
    TraceJob,
    is_columnar,
    read_trace,
    request_resources,
    resolve_trace,
    write_trace,
)


@dataclass
class SampleReport:
    jobs_read: int
    jobs: int
    tasks: int
    first_arrival: float | None
    last_arrival: float | None


def _in_window(jobs: Iterator[TraceJob], window: tuple[float, float] | None) -> Iterator[TraceJob]:
    for j in jobs:
        if window is None or window[0] <= j.arrival < window[1]:
            yield j
        elif j.arrival >= window[1]:
            return  # arrival order: nothing later can be in the window


def sample_trace(
    trace: str | os.PathLike,
    out: str | os.PathLike,
    *,
    jobs: int | None = None,
    tasks: int | None = None,
    window: tuple[float, float] | None = None,
    seed: int = 0,
    first: bool = False,
    rebase: bool = False,
) -> SampleReport:
    """Write the sample of ``trace`` the options describe to ``out`` (its suffix picks the format)."""
    if jobs is None and tasks is None and window is None:
        raise InputError("--jobs/--tasks/--window", "say what to keep: --jobs N or --tasks N, and/or --window START,END")
    if jobs is not None and tasks is not None:
        raise InputError("--jobs/--tasks", "give one of --jobs and --tasks, not both")
    for name, v in (("--jobs", jobs), ("--tasks", tasks)):
        if v is not None and v < 1:
            raise InputError(name, f"must be >= 1, got {v}")
    if window is not None and not (0 <= window[0] < window[1]):
        raise InputError("--window", f"expected START,END with 0 <= START < END, got {window[0]:g},{window[1]:g}")
    out_path = Path(out)
    label, src = resolve_trace(trace)
    columnar_in = is_columnar(src)
    if columnar_in and not is_columnar(out_path):
        raise InputError(str(out_path), "a sample of a columnar trace is columnar (.parquet): the .tr format would lose its requests and constraints (`schedlab trace convert` does that, saying what it drops)")
    exact = TraceConventions.exact()
    # pass 1: sizes of the jobs in the window, and a random order over them
    sizes = np.fromiter((j.num_tasks for j in _in_window(read_trace(trace, exact), window)), dtype=np.int64)
    if sizes.size == 0:
        raise InputError(str(trace), "no job in the window" if window is not None else "the trace has no jobs")
    order = np.arange(sizes.size) if first else np.random.default_rng(seed).permutation(sizes.size)
    keep = np.zeros(sizes.size, dtype=bool)
    if jobs is not None:
        keep[order[:jobs]] = True
    elif tasks is not None:
        # jobs in the draw's order up to the first whose running total reaches ``tasks``
        keep[order[: int(np.searchsorted(np.cumsum(sizes[order]), tasks)) + 1]] = True
    else:
        keep[:] = True
    # pass 2: the chosen jobs, in arrival order
    report = SampleReport(int(sizes.size), int(keep.sum()), int(sizes[keep].sum()), None, None)

    def chosen() -> Iterator[TraceJob]:
        shift = None
        for k, j in enumerate(_in_window(read_trace(trace, exact), window)):
            if not keep[k]:
                continue
            if shift is None:
                shift = j.arrival if rebase else 0.0
                report.first_arrival = j.arrival
            report.last_arrival = j.arrival
            if shift:
                j.arrival -= shift
            yield j

    if is_columnar(out_path):
        from schedlab.workload.columnar import read_metadata, write_columnar

        meta = read_metadata(src, label) if columnar_in else {}
        write_columnar(out_path, chosen(), request_resources(trace), source=f"sample of {meta.get('source') or label}", request_units=meta.get("request_units"))
    else:
        write_trace(out_path, (TraceJob(j.arrival, j.mean_duration, j.durations, j.line) for j in chosen()))
    return report
