"""``sparrow``: distributed, stateless schedulers with batch sampling and late binding (sans-IO).

K. Ousterhout, P. Wendell, M. Zaharia, I. Stoica, "Sparrow: Distributed, Low
Latency Scheduling", SOSP 2013 (Sections 3–4):

* Jobs arrive at one of several independent schedulers (round-robin here).
* *Batch sampling*: for a job of ``m`` tasks the scheduler probes ``d·m``
  distinct random workers (``probe_ratio`` d, default 2).
* *Late binding*: a probe is a reservation in the worker's FIFO queue; when it
  reaches the front of a free worker, the worker asks the scheduler for a task
  and gets the job's next unlaunched task, or a no-op when all are launched.
* *Proactive cancellation* (``cancel``, on by default): once every task of a job
  is launched, its scheduler cancels the probes still queued.
* *Constraints* (Section 4.3): probes go only to workers that satisfy the
  constraints — per job when the whole job shares them, per task otherwise
  (per-task sampling), with information shared across a job's tasks: a worker
  may run any of the job's unlaunched tasks it can run (``share``). See
  :mod:`~schedlab.schedulers.probing` for how a group that cannot spare a probe
  keeps it, so no task is ever left without probes.

Choices where the paper is silent: tasks of a job that have exactly the same
constraints form one group that is batch-sampled together (``ceil(d·m)``
probes over the workers that satisfy them) — per-task sampling when every task
differs, batch sampling when none does; a group with fewer eligible workers
than probes probes all of them, some more than once. Under sharing a worker
gets the job's *earliest* unlaunched task it can run (the paper's example).
Ten schedulers; no processing cost (the Sparrow simulator's convention);
slot mode only (one task per worker slot).

Timing: probe (ND) → get-task request (ND) → task (ND) → completion report to
the scheduler (ND): the unloaded JRT delay is 4·ND = 2 ms. A task's allocation
time is worker queuing (its probe waiting at a busy worker) plus
communication.
"""

from __future__ import annotations

from pydantic import Field

from schedlab.schedulers.base import Scheduler, SchedulerContext, SchedulerParams
from schedlab.schedulers.probing import (
    EligibleSampler,
    NodeMonitors,
    ProbeScheduler,
    require_slot_mode,
)
from schedlab.workload.model import Job


class SparrowParams(SchedulerParams):
    probe_ratio: float = Field(2.0, ge=1, description="probes per task (d)")
    schedulers: int = Field(10, ge=1, description="number of independent schedulers")
    cancel: bool = Field(True, description="cancel a job's queued probes once all its tasks are launched")
    share: bool = Field(True, description="a worker may run any unlaunched task of the job it can run")


def sparrow_address(i: int) -> tuple[str, int]:
    return ("sparrow", i)


class SparrowScheduler(Scheduler):
    name = "sparrow"
    summary = "distributed schedulers: batch sampling (d probes per task), late binding, FIFO worker queues (Sparrow)"
    Params = SparrowParams

    def __init__(self, ctx: SchedulerContext, params: SparrowParams) -> None:
        super().__init__(ctx, params)
        require_slot_mode(ctx, self.name)
        sampler = EligibleSampler(ctx.cluster.machine_masks)
        self.frontends = [
            ProbeScheduler(
                i,
                sparrow_address(i),
                ctx,
                sampler,
                probe_ratio=params.probe_ratio,
                cancel=params.cancel,
                share=params.share,
                rng_name=f"sparrow:{i}",
            )
            for i in range(params.schedulers)
        ]
        self.monitors = NodeMonitors(ctx, [f.address for f in self.frontends])

    def submit(self, job: Job) -> None:
        self.frontends[job.jid % len(self.frontends)].submit(job)

    def counters(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.frontends:
            for k, v in f.counters().items():
                out[k] = out.get(k, 0) + v
        out.update(self.monitors.counters())
        return out
