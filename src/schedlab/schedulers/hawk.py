"""``hawk``: hybrid scheduling with randomized work stealing (sans-IO).

P. Delgado, F. Dinu, A.-M. Kermarrec, W. Zwaenepoel, "Hawk: Hybrid Datacenter
Scheduling", USENIX ATC 2015. On top of the hybrid design
(:mod:`~schedlab.schedulers.short_long`: centralized least-waiting-time placement
of long jobs in the general partition, Sparrow-style probing for short jobs
anywhere, a partition reserved for short jobs), Hawk adds:

* FIFO worker queues (Sparrow's node monitors), short and long probes mixed.
* **Randomized work stealing**: a worker that becomes free with nothing queued
  contacts a random worker of the general partition; if that worker's queue
  holds short probes stuck behind a long task, the idle worker takes them.
  Which ones follows the authors' simulator ("ATC" strategy): skip the short
  probes at the head of the victim's queue (unless it is running a long task),
  then the long ones, and take the consecutive short probes after them (at most
  ``steal_limit``). On failure it tries another random worker, up to
  ``steal_attempts`` (10) times, while it stays idle.

Choices where the paper is silent: each steal attempt is a message round trip
(request, then the reply carrying the stolen probes), where the authors'
simulator steals instantly; a worker that stops being idle stops stealing;
stolen probes are only those the thief can run (constraints), the others stay.
Attempts that nobody could answer positively — no worker anywhere holds both
long work and queued short probes — are counted but draw no victim (their
outcome cannot depend on it), which keeps idle workers' stealing cheap to
simulate. Counters: ``steal_attempts``, ``steals`` (successful attempts),
``stolen_probes``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from pydantic import Field

from schedlab.schedulers.base import SchedulerContext
from schedlab.schedulers.probing import (
    IDLE,
    NODE_MONITORS,
    NodeMonitors,
    Probe,
    ProbeScheduler,
)
from schedlab.schedulers.short_long import (
    ShortLongParams,
    ShortLongScheduler,
    distributed_address,
)


class HawkParams(ShortLongParams):
    min_probes: int = Field(2, ge=0, description="at least this many probes per short job")
    steal_attempts: int = Field(10, ge=0, description="workers an idle worker contacts before giving up (0: no stealing)")
    steal_limit: int = Field(10000, ge=1, description="most probes taken in one steal")


@dataclass(slots=True)
class StealRequests:
    """Idle workers → random victims: round ``attempt`` of stealing (``thieves``)."""

    thieves: list[int]
    attempt: int


@dataclass(slots=True)
class StealReplies:
    """Victims → thieves: the probes each thief got (``stolen``: thief → entries), for the ``thieves`` of the round."""

    thieves: list[int]
    stolen: dict[int, list[Probe]]
    attempt: int


class HawkNodeMonitors(NodeMonitors):
    """FIFO node monitors that steal short probes queued behind long tasks."""

    def __init__(self, ctx: SchedulerContext, sched_addresses: list[object], params: HawkParams, first_general: int) -> None:
        super().__init__(ctx, sched_addresses)
        self.attempts = params.steal_attempts
        self.limit = params.steal_limit
        self.first_general = first_general
        self.rng = ctx.runtime.rng("hawk:steal")
        self.masks = ctx.cluster.machine_masks
        self.shorts = [0] * self.n  # short probes queued at each worker
        self.both = bytearray(self.n)  # the worker holds long work and queued short probes
        self.num_both = 0
        self._thieves: list[int] = []
        self.steal_attempts = 0
        self.steals = 0
        self.stolen_probes = 0

    def handlers(self):
        return {**super().handlers(), StealRequests: self._on_steal_requests, StealReplies: self._on_steal_replies}

    # -- keeping track of who could be stolen from -------------------------------------------------
    def _update(self, w: int) -> None:
        b = 1 if self.longs[w] and self.shorts[w] else 0
        if b != self.both[w]:
            self.both[w] = b
            self.num_both += 1 if b else -1

    def arrive(self, w: int, e: Probe, now: float) -> None:
        super().arrive(w, e, now)
        if e.long:
            self._update(w)

    def enqueue(self, w: int, e: Probe) -> None:
        self.queues[w].append(e)
        if not e.long:
            self.shorts[w] += 1
            self._update(w)

    def pick(self, w: int) -> Probe | None:
        q = self.queues[w]
        before = len(q)
        e = super().pick(w)
        # what left the queue: cancelled probes (short ones: long jobs are never cancelled) and e
        gone = before - len(q) - (1 if e is not None and e.long else 0)
        if gone:
            self.shorts[w] -= gone
            self._update(w)
        return e

    def after_task(self, w: int, e: Probe, now: float) -> None:
        if e.long:
            self._update(w)

    # -- stealing --------------------------------------------------------------------------------
    def on_idle(self, w: int, now: float) -> None:
        if self.attempts:
            self._thieves.append(w)

    def flush(self) -> None:
        super().flush()
        if self._thieves:
            self.rt.send(NODE_MONITORS, StealRequests(self._thieves, 1))
            self._thieves = []

    def _take(self, victim: int, thief: int) -> list[Probe]:
        """The authors' "ATC" choice of probes to steal from ``victim`` (only those ``thief`` can run)."""
        q = self.queues[victim]
        n = len(q)
        i = 0
        if not self.cur_long[victim]:
            while i < n and not q[i].long:
                i += 1
        while i < n and q[i].long:
            i += 1
        j = i
        lacking = ~self.masks[thief]
        taken: list[Probe] = []
        kept: list[Probe] = []
        cancelled = self.cancelled
        while j < n and not q[j].long and len(taken) < self.limit:
            e = q[j]
            if e.jid in cancelled:
                self.cancelled_probes += 1
            elif e.mask & lacking:
                kept.append(e)
            else:
                taken.append(e)
            j += 1
        if j > i:
            items = list(q)
            self.queues[victim] = deque(items[:i] + kept + items[j:])
            self.shorts[victim] -= j - i - len(kept)
            self._update(victim)
        return taken

    def _on_steal_requests(self, msg: StealRequests) -> None:
        now = self.rt.now()
        thieves = msg.thieves
        self.steal_attempts += len(thieves)
        stolen: dict[int, list[Probe]] = {}
        if self.num_both:
            lo, span = self.first_general, self.n - self.first_general
            r = self.rng.random
            for t in thieves:
                if span <= 0:
                    break
                victim = lo + int(r() * span)
                if victim == t or not self.both[victim]:
                    continue
                got = self._take(victim, t)
                if got:
                    for e in got:
                        e.stamp = now  # the reply leaves now
                    stolen[t] = got
        self.rt.send(NODE_MONITORS, StealReplies(thieves, stolen, msg.attempt))

    def _on_steal_replies(self, msg: StealReplies) -> None:
        now = self.rt.now()
        stolen = msg.stolen
        state = self.state
        for t, got in stolen.items():
            self.steals += 1
            self.stolen_probes += len(got)
            for e in got:
                self.arrive(t, e, now)
        again: list[int] = []
        if msg.attempt < self.attempts:
            # still idle after this round: try another worker
            if stolen:
                again = [t for t in msg.thieves if state[t] == IDLE and t not in stolen]
            else:
                again = [t for t in msg.thieves if state[t] == IDLE]
        self.flush()
        if again:
            self.rt.send(NODE_MONITORS, StealRequests(again, msg.attempt + 1))

    def counters(self) -> dict[str, int]:
        return {
            **super().counters(),
            "steal_attempts": self.steal_attempts,
            "steals": self.steals,
            "stolen_probes": self.stolen_probes,
        }


class HawkScheduler(ShortLongScheduler[HawkParams]):
    name = "hawk"
    summary = "hybrid: central least-wait for long jobs, probing for short ones, short partition, work stealing (Hawk)"
    Params = HawkParams

    def make_frontend(self, i: int, ctx: SchedulerContext, params: HawkParams) -> ProbeScheduler:
        return ProbeScheduler(
            i,
            distributed_address(i),
            ctx,
            self.sampler,
            probe_ratio=params.probe_ratio,
            min_probes=params.min_probes,
            cancel=params.cancel,
            rng_name=f"hawk:{i}",
        )

    def make_monitors(self, ctx: SchedulerContext, addresses: list[object], params: HawkParams) -> NodeMonitors:
        return HawkNodeMonitors(ctx, addresses, params, self.first_general)
