"""Run records of a real cluster: wall-clock lifecycle events, assembled into the simulator's Recorder.

Every service stamps what it sees of a task with its own clock and emits it
as a small event tagged with the task's run (:mod:`~.tasks` ids):

* a GM or LM, through :class:`EventObserver` (the
  :class:`~schedlab.metrics.observer.Observer` the decision code reports to):
  allocation-phase marks and the completions the GM learns (``reported``);
* a worker host: ``started`` (on which worker) and ``preempted`` (killed for
  fair sharing; the task starts again later);
* an LM: ``finished``, when the host that ran the task reports its end (with
  the outcome — status, exit code, output tails, CPU seconds — the worker and
  the start, so a start event lost with a dead host is not missed);
* a GM: ``lost`` — the worker running the task failed and the GM re-queued it
  (:mod:`~.failures`).

The client that submitted the run collects them in :class:`RunRecords`. Events
of one task may arrive out of order (they come from different processes and
channels), so they are buffered per task and applied, in time order, to a
plain :class:`~schedlab.metrics.recorder.Recorder` once the task's completion
is both finished and reported. A job's completion is the latest report among
its tasks. The tables and the summary are then the simulator's own
(:func:`schedlab.engine.summarize_run`): a real run and a simulated one are
read the same way.

Exactly-once is judged here, from the user's side: a task finished twice
(``duplicate_finishes``), reported twice (``duplicate_reports``) or started
twice without a preemption (``duplicate_starts``) is counted, never applied
twice. The very same record delivered twice — a message the broker took twice
because its publisher's confirmation was lost in a broker restart — is one
event (``records_repeated``), not a second start or report.

Clocks: on one host every service reads the same clock. Across hosts the
stamps are only as consistent as the hosts' clock synchronisation (NTP keeps
them within a millisecond or so on a LAN; allocation times are of that order,
so multi-host figures carry that error).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from schedlab.metrics.recorder import COMMUNICATION, Recorder
from schedlab.services.live import AllocationWindow
from schedlab.services.tasks import global_id, split_id
from schedlab.workload.model import TaskTable

MARK, STARTED, PREEMPTED, LOST, FINISHED, REPORTED = "mark", "started", "preempted", "lost", "finished", "reported"
STARTED_TWICE_KEPT = 64  # tasks started twice whose events a run keeps (``started_twice``)
RECOVERED_REPORT = -2  # a REPORTED event's worker when a restarted GM reports a completion its predecessor may have reported
_ORDER = {MARK: 0, STARTED: 1, PREEMPTED: 2, LOST: 2, FINISHED: 3, REPORTED: 4}
_DUPLICATE = {MARK: "late_marks", STARTED: "duplicate_starts", PREEMPTED: "late_preemptions", LOST: "late_losses",
              FINISHED: "duplicate_finishes", REPORTED: "duplicate_reports"}

Event = tuple  # (kind, local tid, time, value): value = component | worker | outcome dict | worker
Emit = Callable[[int, Event], None]  # emit(run, event)


class EventObserver:
    """The Observer of a GM or LM service: phases and learned completions become events."""

    __slots__ = ("emit",)

    def __init__(self, emit: Emit) -> None:
        self.emit = emit

    def mark(self, tid: int, now: float, component: int) -> None:
        run, local = split_id(tid)
        self.emit(run, (MARK, local, now, component))

    def mark_each(self, entries: Iterable[Sequence[int]], now: float, component: int) -> None:
        emit = self.emit
        for entry in entries:
            run, local = split_id(entry[0])
            emit(run, (MARK, local, now, component))

    def tasks_reported(self, group: list[tuple[int, int]], now: float) -> None:
        emit = self.emit
        for tid, worker in group:
            run, local = split_id(tid)
            emit(run, (REPORTED, local, now, worker))

    def task_reported(self, tid: int, now: float) -> bool:
        run, local = split_id(tid)
        self.emit(run, (REPORTED, local, now, -1))
        return False

    def inconsistency(self, gm: int, now: float, k: int = 1) -> None:
        """Not an event of a run: an LM's status counts its inconsistencies (``cluster status``, the live view)."""


class RunRecords:
    """One client run: its tasks and jobs, and the events the services send about them."""

    def __init__(self, run: int) -> None:
        self.run = run
        self.origin = 0.0  # wall-clock time that is 0 in the run's records
        self.recorder = Recorder(spill=False)  # records are looked up after the fact: keep every chunk
        self.tasks = TaskTable()
        self.outcomes: dict[int, dict[str, Any]] = {}
        self._events: dict[int, list[Event]] = {}
        self._finished: set[int] = set()
        self._reported: set[int] = set()
        self._applied: set[int] = set()
        self._finish_run: dict[int, tuple] = {}  # task -> (worker, start) of the run whose end was recorded
        self._report_of: dict[int, Event] = {}  # task -> its report (the same record delivered again is recognised)
        self._last_end: dict[int, float] = {}  # task -> the latest loss or preemption of one of its runs (a stamp)
        self._report_time: dict[int, float] = {}  # job -> latest report so far
        self.jobs_done = 0
        self.tasks_done = 0
        self.counters: dict[str, int] = {"duplicate_starts": 0, "duplicate_finishes": 0, "duplicate_reports": 0, "unknown_task_events": 0}
        # the events of the first tasks started twice (their judge may look closer: the deterministic simulation)
        self.started_twice: list[tuple[int, list[Event]]] = []
        self.finished_twice: list[int] = []  # the first tasks finished twice (two runs' ends), as for started_twice
        self._changed: asyncio.Event | None = None
        self.window: AllocationWindow | None = None  # live figures for a dashboard (:mod:`~.live`), when published

    # -- the run's side ----------------------------------------------------------------------------
    def add_job(self, arrival: float, durations: list[float], masks: list[int] | None, requests: list[tuple[float, ...]] | None,
                mean_duration: float, line: int = 0, user: int = 0) -> tuple[int, list[int]]:
        """Register a job submitted now; returns its global job id and task ids."""
        job = self.tasks.add_job(arrival, durations, masks, requests, mean_duration, user, line)
        self.recorder.add_job(job.jid, arrival, durations, job.ideal_jrt, user, mean_duration)
        return global_id(self.run, job.jid), [global_id(self.run, t) for t in job.tids]

    @property
    def open_tasks(self) -> int:
        return self.recorder.num_tasks - self.tasks_done

    async def wait_changed(self) -> None:
        if self._changed is None:
            self._changed = asyncio.Event()
        await self._changed.wait()
        self._changed.clear()

    # -- events from the services ------------------------------------------------------------------
    def event(self, ev: Event) -> None:
        kind, local = ev[0], ev[1]
        if not 0 <= local < self.recorder.num_tasks or kind not in _ORDER:
            self.counters["unknown_task_events"] += 1
            return
        if kind == REPORTED and ev[3] == RECOVERED_REPORT and (local in self._applied or local in self._reported):
            self.counters["reports_repeated_after_gm_restart"] = self.counters.get("reports_repeated_after_gm_restart", 0) + 1
            return
        if kind != FINISHED and (ev in self._events.get(local, ()) or (kind == REPORTED and self._report_of.get(local) == ev)):
            # the same record again: a message the broker took twice (its publisher's confirmation was lost in a
            # broker restart, so it was published again) — one event, not a second start or report (an end recorded
            # again is told apart below, by its run)
            self.counters["records_repeated"] = self.counters.get("records_repeated", 0) + 1
            return
        if local in self._applied:  # the task's record is complete: anything more is late or a duplicate
            if kind == FINISHED:
                self._count_finish_again(local, _run_of(ev))
                return
            key = _DUPLICATE[kind]
            if kind == STARTED and (abs(self.recorder.start_of(local) - (ev[2] - self.origin)) < 1e-6
                                    or ev[2] <= self._last_end.get(local, float("-inf"))):
                # the start of the recorded run, overtaken by its end (which carries it), or of a run that a loss or
                # a preemption recorded before had ended (its start came late: its host's link to the broker was slow)
                key = "late_starts"
            self.counters[key] = self.counters.get(key, 0) + 1
            return
        if kind in (LOST, PREEMPTED):
            self._last_end[local] = max(ev[2], self._last_end.get(local, float("-inf")))
        if kind == FINISHED:
            run = _run_of(ev)
            if local in self._finished:
                self._count_finish_again(local, run)
                return
            self._finished.add(local)
            self._finish_run[local] = run
        elif kind == REPORTED:
            if local in self._reported:
                self.counters["duplicate_reports"] += 1
                return
            self._reported.add(local)
            self._report_of[local] = ev
        self._events.setdefault(local, []).append(ev)
        if local in self._finished and local in self._reported:
            self._apply(local)

    def _count_finish_again(self, local: int, run: tuple) -> None:
        """A second end of a task: of the same run (worker and start) — a report repeated after a crash — or
        of another run, which would be the task running twice."""
        if run[0] is not None and run == self._finish_run.get(local):
            self.counters["ends_reported_again"] = self.counters.get("ends_reported_again", 0) + 1
        else:
            self.counters["duplicate_finishes"] += 1
            if len(self.finished_twice) < STARTED_TWICE_KEPT:
                self.finished_twice.append(local)

    def _apply(self, local: int) -> None:
        self._applied.add(local)
        rec = self.recorder
        # stamps come from different processes' clocks: the report (a GM's) goes last whatever its stamp, and no
        # earlier than the end it reports (a GM's clock 20 s behind made it precede the end: found on the testbed)
        events = sorted(self._events.pop(local), key=lambda e: (e[0] == REPORTED, e[2], _ORDER[e[0]]))
        started = finished = False
        end = float("-inf")
        origin = self.origin
        for kind, _tid, stamp, value in events:
            t = stamp - origin
            if kind == MARK:
                if not started:
                    rec.mark(local, t, value)
            elif kind == STARTED:
                if started:
                    self.counters["duplicate_starts"] += 1
                    if len(self.started_twice) < STARTED_TWICE_KEPT:
                        self.started_twice.append((local, events))
                    continue
                started = True
                rec.task_started(local, t, value, COMMUNICATION)
            elif kind in (PREEMPTED, LOST):
                # killed by a fair-sharing preemption, or its worker failed: the run ends, the task starts again later
                if started and not finished:
                    rec.task_preempted(local, t, "preemptions" if kind == PREEMPTED else "lost_runs")
                    started = False
            elif kind == FINISHED:
                if not started:  # its host's start event was lost (the host died): the end carries the start
                    start = value.get("started_at") if isinstance(value, dict) else None
                    worker = value.get("worker", -1) if isinstance(value, dict) else -1
                    rec.task_started(local, t if start is None else min(t, start - origin), worker, COMMUNICATION)
                    started = True
                rec.task_finished(local, t)
                finished = True
                end = t
                if isinstance(value, dict):
                    self.outcomes[local] = value
            else:
                if t < end:
                    self.counters["reports_before_their_end"] = self.counters.get("reports_before_their_end", 0) + 1
                    t = end
                jid = rec.job_of(local)
                last = max(self._report_time.get(jid, t), t)
                self._report_time[jid] = last
                if rec.task_reported(local, t):
                    rec.j_done[jid] = last
                    self.jobs_done += 1
                    del self._report_time[jid]
        self.tasks_done += 1
        if self.window is not None and started:
            comp = rec.component_of
            self.window.add((comp(local, 0), comp(local, 1), comp(local, 2), comp(local, 3)))
        if self._changed is not None:
            self._changed.set()


def _run_of(ev: Event) -> tuple:
    """Which run a finished event ends: (worker, start) from its outcome."""
    value = ev[3]
    if isinstance(value, dict):
        return (value.get("worker"), value.get("started_at"))
    return (None, None)


class RecordsHub:
    """In one process: routes events to the run they belong to (runs unknown here are counted, not kept)."""

    def __init__(self) -> None:
        self.runs: dict[int, RunRecords] = {}
        self.orphan_events = 0

    def emit(self, run: int, ev: Event) -> None:
        records = self.runs.get(run)
        if records is None:
            self.orphan_events += 1
        else:
            records.event(ev)

    def open(self, run: int) -> RunRecords:
        records = self.runs[run] = RunRecords(run)
        return records

    def close(self, run: int) -> None:
        self.runs.pop(run, None)
