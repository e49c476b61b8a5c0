"""What Hawk and Eagle share: the short/long split, the short-job partition and the centralized long-job scheduler.

Hawk (P. Delgado, F. Dinu, A.-M. Kermarrec, W. Zwaenepoel, "Hawk: Hybrid
Datacenter Scheduling", USENIX ATC 2015) and Eagle (P. Delgado, D. Didona,
F. Dinu, W. Zwaenepoel, "Job-aware Scheduling in Eagle: Divide and Stick to
Your Probes", SoCC 2016) are *hybrid* schedulers:

* A job is *long* when its estimated task duration — the trace's mean task
  duration, as in both papers' simulators — is at least ``cutoff``, else short.
* Long jobs go to one *centralized* scheduler that places each task in the
  queue of the worker with the least estimated waiting time (the sum of the
  estimated durations of the long tasks queued there, less what the running one
  has already done) — LWL, as in the authors' simulator — but only in the
  *general partition*.
* Short jobs go to distributed schedulers that probe and late-bind like
  Sparrow (:mod:`~schedlab.schedulers.probing`) anywhere in the data center.
* A small *short partition* (``reserve`` of the workers, the lowest ids as in
  the authors' simulator) never runs long tasks, so short jobs always find some
  workers free of them.

Long tasks use the same reservations and get-task round trip as short ones (the
authors' simulator does too); their probes never outnumber their tasks.

Choices where the papers are silent, and defaults (from the Hawk/Eagle
simulator's README): ``cutoff`` 90.5811 s and ``reserve`` 0.02 (its Yahoo
settings; for the Google trace it uses 1129.532 s and 0.17); probe ratio 2;
ten distributed schedulers; no processing costs; slot mode only. Tasks with
constraints: every scheduler samples or chooses only workers that satisfy them
(the constraint-aware Sparrow rule), and LWL chooses among the eligible workers
of the general partition — free ones (no long work) at random, otherwise by
least waiting time; a long task no general worker can run may use the short
partition rather than never run.
"""

from __future__ import annotations

import heapq
from typing import Generic, TypeVar

import numpy as np
from pydantic import Field

from schedlab.cluster.bitsets import set_bits_array
from schedlab.schedulers.base import Scheduler, SchedulerContext, SchedulerParams
from schedlab.schedulers.probing import (
    NODE_MONITORS,
    EligibleSampler,
    NodeMonitors,
    Probe,
    Probes,
    ProbeScheduler,
    require_slot_mode,
)
from schedlab.workload.model import Job
from schedlab.workload.stats import SHORT_JOB_CUTOFF

CENTRAL = "central"


class ShortLongParams(SchedulerParams):
    cutoff: float = Field(SHORT_JOB_CUTOFF, ge=0, description="long job: estimated (mean) task duration at least this")
    reserve: float = Field(0.02, ge=0, lt=1, description="fraction of workers (lowest ids) reserved for short jobs")
    probe_ratio: float = Field(2.0, ge=1, description="probes per short task (d)")
    schedulers: int = Field(10, ge=1, description="number of distributed schedulers for short jobs")
    cancel: bool = Field(True, description="cancel a short job's queued probes once all its tasks are launched")


def distributed_address(i: int) -> tuple[str, int]:
    return ("distributed", i)


class LeastWaitScheduler(ProbeScheduler):
    """The centralized scheduler for long jobs: each task to the eligible worker with the least waiting time."""

    def __init__(self, index: int, ctx: SchedulerContext, sampler: EligibleSampler, general: int, rng_name: str) -> None:
        super().__init__(index, CENTRAL, ctx, sampler, probe_ratio=1.0, cancel=False, share=False, rng_name=rng_name)
        self.watch_binding = True
        n = ctx.cluster.n
        self.general = general  # bitset: workers that may run long tasks
        self.wait = np.zeros(n)  # estimated long work queued or running on each worker
        self.started = np.full(n, -1.0)  # when the long task running there was bound (-1: none)
        self.cur_est = np.zeros(n)
        self.nlong = [0] * n
        self.long_bits = 0  # workers with long work: Eagle's succinct state
        self.jobs_tab = ctx.tasks.jobs
        self.task_job = ctx.tasks.job

    def place(self, mask: int, k: int, est: float) -> list[int]:
        """``k`` workers for ``k`` long tasks of estimated duration ``est`` (least estimated waiting time first)."""
        free = self.sampler.eligible(mask) & self.general & ~self.long_bits
        if free.bit_count() >= k:
            return self.sampler.sample(mask, k, self.rng, self.general & ~self.long_bits)
        cand = self.sampler.eligible(mask) & self.general
        ids = set_bits_array(cand, self.sampler.n)
        if len(ids) == 0:  # no eligible worker outside the short partition: use any eligible one
            ids = set_bits_array(self.sampler.eligible(mask), self.sampler.n)
        now = self.rt.now()
        start = self.started[ids]
        done = np.where(start >= 0, np.minimum(now - start, self.cur_est[ids]), 0.0)
        adj = self.wait[ids] - np.maximum(done, 0.0)
        if k < len(ids):
            best = np.argpartition(adj, k - 1)[:k]
        else:
            best = np.arange(len(ids))
        # Greedy least-wait over the k best (no other worker can be chosen before all of them).
        heap = [(float(adj[i]), int(ids[i])) for i in best]
        heapq.heapify(heap)
        out = []
        for _ in range(k):
            a, w = heapq.heappop(heap)
            out.append(w)
            heapq.heappush(heap, (a + est, w))
        return out

    def submit(self, job: Job, est: float = 0.0, long: bool = True, allowed: int | None = None) -> None:
        groups = self.book.add(job, est)
        now = self.rt.now()
        items: list[tuple[int, Probe]] = []
        rem = est * job.num_tasks
        wait, nlong = self.wait, self.nlong
        bits = self.long_bits
        for gid, g in enumerate(groups):
            k = len(g.tids)
            ws = self.place(g.mask, k, est)
            self.book.probes_sent(job.jid, g, k)
            for w in ws:
                wait[w] += est
                nlong[w] += 1
                bits |= 1 << w
                items.append((w, Probe(self.index, job.jid, gid, True, est, rem, g.mask, now)))
        self.long_bits = bits
        self.probes += len(items)
        self.rt.send(NODE_MONITORS, self.probes_message(items))

    def probes_message(self, items: list[tuple[int, Probe]]) -> Probes:
        return Probes(items)

    def bound(self, tid: int, worker: int, entry: Probe, now: float) -> None:
        self.started[worker] = now
        self.cur_est[worker] = entry.est

    def finished(self, group: list[tuple[int, int]]) -> None:
        jobs, task_job = self.jobs_tab, self.task_job
        for tid, w in group:
            self.started[w] = -1.0
            n = self.nlong[w] - 1
            self.nlong[w] = n
            if n == 0:
                self.wait[w] = 0.0
                self.long_bits &= ~(1 << w)
            else:
                self.wait[w] = max(0.0, self.wait[w] - jobs[task_job[tid]].mean_duration)


P = TypeVar("P", bound=ShortLongParams)


class ShortLongScheduler(Scheduler, Generic[P]):
    """Wiring of a hybrid scheduler: distributed schedulers, the central one, node monitors; job routing.

    Generic in its parameters ``P``: a subclass (``ShortLongScheduler[HawkParams]``) builds its
    frontends and node monitors from its own ``Params``.
    """

    Params = ShortLongParams

    def __init__(self, ctx: SchedulerContext, params: P) -> None:
        super().__init__(ctx, params)
        require_slot_mode(ctx, self.name)
        n = ctx.cluster.n
        self.sampler = EligibleSampler(ctx.cluster.machine_masks)
        reserved = round(params.reserve * n)
        self.short_only = (1 << reserved) - 1  # the short partition: the lowest ids
        self.general = self.sampler.all & ~self.short_only
        self.first_general = reserved
        self.frontends = [self.make_frontend(i, ctx, params) for i in range(params.schedulers)]
        self.central = self.make_central(len(self.frontends), ctx)
        addresses = [f.address for f in self.frontends] + [CENTRAL]
        self.monitors = self.make_monitors(ctx, addresses, params)
        self.cutoff = params.cutoff
        self.long_jobs = 0

    def make_frontend(self, i: int, ctx: SchedulerContext, params: P) -> ProbeScheduler:
        raise NotImplementedError

    def make_central(self, index: int, ctx: SchedulerContext) -> LeastWaitScheduler:
        return LeastWaitScheduler(index, ctx, self.sampler, self.general, f"{self.name}:central")

    def make_monitors(self, ctx: SchedulerContext, addresses: list[object], params: P) -> NodeMonitors:
        raise NotImplementedError

    def submit(self, job: Job) -> None:
        est = job.mean_duration
        if est >= self.cutoff:
            self.long_jobs += 1
            self.central.submit(job, est)
        else:
            self.frontends[job.jid % len(self.frontends)].submit(job, est)

    def counters(self) -> dict[str, int]:
        out: dict[str, int] = {"long_jobs": self.long_jobs, "long_probes": self.central.probes}
        for f in self.frontends:
            for k, v in f.counters().items():
                out[k] = out.get(k, 0) + v
        out["get_task_requests"] = out.get("get_task_requests", 0) + self.central.get_task_requests
        out.update(self.monitors.counters())
        return out
