"""Lower bounds on the number of active nodes: processing slots, chunk replicas and storage.

With W_{c,i} = Σ_{k<=i} F_{c,k} the slots chunk c needs before d↑_i:

* ``slots``: every node runs at most min(S, B)·d↑_i tasks before d↑_i (S VMs,
  and at most one VM per stored chunk per slot), so N >= ⌈Σ_c W_{c,i} / (min(S,B)·d↑_i)⌉
  for every i — "processing slots over S·deadline" (tightened by
  min(S, B) when B < S);
* ``replicas``: a node gives chunk c at most d↑_i slots before d↑_i, so c needs
  r_c = max_i ⌈W_{c,i} / d↑_i⌉ copies, all on different nodes: N >= max_c r_c;
* ``storage``: the copies must be stored, B per node: N >= ⌈Σ_c r_c / B⌉ (this
  includes "chunks over B", the case r_c = 1);
The bound reported (``lower_bound``) is the largest of the three. All are valid
for any feasible solution (the tests check LB <= MILP optimum), so on instances
too big for the MILP the gap to the lower bound caps the gap to the optimum
(how often the bound is tight: ``benchmarks/bench_cred_gap.py``).
"""

from __future__ import annotations

import numpy as np

from schedlab.edge.instance import EdgeInstance


def lower_bounds(inst: EdgeInstance) -> dict[str, int]:
    dem = inst.demand
    W = dem.cumulative  # (M, D)
    d = dem.deadlines
    S, B = inst.vms_per_node, inst.chunks_per_node
    per_class = -(-W.sum(axis=0) // (min(S, B) * d))
    replicas = (-(-W // d[None, :])).max(axis=1)
    out = {
        "slots": int(per_class.max()),
        "replicas": int(replicas.max()),
        "storage": int(-(-int(replicas.sum()) // B)),
    }
    out["lower_bound"] = max(out.values())
    return out


def lower_bound(inst: EdgeInstance) -> int:
    """The best of :func:`lower_bounds`."""
    return lower_bounds(inst)["lower_bound"]


def cumulative_load(inst: EdgeInstance) -> np.ndarray:
    """Σ_c W_{c,i} per class: the tasks that must end by each distinct deadline."""
    return inst.demand.cumulative.sum(axis=0)
