"""schedlab's columnar trace format: one Parquet row per task, with what the papers' workloads carry.

The Sparrow ``.tr`` format (:mod:`.trace`) holds arrival, task count, mean and
durations. The production traces the papers sample (Google 2011 and 2019,
Alibaba 2018, SWIM) also give each task a resource request, placement
constraints, a user and a priority; this format keeps them. Columns:

============== ==================================== ==========================================
column         type                                 meaning
============== ==================================== ==========================================
``job``        int64                                job id (the source's); a job's rows are contiguous
``arrival``    float64                              the job's arrival, seconds (same on each of its rows)
``duration``   float64                              the task's run time, seconds
``mean_duration`` float64                           the job's mean task duration as the source gives it
``task``       int32                                the task's index in its source job
``user``       string (dictionary), nullable        who submitted the job
``priority``   int32, nullable                      the source's priority
``request_R``  float64, nullable, one per resource  the task's request of resource ``R``
``constraints`` list<struct<attribute, operator,    placement constraints, all of which must hold;
               value: string>>, nullable             operators ``=``, ``!=``, ``<``, ``>``, ``<=``,
                                                    ``>=``, ``present``, ``absent``
============== ==================================== ==========================================

Rows are in arrival order (jobs sharing an arrival in file order). The file's
key-value metadata ``schedlab.trace`` is JSON: ``version`` (1), ``resources``
(the ``R`` of the request columns, in order), ``request_units`` (free text per
resource), ``source`` and ``jobs``/``tasks`` counts.

Both directions stream: :func:`read_columnar` reads record batches and yields
:class:`~.trace.TraceJob` records as their last row is read (a job may span
batches); :class:`ColumnarTraceWriter` buffers rows up to one row group
(default 1 M tasks) and writes to a temporary file renamed on success.

A simulation reads the same jobs from a columnar trace as from the ``.tr``
file it was converted from. In multi-resource mode it uses the stated
requests (the file's ``resources`` must be the data center's). The trace's
own constraints need machines with attributes; until the data center can be
built from a trace's machines, a run keeps its usual (synthesised or no)
constraints and counts such tasks (``tasks_trace_constraints_unused``).

Choices where the sources are silent: a request left null in the file is a
task without a stated request (``None`` in ``TraceJob.requests``; a
multi-resource simulation draws one for it, counted); an empty constraint
list and a null one both mean "no constraint". Every malformed value is an
:class:`~schedlab.errors.InputError` naming ``file:row N`` (1-based).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.atomic import atomic_write
from schedlab.errors import InputError
from schedlab.parquet_meta import check_described, open_parquet
from schedlab.workload.trace import Constraint, TraceJob

FORMAT_VERSION = 1
META_KEY = b"schedlab.trace"
OPERATORS = ("=", "!=", "<", ">", "<=", ">=", "present", "absent")
ROW_GROUP_TASKS = 1_000_000
NO_JOBS = "no jobs to write"


def _schema(resources: Sequence[str]) -> Any:
    import pyarrow as pa

    constraint = pa.struct([("attribute", pa.string()), ("operator", pa.string()), ("value", pa.string())])
    fields = [
        pa.field("job", pa.int64(), nullable=False),
        pa.field("arrival", pa.float64(), nullable=False),
        pa.field("duration", pa.float64(), nullable=False),
        pa.field("mean_duration", pa.float64(), nullable=False),
        pa.field("task", pa.int32(), nullable=False),
        pa.field("user", pa.dictionary(pa.int32(), pa.string())),
        pa.field("priority", pa.int32()),
    ]
    fields += [pa.field(f"request_{r}", pa.float64()) for r in resources]
    fields.append(pa.field("constraints", pa.list_(constraint)))
    return pa.schema(fields)


class ColumnarTraceWriter:
    """Write jobs to a columnar trace, one row group per ``row_group_tasks`` tasks; atomic (temp file, rename).

    :meth:`write_all` takes :class:`TraceJob` records (a job's ``requests`` has one
    value, or ``None``, per resource named here); :meth:`write_tables` takes Arrow
    tables in the file's schema, already in arrival order with each job's rows
    together (a converter's vectorized output).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        resources: Sequence[str] = (),
        *,
        source: str = "",
        request_units: dict[str, str] | None = None,
        row_group_tasks: int = ROW_GROUP_TASKS,
    ) -> None:
        self.path = Path(path)
        self.resources = tuple(resources)
        if len(set(self.resources)) != len(self.resources) or not all(r.isidentifier() for r in self.resources):
            raise InputError("resources", f"resource names must be distinct identifiers, got {list(self.resources)}")
        self.source = source
        self.request_units = dict(request_units or {})
        self.row_group_tasks = max(1, row_group_tasks)
        self.jobs = 0
        self.tasks = 0
        self._last = -math.inf
        self._cols: dict[str, list] = {}
        self._writer: Any = None
        self._tmp: str | None = None
        self._reset()

    def _reset(self) -> None:
        names = ["job", "arrival", "duration", "mean_duration", "task", "user", "priority"]
        names += [f"request_{r}" for r in self.resources] + ["constraints"]
        self._cols = {n: [] for n in names}

    def add(self, job: TraceJob) -> None:
        """Append one job (its id: ``job.job_id``, else its position)."""
        n = job.num_tasks
        where = f"job {self.jobs + 1}"
        if n < 1:
            raise InputError(where, "a job needs at least one task")
        if not job.arrival >= self._last:
            raise InputError(where, f"arrival {job.arrival} is earlier than the previous job's {self._last}")
        self._last = job.arrival
        c = self._cols
        c["job"].extend([job.job_id if job.job_id is not None else self.jobs] * n)
        c["arrival"].extend([job.arrival] * n)
        c["duration"].extend(job.durations)
        c["mean_duration"].extend([job.mean_duration] * n)
        c["task"].extend(job.task_ids if job.task_ids is not None else range(n))
        c["user"].extend([job.user] * n)
        c["priority"].extend([job.priority] * n)
        if self.resources:
            reqs = job.requests
            for k, r in enumerate(self.resources):
                col = c[f"request_{r}"]
                if reqs is None:
                    col.extend([None] * n)
                else:
                    col.extend(None if q is None else q[k] for q in reqs)
        elif job.requests is not None and any(q is not None for q in job.requests):
            raise InputError(where, "the job has resource requests but the trace names no resources")
        cons = job.constraints
        c["constraints"].extend([None] * n if cons is None else [_constraint_rows(x) for x in cons])
        self.jobs += 1
        self.tasks += n
        if len(c["job"]) >= self.row_group_tasks:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self._cols["job"]:
            self._emit(pa.Table.from_pydict(self._cols, schema=_schema(self.resources)))
            self._reset()

    def _emit(self, table: Any) -> None:
        """Write ``table`` as one row group (the file is opened on the first)."""
        if self._writer is None:
            import pyarrow.parquet as pq

            assert self._tmp is not None
            self._writer = pq.ParquetWriter(self._tmp, _schema(self.resources), compression="zstd")
        self._writer.write_table(table, row_group_size=len(table))

    def _meta(self) -> dict[bytes, bytes]:
        meta = {
            "version": FORMAT_VERSION,
            "resources": list(self.resources),
            "request_units": self.request_units,
            "source": self.source,
            "jobs": self.jobs,
            "tasks": self.tasks,
        }
        return {META_KEY: json.dumps(meta).encode()}

    def _write(self, fill: Callable[[], None]) -> int:
        """Run ``fill`` (which emits the rows) into a temporary file, stamp the counts, rename; returns the job count."""

        def write(tmp: str) -> None:
            self._tmp = tmp
            try:
                fill()
                if self.jobs == 0:
                    raise InputError(str(self.path), NO_JOBS)
                self._writer.add_key_value_metadata(self._meta())  # the counts are known only now
            finally:
                if self._writer is not None and self._writer.is_open:
                    self._writer.close()

        atomic_write(self.path, write)
        return self.jobs

    def write_all(self, jobs: Iterable[TraceJob]) -> int:
        """Write every job, atomically; returns the job count."""

        def fill() -> None:
            for job in jobs:
                self.add(job)
            self._flush()

        return self._write(fill)

    def write_tables(self, tables: Iterable[Any]) -> int:
        """Write Arrow tables in this trace's schema (arrival order, a job's rows together), atomically."""
        import pyarrow as pa

        schema = _schema(self.resources)

        def fill() -> None:
            pending: list[Any] = []
            size = 0
            last_job: int | None = None
            for t in tables:
                if len(t) == 0:
                    continue
                t = t.select(schema.names).cast(schema)
                job = t["job"].to_numpy()
                arrival = t["arrival"].to_numpy()
                if arrival[0] < self._last or (np.diff(arrival) < 0).any():
                    raise InputError(f"job {self.jobs + 1}", "rows out of arrival order")
                self.jobs += int((job[1:] != job[:-1]).sum()) + int(last_job is None or int(job[0]) != last_job)
                self.tasks += len(t)
                self._last, last_job = float(arrival[-1]), int(job[-1])
                pending.append(t)
                size += len(t)
                if size >= self.row_group_tasks:
                    self._emit(pa.concat_tables(pending))
                    pending, size = [], 0
            if pending:
                self._emit(pa.concat_tables(pending))

        return self._write(fill)


def _constraint_rows(cons: Sequence[Constraint] | None) -> list[dict[str, str]]:
    if not cons:
        return []
    return [{"attribute": a, "operator": op, "value": v} for a, op, v in cons]


def write_columnar(
    path: str | os.PathLike,
    jobs: Iterable[TraceJob],
    resources: Sequence[str] = (),
    *,
    source: str = "",
    request_units: dict[str, str] | None = None,
    row_group_tasks: int = ROW_GROUP_TASKS,
) -> int:
    """Write ``jobs`` as a columnar trace (atomically); returns the job count."""
    w = ColumnarTraceWriter(path, resources, source=source, request_units=request_units, row_group_tasks=row_group_tasks)
    return w.write_all(jobs)


# -- reading -----------------------------------------------------------------------------------------
def read_metadata(path: str | os.PathLike, label: str | None = None) -> dict[str, Any]:
    """The file's ``schedlab.trace`` metadata, checked (version, resources, request columns)."""
    name = label or str(path)
    return _check_file(_open(path, name), name)


def _open(path: str | os.PathLike, name: str) -> Any:
    return open_parquet(path, name)


def _check_file(f: Any, name: str) -> dict[str, Any]:
    return check_described(
        f, name, key=META_KEY, kind="trace", version=FORMAT_VERSION, writer="schedlab trace convert",
        columns=("job", "arrival", "duration", "mean_duration"), per_resource="request_",
    )  # fmt: skip


def read_columnar(path: str | os.PathLike, label: str | None = None, batch_tasks: int = 262_144) -> Iterator[TraceJob]:
    """Yield the trace's jobs in file order, validating each row; streams record batches."""
    name = label or str(path)
    f = _open(path, name)
    meta = _check_file(f, name)
    resources: list[str] = meta["resources"]
    names = set(f.schema_arrow.names)
    optional = [c for c in ("task", "user", "priority", "constraints") if c in names]
    columns = ["job", "arrival", "duration", "mean_duration"] + [f"request_{r}" for r in resources] + optional
    return _jobs(f, name, columns, resources, batch_tasks)


def _jobs(f: Any, name: str, columns: list[str], resources: list[str], batch_tasks: int) -> Iterator[TraceJob]:
    row0 = 0  # rows before this batch
    last_arrival = -math.inf
    carry: _Partial | None = None
    try:
        for batch in f.iter_batches(batch_size=batch_tasks, columns=columns):
            cols = {n: batch.column(n) for n in columns}
            jobs = _np(cols["job"], name, row0, "job", np.int64)
            n = len(jobs)
            if n == 0:
                continue
            arrival = _np(cols["arrival"], name, row0, "arrival", np.float64)
            duration = _np(cols["duration"], name, row0, "duration", np.float64)
            mean = _np(cols["mean_duration"], name, row0, "mean_duration", np.float64)
            _check_values(name, row0, arrival, duration, mean)
            # a job is a run of rows with the same id: its arrival is one value, and jobs come in arrival order
            same = jobs[1:] == jobs[:-1]
            split = same & (arrival[1:] != arrival[:-1])
            if split.any():
                i = int(np.argmax(split)) + 1
                raise InputError(f"{name}:row {row0 + i + 1}", f"job {jobs[i]}'s tasks have different arrivals ({arrival[i]:g} and {arrival[i - 1]:g})")
            back = arrival[1:] < arrival[:-1]
            if back.any():
                i = int(np.argmax(back)) + 1
                raise InputError(f"{name}:row {row0 + i + 1}", f"arrival {arrival[i]:g} is earlier than the previous job's {arrival[i - 1]:g}")
            cuts = np.flatnonzero(~same) + 1
            starts = np.concatenate(([0], cuts))
            ends = np.concatenate((cuts, [n])).tolist()
            durations = duration.tolist()
            rows = _request_rows(name, row0, resources, [cols[f"request_{r}"] for r in resources])
            tasks = _np(cols["task"], name, row0, "task", np.int64).tolist() if "task" in cols else None
            users = _at(cols.get("user"), starts)
            prio = _at(cols.get("priority"), starts)
            cons = cols.get("constraints")
            if cons is not None and cons.null_count == n:
                cons = None
            job_ids = jobs[starts].tolist()
            arrivals = arrival[starts].tolist()
            means = mean[starts].tolist()
            for k, (s, e) in enumerate(zip(starts.tolist(), ends, strict=True)):
                jid = job_ids[k]
                if carry is not None:
                    if carry.job == jid and k == 0:
                        if arrivals[0] != carry.arrival:
                            raise InputError(f"{name}:row {row0 + 1}", f"job {jid}'s tasks have different arrivals ({arrivals[0]:g} and {carry.arrival:g})")
                        carry.extend(s, e, durations, rows, tasks, cons, name, row0)
                        continue
                    yield carry.finish()
                    carry = None
                a = arrivals[k]
                if a < last_arrival:
                    raise InputError(f"{name}:row {row0 + s + 1}", f"arrival {a:g} is earlier than the previous job's {last_arrival:g}")
                last_arrival = a
                carry = _Partial(jid, a, means[k], row0 + s + 1, None if users is None else users[k], None if prio is None else prio[k])
                carry.extend(s, e, durations, rows, tasks, cons, name, row0)
            row0 += n
    except OSError as e:
        raise InputError(f"{name}:row {row0 + 1}", f"unreadable trace data: {e}") from None
    if carry is not None:
        yield carry.finish()


def _at(col: Any, idx: np.ndarray) -> list | None:
    """The column's values at rows ``idx`` (a job-level column read once per job), or None without the column."""
    if col is None:
        return None
    return col.take(idx).to_pylist()


def _request_rows(name: str, row0: int, resources: list[str], cols: list[Any]) -> list[tuple[float, ...] | None] | None:
    """Each row's request vector, None where the task states none; None when no row states one."""
    if not resources:
        return None
    block = np.column_stack([_requests(c, name, row0, r) for c, r in zip(cols, resources, strict=True)])
    stated = ~np.isnan(block).any(axis=1)
    if not stated.any():
        return None
    rows: list[tuple[float, ...] | None] = list(map(tuple, block.tolist()))
    if not stated.all():
        for i in np.flatnonzero(~stated).tolist():
            rows[i] = None
    return rows


def _np(col: Any, name: str, row0: int, what: str, dtype: Any) -> np.ndarray:
    if col.null_count:
        i = next(i for i, v in enumerate(col.is_null().to_pylist()) if v)
        raise InputError(f"{name}:row {row0 + i + 1}", f"{what} is missing")
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=dtype)


def _check_values(name: str, row0: int, arrival: np.ndarray, duration: np.ndarray, mean: np.ndarray) -> None:
    for what, a in (("arrival", arrival), ("duration", duration), ("mean_duration", mean)):
        bad = ~(np.isfinite(a) & (a >= 0))
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"{name}:row {row0 + i + 1}", f"{what} must be finite and >= 0, got {a[i]!r}")


def _requests(col: Any, name: str, row0: int, resource: str) -> np.ndarray:
    """A request column as float64, NaN where the task states none."""
    a = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
    if col.null_count:
        a[np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)] = np.nan
    bad = ~np.isnan(a) & ~(np.isfinite(a) & (a >= 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{name}:row {row0 + i + 1}", f"request_{resource} must be finite and >= 0, got {a[i]!r}")
    return a


class _Partial:
    """A job being read (its rows may span record batches)."""

    __slots__ = ("job", "arrival", "mean", "row", "user", "priority", "durations", "requests", "task_ids", "constraints")

    def __init__(self, job: int, arrival: float, mean: float, row: int, user: str | None, priority: int | None) -> None:
        self.job, self.arrival, self.mean, self.row = job, arrival, mean, row
        self.user, self.priority = user, priority
        self.durations: list[float] = []
        self.requests: list[tuple[float, ...] | None] | None = None
        self.task_ids: list[int] | None = None
        self.constraints: list[tuple[Constraint, ...]] | None = None

    def extend(self, s: int, e: int, durations: list[float], rows: list | None, tasks: list[int] | None, cons: Any, name: str, row0: int) -> None:
        before = len(self.durations)
        self.durations.extend(durations[s:e])
        if rows is not None:
            if self.requests is None:
                self.requests = [None] * before
            self.requests.extend(rows[s:e])
        elif self.requests is not None:
            self.requests.extend([None] * (e - s))
        if tasks is not None:
            if self.task_ids is None:
                self.task_ids = []
            self.task_ids.extend(tasks[s:e])
        if cons is not None:
            if self.constraints is None:
                self.constraints = [()] * before
            got = cons.slice(s, e - s).to_pylist()
            self.constraints.extend(_task_constraints(c, name, row0 + s + k + 1) for k, c in enumerate(got))
        elif self.constraints is not None:
            self.constraints.extend([()] * (e - s))

    def finish(self) -> TraceJob:
        reqs = self.requests
        if reqs is not None and all(r is None for r in reqs):
            reqs = None  # a job states requests only if one of its tasks does
        cons = self.constraints
        if cons is not None and not any(cons):
            cons = None
        return TraceJob(
            self.arrival,
            self.mean,
            self.durations,
            self.row,
            requests=reqs,
            job_id=self.job,
            task_ids=self.task_ids,
            user=self.user,
            priority=self.priority,
            constraints=cons,
        )


def _task_constraints(rows: list[dict] | None, name: str, row: int) -> tuple[Constraint, ...]:
    if not rows:
        return ()
    out = []
    for c in rows:
        a, op, v = c.get("attribute"), c.get("operator"), c.get("value")
        if not a:
            raise InputError(f"{name}:row {row}", "a constraint without an attribute")
        if op not in OPERATORS:
            raise InputError(f"{name}:row {row}", f"constraint operator {op!r} is not one of {', '.join(OPERATORS)}")
        if v is None and op not in ("present", "absent"):
            raise InputError(f"{name}:row {row}", f"constraint {a} {op} has no value")
        out.append((a, op, v if v is not None else ""))
    return tuple(out)


def count_columnar_jobs(path: str | os.PathLike, label: str | None = None) -> int:
    """Number of jobs, from the file's metadata."""
    meta = read_metadata(path, label)
    n = meta.get("jobs")
    if not isinstance(n, int) or n < 0:
        raise InputError(label or str(path), "the trace metadata has no job count")
    return n
