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

How (speed and memory): events are folded into the tasks' states a CSV block
at a time with numpy (a task's events within a block reduce to a few
aggregates: earliest SUBMIT, latest SCHEDULE, last stated request, FINISH);
a task whose block holds anything unusual (two FINISHes, an event after its
FINISH, a FINISH still waiting for its SCHEDULE) goes through the event-by-event
reference instead (:func:`reference_events`, which also serves the tests as
the definition). Held in memory: the state of tasks not finished yet (what is
pending or running at once, not the input's length), one row per job (its
arrival and mean duration), the constraint rows (dictionary-encoded, about 20
bytes each), and up to ``run_rows`` finished tasks (250,000: larger runs made
larger transient copies when sorted and written, which raised the peak with
the input's size); beyond that they are
spilled to Parquet runs, each sorted by arrival once the jobs' arrivals are
known, and merged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.defaults import DEFAULT_CAPACITY, MULTI_RESOURCES
from schedlab.errors import InputError
from schedlab.workload.converters import RawJob, RawTrace
from schedlab.workload.converters.checkpoint import WorkDir, counts_state, restore_counts, work_for
from schedlab.workload.converters.common import Batch, Drops, read_csv_shards
from schedlab.workload.converters.tasks import (
    TASK_BITS,
    Finished,
    compact_constraints,
    constraint_frame,
    constraint_part,
    count_constrained,
    new_jobs,
    operator_symbols,
    restore_spill_state,
    sorted_chunks,
    spill,
    spill_state,
    to_table,
)

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
DEFAULT_SCALE = (DEFAULT_CAPACITY[0], DEFAULT_CAPACITY[1])
NONE = -1  # "not seen yet" for a time, a user or an event
NO_TIME = np.iinfo(np.int64).max


def resources(scale: tuple[float, float] | None) -> tuple[tuple[str, ...], dict[str, str]]:
    """The output's request columns and their units."""
    if scale is None:
        return ("cpus", "memory"), {"cpus": "fraction of the largest machine's CPU", "memory": "fraction of the largest machine's memory"}
    return tuple(MULTI_RESOURCES), {MULTI_RESOURCES[0]: f"cores ({scale[0]:g} = the largest machine)", MULTI_RESOURCES[1]: f"MB ({scale[1]:g} = the largest machine)"}


# -- the tasks' states -----------------------------------------------------------------------------
class Tally:
    """What the events pass counts besides the tasks it finishes."""

    def __init__(self, drops: Drops) -> None:
        self.drops = drops
        self.ended_early = 0
        self.out_of_order = 0


def _classify(arr: np.ndarray, start: np.ndarray, tf: np.ndarray, drops: Drops) -> np.ndarray:
    """Which finished runs are kept; the others counted as dropped by reason (in the reference's order)."""
    after = tf == AFTER_WINDOW
    before = ~after & (arr <= 0)
    started_before = ~after & ~before & (start == 0)
    drops.add("finished after the trace window", int(after.sum()))
    drops.add("submitted before the trace window", int((before & (arr == 0)).sum()))
    drops.add("no SUBMIT event", int((before & (arr < 0)).sum()))
    drops.add("started before the trace window", int(started_before.sum()))
    return ~(after | before | started_before)


class TaskStates:
    """The state of every task seen and not finished: one slot per task, numpy columns.

    Per task: arrival (its earliest SUBMIT), start (its latest SCHEDULE), the last stated CPU, memory,
    priority and user, its last event, and a FINISH time waiting for its SCHEDULE.
    """

    _INTS = ("arr", "start", "fin", "last", "user")  # NONE when unknown
    _FLOATS = ("cpu", "mem", "prio")  # NaN when not stated
    arr: np.ndarray
    start: np.ndarray
    fin: np.ndarray
    last: np.ndarray
    user: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    prio: np.ndarray

    def __init__(self) -> None:
        self.slot_of: dict[int, int] = {}
        self.free: list[int] = []
        self.n = 0
        for name in self._INTS:
            setattr(self, name, np.zeros(0, np.int64))
        for name in self._FLOATS:
            setattr(self, name, np.zeros(0))
        self._grow(1 << 12)

    def slots(self, keys: np.ndarray) -> np.ndarray:
        """The slot of each key; a key not seen yet gets a fresh one."""
        slot = np.fromiter(map(self.slot_of.get, keys.tolist(), repeat(-1)), np.int64, len(keys))
        new = np.flatnonzero(slot < 0)
        if len(new):
            reuse = min(len(new), len(self.free))
            fresh = [self.free.pop() for _ in range(reuse)]
            more = len(new) - reuse
            if self.n + more > len(self.arr):
                self._grow(self.n + more)
            fresh.extend(range(self.n, self.n + more))
            self.n += more
            slot[new] = fresh
            f = slot[new]
            for name in self._INTS:
                getattr(self, name)[f] = NONE
            for name in self._FLOATS:
                getattr(self, name)[f] = np.nan
            self.slot_of.update(zip(keys[new].tolist(), fresh, strict=True))
        return slot

    def _grow(self, need: int) -> None:
        cap = max(len(self.arr), 1)
        while cap < need:
            cap *= 2
        for name in (*self._INTS, *self._FLOATS):
            old = getattr(self, name)
            a = np.empty(cap, old.dtype)  # slots are filled when they are handed out
            a[: len(old)] = old
            setattr(self, name, a)

    def release(self, keys: np.ndarray, slots: np.ndarray) -> None:
        d = self.slot_of
        for k in keys.tolist():
            del d[k]
        self.free.extend(slots.tolist())

    def live_slots(self) -> np.ndarray:
        return np.fromiter(self.slot_of.values(), np.int64, len(self.slot_of))


def fold_batch(states: TaskStates, b: dict[str, np.ndarray], out: Finished, tally: Tally) -> None:
    """Fold one block of events (rows in file order) into the tasks' states; finished tasks go to ``out``."""
    t, key, ev = b["t"], b["key"], b["ev"]
    n = len(t)
    if n == 0:
        return
    import pandas as pd

    codes, ukeys = pd.factorize(key)
    codes = codes.astype(np.int64)
    ukeys = np.asarray(ukeys, dtype=np.int64)
    u = len(ukeys)
    slots = states.slots(ukeys)
    idx = np.arange(n)
    last_row = np.zeros(u, np.int64)
    np.maximum.at(last_row, codes, idx)
    is_fin = ev == FINISH
    nfin = np.bincount(codes[is_fin], minlength=u)
    ev_last = ev[last_row]
    rare = (nfin > 1) | ((nfin == 1) & (ev_last != FINISH)) | (states.fin[slots] >= 0)
    if rare.any():
        rare_rows = rare[codes]
        _fold_rare(states, {k: v[rare_rows] for k, v in b.items()}, out, tally)
        keep_rows = ~rare_rows
        if not keep_rows.any():
            return
        b = {k: v[keep_rows] for k, v in b.items()}
        t, key, ev = b["t"], b["key"], b["ev"]
        common = ~rare
        remap = np.full(u, -1, np.int64)
        remap[common] = np.arange(int(common.sum()))
        codes = remap[codes[keep_rows]]
        ukeys, slots = ukeys[common], slots[common]
        u, n = len(ukeys), len(t)
        idx = np.arange(n)
        last_row = np.zeros(u, np.int64)
        np.maximum.at(last_row, codes, idx)
        ev_last = ev[last_row]
    # per task: the block's aggregates
    sub = ev == SUBMIT
    sub_min = np.full(u, NO_TIME, np.int64)
    np.minimum.at(sub_min, codes[sub], t[sub])
    sched = ev == SCHEDULE
    sched_max = np.full(u, NONE, np.int64)
    np.maximum.at(sched_max, codes[sched], t[sched])
    tally.ended_early += int(np.isin(ev, list(ENDED)).sum())
    # SUBMITs earlier than the arrival recorded so far (the reference's count): new running minima
    if sub.any():
        tally.out_of_order += _new_minima(codes[sub], t[sub], states.arr[slots])
    stated = sub | (ev == UPDATE_PENDING) | (ev == UPDATE_RUNNING)
    for name, col in (("cpu", b["cpu"]), ("mem", b["mem"]), ("prio", b["prio"])):
        m = stated & ~np.isnan(col)
        if m.any():
            li = np.full(u, -1, np.int64)
            np.maximum.at(li, codes[m], idx[m])
            has = li >= 0
            getattr(states, name)[slots[has]] = col[li[has]]
    m = sub & (b["user"] >= 0)
    if m.any():
        li = np.full(u, -1, np.int64)
        np.maximum.at(li, codes[m], idx[m])
        has = li >= 0
        states.user[slots[has]] = b["user"][li[has]]
    arr = states.arr[slots]
    got = sub_min != NO_TIME
    arr = np.where(got & ((arr < 0) | (sub_min < arr)), sub_min, arr)
    states.arr[slots] = arr
    start = np.maximum(states.start[slots], sched_max)
    states.start[slots] = start
    states.last[slots] = ev_last
    # a FINISH (the task's last event in the block, its only one)
    fin = ev_last == FINISH
    if fin.any():
        tf = t[last_row[fin]]
        st = start[fin]
        ready = (st >= 0) & (st <= tf)
        fslots, fkeys = slots[fin], ukeys[fin]
        states.fin[fslots[~ready]] = tf[~ready]  # waits for its SCHEDULE
        if ready.any():
            rs, rk = fslots[ready], fkeys[ready]
            a, s0, tr = states.arr[rs], st[ready], tf[ready]
            ok = _classify(a, s0, tr, tally.drops)
            out.add(rk[ok], a[ok], (tr - s0)[ok], states.user[rs][ok], states.prio[rs][ok], states.cpu[rs][ok], states.mem[rs][ok])
            states.release(rk, rs)


def _new_minima(codes: np.ndarray, times: np.ndarray, before: np.ndarray) -> int:
    """How many SUBMITs (in file order) come earlier than every earlier arrival of their task, the task's first
    ever SUBMIT excepted (``before``: the task's arrival before the block, or -1)."""
    import pandas as pd

    s = pd.Series(times)
    prev = s.groupby(codes).cummin().groupby(codes).shift(1).to_numpy()
    base = before[codes].astype(np.float64)
    base[base < 0] = np.inf
    prev = np.where(np.isnan(prev), base, np.minimum(prev, base))
    firsts = np.isinf(prev)  # no arrival before: the first SUBMIT sets it, uncounted
    return int((~firsts & (times < prev)).sum())


def _fold_rare(states: TaskStates, b: dict[str, np.ndarray], out: Finished, tally: Tally) -> None:
    """The event-by-event reference for the tasks whose block holds anything unusual."""
    keys = b["key"]
    uk = np.unique(keys)
    slots = states.slots(uk)
    live: dict[int, list] = {}
    for k, s_ in zip(uk.tolist(), slots.tolist(), strict=True):
        live[k] = [
            int(states.arr[s_]), int(states.start[s_]), _opt(states.cpu[s_]), _opt(states.mem[s_]),
            int(states.user[s_]), _opt_int(states.prio[s_]), int(states.last[s_]), int(states.fin[s_]),
        ]  # fmt: skip
    done: list[tuple] = []
    for row in zip(b["t"].tolist(), keys.tolist(), b["ev"].tolist(), b["user"].tolist(), b["prio"].tolist(), b["cpu"].tolist(), b["mem"].tolist(), strict=True):
        _step(live, row, done, tally)
    gone = [k for k in uk.tolist() if k not in live]
    for k, s_ in zip(uk.tolist(), slots.tolist(), strict=True):
        st = live.get(k)
        if st is None:
            continue
        states.arr[s_], states.start[s_], states.user[s_], states.last[s_], states.fin[s_] = st[0], st[1], st[4], st[6], st[7]
        states.cpu[s_] = np.nan if st[2] is None else st[2]
        states.mem[s_] = np.nan if st[3] is None else st[3]
        states.prio[s_] = np.nan if st[5] is None else st[5]
    if gone:
        g = np.asarray(gone, np.int64)
        states.release(g, slots[np.searchsorted(uk, g)])
    if done:
        cols = list(zip(*done, strict=True))
        out.add(*(np.asarray(c) for c in cols))


def _opt(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _opt_int(x: float) -> int | None:
    return None if np.isnan(x) else int(x)


# per task in the reference: [arrival, start, cpu, memory, user, priority, last event, finish waiting]
_ARR, _START, _CPU, _MEM, _USER, _PRIO, _LAST, _FIN = range(8)


def _step(live: dict[int, list], row: tuple, done: list[tuple], tally: Tally) -> None:
    """One event, the definition: what the vectorized fold computes for ordinary blocks."""
    t, key, ev, user, prio, cpu, mem = row
    cpu = None if cpu != cpu else cpu  # NaN: not stated
    mem = None if mem != mem else mem
    prio = None if prio != prio else int(prio)
    user = None if user < 0 else user
    st = live.get(key)
    if st is None:
        st = live[key] = [-1, -1, None, None, NONE, None, -1, -1]
    if ev == SUBMIT:
        if st[_ARR] < 0 or t < st[_ARR]:
            if st[_ARR] >= 0:
                tally.out_of_order += 1
            st[_ARR] = t
        _restate(st, cpu, mem, prio)
        if user is not None:
            st[_USER] = user
    elif ev == SCHEDULE:
        if t >= st[_START]:
            st[_START] = t
        fin = st[_FIN]
        if fin >= 0 and t <= fin:  # the FINISH came first in the file
            tally.out_of_order += 1
            _finish_one(key, st, fin, done, tally)
            del live[key]
            return
    elif ev == FINISH:
        start = st[_START]
        if start < 0 or start > t:
            st[_FIN] = t  # wait for the SCHEDULE
        else:
            _finish_one(key, st, t, done, tally)
            del live[key]
            return
    elif ev in ENDED:
        tally.ended_early += 1
    else:  # UPDATE_PENDING, UPDATE_RUNNING
        _restate(st, cpu, mem, prio)
    st[_LAST] = ev


def _restate(st: list, cpu: float | None, mem: float | None, prio: int | None) -> None:
    """What a SUBMIT or UPDATE event states replaces what the task had (an empty field changes nothing)."""
    if cpu is not None:
        st[_CPU] = cpu
    if mem is not None:
        st[_MEM] = mem
    if prio is not None:
        st[_PRIO] = prio


def _finish_one(key: int, st: list, t: int, done: list[tuple], tally: Tally) -> None:
    a, s0 = np.asarray([st[_ARR]]), np.asarray([st[_START]])
    if _classify(a, s0, np.asarray([t]), tally.drops)[0]:
        done.append((key, st[_ARR], t - st[_START], st[_USER], np.nan if st[_PRIO] is None else st[_PRIO],
                     np.nan if st[_CPU] is None else st[_CPU], np.nan if st[_MEM] is None else st[_MEM]))  # fmt: skip


def drop_unfinished(states: TaskStates, drops: Drops) -> None:
    """What is left at the end of the trace, by reason (the reference's order of reasons)."""
    s = states.live_slots()
    waiting = states.fin[s] >= 0
    drops.add("FINISH without a SCHEDULE before it", int(waiting.sum()))
    last = states.last[s][~waiting]
    for ev, what in ENDED.items():
        drops.add(f"{what} and not run again", int((last == ev).sum()))
    drops.add("unfinished at the trace's end", int((~np.isin(last, list(ENDED))).sum()))


def reference_events(rows: Sequence[tuple], drops: Drops) -> tuple[list[tuple], Tally]:
    """The definition, event by event over ``(t, key, ev, user, priority, cpu, memory)`` rows: finished
    tasks as ``(key, arrival, duration, user, priority, cpu, memory)`` and the tally (for tests)."""
    live: dict[int, list] = {}
    done: list[tuple] = []
    tally = Tally(drops)
    for row in rows:
        _step(live, row, done, tally)
    for st in live.values():
        if st[_FIN] >= 0:
            drops.add("FINISH without a SCHEDULE before it")
        elif st[_LAST] in ENDED:
            drops.add(f"{ENDED[st[_LAST]]} and not run again")
        else:
            drops.add("unfinished at the trace's end")
    return done, tally


# -- the conversion --------------------------------------------------------------------------------
def convert_google2011(job: RawJob, *, run_rows: int = 250_000) -> Iterator[Any]:
    """Stream ``job``'s trace as Arrow tables in the columnar trace's schema, in arrival order (for
    :meth:`~schedlab.workload.columnar.ColumnarTraceWriter.write_tables`); finished tasks spilled ``run_rows``
    at a time.

    With ``job.work_dir`` the conversion is restartable (:mod:`.checkpoint`): a checkpoint after a task_events
    shard (at most ``job.checkpoint_every_s`` apart), and a rerun with the same folder resumes after the last one."""
    task_events, task_constraints = job.tables["task_events"], job.tables.get("task_constraints", [])
    scale = DEFAULT_SCALE if job.scale_requests else None
    skip_bad, drops, bad_rows, counts, progress = job.skip_bad, job.drops, job.bad_rows, job.counts, job.progress
    work = work_for(job, "google2011", "task_events", run_rows=run_rows)
    try:
        users: dict[str, int] = {}
        runs, jobs = _events_pass(task_events, users, drops, bad_rows, counts, skip_bad, progress, run_rows, work)
        constraints = _constraints_pass(task_constraints, bad_rows, counts, skip_bad, progress)
        user_names = np.asarray(sorted(users, key=users.__getitem__), dtype=object)
        names = resources(scale)[0]
        assert len(names) == 2
        factors = (1.0, 1.0) if scale is None else scale
        kept = 0
        for chunk in sorted_chunks(runs, jobs, work.dir, keep_runs=work.keeps):  # a checkpoint names the runs
            kept += count_constrained(chunk["key"], constraints)
            yield to_table(chunk, resources=names, factors=factors, seconds_per_unit=1e-6, user_names=user_names, constraints=constraints)
        counts["constraint_rows_of_dropped_tasks"] = len(constraints) - kept
    except BaseException:
        work.abandon()
        raise
    work.finish()


def convert(job: RawJob) -> RawTrace:
    """The :data:`~schedlab.workload.converters.FORMATS` entry point."""
    names, units = resources(DEFAULT_SCALE if job.scale_requests else None)
    return RawTrace(names, units, convert_google2011(job))


def _events_pass(
    paths: Sequence[Path], users: dict[str, int], drops: Drops, bad_rows: Drops, counts: dict[str, int], skip_bad: bool,
    progress: Callable[[int], None] | None, run_rows: int, work: WorkDir,
) -> tuple[list[Any], Any]:  # fmt: skip
    states = TaskStates()
    tally = Tally(drops)
    out = Finished()
    runs: list[Any] = []  # finished tasks: in memory (one dict of columns) or spilled Parquet paths
    jobs = new_jobs()
    first = 0
    saved = work.load()
    if saved is not None:
        first, arrays, values = saved
        jobs, runs = restore_fold(states, tally, out, users, drops, bad_rows, arrays, values)
        if progress is not None:
            progress(values["rows_read"])
    rows_read = [saved[2]["rows_read"] if saved is not None else 0]

    def counted(n: int) -> None:
        rows_read[0] += n
        if progress is not None:
            progress(n)

    use = ["timestamp", "job", "task", "event", "user", "priority", "cpu", "memory"]
    for k in range(first, len(paths)):
        for b in read_csv_shards([paths[k]], TASK_EVENTS, skip_bad=skip_bad, bad_rows=bad_rows, use=use, progress=counted, as_arrays=True):
            job, idx, ev = b["job"], b["task"], b["event"]
            bad = (idx < 0) | (idx >= 1 << TASK_BITS) | (job < 0) | (ev < 0) | (ev > UPDATE_RUNNING)
            if bad.any():
                i = int(np.argmax(bad))
                if not skip_bad:
                    what = f"unknown event type {ev[i]}" if not 0 <= ev[i] <= UPDATE_RUNNING else f"job IDs must be >= 0 and task indices in [0, 2^{TASK_BITS})"
                    raise InputError(b.where(i), f"job {job[i]} task {idx[i]}: {what}")
                bad_ev = (ev < 0) | (ev > UPDATE_RUNNING)
                bad_rows.add("rows with an unknown event type", int(bad_ev.sum()))
                bad_rows.add("rows with an impossible job ID or task index", int((bad & ~bad_ev).sum()))
                b = Batch(b.path, {c: v[~bad] for c, v in b.cols.items()}, b.line0)
                job, idx, ev = b["job"], b["task"], b["event"]
            fold_batch(states, {"t": b["timestamp"], "key": (job << TASK_BITS) | idx, "ev": ev, "user": user_codes(b["user"], users),
                                "prio": b["priority"], "cpu": b["cpu"], "mem": b["memory"]}, out, tally)  # fmt: skip
            if out.rows >= run_rows:
                jobs = spill(out, runs, jobs, work.dir)
        if work.due() or (work.keeps and k + 1 == len(paths)):  # and after the last: the merge can fail too
            checkpoint_fold(work, k + 1, states, tally, out, users, drops, bad_rows, jobs, runs, rows_read[0])
    drop_unfinished(states, drops)
    if out.rows or not runs:
        jobs = spill(out, runs, jobs, work.dir, keep=not runs)
    counts["runs_ended_early"] = tally.ended_early
    counts["events_out_of_order"] = tally.out_of_order
    return runs, jobs


def checkpoint_fold(work: WorkDir, done: int, states: TaskStates, tally: Tally, out: Finished, users: dict[str, int], drops: Drops,
                    bad_rows: Drops, jobs: Any, runs: list[Any], rows_read: int, arrays: dict[str, np.ndarray] | None = None,
                    values: dict[str, Any] | None = None) -> None:  # fmt: skip
    """The fold's whole state after ``done`` shards (the finished tasks not yet spilled included), with a
    converter's own ``arrays`` and ``values``."""
    extra_arrays, extra_values = arrays or {}, values or {}
    n = states.n
    arrays = {f"state_{name}": getattr(states, name)[:n] for name in (*TaskStates._INTS, *TaskStates._FLOATS)}
    arrays["slot_keys"] = np.fromiter(states.slot_of.keys(), np.int64, len(states.slot_of))
    arrays["slot_values"] = np.fromiter(states.slot_of.values(), np.int64, len(states.slot_of))
    arrays["free"] = np.asarray(states.free, dtype=np.int64)
    spilled, values = spill_state(out, jobs, runs)
    values.update({"n": n, "users": users, "ended_early": tally.ended_early, "out_of_order": tally.out_of_order, "rows_read": rows_read,
                   **counts_state(drops, bad_rows)})  # fmt: skip
    work.save(done, {**arrays, **spilled, **extra_arrays}, {**values, **extra_values})


def restore_fold(states: TaskStates, tally: Tally, out: Finished, users: dict[str, int], drops: Drops, bad_rows: Drops,
                 arrays: dict[str, np.ndarray], values: dict[str, Any]) -> tuple[Any, list[Any]]:  # fmt: skip
    """Put a checkpoint's fold state back (see :func:`checkpoint_fold`); returns the jobs' fold and the runs."""
    n = int(values["n"])
    states._grow(max(n, 1))
    for name in (*TaskStates._INTS, *TaskStates._FLOATS):
        getattr(states, name)[:n] = arrays[f"state_{name}"]
    states.n = n
    states.slot_of = dict(zip(arrays["slot_keys"].tolist(), arrays["slot_values"].tolist(), strict=True))
    states.free = arrays["free"].tolist()
    users.update(values["users"])
    tally.ended_early, tally.out_of_order = int(values["ended_early"]), int(values["out_of_order"])
    restore_counts(drops, bad_rows, values)
    return restore_spill_state(out, arrays, values)


def user_codes(names: np.ndarray, users: dict[str, int]) -> np.ndarray:
    """Each user name's code in ``users`` (a name not there yet is added), -1 for none."""
    import pandas as pd

    codes, uniques = pd.factorize(names, use_na_sentinel=True)
    table = np.asarray([users.setdefault(u, len(users)) for u in uniques.tolist()] + [NONE], dtype=np.int64)
    return table[codes]  # -1 (no user) indexes the trailing NONE


def _constraints_pass(paths: Sequence[Path], bad_rows: Drops, counts: dict[str, int], skip_bad: bool, progress: Callable[[int], None] | None) -> Any:
    """Every constraint row, validated, deduplicated per task, sorted by task (file order within a task)."""
    parts: list[Any] = []
    rows = 0
    use = ["job", "task", "operator", "attribute", "value"]
    for b in read_csv_shards(paths, TASK_CONSTRAINTS, skip_bad=skip_bad, bad_rows=bad_rows, use=use, progress=progress, as_arrays=True):
        job, idx, op = b["job"], b["task"], b["operator"]
        value = np.asarray(["" if v is None else v for v in b["value"].tolist()], dtype=object)
        bad_id = (op < 0) | (op > 3) | (idx < 0) | (idx >= 1 << TASK_BITS) | (job < 0)
        empty = (value == "") & ((op == 2) | (op == 3)) & ~bad_id
        for mask, reason in ((bad_id, "constraint rows with an unknown operator or impossible IDs"), (empty, "constraint rows comparing with an empty value")):
            if mask.any():
                i = int(np.argmax(bad_id | empty))
                if not skip_bad:
                    what = (
                        f"unknown comparison operator {op[i]}" if not 0 <= op[i] <= 3
                        else f"job IDs must be >= 0 and task indices in [0, 2^{TASK_BITS})" if bad_id[i]
                        else f"{b['attribute'][i]} {OPERATORS[int(op[i])]} needs a value"
                    )  # fmt: skip
                    raise InputError(b.where(i), f"job {job[i]} task {idx[i]}: {what}")
                bad_rows.add(reason, int(mask.sum()))
        ok = ~(bad_id | empty)
        sym, value = operator_symbols(np.where(ok, op, 0), value)
        parts.append(constraint_part(((job << TASK_BITS) | idx)[ok], b["attribute"][ok], sym[ok], value[ok]))
        rows += int(ok.sum())
        parts = compact_constraints(parts)
    counts["constraint_rows"] = rows
    df = constraint_frame(parts)
    if parts:
        counts["constraint_rows_repeated"] = counts["constraint_rows"] - len(df)
    return df


