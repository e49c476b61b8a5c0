"""CRED-M (and the other heuristics) against the exact MILP optimum on small generated instances.

Prints the distribution of (active nodes − optimum) and of the ratio for each algorithm, over
``--instances`` instances drawn like the test suite's (6–15 jobs, 8–20 chunks, 1–3 deadline
classes in 2..10, B in 2..6, S in 1..4), plus how often the lower bound is tight.

    python benchmarks/bench_cred_gap.py [--instances 200]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

import numpy as np

from schedlab.edge.bounds import lower_bound
from schedlab.edge.compare import ALGORITHMS, HEURISTICS
from schedlab.edge.generate import generate_instance
from schedlab.edge.milp import solve_milp
from schedlab.edge.reproduce import gap_instance
from schedlab.edge.verify import verify


def instance(seed: int):
    return generate_instance(**gap_instance(seed))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=200)
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    gaps = {name: collections.Counter() for name in HEURISTICS}
    ratios: dict[str, list[float]] = {name: [] for name in HEURISTICS}
    lb_tight = 0
    milp_seconds = []
    solved = 0
    t0 = time.perf_counter()
    for seed in range(args.instances):
        inst = instance(seed)
        nodes = {}
        for name in HEURISTICS:
            v = verify(inst, ALGORITHMS.run(name, inst))
            assert v.ok, (name, seed, v.summary())
            nodes[name] = v.active_nodes
        res = solve_milp(inst, upper=nodes["cred-m"], time_limit=args.time_limit, max_variables=None)
        milp_seconds.append(res.seconds)
        if res.status != "optimal":
            print(f"seed {seed}: MILP {res.status}")
            continue
        assert verify(inst, res.solution).ok
        solved += 1
        lb_tight += lower_bound(inst) == res.optimum
        for name, n in nodes.items():
            gaps[name][n - res.optimum] += 1
            ratios[name].append(n / res.optimum)
    print(f"{solved}/{args.instances} instances solved to optimality in {time.perf_counter() - t0:.1f} s "
          f"(MILP mean {np.mean(milp_seconds):.3f} s, max {max(milp_seconds):.3f} s); lower bound tight on {lb_tight}")
    for name in HEURISTICS:
        dist = ", ".join(f"+{g}: {c}" for g, c in sorted(gaps[name].items()))
        r = np.asarray(ratios[name])
        print(f"{name:20s} gap {{{dist}}}  optimal {gaps[name][0] / solved:.0%}  ratio mean {r.mean():.3f} p90 {np.quantile(r, 0.9):.3f} max {r.max():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
