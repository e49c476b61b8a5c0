"""Reader and writer of the Sparrow/Eagle trace format, streaming, with the papers' conventions.

One job per line, whitespace-separated::

    arrival_time num_tasks mean_task_duration duration_1 … duration_num_tasks

(seconds; jobs in arrival order; several jobs may share an arrival time). Blank
lines and lines starting with ``#`` are skipped. ``.gz`` files are read and
written compressed. A ``.parquet`` path is read as a columnar trace
(:mod:`.columnar`, which also carries requests, constraints, users and
priorities) by the same :func:`read_trace`.

:func:`read_trace` yields :class:`TraceJob` records one at a time, so a trace is
never held in memory. Every malformed line raises
:class:`~schedlab.errors.InputError` as ``file:line`` plus the problem: too few
fields, a non-numeric or non-finite field, a task count that does not match the
durations, a negative duration or arrival, or an arrival earlier than the
previous line's.

:class:`TraceConventions` applies the measurement conventions of the papers'
simulators (docs/authors-simulators.md#trace-conventions), on by default:

* ``truncate_durations`` — task durations become ``int(float(x))`` whole seconds;
* ``dephase`` — the k-th repeat of an arrival timestamp is shifted by
  ``dephase·(k−1)`` (0.01 s, added cumulatively exactly as the authors' code
  does). Shifted jobs are re-ordered by their new time, streaming, so arrival
  times handed to a simulation never go back.
"""

from __future__ import annotations

import gzip
import heapq
import io
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from schedlab.atomic import atomic_write
from schedlab.datafiles import BUNDLED_TRACES, bundled_trace_path
from schedlab.errors import InputError

Constraint = tuple[str, str, str]
"""A placement constraint as a production trace states it: (attribute, operator, value)."""


@dataclass(slots=True)
class TraceJob:
    """One job: arrival time, the trace's mean task duration, task durations.

    Jobs built in Python may also carry their tasks' constraint ``masks`` and
    resource ``requests``; a simulation then uses them instead of synthesising.
    A columnar trace (:mod:`.columnar`) also gives the source's ``job_id`` and
    ``task_ids``, ``user``, ``priority``, and per task the trace's own placement
    ``constraints``; a request may be ``None`` for a task the source states none for.
    ``line`` is where the job starts in its file (a line, or a row of a columnar trace).
    """

    arrival: float
    mean_duration: float
    durations: list[float]
    line: int = 0
    masks: list[int] | None = None
    requests: list[tuple[float, ...] | None] | None = None
    job_id: int | None = None
    task_ids: list[int] | None = None
    user: str | None = None
    priority: int | None = None
    constraints: list[tuple[Constraint, ...]] | None = None

    @property
    def num_tasks(self) -> int:
        return len(self.durations)


@dataclass(frozen=True)
class TraceConventions:
    """How trace values are turned into simulated ones (defaults: the papers' simulators)."""

    truncate_durations: bool = True
    dephase: float = 0.01

    @classmethod
    def exact(cls) -> TraceConventions:
        """Durations and arrival times exactly as written in the trace."""
        return cls(truncate_durations=False, dephase=0.0)


def resolve_trace(spec: str | os.PathLike) -> tuple[str, Path]:
    """A bundled trace name (``google``, ``syn_250``, ``syn_500``, ``syn_1000``) or a path → (label, path)."""
    s = str(spec)
    if s in BUNDLED_TRACES:
        return s, bundled_trace_path(s)
    p = Path(s)
    if not p.is_file():
        raise InputError(s, f"no such trace file (bundled traces: {', '.join(BUNDLED_TRACES)})")
    return s, p


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _number(tok: str, where: str, what: str) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise InputError(where, f"{what} is not a number: {tok!r}") from None
    if not math.isfinite(v):
        raise InputError(where, f"{what} is not finite: {tok!r}")
    return v


def parse_line(text: str, where: str) -> tuple[float, float, list[float]] | None:
    """Parse one trace line → (arrival, mean duration, durations); ``None`` for blank/comment lines."""
    fields = text.split()
    if not fields or fields[0].startswith("#"):
        return None
    if len(fields) < 3:
        raise InputError(where, f"expected 'arrival num_tasks mean_duration durations…', got {len(fields)} field(s)")
    arrival = _number(fields[0], where, "arrival time")
    if arrival < 0:
        raise InputError(where, f"negative arrival time {fields[0]}")
    n = _number(fields[1], where, "task count")
    if n != int(n) or n < 1:
        raise InputError(where, f"task count must be a positive integer, got {fields[1]!r}")
    n = int(n)
    mean = _number(fields[2], where, "mean task duration")
    if mean < 0:
        raise InputError(where, f"negative mean task duration {fields[2]}")
    toks = fields[3:]
    if len(toks) != n:
        raise InputError(where, f"task count is {n} but the line has {len(toks)} task duration(s)")
    try:
        durations = list(map(float, toks))
    except ValueError:
        bad = next(t for t in toks if not is_number(t))
        raise InputError(where, f"task duration is not a number: {bad!r}") from None
    # min/max run in C; NaN makes either comparison false, so it is caught too.
    if not (min(durations) >= 0 and max(durations) < math.inf):
        bad = next(t for t, d in zip(toks, durations, strict=True) if not (0 <= d < math.inf))
        raise InputError(where, f"task duration must be finite and >= 0, got {bad!r}")
    return arrival, mean, durations


def is_number(t: str) -> bool:
    """Whether ``t`` reads as a float (to name the bad field once a whole line failed to parse)."""
    try:
        float(t)
    except ValueError:
        return False
    return True


def read_raw(path: str | os.PathLike, label: str | None = None) -> Iterator[TraceJob]:
    """Yield the trace's jobs exactly as written, validating each line."""
    p = Path(path)
    name = label or str(p)
    last = -math.inf
    try:
        f = _open_text(p)
    except OSError as e:
        raise InputError(name, f"cannot open trace: {e.strerror or e}") from None
    with f:
        lineno = 0
        try:
            for lineno, text in enumerate(f, start=1):  # noqa: B007 - lineno used after the loop
                where = f"{name}:{lineno}"
                parsed = parse_line(text, where)
                if parsed is None:
                    continue
                arrival, mean, durations = parsed
                if arrival < last:
                    raise InputError(where, f"arrival time {arrival:g} is earlier than the previous job's {last:g}")
                last = arrival
                yield TraceJob(arrival, mean, durations, lineno)
        except (UnicodeDecodeError, EOFError, OSError, gzip.BadGzipFile) as e:
            raise InputError(f"{name}:{lineno + 1}", f"unreadable trace data: {e}") from None


def apply_conventions(jobs: Iterable[TraceJob], conventions: TraceConventions) -> Iterator[TraceJob]:
    """Truncate durations and dephase repeated arrival times, keeping arrival order."""
    truncate = conventions.truncate_durations
    dephase = conventions.dephase
    shifted: dict[float, float] = {}
    pending: list[tuple[float, int, TraceJob]] = []  # reorder buffer keyed by (new time, order)
    order = 0
    for job in jobs:
        if truncate:
            job.durations = list(map(float, map(int, job.durations)))
        if dephase:
            t0 = job.arrival
            prev = shifted.get(t0)
            if prev is None:
                shifted[t0] = t0
            else:
                # Cumulative float addition, as the authors' simulators do it.
                shifted[t0] = prev + dephase
                job.arrival = shifted[t0]
            # Any later job arrives no earlier than t0, so everything buffered at or
            # before t0 is final.
            while pending and pending[0][0] <= t0:
                yield heapq.heappop(pending)[2]
            heapq.heappush(pending, (job.arrival, order, job))
            order += 1
        else:
            yield job
    while pending:
        yield heapq.heappop(pending)[2]


def read_trace(
    spec: str | os.PathLike, conventions: TraceConventions | None = None
) -> Iterator[TraceJob]:
    """Stream a trace (bundled name or path) with ``conventions`` applied (default: the papers')."""
    label, path = resolve_trace(spec)
    conv = conventions if conventions is not None else TraceConventions()
    if is_columnar(path):
        from schedlab.workload.columnar import read_columnar

        return apply_conventions(read_columnar(path, label), conv)
    return apply_conventions(read_raw(path, label), conv)


def is_columnar(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a columnar trace (a ``.parquet`` or ``.pq`` file) rather than a ``.tr`` one."""
    return Path(path).suffix.lower() in (".parquet", ".pq")


def request_resources(spec: str | os.PathLike) -> tuple[str, ...]:
    """The resources a trace's requests are stated in (a columnar trace's; none for a ``.tr`` trace)."""
    label, path = resolve_trace(spec)
    if not is_columnar(path):
        return ()
    from schedlab.workload.columnar import read_metadata

    return tuple(read_metadata(path, label)["resources"])


def count_jobs(spec: str | os.PathLike) -> int:
    """Number of jobs (for progress bars): the lines that are neither blank nor comments.

    Lines are counted, not parsed: a job's durations are most of its line, and
    parsing them is most of the cost of reading a trace. A malformed line is
    counted like any other; the reader refuses it when the run gets there.
    """
    label, path = resolve_trace(spec)
    if is_columnar(path):
        from schedlab.workload.columnar import count_columnar_jobs

        return count_columnar_jobs(path, label)
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as f:
            n = 0
            for line in f:
                head = line.lstrip()
                if head and not head.startswith(b"#"):
                    n += 1
            return n
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise InputError(label, f"unreadable trace data: {e}") from None


def _fmt(x: float) -> str:
    return repr(float(x)) if x != int(x) or abs(x) >= 1e15 else f"{int(x)}.0"


def format_job(job: TraceJob) -> str:
    ds = " ".join(_fmt(d) for d in job.durations)
    return f"{_fmt(job.arrival)} {job.num_tasks} {_fmt(job.mean_duration)} {ds}"


def write_trace(path: str | os.PathLike, jobs: Iterable[TraceJob]) -> int:
    """Write jobs atomically (temp file, then rename); ``.gz`` paths are compressed. Returns the job count.

    Refuses jobs out of arrival order or with no tasks, so every written trace reads back.
    """
    p = Path(path)
    n = 0

    def write(tmp: str) -> None:
        nonlocal n
        with open(tmp, "wb") as raw:
            stream = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if p.suffix == ".gz" else raw
            with io.TextIOWrapper(stream, encoding="utf-8", newline="\n") as f:
                last = -math.inf
                for job in jobs:
                    if job.arrival < last:
                        raise InputError(f"job {n + 1}", f"arrival {job.arrival} is earlier than the previous job's {last}")
                    if job.num_tasks < 1:
                        raise InputError(f"job {n + 1}", "a job needs at least one task")
                    last = job.arrival
                    f.write(format_job(job))
                    f.write("\n")
                    n += 1

    atomic_write(p, write)
    return n
