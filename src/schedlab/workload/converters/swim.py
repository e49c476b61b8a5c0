"""SWIM MapReduce workloads (Chen, Alspaugh & Katz, VLDB 2012; the SWIM project's workload repository) →
schedlab's columnar trace.

The Megha paper's ``cloudera`` sample comes from this study's traces. A SWIM
workload file is tab-separated, one job per line (the SWIM repository's
"Workloads repository" page; the output of its ``WorkloadSynthesis.pl``):

1. job ID (a string such as ``job0``), 2. submit time in seconds from the
workload's start, 3. gap since the previous submission (seconds),
4. map input bytes, 5. shuffle bytes, 6. reduce output bytes, and on some
files 7. an anonymised input path.

The format states data sizes, not tasks or durations: SWIM's replay turns
them into Hadoop jobs whose tasks take what the cluster makes them take. A
simulator needs the tasks, so this converter derives them, with each constant
a ``--format-option`` (the defaults are ours; the Megha paper does not say how
its 10,173-task sample was derived, so its numbers are not a target here):

* **map tasks**: one per input block, ``ceil(input / block_mb)`` (HDFS blocks
  of 128 MB, the default of the Hadoop releases Cloudera shipped), at least
  one per job, so a job without input still runs one task;
* **reduce tasks**: ``ceil(shuffle / reduce_mb)`` (1 GB per reducer, Hive's
  classic ``bytes.per.reducer``); none when nothing is shuffled (map-only jobs);
* **durations**: a map task reads its share of the input at
  ``map_mb_per_s``, a reduce task its share of the shuffle and of the output
  at ``reduce_mb_per_s``, each plus ``task_overhead_s`` (task start-up).

What is lost, said here because the output cannot say it: schedlab's jobs are
bags of tasks, so a job's reduce tasks are submitted with its maps and do not
wait for them; the input path (column 7) is not kept. Job IDs are the line's
ordinal among the file's jobs (SWIM's are strings). The file is small (one
line per job), so its jobs are held and sorted by submit time (file order
among equal times) before writing.

Unknown values: a line without a submit time takes the previous line's plus
its gap (column 3, which states exactly that; counted as
``submit_times_from_gap``); a line with neither has no place in time and is
left out and counted, as SWF's unknown (-1) submit times are. A submit time
that cannot be derived (the previous line's is unknown too) is a malformed line.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterator
from pathlib import Path

from schedlab.errors import InputError
from schedlab.workload.converters import RawJob, RawTrace
from schedlab.workload.converters.common import read_csv_shards
from schedlab.workload.trace import TraceJob

COLUMNS = [
    ("job", "str"),
    ("submit", "float?"),
    ("gap", "float?"),
    ("input_bytes", "int"),
    ("shuffle_bytes", "int"),
    ("output_bytes", "int"),
]
INPUT_PATH = ("input_path", "str?")
MB = 1 << 20


def tasks_of(input_bytes: int, shuffle_bytes: int, output_bytes: int, o: dict[str, float]) -> tuple[list[float], list[float]]:
    """The durations of one SWIM job's map tasks and of its reduce tasks (see the module docstring)."""
    maps = max(1, math.ceil(input_bytes / (o["block_mb"] * MB)))
    reduces = math.ceil(shuffle_bytes / (o["reduce_mb"] * MB)) if shuffle_bytes > 0 else 0
    map_s = input_bytes / maps / MB / o["map_mb_per_s"] + o["task_overhead_s"]
    reduce_s = (shuffle_bytes + output_bytes) / reduces / MB / o["reduce_mb_per_s"] + o["task_overhead_s"] if reduces else 0.0
    return [map_s] * maps, [reduce_s] * reduces


def _check_options(o: dict[str, float]) -> None:
    for k in ("block_mb", "reduce_mb", "map_mb_per_s", "reduce_mb_per_s"):
        if not o[k] > 0:
            raise InputError(f"--format-option {k}", f"must be > 0, got {o[k]:g}")
    if not o["task_overhead_s"] >= 0:
        raise InputError("--format-option task_overhead_s", f"must be >= 0, got {o['task_overhead_s']:g}")


def _fields(path: Path) -> int:
    """How many fields the file's lines have (6, or 7 with input paths), read off its first line."""
    try:
        with (gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")) as f:
            for line in f:
                if line.strip():
                    return len(line.rstrip("\r\n").split("\t"))
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise InputError(str(path), f"unreadable data: {e}") from None
    raise InputError(str(path), "no jobs in the input")


def convert(job: RawJob) -> RawTrace:
    """The :data:`~schedlab.workload.converters.FORMATS` entry point."""
    _check_options(job.options)
    return RawTrace((), None, jobs=_jobs(job))


def _jobs(job: RawJob) -> Iterator[TraceJob]:
    (path,) = job.tables["workload"]
    columns = COLUMNS + ([INPUT_PATH] if _fields(path) == 7 else [])
    rows: list[tuple[float, int, list[float]]] = []
    maps = reduces = 0
    use = ["submit", "gap", "input_bytes", "shuffle_bytes", "output_bytes"]
    previous: float | None = None  # the submit time of the file's previous line (None: unknown)
    for b in read_csv_shards([path], columns, skip_bad=job.skip_bad, bad_rows=job.bad_rows, use=use, progress=job.progress, delimiter="\t"):
        for i, (t, gap, inp, shf, outb) in enumerate(zip(b["submit"], b["gap"], b["input_bytes"], b["shuffle_bytes"], b["output_bytes"], strict=True)):
            if t is None and gap is not None and previous is not None:
                t = previous + gap  # column 3 states it: the gap since the previous submission
                job.counts["submit_times_from_gap"] = job.counts.get("submit_times_from_gap", 0) + 1
            previous = t
            if t is None and gap is None:
                job.drops.add("jobs with an unknown submit time (no submit time, no gap)")
                continue
            problem = (
                "the submit time is missing" if t is None
                else f"negative submit time {t:g}" if t < 0 or not math.isfinite(t)
                else "negative byte counts" if min(inp, shf, outb) < 0
                else None
            )  # fmt: skip
            if problem is not None:
                if not job.skip_bad:
                    raise InputError(b.where(i), problem)
                job.bad_rows.add("rows with a missing or negative value")
                continue
            m, r = tasks_of(inp, shf, outb, job.options)
            maps += len(m)
            reduces += len(r)
            rows.append((t, len(rows), m + r))
    job.counts["map_tasks"] = maps
    job.counts["reduce_tasks"] = reduces
    rows.sort(key=lambda r: (r[0], r[1]))
    for t, k, durations in rows:
        yield TraceJob(t, sum(durations) / len(durations), durations, job_id=k, task_ids=list(range(len(durations))))
