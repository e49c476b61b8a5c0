"""Google cluster-usage trace 2011 (clusterdata-2011-2) → schedlab's columnar trace.

Inputs: the ``task_events`` shards (``part-?????-of-00500.csv.gz``, in shard
order) and, optionally, the ``task_constraints`` shards — the two tables of
the trace's schema (Reiss, Wilkes & Hellerstein, "Google cluster-usage traces:
format + schema", 2011/2014) that describe tasks. Fields used:

* task_events: timestamp (µs), job ID, task index, event type, user,
  priority, CPU request, memory request (both normalised to the largest
  machine); missing-info, machine ID, scheduling class, disk request and the
  different-machine flag are read and validated but not used.
* task_constraints: job ID, task index, comparison operator (0 ``=``, 1 ``!=``,
  2 ``<``, 3 ``>``), attribute name, attribute value.

Interpretation (the schema leaves these to the reader; each is our choice):

* A task is one (job ID, task index). Its **arrival** is its first SUBMIT;
  a job's arrival is the earliest arrival of its tasks that are kept, and all
  of its kept tasks arrive then (schedlab's jobs submit their tasks together).
* Its **duration** is from the SCHEDULE that starts its last run to that
  run's FINISH. A task evicted (or failed, killed, lost) and resubmitted keeps
  its first SUBMIT as its arrival; the earlier runs are counted
  (``runs_ended_early``) but their time is not part of the duration.
* Dropped, each counted by reason: a task whose last event is not FINISH
  (killed, failed, lost, evicted, or still pending or running at the trace's
  end); a task submitted or started before the trace window (timestamp 0, the
  schema's "before the trace" marker) or finished after it (2^63 − 1); a
  FINISH with no SCHEDULE before it.
* Events may be out of order within a task (the schema warns timestamps are
  only approximately ordered): a SUBMIT later in the file but earlier in time
  moves the arrival back; a FINISH read before its SCHEDULE waits for it.
* **Requests**: the last stated CPU and memory requests (SUBMIT or UPDATE
  events). By default they are scaled to the default worker (64 cores,
  16,384 MB: "1.0" is the largest machine) and written as ``cores`` and
  ``memory_mb``, so a multi-resource simulation uses them directly; with
  ``scale=None`` they stay normalised (resources ``cpus``, ``memory``). A task
  with a missing request keeps ``None`` (the simulation draws one, counted).
* **Constraints**: all of a task's ``task_constraints`` rows, duplicates
  removed. An empty value with ``=`` means the machine must not have the
  attribute (``absent``), with ``!=`` that it must have it (``present``).

Memory: what is held is the state of the tasks not finished yet (bounded by
what is pending or running at once, not by the input's length) and up to
``run_rows`` rows per sort. Finished tasks and constraints are spilled to
sorted runs on disk (:class:`~.common.ExternalSorter`) and merged by task,
which groups each job's tasks to find its arrival; the result is sorted again
by arrival for the output.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from schedlab.defaults import DEFAULT_CAPACITY, MULTI_RESOURCES
from schedlab.errors import InputError
from schedlab.workload.converters.common import Drops, ExternalSorter, read_csv_shards
from schedlab.workload.trace import Constraint, TraceJob

TASK_EVENTS = [
    ("timestamp", "int"),
    ("missing_info", "int?"),
    ("job", "int"),
    ("task", "int"),
    ("machine", "int?"),
    ("event", "int"),
    ("user", "str?"),
    ("scheduling_class", "int?"),
    ("priority", "int?"),
    ("cpu", "float?"),
    ("memory", "float?"),
    ("disk", "float?"),
    ("different_machine", "bool?"),
]
TASK_CONSTRAINTS = [
    ("timestamp", "int"),
    ("job", "int"),
    ("task", "int"),
    ("operator", "int"),
    ("attribute", "str"),
    ("value", "str?"),
]
SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(9)
ENDED = {EVICT: "evicted", FAIL: "failed", KILL: "killed", LOST: "lost"}
AFTER_WINDOW = 2**63 - 1
OPERATORS = {0: "=", 1: "!=", 2: "<", 3: ">"}
TASK_BITS = 24  # task indices below 2^24 (Google 2011's largest job has about 90,000 tasks)
DEFAULT_SCALE = (DEFAULT_CAPACITY[0], DEFAULT_CAPACITY[1])

# per live task: [arrival µs, start µs, cpu, memory, user, priority, last event, finish µs waiting for its SCHEDULE]
_ARR, _START, _CPU, _MEM, _USER, _PRIO, _LAST, _FIN = range(8)


def resources(scale: tuple[float, float] | None) -> tuple[tuple[str, ...], dict[str, str]]:
    """The output's request columns and their units."""
    if scale is None:
        return ("cpus", "memory"), {"cpus": "fraction of the largest machine's CPU", "memory": "fraction of the largest machine's memory"}
    return tuple(MULTI_RESOURCES), {MULTI_RESOURCES[0]: f"cores ({scale[0]:g} = the largest machine)", MULTI_RESOURCES[1]: f"MB ({scale[1]:g} = the largest machine)"}


def convert_google2011(
    task_events: Sequence[Path],
    task_constraints: Sequence[Path] = (),
    *,
    scale: tuple[float, float] | None = DEFAULT_SCALE,
    skip_bad: bool = False,
    drops: Drops | None = None,
    bad_rows: Drops | None = None,
    counts: dict[str, int] | None = None,
    progress: Callable[[int], None] | None = None,
    run_rows: int = 500_000,
    spill_dir: str | os.PathLike | None = None,
) -> Iterator[TraceJob]:
    """Stream the trace's jobs in arrival order (as the columnar writer takes them)."""
    drops = drops if drops is not None else Drops()
    bad_rows = bad_rows if bad_rows is not None else Drops()
    counts = counts if counts is not None else {}
    finished = ExternalSorter(
        ["key", "seq", "arrival", "duration", "user", "priority", "cpu", "memory"],
        _types("int64", "int64", "int64", "int64", "string", "int64", "float64", "float64"),
        nkeys=2,
        run_rows=run_rows,
        folder=spill_dir,
    )
    cons = ExternalSorter(["key", "seq", "constraint"], _types("int64", "int64", "string"), nkeys=2, run_rows=run_rows, folder=spill_dir)
    by_arrival: ExternalSorter | None = None
    try:
        _events(task_events, finished, drops, bad_rows, counts, skip_bad, progress)
        _constraints(task_constraints, cons, bad_rows, counts, skip_bad, progress)
        by_arrival = ExternalSorter(
            ["arrival", "job", "task", "duration", "user", "priority", "cpu", "memory", "constraints"],
            _types("int64", "int64", "int64", "int64", "string", "int64", "float64", "float64", "string"),
            nkeys=3,
            run_rows=run_rows,
            folder=spill_dir,
        )
        for row in _join(finished.sorted_rows(), cons.sorted_rows(), counts):
            by_arrival.add(row)
        yield from _jobs(by_arrival.sorted_rows(), scale)
    finally:
        finished.close()
        cons.close()
        if by_arrival is not None:
            by_arrival.close()


def _types(*names: str) -> list:
    import pyarrow as pa

    return [getattr(pa, n)() for n in names]


def _events(paths: Sequence[Path], out: ExternalSorter, drops: Drops, bad_rows: Drops, counts: dict[str, int], skip_bad: bool, progress: Callable[[int], None] | None) -> None:
    live: dict[int, list] = {}
    seq = 0
    ended_early = out_of_order = 0
    limit = 1 << TASK_BITS
    use = ["timestamp", "job", "task", "event", "user", "priority", "cpu", "memory"]
    for b in read_csv_shards(paths, TASK_EVENTS, skip_bad=skip_bad, bad_rows=bad_rows, use=use, progress=progress):
        done: list[tuple] = []
        get = live.get
        for i, (t, job, idx, ev, user, prio, cpu, mem) in enumerate(zip(b["timestamp"], b["job"], b["task"], b["event"], b["user"], b["priority"], b["cpu"], b["memory"], strict=True)):
            if not (0 <= idx < limit and job >= 0 and 0 <= ev <= UPDATE_RUNNING):
                problem = f"unknown event type {ev}" if not 0 <= ev <= UPDATE_RUNNING else f"job IDs must be >= 0 and task indices in [0, 2^{TASK_BITS})"
                if skip_bad:
                    bad_rows.add("rows with an unknown event type" if "event" in problem else "rows with an impossible job ID or task index")
                    continue
                raise InputError(b.where(i), f"job {job} task {idx}: {problem}")
            key = (job << TASK_BITS) | idx
            st = get(key)
            if ev == SUBMIT:
                if st is None:
                    live[key] = [t, -1, cpu, mem, user, prio, SUBMIT, -1]
                    continue
                if st[_ARR] < 0 or t < st[_ARR]:
                    if st[_ARR] >= 0:
                        out_of_order += 1
                    st[_ARR] = t
                _restate(st, cpu, mem, prio)
                if user is not None:
                    st[_USER] = user
            else:
                if st is None:
                    st = live[key] = [-1, -1, None, None, None, None, -1, -1]
                if ev == SCHEDULE:
                    if t >= st[_START]:
                        st[_START] = t
                    fin = st[_FIN]
                    if fin >= 0 and t <= fin:  # the FINISH came first in the file
                        out_of_order += 1
                        seq = _finish(key, st, fin, done, drops, seq)
                        del live[key]
                        continue
                elif ev == FINISH:
                    start = st[_START]
                    if start < 0 or start > t:
                        st[_FIN] = t  # wait for the SCHEDULE
                    else:
                        seq = _finish(key, st, t, done, drops, seq)
                        del live[key]
                        continue
                elif ev in ENDED:
                    ended_early += 1
                else:  # UPDATE_PENDING, UPDATE_RUNNING
                    _restate(st, cpu, mem, prio)
            st[_LAST] = ev
        out.add_many(done)
    for st in live.values():
        if st[_FIN] >= 0:
            drops.add("FINISH without a SCHEDULE before it")
        elif st[_LAST] in ENDED:
            drops.add(f"{ENDED[st[_LAST]]} and not run again")
        else:
            drops.add("unfinished at the trace's end")
    counts["runs_ended_early"] = ended_early
    counts["events_out_of_order"] = out_of_order


def _restate(st: list, cpu: float | None, mem: float | None, prio: int | None) -> None:
    """What a SUBMIT or UPDATE event states replaces what the task had (an empty field changes nothing)."""
    if cpu is not None:
        st[_CPU] = cpu
    if mem is not None:
        st[_MEM] = mem
    if prio is not None:
        st[_PRIO] = prio


def _finish(key: int, st: list, t: int, done: list[tuple], drops: Drops, seq: int) -> int:
    if t == AFTER_WINDOW:
        drops.add("finished after the trace window")
    elif st[_ARR] <= 0:
        drops.add("submitted before the trace window" if st[_ARR] == 0 else "no SUBMIT event")
    elif st[_START] == 0:
        drops.add("started before the trace window")
    else:
        done.append((key, seq, st[_ARR], t - st[_START], st[_USER], st[_PRIO], st[_CPU], st[_MEM]))
        return seq + 1
    return seq


def _constraints(paths: Sequence[Path], out: ExternalSorter, bad_rows: Drops, counts: dict[str, int], skip_bad: bool, progress: Callable[[int], None] | None) -> None:
    seq = 0
    limit = 1 << TASK_BITS
    use = ["job", "task", "operator", "attribute", "value"]
    for b in read_csv_shards(paths, TASK_CONSTRAINTS, skip_bad=skip_bad, bad_rows=bad_rows, use=use, progress=progress):
        for i, (job, idx, op, attr, value) in enumerate(zip(b["job"], b["task"], b["operator"], b["attribute"], b["value"], strict=True)):
            if op not in OPERATORS or not 0 <= idx < limit or job < 0:
                if skip_bad:
                    bad_rows.add("constraint rows with an unknown operator or impossible IDs")
                    continue
                what = f"unknown comparison operator {op}" if op not in OPERATORS else f"job IDs must be >= 0 and task indices in [0, 2^{TASK_BITS})"
                raise InputError(b.where(i), f"job {job} task {idx}: {what}")
            sym = OPERATORS[op]
            if value is None or value == "":
                if sym in ("<", ">"):
                    if skip_bad:
                        bad_rows.add("constraint rows comparing with an empty value")
                        continue
                    raise InputError(b.where(i), f"job {job} task {idx}: {attr} {sym} needs a value")
                sym, value = ("absent" if sym == "=" else "present"), ""
            out.add(((job << TASK_BITS) | idx, seq, _encode((attr, sym, value))))
            seq += 1
    counts["constraint_rows"] = seq


def _encode(c: Constraint) -> str:
    return "\x1f".join(c)


def _join(tasks: Iterator[tuple], constraints: Iterator[tuple], counts: dict[str, int]) -> Iterator[tuple]:
    """Finished tasks (by key) with their constraints (by key), then each job's arrival: rows keyed by arrival."""
    pending = next(constraints, None)
    unmatched = 0
    mask = (1 << TASK_BITS) - 1
    group: list[tuple] = []
    job = None
    for key, _seq, arrival, duration, user, prio, cpu, mem in tasks:
        while pending is not None and pending[0] < key:
            unmatched += 1
            pending = next(constraints, None)
        seen: list[str] = []
        while pending is not None and pending[0] == key:
            if pending[2] not in seen:
                seen.append(pending[2])
            pending = next(constraints, None)
        j = key >> TASK_BITS
        if j != job:
            yield from _job_rows(job, group)
            group, job = [], j
        group.append((key & mask, arrival, duration, user, prio, cpu, mem, "\x1e".join(seen)))
    yield from _job_rows(job, group)
    while pending is not None:
        unmatched += 1
        pending = next(constraints, None)
    counts["constraint_rows_of_dropped_tasks"] = unmatched


def _job_rows(job: int | None, group: list[tuple]) -> Iterator[tuple]:
    if job is None or not group:
        return
    arrival = min(r[1] for r in group)
    for idx, _a, duration, user, prio, cpu, mem, cons in group:
        yield (arrival, job, idx, duration, user, prio, cpu, mem, cons)


def _jobs(rows: Iterator[tuple], scale: tuple[float, float] | None) -> Iterator[TraceJob]:
    cur: TraceJob | None = None
    cur_job = None
    for arrival, job, idx, duration, user, prio, cpu, mem, cons in rows:
        if job != cur_job:
            if cur is not None:
                yield _close(cur)
            cur = TraceJob(arrival / 1e6, 0.0, [], job_id=job, task_ids=[], user=user, priority=prio, requests=[], constraints=[])
            cur_job = job
        assert cur is not None and cur.task_ids is not None and cur.requests is not None and cur.constraints is not None
        cur.durations.append(duration / 1e6)
        cur.task_ids.append(idx)
        if cpu is None or mem is None:
            cur.requests.append(None)
        elif scale is None:
            cur.requests.append((cpu, mem))
        else:
            cur.requests.append((cpu * scale[0], mem * scale[1]))
        cur.constraints.append(tuple(tuple(c.split("\x1f")) for c in cons.split("\x1e")) if cons else ())  # type: ignore[misc]
    if cur is not None:
        yield _close(cur)


def _close(job: TraceJob) -> TraceJob:
    job.mean_duration = sum(job.durations) / len(job.durations)
    if job.requests is not None and all(r is None for r in job.requests):
        job.requests = None
    if job.constraints is not None and not any(job.constraints):
        job.constraints = None
    return job
