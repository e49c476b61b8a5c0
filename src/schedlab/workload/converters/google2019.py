"""Google cluster-usage trace 2019 (ClusterData 2019, "Google cluster-usage traces v3") → schedlab's
columnar trace.

Inputs: the ``collection_events`` and ``instance_events`` tables (Wilkes,
"Google cluster-usage traces v3", 2020) as BigQuery exports them, gzipped JSON
lines in shards named ``<table>-000000000000.json.gz``, ``-000000000001``, …
(or in folders named after their tables). ``machine_events`` and
``machine_attributes`` shards are accepted and not read here. Fields used:

* collection_events: time, type, collection ID, collection type, priority,
  user (``collection_name``, the scheduler and the other fields are not read).
* instance_events: time, type, collection ID, collection type, priority,
  instance index, ``resource_request`` {cpus, memory} (normalised to the
  largest machine, as in 2011) and ``constraint`` (a list of {name, value,
  relation}). Machine, scheduling class, missing-type and the alloc fields
  are not read.

Times are integers in µs (0: before the trace window, which starts at 600 s;
2^63 − 1: after it); the output has them in seconds, as 2011's. BigQuery's
JSON export writes INT64 values as strings; both strings and numbers are
read, and the enumerations (event type, collection type, relation) also by
name (``"FINISH"``, ``"LESS_THAN_EQUAL"``). A missing or ``null`` optional
field is not stated.

Interpretation: a task is one (collection ID, instance index) with the same
lifecycle as a Google 2011 task, so the events are mapped onto 2011's and
folded by :mod:`.google2011`'s fold (:class:`~.google2011.TaskStates`,
:func:`~.google2011.fold_batch`; :func:`~.google2011.reference_events` is the
definition): SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST and the two
UPDATEs are 2011's; QUEUE and ENABLE are pending states, read as
UPDATE_PENDING (they restate the requests or the priority only where the
row states them). So, as in 2011: the arrival is the first SUBMIT, the
duration the last run (SCHEDULE to FINISH), and a task is left out, counted
by reason, when it never finishes, finishes after the trace window or was
submitted or started before it. In addition (each our choice):

* A **job** is a collection; its ``job`` column is the real collection ID.
  Instances of an ALLOC_SET collection (collection type 1: a reservation, not
  work) are left out and counted, whether the collection's events or the
  instance's row say so.
* A job's **user** is its collection's ``user`` (the last stated in
  collection_events). An instance whose collection has no collection_events
  row is kept with no user, and counted.
* **Priority**: the last stated on the instance's events; where they state
  none, the collection's.
* **Requests**: the last stated ``resource_request`` (SUBMIT, QUEUE, ENABLE or
  UPDATE events), scaled as 2011's (``DEFAULT_SCALE``) or kept normalised.
* **Constraints**: every (name, relation, value) the task's events state,
  duplicates removed; relations 0–7 are ``=``, ``!=``, ``<``, ``>``, ``<=``,
  ``>=``, ``present``, ``absent``; an EQUAL with an empty value means the
  attribute must be absent, a NOT_EQUAL with one that it must be present (as
  2011). A comparison (2–5) with an empty value, a constraint with no name
  or an unknown relation makes its row malformed.

How: collection_events is read first into one row per collection (sorted
IDs, so a collection's job code is its rank, and numpy look-ups), then
instance_events a block of lines at a time (:func:`.common.read_json_shards`)
through the 2011 fold; finished tasks are spilled (runs of 250,000, as
2011's: larger runs made larger transient copies when sorted, the peak of a
long conversion), sorted and merged by :mod:`.tasks` as in 2011. Held in
memory besides 2011's: the collections (a few numbers each), the IDs of
collections with no collection_events row, the (collection, instance) pairs
of alloc sets, and the constraints, deduplicated per block as they are read.
Most of the time is pyarrow's JSON parsing; ``benchmarks/bench_trace_io.py``
measures rows/s and peak memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.workload.converters import RawJob, RawTrace
from schedlab.workload.converters.checkpoint import WorkDir, work_for
from schedlab.workload.converters.common import Batch, Drops, enum_codes, read_json_shards
from schedlab.workload.converters.google2011 import (
    DEFAULT_SCALE,
    EVICT,
    FAIL,
    FINISH,
    KILL,
    LOST,
    SCHEDULE,
    SUBMIT,
    UPDATE_PENDING,
    UPDATE_RUNNING,
    Tally,
    TaskStates,
    checkpoint_fold,
    drop_unfinished,
    fold_batch,
    resources,
    restore_fold,
    user_codes,
)
from schedlab.workload.converters.tasks import (
    TASK_BITS,
    Finished,
    compact_constraints,
    constraint_frame,
    constraint_part,
    count_constrained,
    new_jobs,
    operator_symbols,
    sorted_chunks,
    spill,
    to_table,
)

EVENT_TYPES = ("SUBMIT", "QUEUE", "ENABLE", "SCHEDULE", "EVICT", "FAIL", "FINISH", "KILL", "LOST", "UPDATE_PENDING", "UPDATE_RUNNING")
COLLECTION_TYPES = ("JOB", "ALLOC_SET")
ALLOC_SET = 1
RELATIONS = ("EQUAL", "NOT_EQUAL", "LESS_THAN", "GREATER_THAN", "LESS_THAN_EQUAL", "GREATER_THAN_EQUAL", "PRESENT", "NOT_PRESENT")
# a 2019 event type -> the 2011 event the fold reads (QUEUE and ENABLE: pending, like UPDATE_PENDING)
AS_2011 = np.asarray([SUBMIT, UPDATE_PENDING, UPDATE_PENDING, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING], np.int64)
ALLOC_DROP = "alloc set instances (reservations, not tasks)"


def collection_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [("time", pa.int64()), ("type", pa.string()), ("collection_id", pa.int64()), ("collection_type", pa.string()), ("priority", pa.int64()), ("user", pa.string())]
    )


def instance_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("time", pa.int64()),
            ("type", pa.string()),
            ("collection_id", pa.int64()),
            ("collection_type", pa.string()),
            ("priority", pa.int64()),
            ("instance_index", pa.int64()),
            ("resource_request", pa.struct([("cpus", pa.float64()), ("memory", pa.float64())])),
            ("constraint", pa.list_(pa.struct([("name", pa.string()), ("value", pa.string()), ("relation", pa.string())]))),
        ]
    )


# -- a block's rows --------------------------------------------------------------------------------
def _floats(values: Any) -> np.ndarray:
    return values.to_numpy(zero_copy_only=False).astype(np.float64)  # null: NaN


def _ints(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """An int64 column as (values, 0 where null; null)."""
    return values.fill_null(0).to_numpy(zero_copy_only=False), values.is_null().to_numpy(zero_copy_only=False)


def _shown(v: Any) -> str:
    return v if isinstance(v, str) and v.lstrip("-").isdigit() else repr(v)


Check = tuple[np.ndarray, str, Callable[[int], str]]  # the rows that fail, the reason counted, what to say of row i


class Rows:
    """A block of either table's rows as numpy arrays, and what is wrong with them (:meth:`good`)."""

    def __init__(self, b: Batch, instances: bool) -> None:
        self.b, self.n, self.instances = b, len(b["time"]), instances
        self.t, t_null = _ints(b["time"])
        self.cid, cid_null = _ints(b["collection_id"])
        self.ev, ev_null = enum_codes(b["type"], EVENT_TYPES)
        self.ct, ct_null = enum_codes(b["collection_type"], COLLECTION_TYPES)
        self.ct_null = ct_null
        self.idx: np.ndarray = np.zeros(self.n, np.int64)
        idx_null = np.zeros(self.n, bool)
        if instances:
            self.idx, idx_null = _ints(b["instance_index"])
        missing = {"time": t_null, "type": ev_null, "collection_id": cid_null}
        if instances:
            missing["instance_index"] = idx_null
        self.checks: list[Check] = [
            (np.logical_or.reduce(list(missing.values())), "rows with a missing field", lambda i: f"{next(k for k, m in missing.items() if m[i])} is missing"),
            ((self.ev < 0) | (self.ev >= len(EVENT_TYPES)), "rows with an unknown event type", lambda i: f"{self.who(i)}: unknown event type {_shown(b['type'][i].as_py())}"),
            (~ct_null & ((self.ct < 0) | (self.ct >= len(COLLECTION_TYPES))), "rows with an unknown collection type",
             lambda i: f"{self.who(i)}: unknown collection type {_shown(b['collection_type'][i].as_py())}"),
            ((self.t < 0) | (self.cid < 0) | (self.idx < 0) | (self.idx >= 1 << TASK_BITS), "rows with an impossible time, collection ID or instance index",
             lambda i: f"{self.who(i)}: times and collection IDs must be >= 0" + (f" and instance indices in [0, 2^{TASK_BITS})" if instances else "") + f" (time {self.t[i]})"),
        ]  # fmt: skip
        if instances:
            self._constraints()

    def who(self, i: int) -> str:
        return f"collection {self.cid[i]}" + (f" instance {self.idx[i]}" if self.instances else "")

    def _constraints(self) -> None:
        """The block's constraints, flattened (``parent``: the row of each), and the rows with a malformed one."""
        import pyarrow.compute as pc

        cons = self.b["constraint"]
        self.parent = pc.list_parent_indices(cons).to_numpy(zero_copy_only=False)
        name, value, relation = pc.list_flatten(cons).flatten()
        self.rel, _null = enum_codes(relation, RELATIONS)  # null: -1, an unknown relation
        self.attr = name.to_numpy(zero_copy_only=False)
        self.value = value.fill_null("").to_numpy(zero_copy_only=False).astype(object)
        no_name = name.is_null().to_numpy(zero_copy_only=False)
        bad_rel = ~no_name & ((self.rel < 0) | (self.rel >= len(RELATIONS)))
        empty = ~no_name & ~bad_rel & (self.value == "") & (self.rel >= 2) & (self.rel <= 5)

        def rows(mask: np.ndarray) -> np.ndarray:
            out = np.zeros(self.n, bool)
            out[self.parent[mask]] = True
            return out

        def first(i: int, mask: np.ndarray) -> int:  # row i's first constraint of mask
            return int(np.flatnonzero(mask & (self.parent == i))[0])

        self.checks += [
            (rows(no_name), "rows with a constraint without a name", lambda i: f"{self.who(i)}: a constraint has no name"),
            (rows(bad_rel), "rows with an unknown constraint relation",
             lambda i: f"{self.who(i)}: unknown constraint relation {_shown(relation[first(i, bad_rel)].as_py())}"),
            (rows(empty), "rows with a constraint comparing with an empty value",
             lambda i: f"{self.who(i)}: constraint {self.attr[(k := first(i, empty))]} {RELATIONS[self.rel[k]]} needs a value"),
        ]  # fmt: skip

    def good(self, skip_bad: bool, bad_rows: Drops) -> np.ndarray:
        """The rows that pass every check. The first bad row in the file is an error naming it; with ``skip_bad``
        each bad row is counted under the first check it fails."""
        bad = np.logical_or.reduce([mask for mask, _r, _w in self.checks])
        if bad.any():
            if not skip_bad:
                i = int(np.argmax(bad))
                raise InputError(self.b.where(i), next(what(i) for mask, _r, what in self.checks if mask[i]))
            seen = np.zeros(self.n, bool)
            for mask, reason, _w in self.checks:
                bad_rows.add(reason, int((mask & ~seen).sum()))
                seen |= mask
        return ~bad


# -- collections -----------------------------------------------------------------------------------
@dataclass
class Collections:
    """One row per collection of collection_events, by ID (sorted): its user code (-1: none stated), whether
    it is an alloc set, its priority (NaN: none stated)."""

    ids: np.ndarray
    user: np.ndarray
    alloc: np.ndarray
    prio: np.ndarray

    def find(self, cid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each ID's rank among the collections (0 for an ID that is not one), and whether it is one."""
        pos = np.searchsorted(self.ids, cid)
        found = np.zeros(len(cid), bool)
        inside = pos < len(self.ids)
        found[inside] = self.ids[pos[inside]] == cid[inside]
        return np.where(found, pos, 0), found

    def users(self, pos: np.ndarray, found: np.ndarray) -> np.ndarray:
        return np.where(found, self.user[pos], -1) if len(self.ids) else np.full(len(pos), -1, np.int64)

    def allocs(self, pos: np.ndarray, found: np.ndarray) -> np.ndarray:
        return found & self.alloc[pos] if len(self.ids) else np.zeros(len(pos), bool)


def _collections_pass(
    paths: Sequence[Path], users: dict[str, int], bad_rows: Drops, counts: dict[str, int], skip_bad: bool, progress: Callable[[int], None] | None
) -> Collections:
    """Each collection's last stated user, type and priority."""
    import pandas as pd

    parts: list[Any] = []
    held = rows = 0

    def fold(parts: list[Any]) -> Any:  # the last stated value of each field (NaN: not stated), per collection
        return pd.concat(parts).groupby(level=0).last()

    for b in read_json_shards(paths, collection_schema(), skip_bad=skip_bad, bad_rows=bad_rows, progress=progress):
        r = Rows(b, instances=False)
        good = r.good(skip_bad, bad_rows)
        user = user_codes(b["user"].to_numpy(zero_copy_only=False)[good], users).astype(np.float64)
        user[user < 0] = np.nan
        alloc = np.where(r.ct_null, np.nan, r.ct == ALLOC_SET)[good]
        parts.append(pd.DataFrame({"user": user, "alloc": alloc, "prio": _floats(b["priority"])[good]}, index=r.cid[good]))
        held += len(user)
        rows += len(user)
        if held > 1_000_000:  # keep one row per collection
            parts = [fold(parts)]
            held = len(parts[0])
    df = fold(parts) if parts else pd.DataFrame({"user": [], "alloc": [], "prio": []}, index=np.zeros(0, np.int64))
    counts["collection_events"] = rows
    counts["collections"] = len(df)
    return Collections(
        ids=df.index.to_numpy().astype(np.int64),
        user=np.nan_to_num(df["user"].to_numpy(np.float64), nan=-1).astype(np.int64),
        alloc=df["alloc"].to_numpy(np.float64) == 1,
        prio=df["prio"].to_numpy(np.float64),
    )


# -- instances -------------------------------------------------------------------------------------
class JobCodes:
    """A job code per collection ID: the collection's rank among collection_events', then, for collections with
    no collection_events row, codes after those in the order they are met."""

    def __init__(self, colls: Collections) -> None:
        self.colls = colls
        self.unknown: dict[int, int] = {}

    def codes(self, cid: np.ndarray, pos: np.ndarray, found: np.ndarray) -> np.ndarray:
        """The job codes of these collection IDs (``pos``, ``found``: :meth:`Collections.find`'s)."""
        import pandas as pd

        if found.all():
            return pos
        ucodes, uniq = pd.factorize(cid[~found])
        base = len(self.colls.ids)
        table = np.asarray([self.unknown.setdefault(u, base + len(self.unknown)) for u in uniq.tolist()], np.int64)
        code = pos.copy()
        code[~found] = table[ucodes]
        return code

    def job_ids(self) -> np.ndarray:
        return np.concatenate([self.colls.ids, np.fromiter(self.unknown, np.int64, len(self.unknown))])


def _instances_pass(
    paths: Sequence[Path], colls: Collections, jobs_of: JobCodes, users: dict[str, int], drops: Drops, bad_rows: Drops, counts: dict[str, int],
    skip_bad: bool, progress: Callable[[int], None] | None, run_rows: int, work: WorkDir, saved: tuple[int, dict[str, np.ndarray], dict[str, Any]] | None,
) -> tuple[list[Any], Any, Any]:  # fmt: skip
    """The events through 2011's fold: the finished tasks' runs, the jobs, and the constraint frame."""
    import pandas as pd

    states = TaskStates()
    tally = Tally(drops)
    out = Finished()
    runs: list[Any] = []
    jobs = new_jobs()
    alloc_tasks: set[tuple[int, int]] = set()
    alloc_rows = stated = 0
    cons_parts: list[Any] = []
    first, rows_read = 0, 0
    if saved is not None:
        first, arrays, values = saved
        jobs, runs = restore_fold(states, tally, out, {}, drops, bad_rows, arrays, values)
        rows_read = int(values["rows_read"])
        for k, v in values["counts"].items():
            counts[k] = v
        alloc_tasks = set(zip(arrays["alloc_cid"].tolist(), arrays["alloc_idx"].tolist(), strict=True))
        alloc_rows, stated = int(values["alloc_rows"]), int(values["stated"])
        jobs_of.unknown = dict(zip(arrays["unknown_cid"].tolist(), arrays["unknown_code"].tolist(), strict=True))
        if values["constraints"]:
            cons_parts.append(pd.read_parquet(values["constraints"]))
        if progress is not None:
            progress(rows_read)
    read = [rows_read]

    def counted(n: int) -> None:
        read[0] += n
        if progress is not None:
            progress(n)

    for k in range(first, len(paths)):
        for b in read_json_shards([paths[k]], instance_schema(), skip_bad=skip_bad, bad_rows=bad_rows, progress=counted):
            r = Rows(b, instances=True)
            keep = r.good(skip_bad, bad_rows)
            pos, found = colls.find(r.cid)
            alloc = keep & ((r.ct == ALLOC_SET) | colls.allocs(pos, found))  # reservations: left out
            if alloc.any():
                alloc_rows += int(alloc.sum())
                alloc_tasks.update(zip(r.cid[alloc].tolist(), r.idx[alloc].tolist(), strict=True))
                keep &= ~alloc
            rows = np.flatnonzero(keep)
            if not len(rows):
                continue
            pos, found = pos[rows], found[rows]
            key = (jobs_of.codes(r.cid[rows], pos, found) << TASK_BITS) | r.idx[rows]
            cpu, mem = (_floats(c)[rows] for c in b["resource_request"].flatten())
            fold_batch(states, {"t": r.t[rows], "key": key, "ev": AS_2011[r.ev[rows]], "user": colls.users(pos, found), "prio": _floats(b["priority"])[rows],
                                "cpu": cpu, "mem": mem}, out, tally)  # fmt: skip
            # the constraints of the rows kept, duplicates within the block removed
            key_of = np.full(r.n, -1, np.int64)
            key_of[rows] = key
            ck = key_of[r.parent]
            sel = ck >= 0
            if sel.any():
                stated += int(sel.sum())
                sym, val = operator_symbols(r.rel[sel], r.value[sel])
                cons_parts.append(constraint_part(ck[sel], r.attr[sel], sym, val).drop_duplicates())
                cons_parts = compact_constraints(cons_parts)
            if out.rows >= run_rows:
                jobs = spill(out, runs, jobs, work.dir)
        if work.due() or (work.keeps and k + 1 == len(paths)):  # and after the last: the merge can fail too
            cons_parts = [constraint_frame(cons_parts)] if cons_parts else []  # one frame, as the checkpoint keeps it
            cons_path = ""
            if cons_parts:
                cons_path = str(work.dir / f"constraints-{k + 1:06d}.parquet")
                cons_parts[0].to_parquet(cons_path)
            alloc = np.asarray(sorted(alloc_tasks), dtype=np.int64).reshape(-1, 2)
            arrays = {"alloc_cid": alloc[:, 0], "alloc_idx": alloc[:, 1], "unknown_cid": np.fromiter(jobs_of.unknown, np.int64, len(jobs_of.unknown)),
                      "unknown_code": np.fromiter(jobs_of.unknown.values(), np.int64, len(jobs_of.unknown))}  # fmt: skip
            values = {"alloc_rows": alloc_rows, "stated": stated, "constraints": cons_path, "counts": dict(counts)}
            checkpoint_fold(work, k + 1, states, tally, out, users, drops, bad_rows, jobs, runs, read[0], arrays, values)
    drop_unfinished(states, drops)
    drops.add(ALLOC_DROP, len(alloc_tasks))
    if out.rows or not runs:
        jobs = spill(out, runs, jobs, work.dir, keep=not runs)
    counts["runs_ended_early"] = tally.ended_early
    counts["events_out_of_order"] = tally.out_of_order
    counts["alloc_set_instance_events"] = alloc_rows
    counts["constraints_stated"] = stated
    constraints = constraint_frame(cons_parts)
    counts["constraint_rows"] = len(constraints)
    return runs, jobs, constraints


# -- the conversion --------------------------------------------------------------------------------
def convert_google2019(job: RawJob, *, run_rows: int = 250_000) -> Iterator[Any]:
    """Stream ``job``'s trace as Arrow tables in the columnar trace's schema, in arrival order (for
    :meth:`~schedlab.workload.columnar.ColumnarTraceWriter.write_tables`); finished tasks spilled ``run_rows``
    at a time.

    With ``job.work_dir`` the conversion is restartable (:mod:`.checkpoint`): a checkpoint after an
    instance_events shard (at most ``job.checkpoint_every_s`` apart); a rerun with the same folder reads
    collection_events again and the instance_events shards after the last checkpoint."""
    instance_events, collection_events = job.tables["instance_events"], job.tables.get("collection_events", [])
    scale = DEFAULT_SCALE if job.scale_requests else None
    skip_bad, drops, bad_rows, counts, progress = job.skip_bad, job.drops, job.bad_rows, job.counts, job.progress
    work = work_for(job, "google2019", "instance_events", run_rows=run_rows)
    try:
        saved = work.load()
        users: dict[str, int] = {}
        if saved is None:
            colls = _collections_pass(collection_events, users, bad_rows, counts, skip_bad, progress)
        else:  # read again (its rows counted as read again), its counts already in the checkpoint's
            colls = _collections_pass(collection_events, users, Drops(), {}, skip_bad, progress)
        jobs_of = JobCodes(colls)
        runs, jobs, constraints = _instances_pass(instance_events, colls, jobs_of, users, drops, bad_rows, counts, skip_bad, progress, run_rows, work, saved)
        counts["collections_without_collection_events"] = len(jobs_of.unknown)
        job_ids = jobs_of.job_ids()
        job_prio = np.concatenate([colls.prio, np.full(len(jobs_of.unknown), np.nan)])
        user_names = np.asarray(sorted(users, key=users.__getitem__), dtype=object)
        names = resources(scale)[0]
        factors = (1.0, 1.0) if scale is None else scale
        kept = constrained = unknown = 0
        ck = constraints["key"].to_numpy()
        for chunk in sorted_chunks(runs, jobs, work.dir, keep_runs=work.keeps):  # a checkpoint names the runs
            code = chunk["key"] >> TASK_BITS
            prio = chunk["priority"]
            chunk["priority"] = np.where(np.isnan(prio), job_prio[code], prio)
            unknown += int((code >= len(colls.ids)).sum())
            kept += count_constrained(chunk["key"], constraints)
            constrained += int((np.searchsorted(ck, chunk["key"], side="right") > np.searchsorted(ck, chunk["key"], side="left")).sum())
            yield to_table(chunk, resources=names, factors=factors, seconds_per_unit=1e-6, user_names=user_names, constraints=constraints, job_ids=job_ids)
        counts["tasks_without_collection_events"] = unknown
        counts["tasks_constrained"] = constrained
        counts["constraint_rows_of_dropped_tasks"] = len(constraints) - kept
    except BaseException:
        work.abandon()
        raise
    work.finish()


def convert(job: RawJob) -> RawTrace:
    """The :data:`~schedlab.workload.converters.FORMATS` entry point."""
    names, units = resources(DEFAULT_SCALE if job.scale_requests else None)
    return RawTrace(names, units, convert_google2019(job))
