"""A first-fit scheduler written against schedlab's public API only: the plugin guide's example (ARCHITECTURE.md).

One master keeps the idle workers and the waiting tasks; each task, in arrival
order, goes to the lowest-numbered idle worker that has its constraints (tasks
that fit nowhere yet wait and let later ones pass). Slot mode only.
"""

from collections import deque

from schedlab.errors import InputError
from schedlab.schedulers.base import Scheduler, SchedulerContext, SchedulerParams
from schedlab.sim.runtime import Component
from schedlab.workers.protocol import POOL_ADDRESS, LaunchTask, TaskFinished
from schedlab.workload.model import Job


class Master(Component):
    def __init__(self, ctx: SchedulerContext) -> None:
        super().__init__("first-fit", ctx.runtime)
        self.ctx, self.idle, self.waiting = ctx, list(range(ctx.cluster.n)), deque()

    def handlers(self):
        return {TaskFinished: self.finished}

    def dispatch(self) -> None:
        masks, need, still = self.ctx.cluster.machine_masks, self.ctx.tasks.mask, deque()
        for tid in self.waiting:
            w = next((w for w in self.idle if not need[tid] & ~masks[w]), None)
            if w is None:
                still.append(tid)
                continue
            self.idle.remove(w)
            self.rt.send(POOL_ADDRESS, LaunchTask(tid, w, reply_to=self.address))
        self.waiting = still

    def finished(self, m: TaskFinished) -> None:
        self.ctx.recorder.tasks_reported([(m.tid, m.worker)], self.rt.now())
        self.idle.append(m.worker)
        self.idle.sort()
        self.dispatch()


class FirstFitParams(SchedulerParams):
    """No parameters (unknown ones are refused)."""


class FirstFitScheduler(Scheduler):
    name = "first-fit"
    summary = "first fit in arrival order on the lowest-numbered idle worker (the plugin guide's example)"
    Params = FirstFitParams

    def __init__(self, ctx: SchedulerContext, params: FirstFitParams) -> None:
        super().__init__(ctx, params)
        if not ctx.cluster.slot_mode:
            raise InputError("--resources", "first-fit runs one task per worker slot: it supports slot mode only")
        self.master = Master(ctx)

    def submit(self, job: Job) -> None:
        self.master.waiting.extend(job.tids)
        self.master.dispatch()
