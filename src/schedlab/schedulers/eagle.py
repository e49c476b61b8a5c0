"""``eagle``: hybrid scheduling with succinct state sharing, sticky batch probing and SRPT queues (sans-IO).

P. Delgado, D. Didona, F. Dinu, W. Zwaenepoel, "Job-aware Scheduling in Eagle:
Divide and Stick to Your Probes", SoCC 2016. On top of the hybrid design
(:mod:`~schedlab.schedulers.short_long`), Eagle adds:

* **Succinct State Sharing (SSS)**: the centralized scheduler keeps a bit
  vector of the workers holding long tasks (queued or running) and ships it
  with every long task it places. A short job's probe that reaches a worker
  with long work is *rejected*: the worker sends it back to its scheduler with
  the vector it last received; the scheduler keeps the freshest vector it has
  seen and re-sends the probe to a random eligible worker outside it. After
  ``sss_rounds`` rejections the probe goes to the short partition, where it is
  accepted. Short jobs thus never queue behind long ones (no head-of-line
  blocking), and long-occupied workers are avoided.
* **Sticky Batch Probing (SBP)**: a probe that got a task stays at its worker;
  when the task ends, the worker asks the same job for another task (if the
  job still had tasks to launch when it last heard), so a job's probes keep
  serving it until its last task is launched.
* **SRPT queues with starvation prevention**: a freed worker serves the queued
  short probe whose job has the least remaining estimated work (estimated task
  duration × tasks still to launch), but may bypass a queued probe only while
  the work that already bypassed it stays within ``srpt_cap`` (5) times its
  own task's estimated duration.

Choices where the paper is silent (most follow the authors' simulator):

* Short jobs send at least ``min_probes`` (20) probes; the first probes of a
  job go to random eligible workers anywhere; the long-work vector is used
  only for re-sent probes (the simulator forgets it between jobs, so stale
  vectors cannot shrink the choice for good), up to 5 rounds.
* A worker serves a queued long probe before any short one (the simulator
  does; with SSS short probes only share a queue with a long one that arrived
  after them).
* The remaining work a worker uses for SRPT is what the probe carried when it
  was sent, updated by each task reply for that probe (the scheduler's count);
  a job whose last task has been launched drops its probes (proactive
  cancellation and the sticky probe's own reply), as the simulator's workers
  drop probes of fully scheduled jobs.
* No work stealing (the simulator's Eagle configuration).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from schedlab.schedulers.base import SchedulerContext
from schedlab.schedulers.probing import (
    NODE_MONITORS,
    EligibleSampler,
    NodeMonitors,
    Probe,
    Probes,
    ProbeScheduler,
)
from schedlab.schedulers.short_long import (
    LeastWaitScheduler,
    ShortLongParams,
    ShortLongScheduler,
    distributed_address,
)


class EagleParams(ShortLongParams):
    min_probes: int = Field(20, ge=0, description="at least this many probes per short job")
    sss: bool = Field(True, description="succinct state sharing: short probes avoid workers with long work")
    sss_rounds: int = Field(5, ge=0, description="rejections before a probe goes to the short partition")
    sbp: bool = Field(True, description="sticky batch probing")
    srpt: bool = Field(True, description="SRPT order in worker queues (else FIFO)")
    srpt_cap: float = Field(5.0, ge=0, description="starvation bound: bypassed work ≤ cap × the probe's task estimate")


@dataclass(slots=True)
class LongProbes(Probes):
    """Central scheduler → node monitors: long tasks' probes, with the long-work bit vector as of now."""

    bitmap: int = 0
    stamp: float = 0.0


@dataclass(slots=True)
class ProbesRejected:
    """Node monitors → a distributed scheduler: ``(entry, bit vector, its time)`` probes sent back."""

    items: list[tuple[Probe, int, float]]


class EagleCentral(LeastWaitScheduler):
    def probes_message(self, items: list[tuple[int, Probe]]) -> Probes:
        return LongProbes(items, self.long_bits, self.rt.now())


class EagleFrontend(ProbeScheduler):
    """A distributed scheduler that re-sends rejected probes away from long work."""

    def __init__(self, i: int, ctx: SchedulerContext, sampler: EligibleSampler, params: EagleParams, short_only: int) -> None:
        super().__init__(
            i,
            distributed_address(i),
            ctx,
            sampler,
            probe_ratio=params.probe_ratio,
            min_probes=params.min_probes,
            cancel=params.cancel,
            rng_name=f"eagle:{i}",
        )
        self.sticky = params.sbp
        self.tell_remaining = True
        self.rounds = params.sss_rounds
        self.short_only = short_only
        self.long_map = 0
        self.map_stamp = float("-inf")
        self.resent = 0

    def handlers(self):
        return {**super().handlers(), ProbesRejected: self._on_rejected}

    def _on_rejected(self, msg: ProbesRejected) -> None:
        now = self.rt.now()
        for e, bits, stamp in msg.items:
            e.comm += now - e.stamp
            if stamp > self.map_stamp:
                self.long_map, self.map_stamp = bits, stamp
        jobs = self.book.jobs
        sample = self.sampler.sample
        everyone = self.sampler.all
        items: list[tuple[int, Probe]] = []
        for e, _bits, _stamp in msg.items:
            if e.jid not in jobs:  # all its tasks launched meanwhile: the probe is spent
                continue
            e.tries += 1
            m = e.mask
            ws = sample(m, 1, self.rng, everyone & ~self.long_map) if e.tries < self.rounds else []
            if not ws:
                ws = sample(m, 1, self.rng, self.short_only) or sample(m, 1, self.rng)
            e.stamp = now
            items.append((ws[0], e))
        if items:
            self.resent += len(items)
            self.rt.send(NODE_MONITORS, Probes(items))

    def counters(self) -> dict[str, int]:
        return {**super().counters(), "probes_resent": self.resent}


class EagleNodeMonitors(NodeMonitors):
    """Node monitors that reject short probes where long work is, order queues by SRPT and keep sticky probes."""

    def __init__(self, ctx: SchedulerContext, sched_addresses: list[object], params: EagleParams) -> None:
        super().__init__(ctx, sched_addresses)
        self.sss = params.sss
        self.rounds = params.sss_rounds
        self.sbp = params.sbp
        self.srpt = params.srpt
        self.cap = params.srpt_cap
        self.maps: list[tuple[int, float]] = [(0, float("-inf"))] * self.n
        self._rej: dict[int, list[tuple[Probe, int, float]]] = {}
        self.rejected = 0
        self.sticky_runs = 0

    filters = True

    def handlers(self):
        return {**super().handlers(), LongProbes: self._on_long_probes}

    def _on_long_probes(self, msg: LongProbes) -> None:
        now = self.rt.now()
        snap = (msg.bitmap, msg.stamp)
        maps = self.maps
        for w, e in msg.items:
            maps[w] = snap
            self.arrive(w, e, now)
        self.flush()

    def accept(self, w: int, e: Probe, now: float) -> bool:
        if not self.sss or e.long or not self.longs[w] or e.tries >= self.rounds:
            return True
        self.rejected += 1
        e.stamp = now
        bits, stamp = self.maps[w]
        lst = self._rej.get(e.sched)
        if lst is None:
            self._rej[e.sched] = [(e, bits, stamp)]
        else:
            lst.append((e, bits, stamp))
        return False

    def flush(self) -> None:
        super().flush()
        if self._rej:
            send = self.rt.send
            for s, items in self._rej.items():
                send(self.sched_addr[s], ProbesRejected(items))
            self._rej = {}

    def pick(self, w: int) -> Probe | None:
        q = self.queues[w]
        if not q:
            return None
        if not self.srpt:
            return NodeMonitors.pick(self, w)
        cancelled = self.cancelled
        best = -1
        best_rem = float("inf")
        slack = float("inf")  # least slack of the short probes in front of the current one
        cap = self.cap
        i = 0
        while i < len(q):
            e = q[i]
            if e.jid in cancelled:
                del q[i]
                self.cancelled_probes += 1
                continue
            if e.long:
                best = i
                break
            if e.rem < best_rem and e.est <= slack:
                best, best_rem = i, e.rem
            s = cap * e.est - e.acc
            if s < slack:
                slack = s
            i += 1
        if best < 0:
            return None
        e = q[best]
        del q[best]
        if not e.long:
            est = e.est
            for j in range(best):
                q[j].acc += est
        return e

    def after_task(self, w: int, e: Probe, now: float) -> None:
        if self.sbp and not e.long and e.rem > 0 and e.jid not in self.cancelled:
            self.queues[w].appendleft(e)  # the probe sticks: its job comes first in line again
            self.sticky_runs += 1

    def counters(self) -> dict[str, int]:
        return {**super().counters(), "probes_rejected": self.rejected, "sticky_requeues": self.sticky_runs}


class EagleScheduler(ShortLongScheduler[EagleParams]):
    name = "eagle"
    summary = "hybrid: central least-wait for long jobs; SSS, sticky batch probing, SRPT queues for short ones (Eagle)"
    Params = EagleParams

    def make_frontend(self, i: int, ctx: SchedulerContext, params: EagleParams) -> ProbeScheduler:
        return EagleFrontend(i, ctx, self.sampler, params, self.short_only)

    def make_central(self, index: int, ctx: SchedulerContext) -> LeastWaitScheduler:
        return EagleCentral(index, ctx, self.sampler, self.general, f"{self.name}:central")

    def make_monitors(self, ctx: SchedulerContext, addresses: list[object], params: EagleParams) -> NodeMonitors:
        return EagleNodeMonitors(ctx, addresses, params)
