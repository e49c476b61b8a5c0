"""Finished tasks on their way out of a raw-trace converter: buffered, spilled to sorted runs, merged in
arrival order and written as Arrow tables in the columnar trace's schema.

A converter reads its events in file order, which is not the output's order
(jobs by arrival), and a job's arrival and mean duration are known only once
all its tasks are. So finished tasks go to a :class:`Finished` buffer, keyed
``job code << TASK_BITS | task index``, with their own arrival, duration,
user code, priority and the two requests; every ``run_rows`` rows the buffer
is :func:`spill`-ed to a Parquet run and folded into one row per job
(earliest arrival, total duration, task count). :func:`sorted_chunks` then
sorts each run by (job arrival, job, task) and merges the runs a block at a
time, both on one integer per row (the job's place in that order, then the
task); :func:`to_table` turns a block into the columnar schema. Memory: one row
per job, plus the merge's buffers (about ``chunk_rows`` rows however many
runs). Times stay integers in the trace's own unit until :func:`to_table`.
Runs are written without Parquet's dictionary encoding: their columns are
mostly distinct integers (keys, times), which it would try and give up on.

Constraints are a pandas frame of (key, attribute, operator, value) sorted by
key (categorical columns keep it small; :func:`constraint_frame` makes it,
:func:`operator_symbols` names the Google traces' relation codes), attached
per task by :func:`constraint_column`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

TASK_BITS = 24  # task indices below 2^24 (Google 2011's largest job has about 90,000 tasks)
# the Google traces' constraint relations by code (2011 has the first four) as the columnar trace's operators
RELATION_OPERATORS = ("=", "!=", "<", ">", "<=", ">=", "present", "absent")


def new_jobs() -> Any:
    """The per-job fold before any task finished: arrival (earliest), total duration, task count."""
    import pandas as pd

    return pd.DataFrame(
        {
            "arrival": pd.Series(dtype=np.int64),
            "total": pd.Series(dtype=np.int64),
            "n": pd.Series(dtype=np.int64),
        }
    )


class Finished:
    """Finished tasks, as growing numpy columns (a subclass may hold others: :func:`spill` needs ``key``,
    ``arrival`` and ``duration``, and the runs keep every column)."""

    NAMES: tuple[str, ...] = ("key", "arrival", "duration", "user", "priority", "cpu", "memory")
    TYPES: tuple[type, ...] = (np.int64, np.int64, np.int64, np.int64, np.float64, np.float64, np.float64)

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.rows = 0

    def add(self, *cols: np.ndarray) -> None:
        if len(cols[0]):
            self.parts.append(tuple(np.asarray(c) for c in cols))
            self.rows += len(cols[0])

    def take(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {
            n: np.concatenate([p[k] for p in self.parts]).astype(t)
            if self.parts
            else np.zeros(0, t)
            for k, (n, t) in enumerate(zip(self.NAMES, self.TYPES, strict=True))
        }
        self.parts, self.rows = [], 0
        return out


def spill_state(out: Finished, jobs: Any, runs: list[Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """What a checkpoint keeps of the finished tasks (:mod:`.checkpoint`): the buffered rows (left buffered),
    the jobs' fold and the runs spilled so far, as arrays and JSON values."""
    pending = out.take()
    out.add(*(pending[c] for c in out.NAMES))
    arrays = {f"out_{c}": v for c, v in pending.items()}
    arrays["jobs_index"] = jobs.index.to_numpy(np.int64)
    arrays.update({f"jobs_{c}": jobs[c].to_numpy(np.int64) for c in ("arrival", "total", "n")})
    return arrays, {"runs": [str(r) for r in runs]}


def restore_spill_state(out: Finished, arrays: dict[str, np.ndarray], values: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The buffered rows back into ``out``; returns the jobs' fold and the runs (see :func:`spill_state`)."""
    import pandas as pd

    out.add(*(arrays[f"out_{c}"] for c in out.NAMES))
    jobs = pd.DataFrame({c: arrays[f"jobs_{c}"] for c in ("arrival", "total", "n")}, index=pd.Index(arrays["jobs_index"]))
    return jobs, [Path(r) for r in values["runs"]]


def spill(out: Finished, runs: list[Any], jobs: Any, tmp: Path, keep: bool = False) -> Any:
    """Move the finished tasks to a run and fold them into the jobs; ``keep``: the run stays in memory (the
    last spill, when it is the only run)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    chunk = out.take()
    job = chunk["key"] >> TASK_BITS
    agg = pd.DataFrame(
        {"arrival": chunk["arrival"], "total": chunk["duration"], "n": np.ones(len(job), np.int64)},
        index=job,
    )
    agg = agg.groupby(level=0).agg({"arrival": "min", "total": "sum", "n": "sum"})
    jobs = (
        pd.concat([jobs, agg]).groupby(level=0).agg({"arrival": "min", "total": "sum", "n": "sum"})
        if len(jobs)
        else agg
    )
    if keep:
        runs.append(chunk)
    else:
        path = tmp / f"run{len(runs):05d}.parquet"
        pq.write_table(pa.table(chunk), path, compression="lz4", use_dictionary=False)
        runs.append(path)
    return jobs


def operator_symbols(op: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Relation codes (valid ones: see :data:`RELATION_OPERATORS`) and their values as the columnar trace's
    operators and values: ``=`` with an empty value means the attribute must be absent, ``!=`` with one that it
    must be present; ``present`` and ``absent`` keep no value."""
    sym = np.asarray(RELATION_OPERATORS, dtype=object)[op]
    blank = value == ""
    sym = np.where(blank & (op == 0), "absent", np.where(blank & (op == 1), "present", sym))
    return sym, np.where(op >= 6, "", value)


CONSTRAINT_COLUMNS = ("attribute", "operator", "value")
COMPACT_PARTS = 64  # constraint parts held before they are folded into one (:func:`compact_constraints`)


def constraint_part(key: np.ndarray, attribute: Any, operator: Any, value: Any) -> Any:
    """A block's constraint rows as a frame with categorical columns: one small code a row instead of a
    string object (a constrained task's rows are held until the output is written)."""
    import pandas as pd

    return pd.DataFrame({"key": np.asarray(key, np.int64), **{c: pd.Categorical(v) for c, v in zip(CONSTRAINT_COLUMNS, (attribute, operator, value), strict=True)}})


def compact_constraints(parts: list[Any]) -> list[Any]:
    """``parts`` folded into one frame once there are :data:`COMPACT_PARTS` of them (the same rows
    :func:`constraint_frame` would give in the end: duplicates within a task dropped, file order kept)."""
    return [constraint_frame(parts)] if len(parts) >= COMPACT_PARTS else parts


def constraint_frame(parts: list[Any]) -> Any:
    """The constraint rows of ``parts`` (frames of key, attribute, operator, value), duplicates within a task
    removed, sorted by key (file order within a task), with categorical columns (categories sorted). The
    columns are joined as categoricals, never as strings."""
    import pandas as pd
    from pandas.api.types import union_categoricals

    if not parts:
        return pd.DataFrame({"key": np.zeros(0, np.int64), "attribute": [], "operator": [], "value": []})
    parts = [p for p in parts if len(p)]
    if not parts:
        return constraint_frame([])

    def categorical(col: Any) -> Any:
        # one category dtype for all (a part of empty or missing values infers another): object, made
        # what pandas infers from the values again at the end
        cat = col.array if isinstance(col.dtype, pd.CategoricalDtype) else pd.Categorical(col)
        return cat.rename_categories(pd.Index(cat.categories.to_numpy(object), dtype=object))

    cols: dict[str, Any] = {"key": np.concatenate([p["key"].to_numpy(np.int64) for p in parts])}
    for c in CONSTRAINT_COLUMNS:
        cols[c] = union_categoricals([categorical(p[c]) for p in parts], sort_categories=True)
    df = pd.DataFrame(cols)
    df = df.drop_duplicates(["key", *CONSTRAINT_COLUMNS]).sort_values("key", kind="stable").reset_index(drop=True)
    for c in CONSTRAINT_COLUMNS:
        cat = df[c].cat.remove_unused_categories()
        df[c] = cat.cat.rename_categories(pd.Index(cat.cat.categories.tolist()))
    return df


def count_constrained(keys: np.ndarray, constraints: Any) -> int:
    """Constraint rows (deduplicated) that belong to these kept tasks."""
    if not len(constraints):
        return 0
    ck = constraints["key"].to_numpy()
    return int(
        (np.searchsorted(ck, keys, side="right") - np.searchsorted(ck, keys, side="left")).sum()
    )


def sorted_chunks(
    runs: list[Any], jobs: Any, tmp: Path, chunk_rows: int = 262_144, keep_runs: bool = False
) -> Iterator[dict[str, np.ndarray]]:
    """The finished tasks in (job arrival, job, task) order, in chunks, each run sorted then merged."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    jobs_index = jobs.index
    job_arrival = jobs["arrival"].to_numpy()
    job_mean = jobs["total"].to_numpy() / jobs["n"].to_numpy()
    # each job's place in the output's order (arrival, then job): a row then sorts on one integer, ``place``
    job_place = np.empty(len(jobs_index), np.int64)
    job_place[np.lexsort((jobs_index.to_numpy(), job_arrival))] = np.arange(len(jobs_index))

    def keyed(chunk: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        where = jobs_index.get_indexer(chunk["key"] >> TASK_BITS)
        chunk["job_arrival"] = job_arrival[where]
        chunk["mean"] = job_mean[where]
        chunk["place"] = (job_place[where] << TASK_BITS) | (chunk["key"] & ((1 << TASK_BITS) - 1))
        order = np.argsort(chunk["place"], kind="stable")
        return {k: v[order] for k, v in chunk.items()}

    if len(runs) == 1 and isinstance(runs[0], dict):
        whole = keyed(runs[0])
        n = len(whole["key"])
        for s in range(0, n, chunk_rows):
            yield {k: v[s : s + chunk_rows] for k, v in whole.items()}
        return
    sorted_paths = []
    for k, r in enumerate(runs):
        table = pq.read_table(r)
        chunk = keyed(
            {c: col.to_numpy() for c, col in zip(table.column_names, table.columns, strict=True)}
        )
        path = tmp / f"sorted{k:05d}.parquet"
        pq.write_table(
            pa.table(chunk),
            path,
            compression="lz4",
            use_dictionary=False,
            row_group_size=max(4096, chunk_rows // len(runs)),
        )
        if not keep_runs:  # (a checkpoint may still name it)
            os.unlink(r)
        sorted_paths.append(path)
    yield from _merge(sorted_paths, chunk_rows)


def _merge(paths: list[Path], chunk_rows: int) -> Iterator[dict[str, np.ndarray]]:
    """k-way merge of runs sorted by ``place`` (job arrival, job, task), a block at a time: every row up to the
    smallest of the runs' last buffered places is final."""
    import pyarrow.parquet as pq

    per_run = max(
        4096, chunk_rows // len(paths)
    )  # the buffers together hold about chunk_rows rows, however many runs
    readers = [pq.ParquetFile(p).iter_batches(batch_size=per_run) for p in paths]
    bufs: list[dict[str, np.ndarray] | None] = [None] * len(paths)

    def refill(i: int) -> None:
        while bufs[i] is None or len(bufs[i]["key"]) == 0:  # type: ignore[index]
            nxt = next(readers[i], None)
            if nxt is None:
                bufs[i] = None
                return
            bufs[i] = {c: nxt.column(c).to_numpy() for c in nxt.schema.names}

    for i in range(len(paths)):
        refill(i)
    while any(b is not None for b in bufs):
        last = min(b["place"][-1] for b in bufs if b is not None)
        pieces = []
        for i, b in enumerate(bufs):
            if b is None:
                continue
            m = int(np.searchsorted(b["place"], last, side="right"))  # a prefix: the run is sorted
            if m:
                pieces.append({c: v[:m] for c, v in b.items()})
                bufs[i] = {c: v[m:] for c, v in b.items()}
                refill(i)
        merged = {c: np.concatenate([p[c] for p in pieces]) for c in pieces[0]}
        order = np.argsort(merged["place"], kind="stable")  # sorted pieces: a merge
        yield {c: v[order] for c, v in merged.items()}


def to_table(
    chunk: dict[str, np.ndarray],
    *,
    resources: tuple[str, ...],
    factors: tuple[float, float],
    seconds_per_unit: float,
    user_names: np.ndarray,
    constraints: Any,
    job_ids: np.ndarray | None = None,
) -> Any:
    """One sorted chunk as an Arrow table in the columnar trace's schema.

    ``resources`` names the two request columns, ``factors`` scales the ``cpu`` and ``memory`` values into
    them; times are in units of ``seconds_per_unit`` seconds; ``job_ids[code]`` is the job ID written for
    a job code (default: the code itself); ``constraints`` as :func:`constraint_column` takes them."""
    import pyarrow as pa

    key = chunk["key"]
    n = len(key)
    cpu, mem = chunk["cpu"], chunk["memory"]
    missing = np.isnan(cpu) | np.isnan(mem)  # a task states both or is taken as stating none
    names, f = resources, factors
    job = key >> TASK_BITS
    user = chunk["user"]
    prio = chunk["priority"]
    cols = {
        "job": pa.array(job if job_ids is None else job_ids[job], pa.int64()),
        "arrival": pa.array(chunk["job_arrival"] * seconds_per_unit, pa.float64()),
        "duration": pa.array(chunk["duration"] * seconds_per_unit, pa.float64()),
        "mean_duration": pa.array(chunk["mean"] * seconds_per_unit, pa.float64()),
        "task": pa.array(key & ((1 << TASK_BITS) - 1), pa.int32()),
        "user": pa.DictionaryArray.from_arrays(
            pa.array(np.where(user < 0, 0, user), pa.int32(), mask=user < 0),
            pa.array(user_names.tolist() or [""], pa.string()),
        ),
        "priority": pa.array(np.nan_to_num(prio).astype(np.int32), pa.int32(), mask=np.isnan(prio)),
        f"request_{names[0]}": pa.array(cpu * f[0], pa.float64(), mask=missing),
        f"request_{names[1]}": pa.array(mem * f[1], pa.float64(), mask=missing),
        "constraints": constraint_column(key, constraints, n),
    }
    return pa.table(cols)


def constraint_column(keys: np.ndarray, constraints: Any, n: int) -> Any:
    import pyarrow as pa

    struct = pa.struct(
        [("attribute", pa.string()), ("operator", pa.string()), ("value", pa.string())]
    )
    if not len(constraints):
        return pa.nulls(n, pa.list_(struct))
    ck = constraints["key"].to_numpy()
    lo = np.searchsorted(ck, keys, side="left")
    hi = np.searchsorted(ck, keys, side="right")
    count = hi - lo
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(count, out=offsets[1:])
    rows = np.repeat(lo, count) + (np.arange(offsets[-1]) - np.repeat(offsets[:-1], count))
    values = pa.StructArray.from_arrays(
        [
            pa.array(
                constraints[c].to_numpy()[rows].astype(str).tolist() if len(rows) else [],
                pa.string(),
            )
            for c in ("attribute", "operator", "value")
        ],
        fields=list(struct),
    )
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), values, mask=pa.array(count == 0)
    )
