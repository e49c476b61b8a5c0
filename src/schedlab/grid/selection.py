"""Decentralized global-job schedulers: site ranking, remote submission delay, duplication-validation.

Sections II and III-A of the paper. A global job's scheduler (one per user or
application in the paper's SGR framework; one component here that treats each
job on its own and shares nothing between jobs but the load information) does:

1. **Query** the sites' load. By default the figures are read when the job
   arrives (``query_interval = 0``: the paper's model, where staleness comes
   only from the delay); with ``query_interval > 0`` they are refreshed every
   that many seconds and every job ranks by the latest refresh.
2. **Rank** the sites and pick ``1 + duplications`` distinct ones:

   ============  ===============================================================
   ``rand``      uniformly random sites
   ``qlen``      fewest waiting jobs
   ``util``      lowest share of busy processors
   ``est_qt``    least outstanding work by estimated runtimes (Est.QT)
   ``act_qt``    least outstanding work by actual runtimes (Act.QT, the ideal's)
   ``hybrid1``   the top site by queue length, the other copies at random sites
   ``hybrid2``   the top two sites by queue length, the other copies at random
   ============  ===============================================================

   Act.QT with zero delay and no duplication is the paper's *ideal*, the
   reference of Eq. (1). It balances outstanding work exactly, with actual
   runtimes, but it is a greedy rule, not an optimum: a job still waits behind
   whatever its site holds, and duplication — which lets a job start wherever
   processors free up first — can beat it (a negative gap).

   Ranked schedulers with duplications take the top ``1 + duplications`` sites.
   So Hybrid-1 with 0 duplications is Qlen, and Hybrid-2 with 0 or 1
   duplications is Qlen with as many — as the paper observes ("Hybrid-2
   behaves the same way as Qlen, unless 2 or more duplications are used").
   *Duplications* count the copies beyond the first (7 = flooding 8 sites).
   Ties (idle sites all have queue length 0) are broken by site order
   (``tie_break="first"``, the default) or uniformly at random
   (``"random"``). Our reading: the paper's schedulers rank the same load
   figures the same way — "multiple global jobs arriving within the period of
   delay could be scheduled to the same top-ranked site" — which a per-job
   random tie-break would hide by spreading a burst over the tied sites.
3. **Hold** the job for the remote submission delay (Section II-A), then
   submit a copy to each chosen site at once.
4. **Validate**: the first copy to reach its start wins; the site asks the
   scheduler before starting it (:meth:`GlobalScheduler.validate`) and the
   scheduler invalidates the other copies at once, which frees their
   reservations. The paper charges "the system penalty (e.g., 1 second) … for
   each duplication invalidation" without saying to whom; we charge it to the
   job: the winning copy holds its processors while its ``duplications`` other
   copies are invalidated one after another, ``penalty`` seconds each, before
   the job runs. Because the number of copies is known at submission, every
   copy asks the site for ``estimate + duplications × penalty`` (and runs
   ``runtime + duplications × penalty``), which keeps the sites' backfilling
   guarantees. A job's queue time is therefore its execution start minus its
   arrival: delay + wait in the winning queue + invalidation penalties.

The component is sans-IO (:class:`~schedlab.sim.runtime.Component`): time,
timers and randomness come from the runtime. The sites are reached through a
narrow in-process interface — ``load(criterion, now)``, ``submit(entry)``,
``cancel(entry)`` — and call back ``validate``; a networked runtime would carry
these as messages. Direct calls keep the hot path lean and model the paper's
instantaneous query (its staleness is the explicit delay).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schedlab.errors import InputError
from schedlab.grid.site import Entry, Site
from schedlab.sim.runtime import Component, Runtime

TIE_BREAKS = ("random", "first")


@dataclass(frozen=True, slots=True)
class Ranking:
    """How a scheduler picks sites: the load ``criterion`` it ranks by (None: no ranking) and how many copies go to
    the top-ranked sites (``ranked``; None: all of them), the rest to random other sites."""

    label: str  # the paper's name, for tables and plots
    kind: str  # random | ranked | hybrid
    summary: str
    criterion: str | None
    ranked: int | None


#: The decentralized schedulers of the paper (Sections II-B, III-A), in its order; the registry with their
#: parameters is :data:`schedlab.grid.simulation.SCHEDULERS`.
RANKINGS: dict[str, Ranking] = {
    "rand": Ranking("Rand", "random", "uniformly random sites", None, 0),
    "qlen": Ranking("Qlen", "ranked", "fewest waiting jobs", "qlen", None),
    "util": Ranking("Util", "ranked", "lowest share of busy processors", "util", None),
    "est_qt": Ranking("Est.QT", "ranked", "least outstanding work by estimated runtimes", "est_qt", None),
    "act_qt": Ranking("Act.QT", "ranked", "least outstanding work by actual runtimes (the ideal's)", "act_qt", None),
    "hybrid1": Ranking("Hybrid-1", "hybrid", "the top site by queue length, the other copies at random", "qlen", 1),
    "hybrid2": Ranking("Hybrid-2", "hybrid", "the top two sites by queue length, the other copies at random", "qlen", 2),
}

#: The paper's names, for tables and plots.
LABELS = {name: r.label for name, r in RANKINGS.items()}


def check_scheduler(name: str, field: str = "scheduler") -> str:
    if name not in RANKINGS:
        raise InputError(field, f"unknown scheduler {name!r} (choose from {', '.join(RANKINGS)})")
    return name


def choose_sites(
    scheduler: str,
    loads: Sequence[float] | None,
    copies: int,
    rng: random.Random,
    tie_break: str = "first",
    sites: int | None = None,
) -> list[int]:
    """The ``copies`` distinct sites a job goes to, best-ranked first (a pure function of its inputs)."""
    rule = RANKINGS[scheduler]
    criterion, ranked = rule.criterion, rule.ranked
    n = len(loads) if loads is not None else sites
    assert n is not None
    if ranked is None or ranked > copies:
        ranked = copies
    chosen: list[int] = []
    if criterion is not None and ranked > 0:
        assert loads is not None
        if tie_break == "random":
            order = sorted(range(n), key=lambda i: (loads[i], rng.random()))
        else:
            order = sorted(range(n), key=lambda i: (loads[i], i))
        chosen = order[:ranked]
    rest = copies - len(chosen)
    if rest > 0:
        others = [i for i in range(n) if i not in chosen] if chosen else list(range(n))
        chosen += rng.sample(others, rest)
    return chosen


class GlobalJob:
    """A global job and the fate of its copies."""

    __slots__ = ("index", "arrival", "size", "estimate", "runtime", "copies", "start", "site", "sites")

    def __init__(self, index: int, arrival: float, size: int, estimate: float, runtime: float) -> None:
        self.index = index
        self.arrival = arrival
        self.size = size
        self.estimate = estimate
        self.runtime = runtime
        self.copies: list[tuple[Site, Entry]] | None = None
        self.start = -1.0  # execution start; -1 while not started
        self.site = -1
        self.sites: list[int] = []


@dataclass(frozen=True)
class GlobalJobArrival:
    """Message form of a global job's arrival, for runtimes that deliver messages."""

    job: GlobalJob


class GlobalScheduler(Component):
    """Ranks sites for each global job, waits the submission delay, submits its copies, validates the first start."""

    def __init__(
        self,
        address: Any,
        runtime: Runtime,
        sites: Sequence[Site],
        scheduler: str,
        duplications: int = 0,
        delay: float = 1.0,
        penalty: float = 1.0,
        query_interval: float = 0.0,
        tie_break: str = "first",
    ) -> None:
        check_scheduler(scheduler)
        if not 0 <= duplications < len(sites):
            raise InputError("duplications", f"must be in 0..{len(sites) - 1} with {len(sites)} sites, got {duplications}")
        if not delay >= 0:
            raise InputError("delay", f"must be >= 0, got {delay}")
        if not penalty >= 0:
            raise InputError("penalty", f"must be >= 0, got {penalty}")
        if not query_interval >= 0:
            raise InputError("query_interval", f"must be >= 0, got {query_interval}")
        if tie_break not in TIE_BREAKS:
            raise InputError("tie_break", f"unknown tie break {tie_break!r} (choose from {', '.join(TIE_BREAKS)})")
        super().__init__(address, runtime)
        self.sites = list(sites)
        self.scheduler = scheduler
        self.criterion = RANKINGS[scheduler].criterion
        self.copies = duplications + 1
        self.delay = delay
        self.extra = duplications * penalty  # invalidation time a started job pays before running
        self.query_interval = query_interval
        self.tie_break = tie_break
        self.rng = runtime.rng("grid:select")
        self.snapshot: list[float] | None = None
        self.arrivals_left = 0
        self.copies_submitted = 0
        self.invalidations = 0
        self.refused = 0
        self.queries = 0

    def handlers(self) -> dict[type, Any]:
        return {GlobalJobArrival: lambda msg: self.on_arrival(msg.job)}

    # -- load information -----------------------------------------------------------------------
    def start(self, expected_jobs: int) -> None:
        """Begin periodic load queries (if any) for a stream of ``expected_jobs`` arrivals."""
        self.arrivals_left = expected_jobs
        if self.query_interval > 0 and self.criterion is not None and expected_jobs > 0:
            self._refresh()

    def _refresh(self) -> None:
        now = self.rt.now()
        crit = self.criterion
        assert crit is not None  # refreshes run only for ranking schedulers (start)
        self.snapshot = [s.load(crit, now) for s in self.sites]
        self.queries += 1
        if self.arrivals_left > 0:
            self.rt.call_later(self.query_interval, self._refresh)

    def _loads(self, now: float) -> list[float] | None:
        crit = self.criterion
        if crit is None:
            return None
        if self.query_interval > 0 and self.snapshot is not None:
            return self.snapshot
        self.queries += 1
        return [s.load(crit, now) for s in self.sites]

    # -- a job's life ---------------------------------------------------------------------------
    def on_arrival(self, job: GlobalJob) -> None:
        self.arrivals_left -= 1
        loads = self._loads(self.rt.now())
        chosen = choose_sites(self.scheduler, loads, self.copies, self.rng, self.tie_break, len(self.sites))
        job.sites = chosen
        if self.delay > 0:
            self.rt.call_later(self.delay, self._submit, job, chosen)
        else:
            self._submit(job, chosen)

    def _submit(self, job: GlobalJob, chosen: list[int]) -> None:
        extra = self.extra
        copies = []
        for i in chosen:
            site = self.sites[i]
            e = Entry(job.size, job.estimate + extra, job.runtime + extra, -1, self)
            e.job = job
            copies.append((site, e))
        job.copies = copies
        self.copies_submitted += len(copies)
        for site, e in copies:
            site.submit(e)

    def validate(self, entry: Entry, site: Site, now: float) -> bool:
        """A copy of ``entry.job`` is about to start at ``site``: allow the first, invalidate the others."""
        job: GlobalJob = entry.job
        if job.start >= 0:
            self.refused += 1
            return False
        job.start = now + self.extra
        job.site = site.index
        copies = job.copies
        job.copies = None
        if copies is not None and len(copies) > 1:
            for other, e in copies:
                if e is not entry:
                    other.cancel(e)
                    self.invalidations += 1
        return True
