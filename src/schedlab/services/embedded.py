"""A whole Megha cluster in one process: the service nodes of a real cluster, real time, real task execution.

This is the embedded default of the services (no broker, no sockets). Every GM,
LM and worker host is the node a real process runs (:mod:`~.assembly`: the
simulator's GM and LM classes with the services' recovery, links, leases and
failure detection around them), each with its own runtime on this process's
asyncio loop, talking over the in-memory network and broker of
:mod:`~.memnet` — the same as a real cluster, minus the IO. The data center
is a :class:`~schedlab.cluster.model.Cluster` as the simulator takes it; each
LM's workers run on one worker host of their own.

Jobs go to GMs round-robin by job number, as in the simulator (or each user's
queue to its GM with fair sharing); each LM runs its own heartbeat timer (the
simulator drives all LMs from one timer; here they are independent, as they
would be on separate hosts).
"""

from __future__ import annotations

import asyncio
from typing import Any

from schedlab.cluster.model import Cluster
from schedlab.schedulers.megha import MeghaParams
from schedlab.services.assembly import parse_params
from schedlab.services.memcluster import MemClient, MemCluster
from schedlab.services.memnet import LoopClock, MemNet
from schedlab.services.messages import SubmitJob
from schedlab.services.nodes import Plan, sum_statuses
from schedlab.services.records import RunRecords
from schedlab.services.runtime import AsyncRuntime
from schedlab.services.transport import Router

STARTUP_TIMEOUT = 10.0


class EmbeddedMegha:
    """GMs, LMs and worker hosts of one Megha cluster on one event loop.

    Use it inside a running loop: ``async with EmbeddedMegha(...) as cluster``,
    or ``await start()`` and ``await stop()``. ``wire="json"`` sends every
    message through its wire form (:mod:`~.wire`), to check that the schemas
    carry everything the components need.
    """

    transport_name = "inproc"

    def __init__(self, cluster: Cluster, params: MeghaParams | dict[str, Any] | None = None, seed: int = 0,
                 latency: float = 0.0, wire: str = "objects") -> None:
        self.cluster = cluster
        self.params = parse_params(params)
        self.seed = seed
        self.latency = latency
        self.wire = wire
        self.plan = Plan.one_host_per_lm("embedded", cluster, self.params, seed)
        self.mem: MemCluster | None = None
        self.client: MemClient | None = None
        self._runtimes: list[AsyncRuntime] = []
        self._messages: dict[str, int] = {}

    async def __aenter__(self) -> EmbeddedMegha:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    @property
    def num_gms(self) -> int:
        return self.plan.num_gms

    def _runtime(self, router: Router, name: str) -> AsyncRuntime:
        rt = AsyncRuntime(router, self.seed, loop=asyncio.get_running_loop())
        self._runtimes.append(rt)
        return rt

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        mem = self.mem = MemCluster(self.plan, MemNet(LoopClock(loop), self.latency), self._runtime, wire=self.wire)
        mem.spawn_all()
        client = self.client = MemClient(mem, self._runtime)
        await client.connect()
        deadline = loop.time() + STARTUP_TIMEOUT
        while not all(node.serving for node in mem.nodes.values()):
            if mem.failed_starts or loop.time() > deadline:
                await self.stop()
                what = "; ".join(f"{r} {i}: {why}" for r, i, why in mem.failed_starts) or "timed out"
                raise RuntimeError(f"the embedded cluster did not start: {what}")
            await asyncio.sleep(0.001)

    async def stop(self) -> None:
        if self.mem is not None:
            for node in self.mem.nodes.values():
                await node.stop()
        if self.client is not None:
            await self.client.close()
        for rt in self._runtimes:
            rt.stop_tasks()

    # -- the client's handle (see schedlab.services.client) -----------------------------------------
    def now(self) -> float:
        return asyncio.get_running_loop().time() if not self._runtimes else self._runtimes[0].now()

    async def open_run(self, run: int) -> RunRecords:
        assert self.client is not None, "start() the cluster first"
        return await self.client.open_run(run)

    async def close_run(self, run: int) -> None:
        assert self.client is not None
        await self.client.close_run(run)

    async def collect_counters(self) -> dict[str, int]:
        return self.counters()

    def message_counts(self) -> dict[str, int]:
        return self._messages

    def submit(self, job: SubmitJob, gm: int) -> None:
        assert self.client is not None, "start() the cluster first"
        self.client.submit(job, gm)

    # -- observation ---------------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        assert self.mem is not None
        out, self._messages = sum_statuses(self.mem.statuses())
        out.pop("nodes_unreachable", None)
        return out

    def status(self) -> dict[str, Any]:
        assert self.mem is not None
        return {f"{role}:{ident}": node.status() for (role, ident), node in sorted(self.mem.nodes.items())}
