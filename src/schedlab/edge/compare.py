"""Running the edge algorithms by name, verifying every result, and comparing them with the bounds and the optimum.

Every run is verified (:func:`~schedlab.edge.verify.verify`): ``feasible`` means
the verifier accepted the full schedule, which includes using at most N nodes.
``seconds`` is the algorithm's wall time including building the slot-by-slot
schedule; verification is timed separately (``verify_seconds``).

The optimum is computed by the MILP (:mod:`schedlab.edge.milp`) only for small
instances: when its variable count, with CRED-M's node count as the cap on
candidate nodes, is within ``max_variables``; a run that hits its time limit
reports ``optimum: null`` with the proven bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from schedlab.algorithms import Algorithm, AlgorithmParams, AlgorithmRegistry
from schedlab.edge.baselines import first_fit
from schedlab.edge.bounds import lower_bounds
from schedlab.edge.cred import cred_m, cred_s, cred_s_per_deadline
from schedlab.edge.instance import EdgeInstance
from schedlab.edge.milp import (
    DEFAULT_MAX_VARIABLES,
    DEFAULT_TIME_LIMIT,
    HARD_MAX_VARIABLES,
    solve_milp,
)
from schedlab.edge.solution import Solution
from schedlab.edge.verify import Verdict, verify
from schedlab.errors import InputError


class EdgeMilpParams(AlgorithmParams):
    time_limit: float = Field(DEFAULT_TIME_LIMIT, gt=0, description="seconds the MILP solver may run (the CLI's --milp-time-limit)")


def _milp(inst: EdgeInstance, seed: int, p: EdgeMilpParams) -> Solution:
    """The exact optimum whatever the instance's size, with CRED-M's node count as the upper bound."""
    ub = verify(inst, cred_m(inst))
    res = solve_milp(inst, upper=ub.active_nodes if ub.ok else None, time_limit=p.time_limit, max_variables=HARD_MAX_VARIABLES)
    if res.status == "too_large":
        raise InputError("milp", f"instance too large for the exact MILP ({res.variables} variables > {HARD_MAX_VARIABLES})")
    if res.status == "infeasible":
        raise InputError("milp", f"no schedule fits in N = {inst.nodes} nodes (the MILP is infeasible)")
    if res.solution is None:
        raise InputError("milp", f"no solution found within the {p.time_limit:g} s time limit (--milp-time-limit)")
    sol = res.solution
    sol.info.update(status=res.status, bound=res.bound)
    return sol


def _without_params(fn: Callable[[EdgeInstance], Solution]) -> Callable[[EdgeInstance, int, AlgorithmParams], Solution]:
    def run(inst: EdgeInstance, seed: int, p: AlgorithmParams) -> Solution:
        return fn(inst)

    return run


ALGORITHMS: AlgorithmRegistry[EdgeInstance, Solution] = AlgorithmRegistry(
    "edge",
    [
        Algorithm("cred-m", "CRED-M", "heuristic", "deadline classes in order, reusing active nodes' chunks, storage and slots before opening nodes", _without_params(cred_m)),
        Algorithm("cred-s", "CRED-S", "heuristic", "the equal-deadline algorithm, every job given the earliest deadline", _without_params(cred_s)),
        Algorithm("cred-s-per-deadline", "CRED-S per deadline", "heuristic", "CRED-M without reuse: CRED-S on each deadline class with its own nodes", _without_params(cred_s_per_deadline)),
        Algorithm("first-fit", "first-fit", "baseline", "demands in deadline order to the first nodes with room, then new nodes", _without_params(first_fit)),
        Algorithm("milp", "MILP", "exact", "exact optimum (HiGHS), bounded by CRED-M's node count; small instances only", _milp, EdgeMilpParams),
    ],
)
#: Every algorithm but the exact MILP: fast enough for any instance and for sweeps.
HEURISTICS = ("cred-m", "cred-s", "cred-s-per-deadline", "first-fit")
DEFAULT_COMPARE = HEURISTICS


@dataclass
class EdgeRun:
    algorithm: str
    solution: Solution
    verdict: Verdict
    seconds: float
    verify_seconds: float

    @property
    def feasible(self) -> bool:
        return self.verdict.ok

    def row(self) -> dict[str, Any]:
        return {
            "active_nodes": self.verdict.active_nodes,
            "feasible": self.feasible,
            "seconds": round(self.seconds, 6),
            "verify_seconds": round(self.verify_seconds, 6),
            "violations": {v.kind: v.count for v in self.verdict.violations},
        }


def parse_algorithms(spec: str | list[str] | tuple[str, ...], field: str = "--algorithms") -> list[str]:
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    names = [n for n in names if n]
    if not names:
        raise InputError(field, "no algorithm given")
    for n in names:
        if n not in ALGORITHMS:
            raise InputError(field, f"unknown algorithm {n!r} (choose from {', '.join(ALGORITHMS.names())})")
    return names


def run_algorithm(name: str, inst: EdgeInstance, *, seed: int = 0, params: Mapping[str, Any] | AlgorithmParams | None = None) -> EdgeRun:
    """Run one algorithm (``milp``: the exact optimum regardless of size) and verify its schedule.

    ``params`` are validated against the algorithm's ``Params`` (only ``milp``
    has any: ``time_limit``).
    """
    algorithm = ALGORITHMS.get(name)
    t0 = time.perf_counter()
    sol = ALGORITHMS.run(algorithm.name, inst, seed=seed, params=params)
    t1 = time.perf_counter()
    verdict = verify(inst, sol)
    t2 = time.perf_counter()
    return EdgeRun(name, sol, verdict, t1 - t0, t2 - t1)


def compare(
    inst: EdgeInstance,
    algorithms: list[str] | tuple[str, ...] = DEFAULT_COMPARE,
    *,
    optimum: str = "auto",
    max_variables: int = DEFAULT_MAX_VARIABLES,
    milp_time_limit: float = DEFAULT_TIME_LIMIT,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Per algorithm ``active_nodes``, ``feasible``, ``seconds``; the lower bound; the optimum for small instances.

    ``optimum``: ``auto`` (small instances only), ``always`` or ``never``.
    ``milp_time_limit`` bounds the optimum's MILP and is the ``milp``
    algorithm's ``time_limit`` unless ``params`` (algorithm name -> its
    parameters) says otherwise.
    """
    if optimum not in ("auto", "always", "never"):
        raise InputError("--optimum", f"expected auto, always or never, got {optimum!r}")
    per_algorithm: dict[str, Mapping[str, Any]] = {"milp": {"time_limit": milp_time_limit}, **(params or {})}
    runs = {name: run_algorithm(name, inst, params=per_algorithm.get(name)) for name in algorithms}
    bounds = lower_bounds(inst)
    out: dict[str, Any] = {
        "instance": inst.describe(),
        "algorithms": {name: r.row() for name, r in runs.items()},
        "lower_bound": bounds["lower_bound"],
        "lower_bounds": bounds,
        "optimum": None,
        "optimum_status": "not computed",
    }
    if optimum != "never":
        ref = runs["cred-m"] if "cred-m" in runs else run_algorithm("cred-m", inst)
        upper = ref.verdict.active_nodes if ref.feasible else None
        res = solve_milp(inst, upper=upper, time_limit=milp_time_limit, max_variables=HARD_MAX_VARIABLES if optimum == "always" else max_variables)
        out["optimum"] = res.optimum
        out["optimum_status"] = res.status
        out["optimum_seconds"] = round(res.seconds, 6)
        out["optimum_bound"] = res.bound
        out["milp_variables"] = res.variables
        if res.solution is not None:
            out["optimum_verified"] = verify(inst, res.solution).ok
    return out
