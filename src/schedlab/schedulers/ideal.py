"""``ideal``: the omniscient scheduler — the lower bound every other scheduler is measured against.

No processing or communication cost at all: the instant a task arrives it is
placed on an eligible free worker if one exists; otherwise it waits, and the
instant resources free up on a worker the earliest-arrived waiting task that
fits there starts (FIFO among tasks that can run). Its JRT delay is pure
queuing for resources (zero when the data center has room), which makes it the
reference for "how much of a scheduler's delay is the scheduler's fault".

Worker choice: ``min-constraints`` (default; best fit — keeps versatile workers
free for tasks that need them) or ``random`` (constraint-aware paper, 4.3).
"""

from __future__ import annotations

from schedlab.metrics.recorder import FRAMEWORK_QUEUING
from schedlab.schedulers.base import (
    Scheduler,
    SchedulerContext,
    SchedulerParams,
    WorkerChoiceName,
    worker_choice_field,
)
from schedlab.schedulers.exact_view import ExactView
from schedlab.workload.model import Job


class IdealParams(SchedulerParams):
    worker_choice: WorkerChoiceName = worker_choice_field("min-constraints")


class IdealScheduler(Scheduler):
    name = "ideal"
    summary = "omniscient, zero-cost FIFO placement on an eligible free worker (lower bound)"
    Params = IdealParams

    def __init__(self, ctx: SchedulerContext, params: IdealParams) -> None:
        super().__init__(ctx, params)
        self.view = ExactView(ctx.cluster, ctx.tasks, params.worker_choice, ctx.runtime.rng("ideal"))
        self.pool = ctx.pool
        self.rec = ctx.recorder
        self.rt = ctx.runtime

    def submit(self, job: Job) -> None:
        placed, unplaced = self.view.place_many(job.tids)
        for tid in unplaced:
            self.view.enqueue(tid)
        if placed:
            self.pool.start_many(placed, self._done, FRAMEWORK_QUEUING)

    def _done(self, group: list[tuple[int, int]]) -> None:
        view = self.view
        view.release_many(group)
        self.rec.tasks_reported(group, self.rt.now())
        if not view.num_waiting:
            return
        placements = []
        for _tid, worker in group:
            while view.num_waiting:
                nxt = view.pop_waiting_for(worker)
                if nxt < 0:
                    break
                view.take(worker, nxt)
                placements.append((nxt, worker))
        if placements:
            self.pool.start_many(placements, self._done, FRAMEWORK_QUEUING)
