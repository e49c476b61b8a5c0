"""A whole Megha cluster of service nodes on the in-memory network and broker, and a client for it.

:class:`MemCluster` makes every node of a :class:`~.nodes.Plan` a
:class:`~.memnet.MemProcess` — its own runtime, router, task store and broker
link, the node built by :mod:`~.assembly` as in a real process — and can crash
and restart any of them. The runtime decides the clock: asyncio's for the
embedded cluster (:mod:`~.embedded`), the discrete-event kernel's for the
deterministic simulation (:mod:`~.dst`). :class:`MemClient` submits jobs to
GMs' queues and collects the run's records, as
:class:`~.remote.RemoteCluster` does through RabbitMQ.

Addresses: a node's HTTP address is ``mem://<kind>/<id>`` and its host is
named after it (``gm:0``, ``lm:1``, ``host:3``); a standby LM runs on its LM's
host, or — ``standby_elsewhere`` — on a host of its own (``lm:1/b``, at
``mem://lm/1/b``): LM *i* then has two hosts, each process of it runs on the
one no other live process of it holds, and GMs and worker hosts fail over
between the two addresses. Queues are named as in a real cluster
(``<name>.gm.0``, ``<name>.submit.0``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from schedlab.schedulers.megha.gm import gm_address, lm_address
from schedlab.services.assembly import build_node
from schedlab.services.lease import lease_queue
from schedlab.services.memnet import MemBroker, MemHttp, MemLease, MemLink, MemNet, MemProcess
from schedlab.services.messages import RecordEvents, SubmitJob, submit_address
from schedlab.services.nodes import NodeEnv, Plan, ServiceNode, host_address
from schedlab.services.records import RunRecords
from schedlab.services.tasks import TaskStore
from schedlab.services.transport import JsonWire, ObjectWire, Router
from schedlab.services.wire import Codec, address_str

ADDRESS = {"gm": gm_address, "lm": lm_address, "worker": host_address}

RuntimeFactory = Callable[[Router, str], Any]  # (router, process name) -> the process's runtime


def url_of(addr: Any) -> str:
    return f"mem://{addr[0]}/{addr[1]}"


def standby_url(lm: int) -> str:
    """The address of LM ``lm``'s second host (``standby_elsewhere``)."""
    return f"mem://lm/{lm}/b"


class MemCluster:
    """Every node of ``plan`` as a process on one in-memory network and broker."""

    def __init__(self, plan: Plan, net: MemNet, runtime: RuntimeFactory, rng: random.Random | None = None,
                 wire: str = "objects", standby_elsewhere: bool = False) -> None:
        self.plan = plan
        self.standby_elsewhere = standby_elsewhere
        self.slot_of: dict[int, int] = {}  # id of an LM process -> which of its LM's two hosts it runs on (0, 1)
        self.stepped_down = 0
        self.net = net
        self.broker = MemBroker(net)
        self.runtime = runtime
        self.rng = rng if rng is not None else random.Random(plan.seed)
        self.wire = wire
        self.procs: dict[tuple[str, int], MemProcess] = {}  # (role, id) -> the process serving it now
        self.nodes: dict[tuple[str, int], ServiceNode] = {}
        self.standbys: dict[int, tuple[MemProcess, ServiceNode]] = {}  # LM -> its standby, waiting
        self.retired: list[ServiceNode] = []  # nodes of processes that died or were replaced
        self.failed_starts: list[tuple[str, int, str]] = []
        self.started = 0
        for g in range(plan.num_gms):
            net.host_of_url[url_of(gm_address(g))] = f"gm:{g}"
        for i in range(plan.num_lms):
            net.host_of_url[url_of(lm_address(i))] = f"lm:{i}"
            net.host_of_url[standby_url(i)] = f"lm:{i}/b"
        for h in plan.hosts:
            net.host_of_url[url_of(host_address(h))] = f"host:{h}"

    # -- addresses ----------------------------------------------------------------------------------
    def queue(self, addr: Any) -> str:
        return f"{self.plan.name}.{addr[0]}.{addr[1]}" if isinstance(addr, tuple) else f"{self.plan.name}.{addr}"

    def _url(self, addr: Any) -> str | tuple[str, ...] | None:
        if isinstance(addr, tuple) and addr[0] in ("gm", "lm", "host"):
            if addr[0] == "lm" and self.standby_elsewhere:
                return (url_of(addr), standby_url(addr[1]))
            return url_of(addr)
        return None

    def _free_slot(self, ident: int) -> int:
        """The host of LM ``ident`` no live process of it runs on (0 when both are free)."""
        held = {self.slot_of.get(id(p)) for p in (self.procs.get(("lm", ident)), self.standbys.get(ident, (None,))[0])
                if p is not None and p.alive}
        return 0 if 0 not in held else 1

    # -- processes ----------------------------------------------------------------------------------
    def spawn(self, role: str, ident: int, standby: bool = False) -> tuple[MemProcess, ServiceNode]:
        """A new process of ``role`` ``ident`` (a standby LM waits for the active one to go); it starts at once."""
        addr = ADDRESS[role](ident)
        host = address_str(addr)
        url = url_of(addr)
        slot = self._free_slot(ident) if role == "lm" and self.standby_elsewhere else 0
        if slot:
            host, url = f"{host}/b", standby_url(ident)
        name = f"{host}{'~standby' if standby else ''}#{self.started}"
        self.started += 1
        store = TaskStore()
        wire = ObjectWire(store) if self.wire == "objects" else JsonWire(Codec(store))
        router = Router(addr, wire, self._url, self.queue, None, None, self.rng.getrandbits(31))
        rt = self.runtime(router, name)
        proc = MemProcess(name, host, rt)
        if role == "lm":
            self.slot_of[id(proc)] = slot
        router.http = MemHttp(self.net, proc)
        link = MemLink(self.broker, proc, wire.unpack if self.wire != "objects" else None)
        router.broker = link
        holder: list[ServiceNode] = []

        def bind() -> bool:
            return self.net.bind(url, proc, holder[0])

        env = NodeEnv(self.plan, rt, router, store, link, self.queue, bind,
                      lambda qname: MemLease(self.broker, proc, qname), lambda: self.rng.getrandbits(31),
                      standby=standby, lease_queue=lease_queue(self.plan.name, ident),
                      step_down=(lambda _why: self._step_down(ident, proc)) if role == "lm" and self.standby_elsewhere else None)
        node = build_node(role, env, ident)
        holder.append(node)
        if standby:
            old_sb = self.standbys.get(ident)
            if old_sb is not None:
                self.retired.append(old_sb[1])
            self.standbys[ident] = (proc, node)
        else:
            self._replace(role, ident, proc, node)
        rt.spawn(self._run(role, ident, proc, node, url, standby), f"start {name}")
        return proc, node

    async def _run(self, role: str, ident: int, proc: MemProcess, node: ServiceNode, url: str, standby: bool) -> None:
        try:
            await node.start()
        except Exception as e:  # the broker away, the port taken: the process exits, as a real one would
            self.failed_starts.append((role, ident, f"{type(e).__name__}: {e}"))
            self.net.crash(proc)
            return
        if not proc.alive:  # it stepped down while it started (a newer process serves)
            return
        if standby:  # the standby took over: it is LM ``ident`` now
            if self.standbys.get(ident, (None,))[0] is proc:
                del self.standbys[ident]
            self._replace(role, ident, proc, node)
        self.net.serving(url)

    def _step_down(self, ident: int, proc: MemProcess) -> None:
        """A process of LM ``ident`` learnt that a newer one serves: it stops as if killed, and a standby starts
        on its host once the newer one has taken over."""
        if not proc.alive:
            return
        self.stepped_down += 1
        self.net.crash(proc)
        self.net.clock.post(0.0, self._standby_again, ident)

    def _standby_again(self, ident: int) -> None:
        sb = self.standbys.get(ident)
        if sb is not None and sb[0].alive:
            if getattr(sb[1], "lease", None) is not None:  # taking over: its place as the standby is not free yet
                self.net.clock.post(0.5, self._standby_again, ident)
            return  # (or a standby waits already)
        self.spawn("lm", ident, standby=True)

    def _replace(self, role: str, ident: int, proc: MemProcess, node: ServiceNode) -> None:
        old = self.nodes.get((role, ident))
        if old is not None and old is not node:
            self.retired.append(old)
        self.procs[(role, ident)] = proc
        self.nodes[(role, ident)] = node

    def spawn_all(self, standbys: bool = False) -> None:
        """Every node: worker hosts first (an LM starts by asking them), GMs last (no launch before all are up)."""
        for h in sorted(self.plan.hosts):
            self.spawn("worker", h)
        for i in range(self.plan.num_lms):
            self.spawn("lm", i)
            if standbys:
                self.spawn("lm", i, standby=True)
        for g in range(self.plan.num_gms):
            self.spawn("gm", g)

    def crash(self, role: str, ident: int) -> MemProcess | None:
        """SIGKILL the process serving ``role`` ``ident`` (nothing it held in memory survives)."""
        proc = self.procs.get((role, ident))
        if proc is None or not proc.alive:
            return None
        self.net.crash(proc)
        return proc

    def pause(self, role: str, ident: int, duration: float) -> MemProcess | None:
        """Freeze the process serving ``role`` ``ident`` for ``duration`` seconds (its runtime's ``pause``)."""
        proc = self.procs.get((role, ident))
        if proc is None or not proc.alive:
            return None
        proc.rt.pause(duration)
        return proc

    def alive(self, role: str, ident: int) -> bool:
        proc = self.procs.get((role, ident))
        return proc is not None and proc.alive

    def serving(self, role: str, ident: int) -> bool:
        node = self.nodes.get((role, ident))
        return self.alive(role, ident) and node is not None and node.serving

    def statuses(self) -> list[dict[str, Any]]:
        out = []
        for (role, ident), node in sorted(self.nodes.items()):
            st = node.status() if self.alive(role, ident) else {"role": role, "id": ident, "error": "down"}
            out.append(st)
        return out

    def counters(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for key in ("net", "broker"):
            src = self.net.counters if key == "net" else self.broker.counters
            for k, v in src.items():
                out[f"{key}_{k}"] = v
        if self.standby_elsewhere:
            out["lm_stepped_down"] = self.stepped_down
        return out


class MemClient:
    """A client of a :class:`MemCluster`: jobs to GMs' submission queues, records from its run's queue."""

    def __init__(self, cluster: MemCluster, rt_factory: RuntimeFactory) -> None:
        self.cluster = cluster
        wire = ObjectWire(None) if cluster.wire == "objects" else JsonWire(Codec(None))
        router = Router("client", wire, lambda _a: None, cluster.queue, None, None, 0)
        self.rt = rt_factory(router, "client")
        self.proc = MemProcess("client", "client", self.rt)
        self.link = MemLink(cluster.broker, self.proc, wire.unpack if cluster.wire != "objects" else None)
        router.broker = self.link
        self.router = router
        self.runs: dict[int, RunRecords] = {}
        self.bad_records = 0

    async def connect(self) -> None:
        await self.link.connect()

    async def open_run(self, run: int) -> RunRecords:
        records = self.runs[run] = RunRecords(run)

        def on_frame(frame: Any) -> None:
            msg = frame[2]
            if not isinstance(msg, RecordEvents) or msg.run != run:
                self.bad_records += 1
                records.counters["bad_record_messages"] = records.counters.get("bad_record_messages", 0) + 1
                return
            for ev in msg.events:
                records.event(tuple(ev))

        await self.link.consume_records(self.cluster.queue(("run", run)), on_frame)
        return records

    async def close_run(self, run: int) -> None:
        self.runs.pop(run, None)
        await self.link.delete_queues([self.cluster.queue(("run", run))])

    def submit(self, job: SubmitJob, gm: int) -> None:
        self.rt.send(submit_address(gm), job)

    async def close(self) -> None:
        await self.link.close()
