"""The services' own messages, beside the decision code's (:mod:`schedlab.schedulers.megha.messages`).

Only what the simulator does by function call needs a message here: a job
entering a GM's queue (the engine calls ``GlobalMaster.submit``; a client
sends :class:`SubmitJob`), the lifecycle events services send to the
client that assembles a run's records (:class:`RecordEvents`), and fair
sharing's run-wide truth and preemptions (:class:`HoldingsReport`,
:class:`KillTask`, :class:`TaskKilled`; see :mod:`~.fairness`), and worker
hosts' leases (:class:`HostAlive`; see :mod:`~.failures`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class SubmitJob:
    """Client → GM: a job's tasks enter the framework now (ids global, see :mod:`~.tasks`)."""

    jid: int
    tids: list[int]
    durations: list[float]
    masks: list[int] | None = None
    requests: list[tuple[float, ...]] | None = None
    specs: list[Any] | None = None
    user: int = 0


@dataclass(slots=True)
class RecordEvents:
    """Service → client: lifecycle events of the client's run (:mod:`~.records`)."""

    run: int
    events: list[tuple] = field(default_factory=list)


def submit_address(g: int) -> tuple[str, int]:
    return ("submit", g)


@dataclass(slots=True)
class HoldingsReport:
    """LM → every GM: what changed in the users' holdings on the LM's workers, in order.

    Each event is ``("launch", tid, p, pos, user, amount)``, ``("vacate", tid)``
    or ``("settle", victim)`` (a preemption carried out).
    """

    lm: int
    events: list[tuple] = field(default_factory=list)


@dataclass(slots=True)
class KillTask:
    """LM → the worker host running ``tid``: kill it for a preemption; answer :class:`TaskKilled` to ``reply_to``."""

    tid: int
    worker: int
    reply_to: Any


@dataclass(slots=True)
class TaskKilled:
    """Worker host → LM: ``tid`` was killed (``killed``), or had already ended (its completion is on its way)."""

    tid: int
    killed: bool


@dataclass(slots=True)
class HostAlive:
    """Worker host → its LM, every ``worker_lease / 3`` s: I am up (``incarnation`` changes when I restart),
    running these tasks."""

    host: int
    incarnation: int
    running: list[tuple[int, int]] = field(default_factory=list)  # (tid, worker)


@dataclass(slots=True)
class HostFinished:
    """Worker host → the LM that launched them: these ``(tid, worker)`` ended; ``runs[k] = (started, ended,
    outcome)``. The LM records them and tells the rest of ``reply_to`` (the GMs) — one witness, so the LM
    and the GM can never disagree on whether a task ended (:mod:`~.failures`)."""

    group: list[tuple[int, int]]
    reply_to: tuple
    runs: list[tuple[float, float, dict]] = field(default_factory=list)
