"""Megha assembled once: the services of every role, for every runtime.

One place builds what a Megha node is made of — the simulator's GM or LM
(:mod:`schedlab.schedulers.megha.build`) given a service's runtime, task store
and observer, and around it the services of its role: a GM's recovery, links
and durable jobs (:class:`~.gm_node.GMNode`), an LM's takeover, host leases
and completion relay (:class:`~.lm_node.LMNode`), a worker host's beacon and
fences (:class:`~.host_node.HostNode`). Who calls it:

* a real process, ``schedlab serve ROLE`` (:mod:`~.node`), over aiohttp and
  RabbitMQ;
* the embedded cluster (:mod:`~.embedded`), every node in one process over the
  in-memory network and broker (:mod:`~.memnet`);
* the deterministic simulation with injected faults (:mod:`~.dst`), every
  node a simulated process over the same in-memory network, on the kernel.

The simulator's own run of Megha (:class:`~schedlab.schedulers.megha.MeghaScheduler`)
builds its masters with the same :mod:`~schedlab.schedulers.megha.build`.
"""

from __future__ import annotations

from typing import Any, cast

from schedlab.errors import InputError
from schedlab.schedulers import registry
from schedlab.schedulers.megha import MeghaParams, MeghaShared
from schedlab.schedulers.megha import build as megha_build
from schedlab.schedulers.megha.gm import GlobalMaster
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.services.nodes import NodeEnv, Plan, ServiceNode
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.tasks import TaskStore


def parse_params(params: MeghaParams | dict[str, Any] | None) -> MeghaParams:
    """Megha's parameters for a real cluster (what the simulator takes, less simulated processing costs)."""
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


def shared(rt: ServiceRuntime, plan: Plan, store: TaskStore, observer: Any, workers: Any = None) -> MeghaShared:
    """What a service's GM or LM is built with: its runtime, the cluster's layout, its own store and observer."""
    # a process that measures its steps handles its inputs in time of its own: it marks processing (MeghaShared)
    since = rt.handling_since if rt.step_clock is not None else None
    return MeghaShared(rt, plan.layout, plan.cluster, store, observer, workers, plan.params, plan.cluster.slot_mode, since)


def build_gm(g: int, rt: ServiceRuntime, plan: Plan, store: TaskStore, observer: Any) -> GlobalMaster:
    return megha_build.build_gm(g, shared(rt, plan, store, observer))


def build_lm(i: int, rt: ServiceRuntime, plan: Plan, store: TaskStore, observer: Any, workers: Any = None) -> LocalMaster:
    return megha_build.build_lm(i, shared(rt, plan, store, observer, workers))


def build_node(role: str, env: NodeEnv, ident: int) -> ServiceNode:
    """The node of ``role`` (gm, lm, worker) number ``ident`` on ``env``; :meth:`~.nodes.ServiceNode.start` runs it."""
    from schedlab.services.gm_node import GMNode
    from schedlab.services.host_node import HostNode
    from schedlab.services.lm_node import LMNode

    cls: type[ServiceNode] = {"gm": GMNode, "lm": LMNode, "worker": HostNode}[role]
    return cls(env, ident)
