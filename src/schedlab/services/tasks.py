"""What a service knows of the tasks it handles: columns keyed by global task id.

A simulation's components read one shared :class:`~schedlab.workload.model.TaskTable`
(a list per column, indexed by task id 0..n-1). A service sees only the tasks
sent to it — a GM those of the jobs submitted to it, an LM those named in
launch requests, a worker host those it runs — so its :class:`TaskStore` keeps
the same columns as dicts (it satisfies :class:`~schedlab.workload.model.TaskLookup`)
and forgets a task once it is done with it.

**Ids.** Several clients may use one cluster, so ids are global:
``tid = run << 32 | local`` where ``run`` is a 31-bit id the client draws for its
run and ``local`` the task's index in the run (its id in the client's own
TaskTable). Job ids are formed the same way. :func:`split_id` undoes it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from schedlab.workload.model import Job

LOCAL_BITS = 32
LOCAL_MASK = (1 << LOCAL_BITS) - 1


def global_id(run: int, local: int) -> int:
    return run << LOCAL_BITS | local


def split_id(gid: int) -> tuple[int, int]:
    """(run, local) of a global task or job id."""
    return gid >> LOCAL_BITS, gid & LOCAL_MASK


class TaskStore:
    """Tasks known to one service: placement constraints, requests, durations, specs, jobs."""

    __slots__ = ("mask", "request", "duration", "job", "jobs", "spec", "user", "arrival", "marked", "_left")

    def __init__(self) -> None:
        self.mask: dict[int, int] = {}
        self.request: dict[int, tuple[float, ...] | None] = {}
        self.duration: dict[int, float] = {}
        self.job: dict[int, int] = {}
        self.jobs: dict[int, Job] = {}
        self.spec: dict[int, Any] = {}  # what to run (execution.TaskSpec); absent: sleep for the duration
        self.user: dict[int, int] = {}  # fair sharing: the task's user queue, when not 0
        self.arrival: dict[int, float] = {}  # when the task's job reached its GM (GM clock), where known: allocation times
        # the stamp of the task's latest allocation-phase mark by the service that sent it here (its clock): the span
        # that crosses processes, from there to the next mark or start here, is measured with it (timings)
        self.marked: dict[int, float] = {}
        self._left: dict[int, int] = {}  # job -> its tasks still known here

    def __len__(self) -> int:
        return len(self.mask)

    def __contains__(self, tid: int) -> bool:
        return tid in self.mask

    def add_task(self, tid: int, jid: int, duration: float, mask: int, request: tuple[float, ...] | None, spec: Any = None,
                 user: int = 0, arrival: float | None = None, marked: float | None = None) -> None:
        if tid not in self.mask:
            self._left[jid] = self._left.get(jid, 0) + 1
        self.mask[tid] = mask
        self.request[tid] = request
        self.duration[tid] = duration
        self.job[tid] = jid
        if spec is not None:
            self.spec[tid] = spec
        if user:
            self.user[tid] = user
        if arrival is not None:
            self.arrival[tid] = arrival
        if marked is not None:
            self.marked[tid] = marked

    def add_job(
        self,
        jid: int,
        arrival: float,
        tids: Sequence[int],
        durations: Sequence[float],
        masks: Sequence[int] | None = None,
        requests: Sequence[tuple[float, ...] | None] | None = None,
        specs: Sequence[Any] | None = None,
        user: int = 0,
    ) -> Job:
        n = len(tids)
        for k, tid in enumerate(tids):
            self.add_task(
                tid,
                jid,
                durations[k],
                masks[k] if masks is not None else 0,
                requests[k] if requests is not None else None,
                specs[k] if specs is not None else None,
                user,
                arrival,
            )
        job = Job(jid, arrival, tids[0] if n else 0, n, sum(durations) / n if n else 0.0, max(durations, default=0.0), user)
        self.jobs[jid] = job
        return job

    def forget(self, tids: Iterable[int]) -> None:
        """Drop finished tasks (and their job once it has none left here)."""
        for tid in tids:
            self.mask.pop(tid, None)
            self.request.pop(tid, None)
            self.duration.pop(tid, None)
            self.spec.pop(tid, None)
            self.user.pop(tid, None)
            self.arrival.pop(tid, None)
            self.marked.pop(tid, None)
            jid = self.job.pop(tid, None)
            if jid is not None:
                left = self._left[jid] - 1
                if left:
                    self._left[jid] = left
                else:
                    del self._left[jid]
                    self.jobs.pop(jid, None)


class RecentIds:
    """The last ``cap`` ids (or other hashable keys) added, for recognising a message delivered twice (bounded memory)."""

    __slots__ = ("cap", "_ids", "_order")

    def __init__(self, cap: int = 1 << 18) -> None:

        self.cap = cap
        self._ids: set[Any] = set()
        self._order: deque[Any] = deque()

    def add(self, x: Any) -> None:
        if x in self._ids:
            return
        self._ids.add(x)
        self._order.append(x)
        if len(self._order) > self.cap:
            self._ids.discard(self._order.popleft())

    def discard(self, x: Any) -> None:
        """Forget ``x`` now (a preempted task: its next launch is a new one, not a repeat)."""
        self._ids.discard(x)

    def __contains__(self, x: Any) -> bool:
        return x in self._ids

    def __len__(self) -> int:
        return len(self._ids)
