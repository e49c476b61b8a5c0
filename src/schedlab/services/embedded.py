"""A whole Megha cluster in one process: the simulator's GMs and LMs, real time, real task execution.

This is the embedded default of the services (no broker, no sockets): one
:class:`~schedlab.services.runtime.AsyncRuntime` on the in-process transport
hosts every GM, LM and worker host. The GM and LM objects are the very classes
a simulation builds (:mod:`schedlab.schedulers.megha`), given a
:class:`~schedlab.schedulers.megha.MeghaShared` made of this runtime, the
cluster's layout, a :class:`~schedlab.services.tasks.TaskStore` and an
:class:`~schedlab.services.records.EventObserver` — nothing else changes.

What the services add around them, and nothing more:

* **job submission** — a :class:`SubmitJob` message to a GM's front end
  (address ``("submit", g)``), which stores the job's tasks and hands their ids
  to the GM, as the simulator's engine calls ``GlobalMaster.submit``; jobs go
  to GMs round-robin by job number, as in the simulator;
* **heartbeats** — each LM runs its own timer every ``heartbeat`` seconds (the
  simulator drives all LMs from one timer; here they are independent, as they
  would be on separate hosts);
* **workers** — :class:`~schedlab.services.worker.WorkerHost`, one per LM
  cluster, at the LMs' worker address.

* **fair sharing** (with ``shares``) — each GM its own
  :class:`~schedlab.services.fairness.GMFairness` fed by the LMs' holdings
  reports, preemptions carried out as kills on the worker host
  (:mod:`~schedlab.services.fairness`), exactly as across processes.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from schedlab.cluster.model import Cluster
from schedlab.errors import InputError
from schedlab.schedulers import registry
from schedlab.schedulers.megha import MeghaParams, MeghaShared
from schedlab.schedulers.megha.compat import AuthorsGM, AuthorsLM
from schedlab.schedulers.megha.gm import GlobalMaster
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.partitions import Layout, megha_topology
from schedlab.services.failures import CompletionRelay
from schedlab.services.fairness import GMFairness, HostWorkers
from schedlab.services.inproc import InProcTransport
from schedlab.services.messages import SubmitJob, submit_address
from schedlab.services.records import EventObserver, RecordsHub, RunRecords
from schedlab.services.runtime import AsyncRuntime
from schedlab.services.tasks import RecentIds, TaskStore
from schedlab.services.worker import WorkerHost
from schedlab.sim.runtime import Component
from schedlab.workers.protocol import POOL_ADDRESS


class GMFrontend(Component):
    """A GM's submission endpoint: stores the job's tasks, then gives their ids to the GM."""

    def __init__(self, g: int, runtime: AsyncRuntime, gm: GlobalMaster, store: TaskStore) -> None:
        super().__init__(submit_address(g), runtime)
        self.gm = gm
        self.store = store
        self.jobs = 0
        self.tasks = 0
        self.duplicates = 0
        self.seen = RecentIds()

    def handlers(self):
        return {SubmitJob: self._on_submit}

    def _on_submit(self, msg: SubmitJob) -> None:
        if msg.jid in self.seen:  # the broker delivered it again (a link dropped before it was acknowledged)
            self.duplicates += 1
            return
        self.admit(msg)

    def admit(self, msg: SubmitJob, submit: Any = None) -> None:
        """File the job; queue its tasks at the GM — all of them, or only ``submit`` (a recovering GM's)."""
        self.seen.add(msg.jid)
        self.store.add_job(msg.jid, self.rt.now(), msg.tids, msg.durations, msg.masks, msg.requests, msg.specs, msg.user)
        self.jobs += 1
        self.tasks += len(msg.tids)
        tids = msg.tids if submit is None else list(submit)
        if tids:
            self.gm.submit(tids)


def parse_params(params: MeghaParams | dict[str, Any] | None) -> MeghaParams:
    if isinstance(params, MeghaParams):
        p = params
    else:
        p = cast(MeghaParams, registry.parse_params(registry.get("megha"), params))  # megha's Params class
    if p.queue_gms is not None:
        # a cluster file always names the GMs; without their number the GMs cannot be checked here
        if p.gms is None:
            raise InputError("param queue_gms", "needs gms (the number of Global Masters)")
        if not all(1 <= g <= p.gms for g in p.queue_gms):
            raise InputError("param queue_gms", f"GMs are numbered 1..{p.gms}")
    if any((p.gm_match_cost, p.lm_verify_cost, p.update_cost_per_worker, p.message_cost)):
        raise InputError("params", "processing costs are simulated overheads; a real cluster has its own (leave them 0)")
    return p


class EmbeddedMegha:
    """GMs, LMs and worker hosts of one Megha cluster on one event loop.

    Build it inside a running loop (``async with EmbeddedMegha(...) as cluster``)
    or call :meth:`start` there.
    """

    def __init__(self, cluster: Cluster, params: MeghaParams | dict[str, Any] | None = None, seed: int = 0,
                 latency: float = 0.0, codec: Any = None) -> None:
        self.cluster = cluster
        self.params = parse_params(params)
        self.seed = seed
        self.latency = latency
        self.codec = codec
        self.runtime: AsyncRuntime | None = None
        self.hub = RecordsHub()
        self.store = TaskStore()
        self.gms: list[GlobalMaster] = []
        self.lms: list[LocalMaster] = []
        self.frontends: list[GMFrontend] = []
        self.host: WorkerHost | None = None
        self._timers: list[asyncio.TimerHandle] = []
        self.started_at = 0.0
        self.heartbeats: list[int] = []
        self.workers: HostWorkers | None = None
        self.fair: list[GMFairness] = []

    async def __aenter__(self) -> EmbeddedMegha:
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def num_gms(self) -> int:
        return len(self.gms)

    def start(self) -> None:
        p = self.params
        transport = InProcTransport(self.latency, self.codec)
        rt = self.runtime = AsyncRuntime(transport, self.seed)
        layout = Layout(self.cluster, megha_topology(self.cluster, p.gms, p.lms))
        observer = EventObserver(self.hub.emit)
        fair = p.shares is not None
        self.workers = HostWorkers(rt, self.store, forget_killed=False) if fair else None
        shared = MeghaShared(rt, layout, self.cluster, self.store, observer, self.workers, p, self.cluster.slot_mode)
        gm_cls: type[GlobalMaster]
        lm_cls: type[LocalMaster]
        if p.compat == "authors":
            gm_cls, lm_cls = AuthorsGM, AuthorsLM
        else:
            gm_cls, lm_cls = GlobalMaster, LocalMaster
        # the same named streams as a simulation with this seed: the same random choices
        self.gms = [gm_cls(g, shared, rt.rng(f"megha:gm:{g}")) for g in range(layout.num_gms)]
        self.lms = [lm_cls(i, shared) for i in range(layout.num_lms)]
        self.frontends = [GMFrontend(g, rt, gm, self.store) for g, gm in enumerate(self.gms)]
        self.host = WorkerHost(POOL_ADDRESS, rt, self.cluster, range(self.cluster.n), self.store, self.hub.emit)
        # the host reports ends to the LM, which tells the GM; a preempted run's late end is dropped there
        CompletionRelay(rt, self.lms, self.hub.emit)
        if self.workers is not None:
            for lm in self.lms:
                self.workers.add(lm, layout.num_gms)
            self.fair = [GMFairness(rt, [gm], p, layout, self.cluster, self.store) for gm in self.gms]
        self.started_at = rt.now()
        self.heartbeats = [0] * len(self.lms)
        for lm in self.lms:
            self._timers.append(rt.loop.call_later(p.heartbeat, self._heartbeat, lm))

    def _heartbeat(self, lm: LocalMaster) -> None:
        assert self.runtime is not None
        self.heartbeats[lm.i] += 1
        self.runtime._guarded(lm.heartbeat, ())
        self._timers.append(self.runtime.loop.call_later(self.params.heartbeat, self._heartbeat, lm))
        if len(self._timers) > 4 * len(self.lms):
            self._timers = [t for t in self._timers if not t.cancelled() and t.when() >= self.runtime.loop.time()]

    def stop(self) -> None:
        for f in self.fair:
            f.stop()
        for t in self._timers:
            t.cancel()
        self._timers.clear()
        if self.host is not None:
            self.host.stop()

    # -- the client's handle (see schedlab.services.client) -----------------------------------------
    transport_name = "inproc"

    def now(self) -> float:
        assert self.runtime is not None, "start() the cluster first"
        return self.runtime.now()

    async def open_run(self, run: int) -> RunRecords:
        return self.hub.open(run)

    async def close_run(self, run: int) -> None:
        self.hub.close(run)
        self.store.forget([t for t in self.store.mask if t >> 32 == run])

    async def collect_counters(self) -> dict[str, int]:
        return self.counters()

    def message_counts(self) -> dict[str, int]:
        return {} if self.runtime is None else self.runtime.message_counts()

    # -- submission --------------------------------------------------------------------------------
    def submit(self, job: SubmitJob, gm: int) -> None:
        assert self.runtime is not None, "start() the cluster first"
        self.runtime.send(submit_address(gm), job)

    # -- observation ---------------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        # an LM's heartbeat round is its own timer here; "stalled" is a simulator's verdict (0)
        out: dict[str, int] = {"heartbeat_rounds": max(self.heartbeats, default=0), "stalled": 0}
        components: list[GlobalMaster | LocalMaster] = [*self.gms, *self.lms]
        for comp in components:
            for k, v in comp.counters().items():
                out[k] = out.get(k, 0) + v
        out["gm_holdings_at_end"] = sum(sum(r.bit_count() for r in gm.reserved) + len(gm.mine) for gm in self.gms)
        for f in self.fair:
            for k, v in f.counters().items():
                out[k] = out.get(k, 0) + v
        if self.workers is not None:
            out.update(self.workers.counters())
        if self.host is not None:
            out["refused_launches"] = self.host.refused_launches
        if self.runtime is not None:
            out["handler_errors"] = self.runtime.handler_errors
        return out

    def status(self) -> dict[str, Any]:
        return {
            "gms": [{"id": gm.g, "waiting": gm.waiting_count(), **gm.counters()} for gm in self.gms],
            "lms": [{"id": lm.i, "running": len(lm.running), **lm.counters()} for lm in self.lms],
            "workers": self.host.status() if self.host is not None else {},
        }
