"""The simulated workers: the ground truth of which task runs where, shared by every scheduler.

:class:`WorkerPool` is a component of the simulated world standing for all
worker nodes (one object rather than thousands, for speed; each worker's logic
is the same). It speaks the worker protocol (:mod:`schedlab.workers.protocol`):
a scheduler sends :class:`~schedlab.workers.protocol.LaunchTask` or
:class:`~schedlab.workers.protocol.LaunchBatch` to its address, and it answers
:class:`~schedlab.workers.protocol.TaskFinished` /
:class:`~schedlab.workers.protocol.TasksFinished` groups of tasks that started
and ended together. Components that sit on the workers (node monitors, an LM
preempting) and schedulers with no communication at all (``ideal``) use its
:class:`~schedlab.workers.protocol.LocalWorkers` methods directly; one that
preempts calls :meth:`WorkerPool.allow_preemption` first, so that the pool
follows each running task's finish event (other runs skip that bookkeeping).

The pool records every start and end in the run's
:class:`~schedlab.metrics.recorder.Recorder`; it is the only place that does.

The pool enforces capacity: starting a task on a worker without room for it
(slot mode: a busy worker; multi-resource mode: a request exceeding the free
vector) or on a worker whose machine constraints do not satisfy the task raises
:class:`~schedlab.errors.InvariantError`. This is the referee behind the
"never over-allocate" property tests: a scheduler cannot cheat it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schedlab.cluster.model import Cluster
from schedlab.errors import InvariantError
from schedlab.metrics.recorder import COMMUNICATION, Recorder
from schedlab.sim.runtime import Address, Component, SimRuntime
from schedlab.workers.protocol import (
    POOL_ADDRESS,
    BatchFinishCallback,
    FinishCallback,
    LaunchBatch,
    LaunchTask,
    TaskFinished,
    TasksFinished,
)
from schedlab.workload.model import TaskTable


class WorkerPool(Component):
    """All worker nodes of the data center."""

    def __init__(self, runtime: SimRuntime, cluster: Cluster, tasks: TaskTable, recorder: Recorder) -> None:
        super().__init__(POOL_ADDRESS, runtime)
        self.kernel = runtime.kernel
        self._send_each = runtime.send_each
        self.cluster = cluster
        self.tasks = tasks
        self.rec = recorder
        self.masks = cluster.machine_masks
        self.slot_mode = cluster.slot_mode
        n = cluster.n
        self.running: list[int] = [-1] * n  # slot mode: the task on each worker
        self.free: list[list[float]] | None = None
        if not self.slot_mode:
            assert cluster.capacity is not None
            self.free = [list(map(float, row)) for row in cluster.capacity]
        # tid -> (finish event, its group): tasks started together that end together
        # share one event, and a preempted task is taken out of its group. Kept only
        # once a scheduler that preempts asked for it (allow_preemption): two dict
        # operations a task that other runs need not pay.
        self._timers: dict[int, tuple[list, list[tuple[int, int]]]] | None = None
        self.busy_workers = 0

    def handlers(self):
        return {LaunchTask: self._on_launch, LaunchBatch: self._on_launch_batch}

    def allow_preemption(self) -> None:
        """Keep what :meth:`preempt` and :meth:`is_running` need; call before any task starts."""
        if self._timers is None:
            if self.busy_workers:
                raise InvariantError("allow_preemption() must come before the first task starts")
            self._timers = {}

    # -- starting and finishing ----------------------------------------------------------------
    def _occupy(self, tid: int, worker: int) -> None:
        tasks = self.tasks
        tmask = tasks.mask[tid]
        if tmask & ~self.masks[worker]:
            raise InvariantError(f"task {tid} needs constraints {tmask:#x} that worker {worker} ({self.masks[worker]:#x}) lacks")
        if self.slot_mode:
            if self.running[worker] != -1:
                raise InvariantError(f"worker {worker} over-allocated: task {tid} started while task {self.running[worker]} runs")
            self.running[worker] = tid
        else:
            req = tasks.request[tid]
            free = self.free[worker]  # type: ignore[index]
            for k, r in enumerate(req):  # type: ignore[arg-type]
                if r > free[k] + 1e-9:
                    raise InvariantError(f"worker {worker} over-allocated: task {tid} requests {req}, free {tuple(free)}")
            for k, r in enumerate(req):  # type: ignore[arg-type]
                free[k] -= r

    def start(self, tid: int, worker: int, on_finish: FinishCallback, component: int = COMMUNICATION) -> None:
        """Start ``tid`` on ``worker`` now; ``on_finish(tid, worker)`` runs when it ends."""
        self._occupy(tid, worker)
        self.busy_workers += 1
        now = self.kernel.now
        self.rec.task_started(tid, now, worker, component)
        group = [(tid, worker)]
        ev = self.kernel.call_at(now + self.tasks.duration[tid], self._finish_one, group, on_finish)
        if self._timers is not None:
            self._timers[tid] = (ev, group)

    def start_many(self, placements: list[tuple[int, int]], on_finish: BatchFinishCallback, component: int) -> None:
        """Start every ``(tid, worker)`` now; ``on_finish(group)`` runs once per group of tasks ending together.

        Groups are in start order and their events in order of first start, so the
        run stays a pure function of the inputs.
        """
        self._start_many(placements, self._finish_many, on_finish, component)

    def _start_many(self, placements: list[tuple[int, int]], finish: Callable[[list[tuple[int, int]], Any], None], arg: Any, component: int) -> None:
        """:meth:`start_many`, each group's end running ``finish(group, arg)``."""
        now = self.kernel.now
        duration = self.tasks.duration
        groups: dict[float, list[tuple[int, int]]] = {}
        if self.slot_mode:
            running, masks, tmasks = self.running, self.masks, self.tasks.mask
            get = groups.get
            for p in placements:
                tid, worker = p
                if running[worker] != -1 or tmasks[tid] & ~masks[worker]:
                    self._occupy(tid, worker)  # raises the precise error
                running[worker] = tid
                end = now + duration[tid]
                g = get(end)
                if g is None:
                    groups[end] = [p]
                else:
                    g.append(p)
        else:
            occupy = self._occupy
            for tid, worker in placements:
                occupy(tid, worker)
                end = now + duration[tid]
                g = groups.get(end)
                if g is None:
                    groups[end] = [(tid, worker)]
                else:
                    g.append((tid, worker))
        self.rec.tasks_started(placements, now, component)
        self.busy_workers += len(placements)
        call_at = self.kernel.call_at
        timers = self._timers
        if timers is None:  # nothing will be preempted: no handles to keep
            post = self.kernel.post
            for end, g in groups.items():
                post(end, finish, g, arg)
            return
        for end, g in groups.items():
            ev = call_at(end, finish, g, arg)
            entry = (ev, g)
            for tid, _w in g:
                timers[tid] = entry

    def _finish_one(self, group: list[tuple[int, int]], on_finish: FinishCallback) -> None:
        tid, worker = group[0]
        if self._timers is not None:
            del self._timers[tid]
        self._release(tid, worker)
        self.rec.task_finished(tid, self.kernel.now)
        on_finish(tid, worker)

    def _finish_many(self, group: list[tuple[int, int]], on_finish: BatchFinishCallback) -> None:
        self._end(group)
        on_finish(group)

    def _finish_reply(self, group: list[tuple[int, int]], reply_to: tuple[Address, ...]) -> None:
        """A launched batch's group ended: one :class:`TasksFinished` to each of ``reply_to``."""
        self._end(group)
        self._send_each(reply_to, TasksFinished(group))

    def _end(self, group: list[tuple[int, int]]) -> None:
        """These tasks' execution ended now: free their workers and record it."""
        timers = self._timers
        if timers is not None:
            for tid, _worker in group:
                del timers[tid]
        if self.slot_mode:
            running = self.running
            for _tid, worker in group:
                running[worker] = -1
            self.busy_workers -= len(group)
        else:
            release = self._release
            for tid, worker in group:
                release(tid, worker)
        self.rec.tasks_finished(group, self.kernel.now)

    def _release(self, tid: int, worker: int) -> None:
        self.busy_workers -= 1
        if self.slot_mode:
            self.running[worker] = -1
        else:
            free = self.free[worker]  # type: ignore[index]
            for k, r in enumerate(self.tasks.request[tid]):  # type: ignore[arg-type]
                free[k] += r

    def preempt(self, tid: int, worker: int) -> None:
        """Kill running task ``tid`` on ``worker``; no finish callback will run for it."""
        entry = self._tracked().pop(tid, None)
        if entry is None:
            raise InvariantError(f"task {tid} is not running, cannot preempt it")
        ev, group = entry
        group.remove((tid, worker))
        if not group:
            self.kernel.cancel(ev)
        self._release(tid, worker)
        self.rec.task_preempted(tid, self.kernel.now)

    # -- the message interface --------------------------------------------------------------------
    def _on_launch(self, msg: LaunchTask) -> None:
        reply_to = msg.reply_to
        send = self.rt.send
        self.start(msg.tid, msg.worker, lambda tid, w: send(reply_to, TaskFinished(tid, w)), COMMUNICATION)

    def _on_launch_batch(self, msg: LaunchBatch) -> None:
        self._start_many(msg.items, self._finish_reply, msg.reply_to, COMMUNICATION)

    # -- observation -------------------------------------------------------------------------------
    def is_running(self, tid: int) -> bool:
        return tid in self._tracked()

    def _tracked(self) -> dict[int, tuple[list, list[tuple[int, int]]]]:
        if self._timers is None:
            raise InvariantError("the worker pool does not follow running tasks: a scheduler that preempts calls allow_preemption() first")
        return self._timers
