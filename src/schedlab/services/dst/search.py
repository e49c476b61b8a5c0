"""A search over fault schedules: many seeds, each run checked, a failing one shrunk and printed to replay.

``schedlab dst --seeds N`` runs schedules ``start .. start+N-1``
(:func:`search`): for each seed, a workload, a fault schedule and whether the
LMs have standbys — on their LM's host, or on hosts of their own — are drawn
(:func:`schedule_for`), the cluster runs it
(:mod:`.world`) and :mod:`.invariants` judges it. A failing schedule is
printed with the command that replays it bit for bit, then **shrunk**
(:func:`shrink`): faults are taken out one at a time and the workload cut to
its first jobs while the same invariant still fails, until nothing more can go
— a minimal schedule, with its own replay command.

Runs are independent, so ``--jobs`` spreads them over processes; the verdicts
do not depend on it.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from schedlab.services.dst.faults import KINDS, Fault, draw_schedule, schedule_text
from schedlab.services.dst.invariants import INVARIANTS, check, trapped_end_reruns
from schedlab.services.dst.world import Setup, World, draw_jobs, quiet_logs
from schedlab.services.nodes import Plan


@dataclass(frozen=True)
class Schedule:
    """One run: the seed of everything random in it, its faults, how many of the workload's jobs, standbys or not."""

    seed: int
    faults: tuple[Fault, ...]
    jobs: int
    standby: bool
    elsewhere: bool = False  # each standby on a host of its own (no port fences it: the fencing tokens do)

    def with_standbys(self, standby: bool | None, elsewhere: bool | None) -> Schedule:
        """This schedule with its standbys fixed instead of drawn (None: as drawn); standbys elsewhere are standbys."""
        on = (self.standby if standby is None else standby) or bool(elsewhere)
        return replace(self, standby=on, elsewhere=on and (self.elsewhere if elsewhere is None else elsewhere))

    def command(self, setup: Setup) -> str:
        """The command line that replays this schedule bit for bit."""
        # the workload is drawn for setup.jobs jobs (their arrivals spread over its window), then cut to the first
        # self.jobs (a shrunk schedule): both are needed to replay it
        cut = [f"--first-jobs {self.jobs}"] if self.jobs != setup.jobs else []
        parts = ["schedlab dst", f"--seed {self.seed}", f"--jobs {setup.jobs}", *cut, "--standby" if self.standby else "--no-standby",
                 *(["--standby-elsewhere"] if self.elsewhere else []), f"--schedule '{schedule_text(list(self.faults))}'"]
        if setup.workers_per_host != Setup.workers_per_host:
            parts.append(f"--workers-per-host {setup.workers_per_host}")
        return " ".join(parts)


@dataclass
class Verdict:
    schedule: Schedule
    violations: dict[str, list[str]]
    sim_time: float
    events: int
    trapped: int = 0  # reruns after an end trapped on a cut-off host: allowed, counted (invariants.trapped_end)

    @property
    def ok(self) -> bool:
        return not self.violations


@dataclass
class Summary:
    """What a search found: per-invariant counts of failing schedules, and the failing seeds."""

    seeds: int = 0
    violations: dict[str, int] = field(default_factory=lambda: dict.fromkeys(INVARIANTS, 0))
    failing: list[Verdict] = field(default_factory=list)
    seconds: float = 0.0
    sim_seconds: float = 0.0
    events: int = 0
    interrupted: bool = False  # stopped (Ctrl-C, SIGTERM) before every seed ran: the counts are over the seeds that did
    trapped_end_reruns: list[int] = field(default_factory=list)  # seeds with a rerun the invariants allow (see Verdict)

    def add(self, v: Verdict) -> None:
        self.seeds += 1
        if v.trapped:
            self.trapped_end_reruns.append(v.schedule.seed)
        self.sim_seconds += v.sim_time
        self.events += v.events
        if not v.ok:
            self.failing.append(v)
            for name in v.violations:
                self.violations[name] = self.violations.get(name, 0) + 1

    def json(self) -> dict[str, Any]:
        return {"seeds": self.seeds, "violations": self.violations, "failing_seeds": [v.schedule.seed for v in self.failing],
                "seconds": round(self.seconds, 3), "schedules_per_second": round(self.seeds / self.seconds, 1) if self.seconds else None,
                "simulated_seconds": round(self.sim_seconds, 1), "events": self.events,
                "interrupted": self.interrupted, "trapped_end_reruns": self.trapped_end_reruns}


# seeds handed to a worker process at a time: small, so a stop waits for a few schedules only (a schedule is
# ~0.1 s; the pool's per-chunk cost is far below that)
CHUNK = 4

_PLANS: dict[Setup, Plan] = {}


def plan_of(setup: Setup) -> Plan:
    """The cluster of ``setup``, built once per process (every run only reads it)."""
    plan = _PLANS.get(setup)
    if plan is None:
        plan = _PLANS[setup] = setup.plan()
    return plan


def schedule_for(seed: int, setup: Setup, kinds: tuple[str, ...] = KINDS) -> Schedule:
    """The schedule seed ``seed`` draws: standbys or not, then 1 to 6 faults; standbys here or elsewhere."""
    rng = random.Random(f"{seed}:schedule")
    standby = rng.random() < 0.5
    # from a stream of its own, so the faults each seed drew before standbys could be elsewhere stay the same
    elsewhere = standby and random.Random(f"{seed}:standby-host").random() < 0.5
    plan = plan_of(setup)
    hosts_of_lm: dict[int, list[int]] = {}
    for h, lm in plan.hosts.items():
        hosts_of_lm.setdefault(lm, []).append(h)
    faults = draw_schedule(rng, plan.num_gms, plan.num_lms, hosts_of_lm, kinds)
    return Schedule(seed, tuple(faults), setup.jobs, standby, elsewhere)


def run(schedule: Schedule, setup: Setup) -> Verdict:
    """Run one schedule and judge it."""
    plan = plan_of(setup)
    jobs = draw_jobs(random.Random(f"{schedule.seed}:workload"), setup)[: schedule.jobs]
    obs = World(schedule.seed, list(schedule.faults), setup, plan, schedule.standby, jobs, schedule.elsewhere).run()
    return Verdict(schedule, check(obs), obs.sim_time, obs.events, trapped_end_reruns(obs))


def _run_seed(args: tuple[int, Setup, tuple[str, ...]]) -> Verdict:
    seed, setup, kinds = args
    return run(schedule_for(seed, setup, kinds), setup)


def _init_worker() -> None:
    # Ctrl-C reaches the whole process group: only the parent decides to stop (and keeps what ran)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet_logs()


def search(seeds: Iterable[int], setup: Setup, kinds: tuple[str, ...] = KINDS, workers: int = 1,
           progress: Callable[[Verdict], None] | None = None) -> Summary:
    """Run every seed's schedule; ``progress(verdict)`` after each (in seed order).

    A ``KeyboardInterrupt`` (Ctrl-C, or raised by ``progress`` on SIGTERM) stops the search: the summary of the
    seeds that ran comes back marked ``interrupted``, and no worker process is left running.
    """
    summary = Summary()
    t0 = time.perf_counter()
    todo = [(s, setup, kinds) for s in seeds]
    try:
        if workers <= 1:
            quiet_logs()
            for a in todo:
                v = _run_seed(a)
                summary.add(v)
                if progress is not None:
                    progress(v)
        else:
            pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker)
            try:
                for v in pool.map(_run_seed, todo, chunksize=CHUNK):
                    summary.add(v)
                    if progress is not None:
                        progress(v)
            finally:
                # not the context manager's shutdown(wait=True): on a stop it would run every queued seed first
                pool.shutdown(wait=True, cancel_futures=True)
    except KeyboardInterrupt:
        summary.interrupted = True
    summary.seconds = time.perf_counter() - t0
    return summary


def shrink(failing: Verdict, setup: Setup, budget: int = 200) -> Verdict:
    """A smaller schedule that still breaks one of the same invariants: fewer faults, then fewer jobs."""
    quiet_logs()
    target = set(failing.violations)
    best = failing
    tries = 0

    def fails(s: Schedule) -> Verdict | None:
        nonlocal tries
        tries += 1
        v = run(s, setup)
        return v if target & set(v.violations) else None

    changed = True
    while changed and tries < budget:
        changed = False
        faults = list(best.schedule.faults)
        for k in range(len(faults)):
            cand = replace(best.schedule, faults=tuple(faults[:k] + faults[k + 1:]))
            v = fails(cand)
            if v is not None:
                best, changed = v, True
                break
            if tries >= budget:
                break
        if changed:
            continue
        n = best.schedule.jobs
        for m in (n // 2, n - max(1, n // 4), n - 1):
            if 1 <= m < n:
                v = fails(replace(best.schedule, jobs=m))
                if v is not None:
                    best, changed = v, True
                    break
    return best


def default_workers() -> int:
    return max(1, min(len(os.sched_getaffinity(0)), 8))
