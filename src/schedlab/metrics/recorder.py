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
"""

from __future__ import annotations

from array import array
from collections import defaultdict

from schedlab.errors import InvariantError

FRAMEWORK_QUEUING, PROCESSING, WORKER_QUEUING, COMMUNICATION = 0, 1, 2, 3
COMPONENTS = ("framework_queuing", "processing", "worker_queuing", "communication")

_NAN = float("nan")


class Recorder:
    """Lifecycle columns of every task and job of one run."""

    def __init__(self) -> None:
        # Per task. Columns grow by doubling (and are cut to size when read) so that
        # adding a job touches three of them, not all of them.
        self._cap = 0
        self._n = 0
        self.t_job = array("q")
        self.t_arrival = array("d")
        self.t_duration = array("d")
        self.t_start = array("d")
        self.t_end = array("d")
        self.t_worker = array("q")
        self.t_reported = array("b")
        self.t_last_mark = array("d")
        self.t_comp = [array("d") for _ in COMPONENTS]
        # per job
        self.j_arrival = array("d")
        self.j_tasks = array("q")
        self.j_ideal = array("d")
        self.j_remaining = array("q")
        self.j_done = array("d")
        self.j_user = array("q")
        # preempted runs: (tid, worker, start, end)
        self.preempted_runs: list[tuple[int, int, float, float]] = []
        self.counters: dict[str, int] = defaultdict(int)
        self.reported = 0  # tasks whose completion the scheduler has learned

    def _grow(self, need: int) -> None:
        extra = max(need - self._cap, self._cap, 1024)
        nan = array("d", [_NAN]) * extra
        zeros_d = array("d", [0.0]) * extra
        zeros_q = array("q", [0]) * extra
        self.t_job.extend(zeros_q)
        self.t_arrival.extend(zeros_d)
        self.t_duration.extend(zeros_d)
        self.t_start.extend(nan)
        self.t_end.extend(nan)
        self.t_worker.extend(array("q", [-1]) * extra)
        self.t_reported.extend(bytes(extra))
        self.t_last_mark.extend(zeros_d)
        for col in self.t_comp:
            col.extend(zeros_d)
        self._cap += extra

    # -- arrivals ----------------------------------------------------------------------------
    def add_job(self, jid: int, arrival: float, durations: list[float], ideal_jrt: float | None = None, user: int = 0) -> None:
        """Register job ``jid`` (ids in order) whose tasks take the next ``len(durations)`` task ids."""
        if ideal_jrt is None:
            ideal_jrt = max(durations)
        if jid != len(self.j_arrival):
            raise InvariantError(f"jobs must be added in order: expected job {len(self.j_arrival)}, got {jid}")
        n = len(durations)
        self.j_arrival.append(arrival)
        self.j_tasks.append(n)
        self.j_ideal.append(ideal_jrt)
        self.j_remaining.append(n)
        self.j_done.append(_NAN)
        self.j_user.append(user)
        first = self._n
        last = first + n
        if last > self._cap:
            self._grow(last)
        self.t_job[first:last] = array("q", [jid]) * n
        arr = array("d", [arrival]) * n
        self.t_arrival[first:last] = arr
        self.t_last_mark[first:last] = arr
        self.t_duration[first:last] = array("d", durations)
        self._n = last

    # -- allocation-time phases ----------------------------------------------------------------
    def mark(self, tid: int, now: float, component: int) -> None:
        """Attribute the time since the task's previous mark to ``component``."""
        last = self.t_last_mark
        self.t_comp[component][tid] += now - last[tid]
        last[tid] = now

    # -- lifecycle -----------------------------------------------------------------------------
    def task_started(self, tid: int, now: float, worker: int, component: int = FRAMEWORK_QUEUING) -> None:
        """The task starts running on ``worker``; the time since its last mark goes to ``component``."""
        if self.t_start[tid] == self.t_start[tid]:  # not NaN: already running or finished
            raise InvariantError(f"task {tid} started twice (running on worker {self.t_worker[tid]})")
        # The last mark is not moved: the next phase of a running task can only start
        # with a preemption, which sets it.
        self.t_comp[component][tid] += now - self.t_last_mark[tid]
        self.t_start[tid] = now
        self.t_worker[tid] = worker

    def tasks_started(self, placements: list[tuple[int, int]], now: float, component: int = FRAMEWORK_QUEUING) -> None:
        """:meth:`task_started` for each ``(tid, worker)``."""
        start, last, comp, worker_col = self.t_start, self.t_last_mark, self.t_comp[component], self.t_worker
        for tid, worker in placements:
            if start[tid] == start[tid]:
                raise InvariantError(f"task {tid} started twice (running on worker {worker_col[tid]})")
            comp[tid] += now - last[tid]
            start[tid] = now
            worker_col[tid] = worker

    def tasks_finished(self, group: list[tuple[int, int]], now: float) -> None:
        """:meth:`task_finished` for each ``(tid, worker)``."""
        start, end = self.t_start, self.t_end
        for tid, _worker in group:
            if start[tid] != start[tid]:
                raise InvariantError(f"task {tid} finished without running")
            if end[tid] == end[tid]:
                raise InvariantError(f"task {tid} finished twice")
            end[tid] = now

    def tasks_reported(self, group: list[tuple[int, int]], now: float) -> None:
        """:meth:`task_reported` for each ``(tid, worker)``."""
        end, reported, job, remaining, done = self.t_end, self.t_reported, self.t_job, self.j_remaining, self.j_done
        for tid, _worker in group:
            if end[tid] != end[tid]:
                raise InvariantError(f"task {tid} reported finished before it finished")
            if reported[tid]:
                raise InvariantError(f"task {tid} reported finished twice")
            reported[tid] = 1
            jid = job[tid]
            rem = remaining[jid] - 1
            remaining[jid] = rem
            if rem == 0:
                done[jid] = now
        self.reported += len(group)

    def task_finished(self, tid: int, now: float) -> None:
        """The task's execution ended on its worker."""
        start = self.t_start[tid]
        if start != start:
            raise InvariantError(f"task {tid} finished without running")
        if self.t_end[tid] == self.t_end[tid]:
            raise InvariantError(f"task {tid} finished twice")
        self.t_end[tid] = now

    def task_preempted(self, tid: int, now: float, counter: str = "preemptions") -> None:
        """The running task was killed (or its worker failed: ``counter="lost_runs"``); it will be re-queued and start again."""
        start = self.t_start[tid]
        if start != start or self.t_end[tid] == self.t_end[tid]:
            raise InvariantError(f"task {tid} preempted while not running")
        self.preempted_runs.append((tid, self.t_worker[tid], start, now))
        self.t_start[tid] = _NAN
        self.t_worker[tid] = -1
        self.t_last_mark[tid] = now
        self.counters[counter] += 1

    def task_reported(self, tid: int, now: float) -> bool:
        """The scheduler learned the task finished; returns True when that completes its job."""
        if self.t_end[tid] != self.t_end[tid]:
            raise InvariantError(f"task {tid} reported finished before it finished")
        if self.t_reported[tid]:
            raise InvariantError(f"task {tid} reported finished twice")
        self.t_reported[tid] = 1
        self.reported += 1
        jid = self.t_job[tid]
        rem = self.j_remaining[jid] - 1
        self.j_remaining[jid] = rem
        if rem == 0:
            self.j_done[jid] = now
            return True
        return False

    def count(self, name: str, k: int = 1) -> None:
        self.counters[name] += k

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

    def column(self, name: str) -> array:
        """A per-task column cut to the tasks added so far (``"start"``, ``"end"``, …)."""
        return getattr(self, f"t_{name}")[: self._n]

    def component(self, k: int) -> array:
        return self.t_comp[k][: self._n]

    def unfinished_tasks(self) -> int:
        return sum(1 for e in self.column("end") if e != e)

    def incomplete_jobs(self) -> int:
        return sum(1 for r in self.j_remaining if r)
