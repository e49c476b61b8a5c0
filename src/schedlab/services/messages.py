"""The services' own messages, beside the decision code's (:mod:`schedlab.schedulers.megha.messages`).

Only what the simulator does by function call needs a message here: a job
entering a GM's queue (the engine calls ``GlobalMaster.submit``; a client
sends :class:`SubmitJob`), the lifecycle events services send to the
client that assembles a run's records (:class:`RecordEvents`), and fair
sharing's run-wide truth and preemptions (:class:`HoldingsReport`,
:class:`KillTask`, :class:`TaskKilled`; see :mod:`~.fairness`), and worker
hosts' leases (:class:`HostAlive`; see :mod:`~.failures`), a restarted GM's
recovery from the LMs' truth (:class:`Recover`, :class:`Resolve`; see :mod:`~.recovery`), and a job's
cancellation (:class:`CancelJob`, :class:`CancelRuns`; see :mod:`~.cancel`).
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
    """LM → the worker host running ``tid``: kill it (a preemption, or a lost run); answer :class:`TaskKilled` to
    ``reply_to``. ``launch``: only the run that launch started (0: whatever run of ``tid`` is on ``worker``)."""

    tid: int
    worker: int
    reply_to: Any
    launch: int = 0


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
    at: float = 0.0  # when the host sent it, by its clock (an LM settles launches in doubt with it: failures)
    launches: list[int] = field(default_factory=list)  # the id of the launch that started each run (0: unknown)


@dataclass(slots=True)
class HostFinished:
    """Worker host → the LM that launched them: these ``(tid, worker)`` ended; ``runs[k] = (started, ended,
    outcome)``. The LM records them and tells the rest of ``reply_to`` (the GMs) — one witness, so the LM
    and the GM can never disagree on whether a task ended (:mod:`~.failures`)."""

    group: list[tuple[int, int]]
    reply_to: tuple
    runs: list[tuple[float, float, dict]] = field(default_factory=list)
    launches: list[int] = field(default_factory=list)  # the id of the launch that started each run (0: unknown)
    # the incarnation of the LM process the host answered last (0: none yet): an older LM process that reads it
    # learns it was replaced, and leaves the end to the newer one (the fence of an LM whose standby is elsewhere)
    lm_incarnation: int = 0
    # the first send time of the GM's request that started each run (0: unknown): an LM process taking over that
    # finds the end in its queue tells the GM it found the task ended, of that very run (see recovery.LMTakeover)
    sent: list[float] = field(default_factory=list)


@dataclass(slots=True)
class Recover:
    """A GM that (re)started → every LM: my view is empty; send me your state (:mod:`~.recovery`)."""

    gm: int


@dataclass(slots=True)
class Recovered:
    """LM → the recovering GM (the reply to :class:`Recover`): a snapshot of the LM's partitions, the tasks it
    runs for that GM (their descriptions travel with them), and, with fair sharing, every task it runs as
    holdings events (the ledger a GM otherwise builds from :class:`HoldingsReport`\\ s)."""

    lm: int
    update: Any  # StateUpdate, a snapshot
    running: list[tuple[int, int, int]] = field(default_factory=list)  # (tid, p, pos) of the GM's tasks
    holdings: list[tuple] = field(default_factory=list)  # ("launch", tid, p, pos, user, amount) of every task
    # when the answering LM process took over (restarted, or a standby), and its incarnation (a fencing token:
    # larger for every later process). At the first Recovered of a process a GM gets — its announcement or
    # an answer — a task the GM had placed on this LM before ``since`` and that is not in ``running`` is lost
    since: float = 0.0
    incarnation: int = 0
    # the GM's tasks the process found on its hosts when it took over, running or lately ended
    # (:class:`HostReport`): not lost at the takeover, whatever ``running`` says now — their ends, relayed by
    # this process or its predecessor, may still be on their way to the GM behind this message — if they are the
    # ends of the runs of the GM's current requests: ``found_sent[k]``, the first send time of the request that
    # started ``found[k]``'s run (the GM's own stamp, echoed; 0: unknown). A run of an earlier request (lost, and
    # its end dropped) protects nothing (found by the deterministic simulation, seed 3614)
    found: list[int] = field(default_factory=list)
    found_sent: list[float] = field(default_factory=list)
    # ``running_sent[k]``: the first send time of the GM's request that started ``running[k]``'s run (the GM's own
    # stamp, echoed; 0: unknown). A restarted GM holds the task again with it, so that a late loss notice of an
    # earlier run on the same worker does not end this one (found by the deterministic simulation, seed 1021700)
    running_sent: list[float] = field(default_factory=list)


@dataclass(slots=True)
class Resolve:
    """A recovering GM → every LM: which of these tasks (of a job delivered to it again) completed on you?"""

    gm: int
    ask: int  # the GM's number for this question, echoed in the answer
    tids: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Resolved:
    """LM → GM: the answer to :class:`Resolve` ``ask``: the tasks among those asked that completed on this LM,
    and those it runs."""

    lm: int
    ask: int
    completed: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)


@dataclass(slots=True)
class HostState:
    """An LM taking over → each of its worker hosts: what do you run? (answered with :class:`HostReport`).
    From then on the host refuses launches from any other LM process than ``incarnation``."""

    lm: int
    incarnation: int  # the asking LM process's


@dataclass(slots=True)
class HostReport:
    """Worker host → the LM taking over: the tasks it runs, as ``(tid, worker, gm)`` (descriptions attached)."""

    host: int
    incarnation: int
    running: list[tuple[int, int, int]] = field(default_factory=list)
    launches: list[int] = field(default_factory=list)  # the id of the launch that started each (0: unknown)
    # (tid, gm, sent) of the runs it ended lately, newest last; sent: the first send time of the GM's request that
    # started the run (its LM passed it on with the launch; 0: unknown)
    ended: list[tuple[int, int, float]] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)  # the same for each running task


@dataclass(slots=True)
class Done:
    """A GM → its own completion log (a durable queue it consumes itself): these tasks of its jobs completed.

    Kept until their jobs are acknowledged, so a GM process that restarts learns which tasks of the jobs it
    gets again had completed — even if every process that knew it (the dead GM, an LM that restarted since)
    is gone (:mod:`~.recovery`)."""

    gm: int
    tids: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Marker:
    """A process → one of its own queues: when it comes back, everything that waited in the queue before it has
    been delivered (a starting node reads what its predecessor left exactly, whatever the link's speed)."""

    token: int


def log_address(g: int) -> tuple[str, int]:
    """Where GM ``g``'s completion log lives (a queue, ``<name>.done.<g>``)."""
    return ("done", g)


@dataclass(slots=True)
class VerifyEnds:
    """An LM that took over → a GM: these tasks ended while no LM process watched (their ends waited in the
    LM's queue, and no host ran them any more); each completes if the GM placed it on that worker."""

    group: list[tuple[int, int]]
    runs: list[tuple[float, float, dict]] = field(default_factory=list)
    launches: list[int] = field(default_factory=list)  # each run's launch id (0: unknown), as the host reported it


@dataclass(slots=True)
class CancelJob:
    """Client → GM ``gm``'s completion log (a durable queue, read before its jobs at every start): cancel job
    ``jid`` — its queued tasks never launch, its running ones are killed (:mod:`~.cancel`)."""

    jid: int
    gm: int


@dataclass(slots=True)
class CancelRuns:
    """GM → the LM of these workers → their worker host: stop the runs of these ``(tid, worker)`` of a cancelled
    job; each ends as ``cancelled`` through the usual end path. A run not started yet never starts."""

    gm: int
    items: list[tuple[int, int]] = field(default_factory=list)


@dataclass(slots=True)
class StaleRuns:
    """GM → an LM process that took over: these ``(tid, worker)`` runs it adopted from its hosts are stale — the
    task runs elsewhere since, or completed (an old process counted the run lost; the GM requested it again). The
    LM stops each and forgets it; its end, if it comes, is not the task's (:mod:`~.recovery`)."""

    gm: int
    items: list[tuple[int, int]] = field(default_factory=list)
