"""The protocol between schedulers and workers: launch messages, completion messages, local control.

A scheduler starts a task on a worker by sending :class:`LaunchTask` (one task)
or :class:`LaunchBatch` (several, e.g. the accepted part of a Megha LM's launch
request) to :data:`POOL_ADDRESS`; every worker answers :class:`TaskFinished`
or :class:`TasksFinished` to the ``reply_to`` address(es) when its tasks end.
:data:`POOL_ADDRESS` names "the workers" as seen from the sender: in a
simulation the one :class:`~schedlab.workers.simulated.WorkerPool`, in a real
deployment a router in the sender's process that forwards each task to the
process hosting its worker.

Components co-located with workers (Eagle/Hawk node monitors start the task
they reserved; a Megha LM kills a task to preempt it) use the
:class:`LocalWorkers` interface instead of messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

POOL_ADDRESS = "workers"


@dataclass(slots=True)
class LaunchTask:
    """Run task ``tid`` on ``worker``; report to ``reply_to``. Time in flight counts as communication."""

    tid: int
    worker: int
    reply_to: object


@dataclass(slots=True)
class TaskFinished:
    """Task ``tid`` finished on ``worker``."""

    tid: int
    worker: int


@dataclass(slots=True)
class LaunchBatch:
    """Run each ``(tid, worker)``; when tasks end, send :class:`TasksFinished` to every ``reply_to`` address."""

    items: list[tuple[int, int]]
    reply_to: tuple

    def tasks_carried(self) -> int:
        """The tasks it names (the network's delay per task carried: ``NetworkModel.latency_per_task``)."""
        return len(self.items)


@dataclass(slots=True)
class TasksFinished:
    """These ``(tid, worker)`` tasks finished (tasks started together and ending together travel together)."""

    group: list[tuple[int, int]]


FinishCallback = Callable[[int, int], None]
BatchFinishCallback = Callable[[list[tuple[int, int]]], None]


class LocalWorkers(Protocol):
    """Direct control of workers by a component running beside them."""

    def start_many(self, placements: list[tuple[int, int]], on_finish: BatchFinishCallback, component: int) -> None:
        """Start every ``(tid, worker)`` now; ``on_finish(group)`` runs once per group of tasks ending together."""
        ...

    def preempt(self, tid: int, worker: int) -> None:
        """Kill running task ``tid`` on ``worker``; no finish callback will run for it."""
        ...

    def is_running(self, tid: int) -> bool: ...
