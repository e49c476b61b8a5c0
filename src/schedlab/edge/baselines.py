"""First-fit: the kind of baseline the CRED paper compares against (its evaluation), in the same slot model.

The paper reports CRED against first-fit heuristics without spelling them out;
this is the natural deadline-aware one. Jobs are taken in deadline order (ties by
index) and each (chunk, deadline class) demand at its first appearance; the
demand goes, slot budget permitting, to

1. the nodes that already store the chunk, in opening order;
2. then the first nodes with free storage and free slots before the deadline
   (placing the chunk there);
3. then to newly opened nodes, as many as needed (a node gives a chunk at most
   one slot per time step, so a chunk needing more than d slots is replicated).

Unlike CRED-S it never chooses *which* chunks share a node to balance storage
against slots, which is exactly the effect the paper measures.
"""

from __future__ import annotations

import numpy as np

from schedlab.edge.instance import EdgeInstance
from schedlab.edge.plan import NodePlan, materialize
from schedlab.edge.solution import Solution


def first_fit(inst: EdgeInstance) -> Solution:
    dem = inst.demand
    plan = NodePlan(inst)
    demand = dem.demand.tolist()
    done: set[tuple[int, int]] = set()
    with_storage: list[int] = []  # nodes that may still take new chunks, in opening order
    job_order = np.argsort(inst.deadlines, kind="stable")
    dense = np.searchsorted(inst.chunk_ids, inst.job_chunks)
    for j in job_order.tolist():
        i = int(dem.job_class[j])
        for c in dense[inst.job_start[j] : inst.job_start[j + 1]].tolist():
            if (c, i) in done:
                continue
            done.add((c, i))
            want = demand[c][i]
            for n in plan.nodes_of[c]:
                want -= plan.assign(n, c, i, want)
                if want == 0:
                    break
            if want:
                for n in with_storage:
                    if not plan.holds(n, c):
                        want -= plan.assign(n, c, i, want)
                        if want == 0:
                            break
                with_storage = [n for n in with_storage if plan.stored[n] < plan.B and any(plan.free[n])]
            while want:
                n = plan.open_node()
                with_storage.append(n)
                want -= plan.assign(n, c, i, want)
    return materialize(inst, plan, "first-fit", {"nodes_opened": plan.num_nodes})
