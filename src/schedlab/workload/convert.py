"""``schedlab trace convert``: traces from one format to another.

Input formats (``--format``): ``tr`` (the Sparrow/Eagle format of the bundled
traces) and ``columnar`` (:mod:`.columnar`); ``auto`` picks one of the two by
the input's suffix. The output format is the ``--out`` suffix: ``.parquet``
writes a columnar trace, anything else (``.tr``, ``.tr.gz``, …) the Sparrow
format. Traces are converted exactly as written (no truncation, no
dephasing: those are a simulation's conventions, applied when it reads).

``tr`` → columnar is lossless (every value round-trips, so a simulation reads
the same jobs from either file). Columnar → ``tr`` keeps arrivals, mean and
durations; what the Sparrow format cannot hold (requests, constraints, users,
priorities, job ids) is counted in the report as dropped, never silently.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from schedlab.errors import InputError
from schedlab.workload.trace import TraceJob, is_columnar, read_raw, resolve_trace, write_trace

if TYPE_CHECKING:
    from schedlab.workload.converters.common import Drops

from schedlab.workload.converters import FORMATS as _RAW

RAW_FORMATS = (*_RAW, "swf")
INPUT_FORMATS = ("auto", "tr", "columnar", *RAW_FORMATS)


@dataclass
class ConvertReport:
    """What a conversion read, wrote and left out."""

    jobs: int = 0
    tasks: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # what the output format cannot hold -> jobs that had it
    tasks_dropped: dict[str, int] = field(default_factory=dict)  # raw traces: tasks left out, by reason
    bad_rows: dict[str, int] = field(default_factory=dict)  # raw traces with skip_bad: rows skipped, by problem
    counts: dict[str, int] = field(default_factory=dict)  # raw traces: what else the converter counted
    rows_read: int = 0

    def as_dict(self) -> dict:
        return {
            "jobs": self.jobs,
            "tasks": self.tasks,
            "rows_read": self.rows_read,
            "dropped": dict(self.dropped),
            "tasks_dropped": dict(self.tasks_dropped),
            "bad_rows": dict(self.bad_rows),
            "counts": dict(self.counts),
        }


def _input_format(fmt: str, inputs: Sequence[Path]) -> str:
    if fmt not in INPUT_FORMATS:
        raise InputError("--format", f"unknown input format {fmt!r} (one of {', '.join(INPUT_FORMATS)})")
    if fmt != "auto":
        return fmt
    kinds = {"columnar" if is_columnar(p) else "tr" for p in inputs}
    if len(kinds) != 1:
        raise InputError("--format", "the inputs mix columnar and .tr traces; convert them one format at a time")
    return kinds.pop()


def convert(
    fmt: str,
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    row_group_tasks: int | None = None,
    skip_bad: bool = False,
    scale_requests: bool = True,
    progress: Callable[[int], None] | None = None,
    options: Mapping[str, float] | None = None,
    work_dir: str | os.PathLike | None = None,
    checkpoint_every_s: float = 60.0,
) -> ConvertReport:
    """Convert ``inputs`` (read in order, as one trace) to ``out``; the output appears only if all went well.

    Raw formats (``google2011``, ``google2019``, …): ``skip_bad`` counts and skips malformed rows instead of stopping at the
    first; ``scale_requests`` scales normalised requests to the default worker; ``progress(rows)`` is told
    of every block of input rows read; ``options`` are the format's own (:data:`.converters.FORMATS`);
    ``work_dir`` keeps a restartable format's checkpoints, so that a rerun resumes (:mod:`.converters.checkpoint`).
    """
    if not inputs:
        raise InputError("INPUT", "no input trace given")
    if fmt in RAW_FORMATS:
        if not checkpoint_every_s >= 0:
            raise InputError("--checkpoint-every", f"must be >= 0 seconds, got {checkpoint_every_s}")
        return _convert_raw(fmt, inputs, Path(out), row_group_tasks, skip_bad, scale_requests, progress, options or {}, work_dir, checkpoint_every_s)
    if work_dir is not None:
        raise InputError("--work-dir", f"only raw trace formats keep a work folder, not {fmt}")
    if options:
        raise InputError("--format-option", f"only raw trace formats take options, not {fmt}")
    paths = [resolve_trace(p)[1] for p in inputs]  # a bundled trace's name, or a file
    kind = _input_format(fmt, paths)
    resources: tuple[str, ...] = ()
    source, units = "tr", None
    if kind == "columnar":  # every input's metadata is checked before anything is written
        from schedlab.workload.columnar import read_metadata

        metas = [read_metadata(p) for p in paths]
        resources = tuple(metas[0]["resources"])
        if any(tuple(m["resources"]) != resources for m in metas):
            raise InputError(str(paths[-1]), "the inputs state requests in different resources")
        source, units = metas[0].get("source", ""), metas[0].get("request_units")
    report = ConvertReport()
    jobs = _counted(_read(kind, paths), report)
    first = next(jobs, None)  # a file that fails at its first job fails before the output is opened
    if first is None:
        raise InputError(str(paths[0]), "no jobs in the input")
    jobs = itertools.chain([first], jobs)
    out_path = Path(out)
    if is_columnar(out_path):
        from schedlab.workload.columnar import ROW_GROUP_TASKS, write_columnar

        write_columnar(out_path, jobs, resources, source=source, request_units=units, row_group_tasks=row_group_tasks or ROW_GROUP_TASKS)
    else:
        write_trace(out_path, _to_tr(jobs, report))
    return report


def _convert_raw(
    fmt: str,
    inputs: Sequence[str | os.PathLike],
    out: Path,
    row_group_tasks: int | None,
    skip_bad: bool,
    scale_requests: bool,
    progress: Callable[[int], None] | None,
    options: Mapping[str, float],
    work_dir: str | os.PathLike | None = None,
    checkpoint_every_s: float = 60.0,
) -> ConvertReport:
    from schedlab.workload.columnar import NO_JOBS, ROW_GROUP_TASKS, ColumnarTraceWriter
    from schedlab.workload.converters import RawJob, format_options, gather_tables, run_converter
    from schedlab.workload.converters.common import Drops

    report = ConvertReport()
    if fmt == "swf":
        if options:
            raise InputError("--format-option", "the swf format has no options")
        return _convert_swf(inputs, out, report, Drops(), row_group_tasks)
    raw = _RAW[fmt]
    opts = format_options(raw, options)
    if work_dir is not None and not raw.restartable:
        restartable = ", ".join(f.name for f in _RAW.values() if f.restartable)
        raise InputError("--work-dir", f"the {fmt} converter keeps no checkpoints (restartable: {restartable})")
    if not is_columnar(out):
        raise InputError(str(out), f"a {fmt} trace converts to the columnar format only (give a .parquet output)")
    tables = gather_tables(raw, inputs)

    def rows(n: int) -> None:
        report.rows_read += n
        if progress is not None:
            progress(n)

    job = RawJob(tables, skip_bad=skip_bad, scale_requests=scale_requests, counts=report.counts, progress=rows, options=opts, work_dir=work_dir,
                 checkpoint_every_s=checkpoint_every_s)
    trace = run_converter(raw, job)
    writer = ColumnarTraceWriter(out, trace.resources, source=fmt, request_units=trace.request_units, row_group_tasks=row_group_tasks or ROW_GROUP_TASKS)
    try:
        if trace.tables is not None:
            writer.write_tables(trace.tables)
        else:
            writer.write_all(trace.jobs or iter(()))
        report.jobs, report.tasks = writer.jobs, writer.tasks
    except InputError as e:
        if e.problem == NO_JOBS:
            raise InputError(str(out), f"no task of the {fmt} input could be kept ({_reasons(job.drops)})") from None
        raise
    report.tasks_dropped = dict(job.drops.counts)
    report.bad_rows = dict(job.bad_rows.counts)
    return report


def _convert_swf(inputs: Sequence[str | os.PathLike], out: Path, report: ConvertReport, drops: Drops, row_group_tasks: int | None) -> ConvertReport:
    from schedlab.workload.columnar import ROW_GROUP_TASKS, write_columnar
    from schedlab.workload.converters.swf import convert_swf

    if len(inputs) != 1:
        raise InputError("INPUT", f"an SWF trace is one file (its arrivals start at its first job), got {len(inputs)}")
    jobs = _counted(convert_swf(Path(inputs[0]), drops), report)
    if is_columnar(out):
        write_columnar(out, jobs, (), source="swf", row_group_tasks=row_group_tasks or ROW_GROUP_TASKS)
    else:
        write_trace(out, jobs)
    report.tasks_dropped = dict(drops.counts)
    return report


def _reasons(drops: Drops) -> str:
    return "; ".join(f"{k}: {v}" for k, v in drops.counts.items()) or "no tasks at all"


def _read(kind: str, paths: Sequence[Path]) -> Iterator[TraceJob]:
    if kind == "columnar":
        from schedlab.workload.columnar import read_columnar

        for p in paths:
            yield from read_columnar(p)
    else:
        for p in paths:
            yield from read_raw(p)


def _counted(jobs: Iterator[TraceJob], report: ConvertReport) -> Iterator[TraceJob]:
    for j in jobs:
        report.jobs += 1
        report.tasks += j.num_tasks
        yield j


def _to_tr(jobs: Iterator[TraceJob], report: ConvertReport) -> Iterator[TraceJob]:
    """Jobs as the Sparrow format holds them; what it cannot hold is counted per kind."""
    d = report.dropped
    for j in jobs:
        for what, present in (
            ("requests", j.requests is not None),
            ("constraints", j.constraints is not None),
            ("user", j.user is not None),
            ("priority", j.priority is not None),
        ):
            if present:
                d[what] = d.get(what, 0) + 1
        yield TraceJob(j.arrival, j.mean_duration, j.durations, j.line)


@dataclass
class MachinesReport:
    """What ``trace machines`` read and wrote."""

    machines: int = 0
    attributes: int = 0  # distinct attribute names
    rows_read: int = 0
    bad_rows: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"machines": self.machines, "attributes": self.attributes, "rows_read": self.rows_read, "bad_rows": dict(self.bad_rows), "counts": dict(self.counts)}


def convert_machines(
    fmt: str,
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    at: float = 0.0,
    skip_bad: bool = False,
    scale_requests: bool = True,
    progress: Callable[[int], None] | None = None,
) -> MachinesReport:
    """The machines of a raw trace at trace time ``at`` seconds, written as a machines file
    (:mod:`schedlab.cluster.machines`) for ``simulate --data-center-from``."""
    from schedlab.cluster.machines import write_machines
    from schedlab.workload.converters import gather_tables, machine_rows
    from schedlab.workload.converters.common import Drops
    from schedlab.workload.converters.google2011 import DEFAULT_SCALE
    from schedlab.workload.converters.machines import snapshot

    if fmt not in _RAW:
        raise InputError("--format", f"machines come from a raw trace format ({', '.join(_RAW)}), not {fmt!r}")
    raw = _RAW[fmt]
    read_rows = machine_rows(raw)
    if not at >= 0:
        raise InputError("--at", f"must be a time >= 0 in seconds, got {at}")
    tables = gather_tables(raw, inputs, needed=raw.machine_tables)
    report = MachinesReport()
    bad = Drops()

    def rows(n: int) -> None:
        report.rows_read += n
        if progress is not None:
            progress(n)

    machine_rows_read = read_rows(tables, int(round(at * 1e6)), skip_bad, bad, rows, report.counts)
    machines = snapshot(machine_rows_read, at=at, scale=DEFAULT_SCALE if scale_requests else None, skip_bad=skip_bad, bad_rows=bad, counts=report.counts, source=fmt)
    write_machines(out, machines)
    report.machines = machines.n
    report.attributes = len({k for a in machines.attributes for k in a})
    report.bad_rows = dict(bad.counts)
    return report
