"""One simulated run: a small Megha cluster of service nodes, a client's workload, and a fault schedule.

Every GM, LM and worker host is the node a real process runs (:mod:`~..assembly`)
on a :class:`~..simruntime.SimServiceRuntime`, all on one discrete-event
kernel, over the in-memory network and broker (:mod:`~..memnet`). A client
submits the workload through the broker and assembles the run's records
exactly as ``schedlab submit`` does (:class:`~..records.RunRecords`). The
faults of the schedule are injected at their times; a supervisor brings back
what was killed once its downtime is over (as ``schedlab chaos`` does) and
retries a start that failed (the broker was down). The run goes on until every
task is done and the faults are long over, then :mod:`.invariants` judges it.

Everything random — the workload, the network's jitter and losses, each
process's incarnation, Megha's worker choice — comes from streams seeded by
the schedule's seed, and everything runs in the kernel's (time, scheduling)
order: a seed and a schedule replay bit for bit.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from typing import Any

from schedlab.services.assembly import parse_params
from schedlab.services.clusterfile import (
    ClusterSpec,
    Endpoint,
    LMSpec,
    LoadedCluster,
    WorkerGroup,
    WorkerHostSpec,
)
from schedlab.services.dst.faults import Fault
from schedlab.services.memcluster import MemClient, MemCluster
from schedlab.services.memnet import BROKER, KernelClock, MemNet
from schedlab.services.messages import HostFinished, SubmitJob, submit_address
from schedlab.services.nodes import Plan
from schedlab.services.records import RunRecords
from schedlab.services.simruntime import EPOCH, SimServiceRuntime
from schedlab.services.transport import Router
from schedlab.sim.kernel import Kernel

SUPERVISE_EVERY = 1.0  # seconds between the supervisor's looks for processes to bring back
SETTLE = 6.0  # seconds the run goes on once every task is done and every fault is over (views converge, jobs acked)
RUN = 1  # the client's run id


@dataclass(frozen=True)
class Setup:
    """The cluster and workload every schedule runs (defaults: the issue's 2 GM x 2 LM x 4 hosts, 50 jobs)."""

    gms: int = 2
    lms: int = 2
    hosts_per_lm: int = 2
    workers_per_host: int = 4
    jobs: int = 50
    heartbeat: float = 1.0
    worker_lease: float = 2.0
    latency: float = 0.0005
    arrival_window: float = 10.0  # seconds over which the jobs arrive
    horizon: float = 300.0  # simulated seconds after which a run that has not finished is a liveness failure
    max_events: int = 3_000_000

    def plan(self) -> Plan:
        """The cluster: every host's workers half without constraints, a quarter with constraint 0, a quarter with 1."""
        hid = 0
        lms = []
        w = self.workers_per_host
        groups = [WorkerGroup(count=max(1, w // 2))]
        if w >= 2:
            groups.append(WorkerGroup(count=max(1, w // 4), constraints=[0]))
        if w - max(1, w // 2) - max(1, w // 4) > 0:
            groups.append(WorkerGroup(count=w - max(1, w // 2) - max(1, w // 4), constraints=[1]))
        port = 1
        gms = [Endpoint(id=g, port=(port := port + 1)) for g in range(self.gms)]
        for i in range(self.lms):
            hosts: list[WorkerHostSpec] = []
            for _ in range(self.hosts_per_lm):
                hosts.append(WorkerHostSpec(id=hid, port=(port := port + 1), workers=groups))
                hid += 1
            lms.append(LMSpec(id=i, port=(port := port + 1), hosts=hosts))
        spec = ClusterSpec(name="dst", secret="0" * 32, worker_lease=self.worker_lease, megha={"heartbeat": self.heartbeat},
                           gms=gms, lms=lms)
        loaded = LoadedCluster(spec, "dst")
        return Plan.from_loaded(loaded, parse_params(loaded.megha_params()))


@dataclass
class Job:
    arrival: float
    durations: list[float]
    masks: list[int]


def draw_jobs(rng: random.Random, setup: Setup) -> list[Job]:
    """The workload: ``setup.jobs`` jobs of 1 to 4 tasks of 0.1 to 2 s, some tasks needing a constraint."""
    jobs = []
    t = 0.2
    gap = setup.arrival_window / max(1, setup.jobs)
    for _ in range(setup.jobs):
        t += rng.random() * 2 * gap
        n = rng.randint(1, 4)
        durations = [round(0.1 + rng.random() * 1.9, 3) for _ in range(n)]
        masks = [rng.choice((0, 0, 0, 1, 2)) for _ in range(n)]
        jobs.append(Job(round(t, 3), durations, masks))
    return jobs


@dataclass
class Observation:
    """What a run left behind, for the invariants to judge."""

    seed: int
    faults: list[Fault]
    jobs: int
    tasks: int
    records: RunRecords | None
    mem: MemCluster
    finished_at: float | None  # simulated time when every task was done (None: never)
    sim_time: float
    events: int
    runaway: bool
    runtimes: list[SimServiceRuntime] = field(default_factory=list)
    standby: bool = False
    # (task, worker) -> when a worker host's end of that run first reached the broker (the processes' clock): an end
    # that had not left its host when the run was declared lost was beyond every other process's knowledge
    ends_published: dict[tuple[int, int], float] = field(default_factory=dict)


class SimClient:
    """The workload's client: submits each job at its arrival, collects the run's records."""

    def __init__(self, mem: MemCluster, runtime: Any, jobs: list[Job], gms: int) -> None:
        self.client = MemClient(mem, runtime)
        self.jobs = jobs
        self.gms = gms
        self.records: RunRecords | None = None
        self.submitted = 0

    async def run(self) -> None:
        rt = self.client.rt
        while True:  # the client starts when the broker lets it (a fault may have it down)
            try:
                await self.client.connect()
                break
            except Exception:
                await rt.sleep(SUPERVISE_EVERY)
        records = self.records = await self.client.open_run(RUN)
        records.origin = EPOCH
        for k, job in enumerate(self.jobs):
            delay = EPOCH + job.arrival - rt.now()
            if delay > 0:
                await rt.sleep(delay)
            # as after `cluster up`: a job goes to a submission queue its GM has declared (one published before
            # would be dropped as unroutable — with standbys elsewhere, LMs and so GMs start later)
            mem = self.client.cluster
            while mem.queue(submit_address(k % self.gms)) not in mem.broker.queues:
                await rt.sleep(SUPERVISE_EVERY)
            gjid, gtids = records.add_job(rt.now() - EPOCH, job.durations, job.masks, None, sum(job.durations) / len(job.durations), k)
            self.client.submit(SubmitJob(gjid, gtids, job.durations, job.masks, None, None, 0), k % self.gms)
            self.submitted += 1


class World:
    """One schedule's simulated cluster, from the first job to the verdict."""

    def __init__(self, seed: int, faults: list[Fault], setup: Setup, plan: Plan, standby: bool, jobs: list[Job],
                 elsewhere: bool = False) -> None:
        self.seed = seed
        self.faults = faults
        self.setup = setup
        self.plan = plan
        self.standby = standby
        self.jobs = jobs
        self.kernel = Kernel()
        self.runtimes: list[SimServiceRuntime] = []
        net = self.net = MemNet(KernelClock(self.kernel), setup.latency, random.Random(f"{seed}:net"))
        self.mem = MemCluster(plan, net, self._runtime, random.Random(f"{seed}:incarnations"), standby_elsewhere=elsewhere)
        self.down: dict[tuple[str, int], float] = {}  # (role, id) -> until when a fault keeps it down
        self.ends_published: dict[tuple[int, int], float] = {}
        self._watch_ends(self.mem.broker)

    def _watch_ends(self, broker: Any) -> None:
        """Note when each worker host's task end first reaches the broker (an observer's hook: nothing changes)."""
        publish, seen, kernel = broker.publish, self.ends_published, self.kernel

        def watched(conn: Any, queue: str, payload: Any, persistent: bool) -> bool:
            ok = publish(conn, queue, payload, persistent)
            msg = payload[2] if ok and isinstance(payload, tuple) and len(payload) > 2 else None
            if isinstance(msg, HostFinished):
                for tid, w in msg.group:
                    seen.setdefault((tid, w), EPOCH + kernel.now)
            return ok

        broker.publish = watched

    def _runtime(self, router: Router, name: str) -> SimServiceRuntime:
        rt = SimServiceRuntime(router, self.kernel, self.seed, name=name)
        self.runtimes.append(rt)
        return rt

    # -- faults -------------------------------------------------------------------------------------
    def _inject(self, f: Fault) -> None:
        net, mem = self.net, self.mem
        if f.kind == "crash":
            role, ident = _role_of(f.target)
            self.down[(role, ident)] = max(self.down.get((role, ident), 0.0), self.kernel.now + f.duration)
            mem.crash(role, ident)
            self.kernel.call_later(f.duration, self._bring_back, role, ident)
        elif f.kind == "pause":
            role, ident = _role_of(f.target)
            mem.pause(role, ident, f.duration)
        elif f.kind == "broker":
            mem.broker.stop()
            self.kernel.call_later(f.duration, mem.broker.start)
        else:
            a, b = f.hosts()
            if f.kind in ("cut", "oneway"):
                net.cut(a, b, oneway=f.kind == "oneway")
                self.kernel.call_later(f.duration, self._heal, a, b, f.kind == "oneway")
            else:
                for x, y in ((a, b), (b, a)):
                    lf = net.fault(x, y)
                    if f.kind == "loss":
                        lf.loss = f.value
                    else:
                        lf.delay, lf.jitter = f.value, f.value
                self.kernel.call_later(f.duration, self._clear, a, b, f.kind)

    def _heal(self, a: str, b: str, oneway: bool) -> None:
        # an overlapping cut of the same link may still hold: heal only what no other fault keeps cut
        now = self.kernel.now
        for f in self.faults:
            if f.kind in ("cut", "oneway") and f.start <= now < f.end and set(f.hosts()) == {a, b}:
                return
        self.net.heal(a, b)

    def _clear(self, a: str, b: str, kind: str) -> None:
        now = self.kernel.now
        for f in self.faults:
            if f.kind == kind and f.start <= now < f.end and set(f.hosts()) == {a, b}:
                return
        for x, y in ((a, b), (b, a)):
            lf = self.net.fault(x, y)
            if kind == "loss":
                lf.loss = 0.0
            else:
                lf.delay = lf.jitter = 0.0

    def _bring_back(self, role: str, ident: int) -> None:
        if self.down.get((role, ident), 0.0) > self.kernel.now + 1e-9:
            return  # another crash of it is still on
        self.down.pop((role, ident), None)
        self._restart(role, ident)

    def _restart(self, role: str, ident: int) -> None:
        mem = self.mem
        if role == "lm" and self.standby:
            sb = mem.standbys.get(ident)
            if sb is None or not sb[0].alive:
                mem.spawn("lm", ident, standby=True)  # a new standby: it takes over if nobody serves LM ident
        elif not mem.alive(role, ident):
            mem.spawn(role, ident)

    def _supervise(self) -> None:
        """Bring back what is down with no fault keeping it down (a start that failed: the broker was away)."""
        self.kernel.call_later(SUPERVISE_EVERY, self._supervise)
        now = self.kernel.now
        for role, n in (("worker", len(self.plan.hosts)), ("lm", self.plan.num_lms), ("gm", self.plan.num_gms)):
            for ident in range(n):
                if self.down.get((role, ident), 0.0) > now:
                    continue
                if role == "lm" and self.standby:
                    sb = self.mem.standbys.get(ident)
                    if not self.mem.alive("lm", ident) and (sb is None or not sb[0].alive):
                        self._restart(role, ident)
                elif not self.mem.alive(role, ident):
                    self._restart(role, ident)

    # -- the run ------------------------------------------------------------------------------------
    def run(self) -> Observation:
        setup, kernel, mem = self.setup, self.kernel, self.mem
        mem.spawn_all(standbys=self.standby)
        client = SimClient(mem, self._runtime, self.jobs, self.plan.num_gms)
        client.client.rt.spawn(client.run(), "client")
        for f in self.faults:
            kernel.call_at(f.start, self._inject, f)
        kernel.call_later(SUPERVISE_EVERY, self._supervise)
        last_fault = max((f.end for f in self.faults), default=0.0)
        total = sum(len(j.durations) for j in self.jobs)
        finished_at = None
        runaway = False
        while kernel.now < setup.horizon:
            kernel.run(until=kernel.now + 1.0)
            if kernel.events > setup.max_events:
                runaway = True
                break
            records = client.records
            if finished_at is None and records is not None and client.submitted == len(self.jobs) and records.tasks_done >= total:
                finished_at = kernel.now
            if finished_at is not None and kernel.now >= max(finished_at, last_fault) + SETTLE:
                break
        return Observation(self.seed, self.faults, len(self.jobs), total, client.records, mem, finished_at, kernel.now,
                           kernel.events, runaway, self.runtimes, self.standby, self.ends_published)


def _role_of(target: str) -> tuple[str, int]:
    for prefix, role in (("gm", "gm"), ("lm", "lm"), ("host", "worker")):
        if target.startswith(prefix) and target[len(prefix):].isdigit():
            return role, int(target[len(prefix):])
    raise ValueError(f"not a process: {target!r}")


def quiet_logs() -> None:
    """A search runs thousands of schedules: the services' warnings of faults they handle are expected."""
    logging.getLogger("schedlab.services").setLevel(logging.CRITICAL)


__all__ = ["BROKER", "Observation", "Setup", "World", "draw_jobs", "quiet_logs"]
