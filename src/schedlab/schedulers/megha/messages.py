"""Messages between Megha's Global Masters, Local Masters and workers.

Workers are named ``(p, pos)``: partition and bit position (see
:mod:`~schedlab.schedulers.megha.partitions`). Availability changes travel as
:class:`StateUpdate`: in slot mode, per partition, the bits that became free
and the bits that became busy (a snapshot sets every bit one way or the other);
in multi-resource mode, per partition, the free vector of each changed worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class LaunchRequest:
    """GM → LM: launch each task on the named worker. A worker outside the GM's
    internal partition makes it a repartition request (Megha paper IV-B-4)."""

    gm: int
    items: list[tuple[int, int, int]]  # (tid, p, pos)

    def tasks_carried(self) -> int:
        """The tasks it names (the network's delay per task carried: ``NetworkModel.latency_per_task``)."""
        return len(self.items)


@dataclass(slots=True)
class StateUpdate:
    """LM → GM: availability of the LM's partitions (a heartbeat, or piggybacked on a reply)."""

    lm: int
    snapshot: bool
    bits: dict[int, tuple[int, int]] = field(default_factory=dict)  # slot: p -> (free bits, busy bits)
    free: dict[int, dict[int, tuple[float, ...]]] = field(default_factory=dict)  # multi: p -> {pos: free vector} (immutable)
    lists: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict)  # compat: p -> (busy, available) events


@dataclass(slots=True)
class LaunchRejected:
    """LM → GM: these requests could not be honoured (an inconsistency); here is my current state.

    ``sent``: in a real cluster, when the request was first sent (the GM applies a rejection only to the
    request it answers, not to a later one for the same task); 0 in a simulation."""

    lm: int
    items: list[tuple[int, int, int]]
    update: StateUpdate
    sent: float = 0.0


@dataclass(slots=True)
class PreemptRequest:
    """GM → LM: kill ``victim`` (running on ``(p, pos)``) and run ``tid`` there instead (Algorithm 2)."""

    gm: int
    tid: int
    victim: int
    p: int
    pos: int


@dataclass(slots=True)
class PreemptRejected:
    """LM → GM: the preemption could not be verified (victim gone or resources insufficient)."""

    lm: int
    tid: int
    victim: int
    p: int
    pos: int
    update: StateUpdate


@dataclass(slots=True)
class TaskPreempted:
    """LM → the victim's GM: your task on (p, pos) was killed for GM ``by_gm``'s task; re-queue it."""

    tid: int
    p: int
    pos: int
    by_gm: int


@dataclass(slots=True)
class TaskLost:
    """LM → the task's GM: the worker at (p, pos) failed with your task on it; re-queue it (Megha paper IV:
    the LM relaunches a failed worker's tasks from its active-task list).

    ``sent``: in a real cluster, when the request that launched this run was first sent (0: unknown) — a GM
    applies the loss only to that request's run, not to a later one on the same worker."""

    tid: int
    p: int
    pos: int
    sent: float = 0.0
