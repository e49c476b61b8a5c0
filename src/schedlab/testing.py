"""A kit for testing schedulers: a runtime that is not the simulator's, workers that check every start, and
:func:`check_scheduler`, the contract every registered scheduler meets.

Like scikit-learn's ``check_estimator``, :func:`check_scheduler` takes any
scheduler — a built-in name, a plugin's name, or a :class:`~schedlab.schedulers.base.Scheduler`
subclass not registered anywhere — and drives it through small workloads on
:class:`FakeRuntime` (the four Runtime calls and nothing else: no kernel, no
network model), with :class:`ContractWorkers` playing every worker. It checks
what the engine and the reproductions take for granted:

* **every task placed once** — each task of each job starts exactly once and
  its completion is learned by the scheduler (``recorder.reported``); the
  workloads hold only satisfiable tasks, since the engine drops unsatisfiable
  ones before a scheduler sees them (:mod:`schedlab.dropped`);
* **no over-allocation** — a worker slot runs one task at a time, a
  multi-resource worker never more than its capacity;
* **constraints respected** — a task runs only on a worker whose machine mask
  holds every constraint of the task's mask;
* **deterministic under a seed** — the same workload twice gives the same
  starts (task, time, worker) and the same counters;
* **counters** — :meth:`Scheduler.counters` is a flat ``{str: int}`` (it goes
  into the run's summary JSON);
* **sans-IO** — it runs on a runtime that has no kernel; a call of the wall
  clock (``time.time``, ``monotonic``, ``perf_counter``, ``sleep``) during the
  run from any code outside the standard library is a violation (logging's
  own timestamps are not).

Multi-resource mode is checked when the scheduler supports it; one that
refuses it at construction with an ``--resources`` :class:`~schedlab.errors.InputError`
(one task per slot by design: Sparrow, Pigeon) is reported as slot-only, not
failed. Choices where nothing prescribes: messages are delivered in the order
sent at the current time (zero latency: a scheduler must not depend on a
message taking time), and timers fire in (due, order set) order.
"""

from __future__ import annotations

import random
import sys
import sysconfig
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from schedlab.cluster.model import Cluster
from schedlab.errors import InputError
from schedlab.metrics.recorder import COMMUNICATION, Recorder
from schedlab.schedulers import registry
from schedlab.schedulers.base import Scheduler, SchedulerContext
from schedlab.sim.runtime import Address, Component
from schedlab.workers.protocol import (
    POOL_ADDRESS,
    LaunchBatch,
    LaunchTask,
    TaskFinished,
    TasksFinished,
)
from schedlab.workload.model import TaskTable

__all__ = ["ContractViolation", "ContractWorkers", "FakeRuntime", "SchedulerReport", "check_scheduler"]


class ContractViolation(AssertionError):
    """A scheduler broke the contract; the message names the check and the first offending task or worker."""


class FakeRuntime:
    """The Runtime protocol (``now``, ``send``, ``call_later``, ``cancel``, ``rng``) and ``register``, pumped by hand.

    ``sent`` logs every message; ``timers`` holds ``[due, order, fn, args, cancelled]`` handles. A test may read
    and clear ``sent`` with :meth:`take` and fire timers one by one (:meth:`fire_next`), or :meth:`pump` the whole run.
    """

    def __init__(self, t: float = 0.0) -> None:
        self.t = t
        self.sent: list[tuple[Any, Any]] = []
        self.timers: list[list[Any]] = []
        self.components: dict[Address, Any] = {}
        self.queue: deque[tuple[Any, Any]] = deque()
        self._seq = 0

    # -- the Runtime protocol --
    def now(self) -> float:
        return self.t

    def send(self, dst: Address, msg: Any) -> None:
        self.sent.append((dst, msg))
        self.queue.append((dst, msg))

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> list[Any]:
        self._seq += 1
        handle = [self.t + delay, self._seq, fn, args, False]
        self.timers.append(handle)
        return handle

    def cancel(self, handle: Any) -> None:
        handle[4] = True

    def rng(self, name: str) -> random.Random:
        return random.Random(name)  # a str seed is hashed with SHA-512: the same stream in every process

    def register(self, component: Any) -> None:
        if component.address in self.components:
            raise ContractViolation(f"two components registered at {component.address!r}")
        self.components[component.address] = component

    # -- driving --
    def take(self) -> list[tuple[Any, Any]]:
        """The messages sent since the last take."""
        out, self.sent = self.sent, []
        return out

    def deliver_one(self) -> None:
        """Hand the oldest undelivered message to its component's handler."""
        dst, msg = self.queue.popleft()
        component = self.components.get(dst)
        if component is None:
            raise ContractViolation(f"{type(msg).__name__} sent to {dst!r}, where no component is registered")
        handler = component.handlers().get(type(msg))
        if handler is None:
            raise ContractViolation(f"{type(msg).__name__} sent to {dst!r}, which has no handler for it")
        handler(msg)

    def fire_next(self) -> None:
        """Advance the clock to the earliest live timer and run it (cancelled ones are dropped on the way)."""
        self.timers = [h for h in self.timers if not h[4]]
        if not self.timers:
            raise ContractViolation("no timer to fire")
        h = min(self.timers, key=lambda x: (x[0], x[1]))
        self.timers.remove(h)
        self.t = max(self.t, h[0])
        h[2](*h[3])

    def pump(self, limit: int = 1_000_000, until: Callable[[], bool] | None = None) -> None:
        """Deliver every message, firing timers in time order when none is left, until nothing is left (or ``until()``)."""
        for _ in range(limit):
            if until is not None and until():
                return
            if self.queue:
                self.deliver_one()
            elif any(not h[4] for h in self.timers):
                self.fire_next()
            else:
                return
        raise ContractViolation(f"the run did not settle in {limit} steps (a timer that re-arms for ever?)")


class ContractWorkers(Component):
    """Every worker of ``cluster``: runs each task for its duration and refuses any start that breaks the contract.

    The worker protocol (:class:`LaunchTask`, :class:`LaunchBatch`) and the LocalWorkers interface
    (``start_many``, ``preempt``, ``is_running``) of the simulator's worker pool, on any Runtime.
    """

    def __init__(self, rt: FakeRuntime, cluster: Cluster, tasks: TaskTable, rec: Recorder) -> None:
        super().__init__(POOL_ADDRESS, rt)
        self.cluster, self.tasks, self.rec = cluster, tasks, rec
        self.masks = cluster.machine_masks
        self.free: list[list[float]] | None = None if cluster.capacity is None else [list(map(float, r)) for r in cluster.capacity]
        self.on_worker: dict[int, set[int]] = {}  # worker -> tids running there
        self.timers: dict[int, Any] = {}  # tid -> its end's timer
        self.starts: list[tuple[int, float, int]] = []  # (tid, time, worker), in start order
        self.busy_workers = 0

    def handlers(self) -> dict[type, Callable[[Any], None]]:
        return {LaunchTask: self._launch, LaunchBatch: self._batch}

    def allow_preemption(self) -> None:
        """The simulator's pool needs this before a preempting scheduler's first start; here it is always on."""

    def _launch(self, m: LaunchTask) -> None:
        reply_to, rt = m.reply_to, self.rt

        def finished(tid: int, w: int) -> None:
            rt.send(reply_to, TaskFinished(tid, w))

        self._start(m.tid, m.worker, finished)

    def _batch(self, m: LaunchBatch) -> None:
        rt = self.rt

        def finished(tid: int, w: int) -> None:
            for a in m.reply_to:
                rt.send(a, TasksFinished([(tid, w)]))

        for tid, w in m.items:
            self._start(tid, w, finished)

    def start_many(self, placements: list[tuple[int, int]], on_finish: Callable[[list[tuple[int, int]]], None],
                   component: int) -> None:
        for tid, w in placements:
            self._start(tid, w, lambda t, wk: on_finish([(t, wk)]), component)

    def preempt(self, tid: int, worker: int) -> None:
        if tid not in self.timers or tid not in self.on_worker.get(worker, ()):
            raise ContractViolation(f"task {tid} preempted on worker {worker}, where it is not running")
        self.rt.cancel(self.timers.pop(tid))
        self._release(tid, worker)
        self.rec.task_preempted(tid, self.rt.now())

    def is_running(self, tid: int) -> bool:
        return tid in self.timers

    def _start(self, tid: int, w: int, report: Callable[[int, int], None], component: int = COMMUNICATION) -> None:
        if not 0 <= w < len(self.masks):
            raise ContractViolation(f"task {tid} sent to worker {w}, which does not exist ({len(self.masks)} workers)")
        if tid in self.timers:
            raise ContractViolation(f"task {tid} started on worker {w} while it runs already")
        need = self.tasks.mask[tid]
        if need & ~self.masks[w]:
            raise ContractViolation(f"constraints: task {tid} needs {need:#x}, worker {w} has {self.masks[w]:#x}")
        running = self.on_worker.setdefault(w, set())
        if self.free is None:
            if running:
                raise ContractViolation(f"over-allocation: task {tid} started on worker {w} while task {min(running)} runs")
        else:
            req = self.tasks.request[tid]
            free = self.free[w]
            if any(r > f + 1e-9 for r, f in zip(req, free, strict=True)):  # type: ignore[arg-type]
                raise ContractViolation(f"over-allocation: task {tid} requests {tuple(req)} on worker {w}, free {tuple(free)}")  # type: ignore[arg-type]
            for k, r in enumerate(req):  # type: ignore[arg-type]
                free[k] -= r
        running.add(tid)
        self.busy_workers += 1
        now = self.rt.now()
        self.starts.append((tid, now, w))
        self.rec.task_started(tid, now, w, component)

        def done() -> None:
            del self.timers[tid]
            self._release(tid, w)
            self.rec.task_finished(tid, self.rt.now())
            report(tid, w)

        self.timers[tid] = self.rt.call_later(self.tasks.duration[tid], done)

    def _release(self, tid: int, w: int) -> None:
        self.on_worker[w].discard(tid)
        self.busy_workers -= 1
        if self.free is not None:
            for k, r in enumerate(self.tasks.request[tid]):  # type: ignore[arg-type]
                self.free[w][k] += r


# -- the contract ------------------------------------------------------------------------------------------------
WORKERS = 40
RESOURCES = (4.0, 4096.0)  # cores, MB per worker in the multi-resource workloads


def contract_cluster(multi: bool) -> Cluster:
    """40 workers: half without constraints, a quarter with constraint 0, a quarter with constraints 0 and 1."""
    masks = [0] * (WORKERS // 2) + [0b1] * (WORKERS // 4) + [0b11] * (WORKERS - WORKERS // 2 - WORKERS // 4)
    return Cluster.multi_resource(masks, RESOURCES) if multi else Cluster.slots(masks)


Job = tuple[float, list[float], list[int], list[tuple[float, ...]] | None]  # arrival, durations, masks, requests


def contract_jobs(seed: int, multi: bool) -> list[Job]:
    """A workload of ``seed``: 30 jobs of 1 to 40 tasks, some needing constraints, arriving over 20 s (a burst
    at the start loads the cluster past its size, so queues form)."""
    rng = random.Random(f"contract:{seed}")
    jobs: list[Job] = []
    t = 0.0
    for k in range(30):
        t += 0.0 if k < 4 else rng.expovariate(1.5)
        n = rng.choice((1, 2, 5, 10, 40))
        durations = [round(rng.uniform(0.05, 3.0), 3) for _ in range(n)]
        masks = [rng.choice((0, 0, 0, 0b1, 0b11)) for _ in range(n)]
        requests: list[tuple[float, ...]] | None = (
            [(float(rng.choice((1, 2, 4))), float(rng.choice((256, 1024, 2048)))) for _ in range(n)] if multi else None)
        jobs.append((round(t, 3), durations, masks, requests))
    return jobs


@dataclass
class SchedulerReport:
    """What :func:`check_scheduler` checked: the modes run, the tasks placed, the checks passed."""

    name: str
    modes: list[str] = field(default_factory=list)  # "slots", "multi-resource"
    unsupported: list[str] = field(default_factory=list)  # modes refused at construction, with the scheduler's reason
    tasks: int = 0
    checks: list[str] = field(default_factory=list)


@contextmanager
def _wall_clock_forbidden() -> Iterator[list[str]]:
    """Record every wall-clock call made during the run from code outside the standard library.

    The scheduler's code, and whatever non-standard module it calls, must take time from the Runtime; the standard
    library's own uses (logging's timestamps) are not the scheduler's doing.
    """
    calls: list[str] = []
    names = ("time", "monotonic", "perf_counter", "time_ns", "monotonic_ns", "perf_counter_ns", "sleep")
    originals = {n: getattr(time, n) for n in names}
    stdlib = tuple({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})

    def guard(name: str) -> Callable[..., Any]:
        real = originals[name]

        def wrapper(*args: Any) -> Any:
            frame = sys._getframe(1)
            where = frame.f_code.co_filename
            if not where.startswith(stdlib) and not where.startswith("<frozen"):
                calls.append(f"{frame.f_globals.get('__name__', where)} called time.{name}()")
            return real(*args)

        return wrapper

    for n in names:
        setattr(time, n, guard(n))
    try:
        yield calls
    finally:
        for n, f in originals.items():
            setattr(time, n, f)


def _one_run(cls: type[Scheduler], params: Any, seed: int, multi: bool) -> tuple[list[tuple[int, float, int]], dict[str, int], int]:
    """Run the contract workload of ``seed`` once; the starts, the counters and the number of tasks."""
    rt = FakeRuntime()
    cluster = contract_cluster(multi)
    tasks, rec = TaskTable(), Recorder()
    jobs = []
    for arrival, durations, masks, requests in contract_jobs(seed, multi):
        job = tasks.add_job(arrival, durations, masks, requests)
        rec.add_job(job.jid, arrival, durations)
        jobs.append(job)
    pool = ContractWorkers(rt, cluster, tasks, rec)
    submitted = [0]
    ctx = SchedulerContext(rt, cluster, tasks, rec, pool, more_jobs=lambda: submitted[0] < len(jobs))  # type: ignore[arg-type]
    sched = cls(ctx, params)

    def arrive(job: Any) -> None:
        submitted[0] += 1
        sched.submit(job)

    for job in jobs:
        rt.call_later(job.arrival, arrive, job)
    rt.pump()
    n = len(tasks)
    started: dict[int, int] = {}
    for tid, _t, _w in pool.starts:
        started[tid] = started.get(tid, 0) + 1
    for tid, *_run in rec.preempted_runs:  # a preempted run does not count: the task must then run again, once
        started[tid] -= 1
    twice = [t for t, k in started.items() if k > 1]
    if twice:
        raise ContractViolation(f"placed once: task {twice[0]} ran to its end {started[twice[0]]} times")
    never = [t for t in range(n) if t not in started]
    if never:
        raise ContractViolation(f"placed once: {len(never)} of {n} tasks never started (the first: task {never[0]})")
    if rec.reported != n or rec.incomplete_jobs():
        raise ContractViolation(f"placed once: the scheduler learned {rec.reported} of {n} completions "
                                f"({rec.incomplete_jobs()} job(s) left incomplete)")
    if pool.busy_workers:
        raise ContractViolation(f"{pool.busy_workers} task(s) still running when the run settled")
    counters = sched.counters()
    if not isinstance(counters, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                                 for k, v in counters.items()):
        raise ContractViolation(f"counters: counters() must be a flat dict of str to int, got {counters!r}")
    return pool.starts, counters, n


def check_scheduler(scheduler: str | type[Scheduler], params: dict[str, Any] | None = None,
                    seeds: tuple[int, ...] = (0, 1)) -> SchedulerReport:
    """Drive ``scheduler`` through the contract (see the module docstring); raise :class:`ContractViolation` at the
    first broken rule, return what was checked otherwise.

    ``scheduler`` is a registered name (built-in or entry point) or a :class:`Scheduler` subclass; ``params`` its
    parameters (validated by its ``Params`` model, as ``--param`` is).
    """
    cls = registry.get(scheduler) if isinstance(scheduler, str) else scheduler
    if not (isinstance(cls, type) and issubclass(cls, Scheduler)):
        raise ContractViolation(f"{scheduler!r} is not a schedlab Scheduler class")
    if not cls.name:
        raise ContractViolation(f"{cls.__qualname__} has no name (the class attribute 'name')")
    parsed = registry.parse_params(cls, params)
    report = SchedulerReport(cls.name)
    for multi in (False, True):
        mode = "multi-resource" if multi else "slots"
        runs = []
        try:
            with _wall_clock_forbidden() as clock_calls:
                for seed in seeds:
                    first = _one_run(cls, parsed, seed, multi)
                    again = _one_run(cls, parsed, seed, multi)
                    if first[:2] != again[:2]:
                        diff = next((a, b) for a, b in zip(first[0], again[0], strict=False) if a != b) if first[0] != again[0] else None
                        raise ContractViolation(f"deterministic: seed {seed} ({mode}) ran differently the second time"
                                                + (f": start {diff[0]} then {diff[1]}" if diff else ": counters differ"))
                    runs.append(first)
        except InputError as e:
            if multi and e.where == "--resources":
                report.unsupported.append(f"multi-resource: {e.problem}")
                continue
            raise
        if clock_calls:
            raise ContractViolation(f"sans-IO: {clock_calls[0]} ({len(clock_calls)} wall-clock call(s) in {mode} mode)")
        report.modes.append(mode)
        report.tasks += sum(n for _s, _c, n in runs)
    report.checks = ["placed once", "no over-allocation", "constraints respected", "deterministic", "counters", "sans-IO"]
    return report
