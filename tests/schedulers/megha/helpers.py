"""Megha on the fake Runtime: a GM's and an LM's shared state built from a :class:`MeghaShared` alone."""

from __future__ import annotations

from schedlab.cluster import Cluster
from schedlab.schedulers.megha import MeghaParams, MeghaShared
from schedlab.schedulers.megha.partitions import Layout, megha_topology
from schedlab.workload.model import TaskTable
from tests.schedulers.helpers import FakeObserver, FakeRuntime


def megha(masks, *, gms=2, lms=2, capacity=None, **params):
    """``gms`` x ``lms`` Megha on a FakeRuntime over ``masks``: (runtime, observer, tasks, layout, shared)."""
    rt = FakeRuntime()
    obs = FakeObserver()
    cl = Cluster.slots(masks) if capacity is None else Cluster.multi_resource(masks, capacity)
    tasks = TaskTable()
    layout = Layout(cl, megha_topology(cl, gms, lms))
    shared = MeghaShared(
        runtime=rt,
        layout=layout,
        cluster=cl,
        tasks=tasks,
        observer=obs,
        workers=None,
        params=MeghaParams(**{"worker_choice": "min-constraints", **params}),
        slot_mode=cl.slot_mode,
    )
    return rt, obs, tasks, layout, shared
