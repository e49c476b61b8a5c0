"""Jobs and tasks as a simulation sees them.

Tasks are identified by a global integer id (``tid``) in arrival order, and
their attributes live in the columns of a :class:`TaskTable` — a task is an
index, not an object, so queues and messages carry plain ints and millions of
tasks cost a few machine words each (``array`` columns). A :class:`Job` owns the contiguous range of
its task ids.

Per task: ``duration`` (seconds), ``mask`` (placement constraints, an int over
the constraint catalog; 0 = none), ``request`` (a resource tuple in
multi-resource mode, ``None`` in slot mode) and ``job``. Per job: arrival time,
the trace's mean task duration (used by schedulers that split short and long
jobs), the user (fair-share queue) and the ideal JRT = its longest task
(constraint-aware paper, Section 2.4).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Protocol, TypeVar

T_co = TypeVar("T_co", covariant=True)


class Job:
    """A job: arrival time and a contiguous block of task ids."""

    __slots__ = ("jid", "arrival", "first_tid", "num_tasks", "mean_duration", "ideal_jrt", "user", "line")

    def __init__(
        self,
        jid: int,
        arrival: float,
        first_tid: int,
        num_tasks: int,
        mean_duration: float,
        ideal_jrt: float,
        user: int = 0,
        line: int = 0,
    ) -> None:
        self.jid = jid
        self.arrival = arrival
        self.first_tid = first_tid
        self.num_tasks = num_tasks
        self.mean_duration = mean_duration
        self.ideal_jrt = ideal_jrt
        self.user = user
        self.line = line

    @property
    def tids(self) -> range:
        return range(self.first_tid, self.first_tid + self.num_tasks)

    def __repr__(self) -> str:
        return f"Job(jid={self.jid}, arrival={self.arrival}, tasks={self.num_tasks})"


class TaskTable:
    """Columns of every task submitted so far, indexed by task id."""

    __slots__ = ("duration", "mask", "request", "job", "jobs")

    def __init__(self) -> None:
        # Machine-typed columns: 8 bytes a task each, where a list of Python floats or ints costs 32-40.
        self.duration = array("d")
        self.mask = array("q")
        self.request: list[tuple[float, ...] | None] = []
        self.job = array("q")
        self.jobs: list[Job] = []

    def __len__(self) -> int:
        return len(self.duration)

    def __contains__(self, tid: int) -> bool:
        """Is this task's description here? (Every task submitted so far is, in a simulation.)"""
        return 0 <= tid < len(self.duration)

    def add_job(
        self,
        arrival: float,
        durations: Sequence[float],
        masks: Sequence[int] | None = None,
        requests: Sequence[tuple[float, ...]] | None = None,
        mean_duration: float | None = None,
        user: int = 0,
        line: int = 0,
    ) -> Job:
        """Append a job's tasks; returns the new :class:`Job`."""
        n = len(durations)
        if n == 0:
            raise ValueError("a job needs at least one task")
        jid = len(self.jobs)
        first = len(self.duration)
        self.duration.extend(durations)
        self.mask.extend(masks if masks is not None else array("q", bytes(8 * n)))
        self.request.extend(requests if requests is not None else [None] * n)
        self.job.extend(array("q", [jid]) * n)
        mean = mean_duration if mean_duration is not None else sum(durations) / n
        job = Job(jid, arrival, first, n, mean, max(durations), user, line)
        self.jobs.append(job)
        return job


class ById(Protocol[T_co]):
    """A column read by task (or job) id: a list in a simulation, a dict in a real service."""

    def __getitem__(self, key: int, /) -> T_co: ...


class TaskLookup(Protocol):
    """What scheduler components read about tasks: placement constraints, requests, job, user.

    A simulation hands them its :class:`TaskTable`; a real service a store of
    the tasks it has been told about (:class:`schedlab.services.tasks.TaskStore`).
    """

    @property
    def mask(self) -> ById[int]: ...

    @property
    def request(self) -> ById[tuple[float, ...] | None]: ...

    @property
    def job(self) -> ById[int]: ...

    @property
    def jobs(self) -> ById[Job]: ...

    def __contains__(self, tid: int) -> bool:
        """Is this task's description held? (A service forgets a task once it is done with it.)"""
        ...
