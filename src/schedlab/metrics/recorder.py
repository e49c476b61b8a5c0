"""The recorder: task and job lifecycle events into preallocated columns, plus counters.

Schedulers and the simulated workers report what happens; nothing is logged
per event, values go to ``array('d')`` columns indexed by task id / job id and
become DataFrames at the end.

**Allocation time** (Megha paper, Section III) = task start − task arrival at
the framework, split into four components: ``framework_queuing``,
``processing``, ``worker_queuing`` and ``communication``. A scheduler
attributes time with :meth:`Recorder.mark`: "from this task's previous mark
until now it was in component C". Marks start at the job's arrival, and
:meth:`task_started` closes the last phase, so the four components always sum
to the allocation time exactly. After a preemption the task's run is excluded
(the next phase starts at the preemption), so allocation time stays the time
spent waiting to run.

**JRT** = the time the *scheduler learns* the job's last task finished − job
arrival; ``jrt_delay`` = JRT − ideal JRT (the longest task); this is the
constraint-aware paper's definition (Section 2.4) with the authors' measurement
convention (docs/authors-simulators.md#jrt-delay). A scheduler calls
:meth:`task_reported` when it learns of a completion; the job completes when the
last one is reported.

The recorder also enforces the lifecycle: a task starts only when not running,
finishes only once, is reported only after finishing — breaking it raises
:class:`~schedlab.errors.InvariantError` (a scheduler bug).

**Memory.** Per-task columns live in chunks of :data:`CHUNK` consecutive task
ids. Once every task of a chunk has been reported, nothing can touch it again
(a second report is a lifecycle error), so the chunk is *retired*: its columns
are appended to a spill folder on disk (one flat binary file per column) and
dropped from memory. A run therefore holds in memory only the chunks with a
task still in flight, whatever its length; the per-task columns are read back
whole, one at a time and in task order, when the run is summarised — the same
numbers an unbounded recorder gives, bit for bit. A recorder made with
``spill=False`` (a real service's, whose records are looked up after the fact)
keeps every chunk.

**Inconsistencies over time** (constraint-aware paper, Figure 5's conflicts per
second, as the scheduler meets them): :meth:`Recorder.inconsistency` counts a
rejected request per one-second bin of simulated time and per GM, in a sparse
dict touched only when an LM rejects (never on the path of an accepted task).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from schedlab.errors import InputError, InvariantError

if TYPE_CHECKING:
    import numpy as np

FRAMEWORK_QUEUING, PROCESSING, WORKER_QUEUING, COMMUNICATION = 0, 1, 2, 3
COMPONENTS = ("framework_queuing", "processing", "worker_queuing", "communication")

CHUNK_BITS = 16
CHUNK = 1 << CHUNK_BITS  # task ids per chunk: 65,536 (about 6 MB of columns while live)
_LOW = CHUNK - 1
# what a loop over tasks holds before it looks up its first chunk's columns
_NO_COLUMN = cast("memoryview[float]", memoryview(array("d")))
_NO_IDS = memoryview(array("q"))

_NAN = float("nan")
# The per-task columns a chunk spills, with their array typecodes (the components are c0..c3).
SPILLED = (("job", "q"), ("arrival", "d"), ("duration", "d"), ("start", "d"), ("end", "d"), ("worker", "q"),
           ("c0", "d"), ("c1", "d"), ("c2", "d"), ("c3", "d"))
_NP_DTYPE = {"q": "<i8", "d": "<f8"}


def _floats(init: array) -> memoryview[float]:
    """A fresh array('d') copy of ``init``, held through a memoryview (see _Chunk)."""
    return cast("memoryview[float]", memoryview(array("d", init)))


class _Chunk:
    """The columns of task ids ``[k·CHUNK, (k+1)·CHUNK)`` while some of them is in flight."""

    __slots__ = ("job", "arrival", "duration", "start", "end", "worker", "reported", "last_mark", "comp", "done")

    _NANS = array("d", [_NAN]) * CHUNK
    _ZEROS_D = array("d", [0.0]) * CHUNK
    _ZEROS_Q = array("q", [0]) * CHUNK
    _MINUS_Q = array("q", [-1]) * CHUNK

    def __init__(self) -> None:
        self.job = array("q", self._ZEROS_Q)
        self.arrival = array("d", self._ZEROS_D)
        self.duration = array("d", self._ZEROS_D)
        # The columns written as tasks run are held through memoryviews: storing a float into an
        # array('d') parses its argument the general way, a memoryview converts it directly (a
        # third cheaper, several stores a task). The others are written a job at a time.
        self.start = _floats(self._NANS)
        self.end = _floats(self._NANS)
        self.worker = memoryview(array("q", self._MINUS_Q))
        self.reported = bytearray(CHUNK)
        self.last_mark = _floats(self._ZEROS_D)
        self.comp = [_floats(self._ZEROS_D) for _ in COMPONENTS]
        self.done = 0  # tasks of the chunk reported

    def column(self, name: str) -> array | memoryview[Any]:
        return self.comp[int(name[1])] if name[0] == "c" and name[1:].isdigit() else getattr(self, name)


class _Spill:
    """Retired chunks on disk: one append-only binary file per column, and where each chunk sits in them."""

    def __init__(self, parent: str | None) -> None:
        try:
            if parent is not None:
                os.makedirs(parent, exist_ok=True)
            self.dir = tempfile.mkdtemp(prefix="schedlab-tasks-", dir=parent)
        except OSError as e:
            where = parent or tempfile.gettempdir()
            raise InputError("spill", f"cannot make a folder for finished tasks' records in {where}: {e.strerror or e} "
                                      f"(set TMPDIR to a writable folder)") from None
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.dir, True)
        self.files = {name: open(os.path.join(self.dir, f"{name}.bin"), "wb") for name, _ in SPILLED}  # noqa: SIM115
        self.offset: dict[int, int] = {}  # chunk index -> position (in elements) in every column file
        self.count = 0

    def write(self, k: int, ch: _Chunk) -> None:
        try:
            for name, _code in SPILLED:
                self.files[name].write(ch.column(name))
        except OSError as e:
            raise InputError("spill", f"cannot write finished tasks' records to {self.dir}: {e.strerror or e} "
                                      f"(set TMPDIR to a folder with room)") from None
        self.offset[k] = self.count
        self.count += CHUNK

    def read_into(self, name: str, itemsize: int, k: int, lo: int, out: Any) -> None:
        """Elements ``lo … lo+len(out)`` of spilled chunk ``k``'s column ``name`` into the array ``out``."""
        f = self.files[name]
        if not f.closed:
            f.flush()
        with open(os.path.join(self.dir, f"{name}.bin"), "rb") as r:
            r.seek((self.offset[k] + lo) * itemsize)
            view = memoryview(out).cast("B")
            if r.readinto(view) != len(view):
                raise InvariantError(f"spilled column {name} of chunk {k} is shorter than written")

    def close(self) -> None:
        for f in self.files.values():
            f.close()
        self._finalizer()


class Recorder:
    """Lifecycle columns of every task and job of one run (see the module docstring)."""

    def __init__(self, spill: bool = True, spill_dir: str | None = None) -> None:
        self._n = 0
        self._chunks: list[_Chunk | None] = []
        self._spill_enabled = spill
        self._spill_dir = spill_dir
        self._spill: _Spill | None = None
        # per job
        self.j_arrival = array("d")
        self.j_tasks = array("q")
        self.j_ideal = array("d")
        self.j_remaining = array("q")
        self.j_done = array("d")
        self.j_user = array("q")
        self.j_mean = array("d")  # the trace's mean task duration: what makes a job short or long
        # preempted runs: (tid, worker, start, end)
        self.preempted_runs: list[tuple[int, int, float, float]] = []
        self.counters: dict[str, int] = defaultdict(int)
        # (second, GM) -> launch requests rejected then: the inconsistencies series (only bins with some)
        self.inconsistency_bins: dict[tuple[int, int], int] = defaultdict(int)
        self.reported = 0  # tasks whose completion the scheduler has learned

    # -- arrivals ----------------------------------------------------------------------------
    def add_job(self, jid: int, arrival: float, durations: list[float], ideal_jrt: float | None = None, user: int = 0,
                mean_duration: float | None = None) -> None:
        """Register job ``jid`` (ids in order) whose tasks take the next ``len(durations)`` task ids.

        ``mean_duration`` is the trace's mean task duration (the job's durations' mean when not given), which
        classifies the job as short or long (:data:`~schedlab.defaults.SHORT_JOB_CUTOFF`)."""
        if ideal_jrt is None:
            ideal_jrt = max(durations)
        if mean_duration is None:
            mean_duration = sum(durations) / len(durations) if durations else 0.0
        if jid != len(self.j_arrival):
            raise InvariantError(f"jobs must be added in order: expected job {len(self.j_arrival)}, got {jid}")
        n = len(durations)
        self.j_arrival.append(arrival)
        self.j_tasks.append(n)
        self.j_ideal.append(ideal_jrt)
        self.j_remaining.append(n)
        self.j_done.append(_NAN)
        self.j_user.append(user)
        self.j_mean.append(mean_duration)
        chunks = self._chunks
        tid, last, done = self._n, self._n + n, 0
        while tid < last:
            k, i = tid >> CHUNK_BITS, tid & _LOW
            if k == len(chunks):
                chunks.append(_Chunk())
            ch = chunks[k]
            assert ch is not None  # a chunk retires only once all its task ids are taken
            m = min(CHUNK - i, last - tid)
            ch.job[i:i + m] = array("q", [jid]) * m
            arr = array("d", [arrival]) * m
            ch.arrival[i:i + m] = arr
            ch.last_mark[i:i + m] = arr
            ch.duration[i:i + m] = array("d", durations[done:done + m])
            tid += m
            done += m
        self._n = last

    # -- allocation-time phases ----------------------------------------------------------------
    def mark(self, tid: int, now: float, component: int) -> None:
        """Attribute the time since the task's previous mark to ``component``."""
        ch = self._chunks[tid >> CHUNK_BITS]
        if ch is None:
            raise self._retired(tid, "marked")
        i = tid & _LOW
        last = ch.last_mark
        ch.comp[component][i] += now - last[i]
        last[i] = now

    def mark_each(self, entries: Iterable[Sequence[int]], now: float, component: int) -> None:
        """:meth:`mark` for the task id first in each entry (a request's ``(tid, p, pos)`` items, say)."""
        # Entries of one request are mostly in one chunk: its columns are looked up once per run of them.
        chunks = self._chunks
        k_prev = -1
        comp = last = _NO_COLUMN
        for entry in entries:
            tid = entry[0]
            k = tid >> CHUNK_BITS
            if k != k_prev:
                ch = chunks[k]
                if ch is None:
                    raise self._retired(tid, "marked")
                comp, last, k_prev = ch.comp[component], ch.last_mark, k
            i = tid & _LOW
            comp[i] += now - last[i]
            last[i] = now

    # -- lifecycle -----------------------------------------------------------------------------
    def task_started(self, tid: int, now: float, worker: int, component: int = FRAMEWORK_QUEUING) -> None:
        """The task starts running on ``worker``; the time since its last mark goes to ``component``."""
        self.tasks_started([(tid, worker)], now, component)

    def tasks_started(self, placements: list[tuple[int, int]], now: float, component: int = FRAMEWORK_QUEUING) -> None:
        """:meth:`task_started` for each ``(tid, worker)``."""
        chunks = self._chunks
        k_prev = -1
        start = comp = last = _NO_COLUMN
        workers = _NO_IDS
        for tid, worker in placements:
            k = tid >> CHUNK_BITS
            if k != k_prev:  # a batch's tasks are mostly in one chunk
                ch = chunks[k]
                if ch is None:
                    raise self._retired(tid, "started")
                start, comp, last, workers, k_prev = ch.start, ch.comp[component], ch.last_mark, ch.worker, k
            i = tid & _LOW
            if start[i] == start[i]:  # not NaN: already running or finished
                raise InvariantError(f"task {tid} started twice (running on worker {workers[i]})")
            # The last mark is not moved: the next phase of a running task can only start
            # with a preemption, which sets it.
            comp[i] += now - last[i]
            start[i] = now
            workers[i] = worker

    def task_finished(self, tid: int, now: float) -> None:
        """The task's execution ended on its worker."""
        self.tasks_finished([(tid, -1)], now)

    def tasks_finished(self, group: list[tuple[int, int]], now: float) -> None:
        """:meth:`task_finished` for each ``(tid, worker)``."""
        chunks = self._chunks
        k_prev = -1
        start = end = _NO_COLUMN
        for tid, _worker in group:
            k = tid >> CHUNK_BITS
            if k != k_prev:
                ch = chunks[k]
                if ch is None:
                    raise self._retired(tid, "finished")
                start, end, k_prev = ch.start, ch.end, k
            i = tid & _LOW
            if start[i] != start[i]:
                raise InvariantError(f"task {tid} finished without running")
            if end[i] == end[i]:
                raise InvariantError(f"task {tid} finished twice")
            end[i] = now

    def task_reported(self, tid: int, now: float) -> bool:
        """The scheduler learned the task finished; returns True when that completes its job."""
        return self.tasks_reported([(tid, -1)], now) > 0

    def tasks_reported(self, group: list[tuple[int, int]], now: float) -> int:
        """:meth:`task_reported` for each ``(tid, worker)``; returns how many jobs they completed."""
        chunks, remaining, done = self._chunks, self.j_remaining, self.j_done
        completed = 0
        k_prev = -1
        ch: Any = None  # the chunk of the task at hand, looked up once per run of tasks in it
        end, reported, job = _NO_COLUMN, bytearray(), _NO_IDS
        for tid, _worker in group:
            k = tid >> CHUNK_BITS
            if k != k_prev:
                found = chunks[k]
                if found is None:
                    raise self._retired(tid, "reported finished")
                ch = found
                end, reported, job, k_prev = ch.end, ch.reported, ch.job, k
            i = tid & _LOW
            if end[i] != end[i]:
                raise InvariantError(f"task {tid} reported finished before it finished")
            if reported[i]:
                raise InvariantError(f"task {tid} reported finished twice")
            reported[i] = 1
            ch.done += 1
            if ch.done == CHUNK and self._spill_enabled:
                self._retire(k)
                k_prev = -1  # gone: a later report of one of its tasks finds it retired
            jid = job[i]
            rem = remaining[jid] - 1
            remaining[jid] = rem
            if rem == 0:
                done[jid] = now
                completed += 1
        self.reported += len(group)
        return completed

    def task_preempted(self, tid: int, now: float, counter: str = "preemptions") -> None:
        """The running task was killed (or its worker failed: ``counter="lost_runs"``); it will be re-queued and start again."""
        ch = self._chunks[tid >> CHUNK_BITS]
        if ch is None:
            raise self._retired(tid, "preempted")
        i = tid & _LOW
        start = ch.start[i]
        if start != start or ch.end[i] == ch.end[i]:
            raise InvariantError(f"task {tid} preempted while not running")
        self.preempted_runs.append((tid, ch.worker[i], start, now))
        ch.start[i] = _NAN
        ch.worker[i] = -1
        ch.last_mark[i] = now
        self.counters[counter] += 1

    def count(self, name: str, k: int = 1) -> None:
        self.counters[name] += k

    def inconsistency(self, gm: int, now: float, k: int = 1) -> None:
        """``k`` of GM ``gm``'s requests were found inconsistent (rejected by an LM) at ``now``."""
        self.inconsistency_bins[(int(now // 1.0), gm)] += k

    # -- retirement ----------------------------------------------------------------------------
    def _retire(self, k: int) -> None:
        ch = self._chunks[k]
        assert ch is not None
        if self._spill is None:
            self._spill = _Spill(self._spill_dir)
        self._spill.write(k, ch)
        self._chunks[k] = None

    @staticmethod
    def _retired(tid: int, what: str) -> InvariantError:
        return InvariantError(f"task {tid} {what} after its completion was reported (its record is closed)")

    @property
    def spilled_tasks(self) -> int:
        """Tasks whose columns are on disk rather than in memory."""
        return 0 if self._spill is None else self._spill.count

    def close(self) -> None:
        """Delete the spill folder (the columns of retired chunks can no longer be read)."""
        if self._spill is not None:
            self._spill.close()

    # -- queries -------------------------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return self._n

    @property
    def open_tasks(self) -> int:
        """Tasks submitted whose completion the scheduler has not learned yet."""
        return self._n - self.reported

    @property
    def num_jobs(self) -> int:
        return len(self.j_arrival)

    def _live(self, tid: int) -> tuple[_Chunk, int]:
        if not 0 <= tid < self._n:
            raise IndexError(f"task {tid} out of range (0..{self._n - 1})")
        ch = self._chunks[tid >> CHUNK_BITS]
        if ch is None:
            raise self._retired(tid, "looked up")
        return ch, tid & _LOW

    def start_of(self, tid: int) -> float:
        """When the task's current run started (NaN if it is not running or done)."""
        ch, i = self._live(tid)
        return ch.start[i]

    def job_of(self, tid: int) -> int:
        ch, i = self._live(tid)
        return ch.job[i]

    def is_reported(self, tid: int) -> bool:
        ch, i = self._live(tid)
        return bool(ch.reported[i])

    def component_of(self, tid: int, k: int) -> float:
        ch, i = self._live(tid)
        return ch.comp[k][i]

    def column(self, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Tasks ``lo … hi-1`` of a per-task column (``job``, ``arrival``, ``duration``, ``start``, ``end``,
        ``worker``, or component ``c0`` … ``c3``) as a new NumPy array, from memory and the spill."""
        import numpy as np

        codes = dict(SPILLED)
        if name not in codes:
            raise KeyError(f"no per-task column {name!r} (choose from {', '.join(codes)})")
        hi = self._n if hi is None else min(hi, self._n)
        lo = max(0, min(lo, hi))
        code = codes[name]
        out = np.empty(hi - lo, dtype=_NP_DTYPE[code])
        itemsize = out.itemsize
        tid = lo
        while tid < hi:
            k, i = tid >> CHUNK_BITS, tid & _LOW
            m = min(CHUNK - i, hi - tid)
            dst = out[tid - lo: tid - lo + m]
            ch = self._chunks[k]
            if ch is None:
                assert self._spill is not None
                self._spill.read_into(name, itemsize, k, i, dst)
            else:
                dst[:] = np.frombuffer(ch.column(name), dtype=out.dtype, count=i + m)[i:]
            tid += m
        return out

    def component(self, k: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Allocation-time component ``k`` of tasks ``lo … hi-1`` (see :meth:`column`)."""
        return self.column(f"c{k}", lo, hi)

    def unfinished_tasks(self) -> int:
        return int((self.column("end") != self.column("end")).sum())

    def incomplete_jobs(self) -> int:
        return sum(1 for r in self.j_remaining if r)
