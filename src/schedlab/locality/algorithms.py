"""The algorithm registry of :mod:`schedlab.locality`: names, parameters and one entry point, :func:`run_algorithm`.

Names are the ones used everywhere (CLI, JSON, CSV); ``label`` is the paper's
spelling, used in tables and plots. ``online`` algorithms learn a core's
initial load only when it frees up (:mod:`schedlab.locality.online`);
``offline`` ones know all initial loads; ``exact`` is the MILP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schedlab.errors import InputError
from schedlab.locality.model import Instance, Result


@dataclass(frozen=True)
class AlgorithmSpec:
    name: str
    label: str
    mode: str  # online | offline | exact
    summary: str
    params: dict[str, tuple[type, Any]] = field(default_factory=dict)  # name -> (type, default)
    seeded: bool = False  # draws random numbers from the run's seed


ALGORITHMS: dict[str, AlgorithmSpec] = {
    spec.name: spec
    for spec in (
        AlgorithmSpec("dyndloff", "DynDLOff", "offline", "DynDL offline: balanced local assignment, then remote tasks by deadline (Section 5)"),
        AlgorithmSpec(
            "dyndlon",
            "DynDLOn",
            "online",
            "DynDL online: delay scheduling whose delay grows with the server's remote cost (Algorithm 1)",
            {"delay_threshold": (float, 3.0), "remote_pick": (str, "random"), "timeline": (str, "running")},
            seeded=True,
        ),
        AlgorithmSpec("hadoop", "Hadoop", "online", "Hadoop default: local task if any, else a random task", {"remote_pick": (str, "random"), "timeline": (str, "running")}, seeded=True),
        AlgorithmSpec(
            "delay",
            "DELAY",
            "online",
            "delay scheduling with a fixed threshold",
            {"delay_threshold": (float, 3.0), "remote_pick": (str, "random"), "timeline": (str, "running")},
            seeded=True,
        ),
        AlgorithmSpec("ltfpa", "LTFPA", "online", "local-tasks-first priority: load-balanced local queues, idle cores steal from the longest", {"threshold": (int, 0), "routing": (str, "load"), "timeline": (str, "running")}),
        AlgorithmSpec("list", "LIST", "offline", "list scheduling: each task, in order, where it finishes earliest"),
        AlgorithmSpec("hta", "HTA", "offline", "Fischer-Su-Yin max-cover/bal-assign with cluster-wide remote cost", {"time_limit": (float, None)}),
        AlgorithmSpec("bar", "BAR", "offline", "Balance-Reduce with cluster-wide remote cost"),
        AlgorithmSpec(
            "milp",
            "MILP",
            "exact",
            "exact mixed-integer program (HiGHS), small instances only",
            {"time_limit": (float, 60.0), "fewest_remote": (bool, False)},
        ),
    )
}

#: The paper's eight algorithms, in the order used by tables and plots.
PAPER_ALGORITHMS = ("dyndloff", "dyndlon", "hadoop", "delay", "ltfpa", "list", "hta", "bar")
#: Algorithms that ignore DynDL's per-server dynamic remote cost (Section 6.1.1).
NON_DYNAMIC = ("hadoop", "delay", "ltfpa", "hta", "bar")


def label(name: str) -> str:
    return ALGORITHMS[name].label if name in ALGORITHMS else name


def get_spec(name: str) -> AlgorithmSpec:
    spec = ALGORITHMS.get(name)
    if spec is None:
        raise InputError("--algorithm", f"unknown algorithm {name!r} (choose from {', '.join(ALGORITHMS)})")
    return spec


def parse_algorithms(text: str | None, default: tuple[str, ...] = PAPER_ALGORITHMS) -> list[str]:
    """A comma-separated list of algorithm names; ``all`` stands for the paper's eight."""
    if text is None or not text.strip():
        return list(default)
    names: list[str] = []
    for n in (n.strip() for n in text.split(",")):
        if not n:
            continue
        if n == "all":
            names.extend(PAPER_ALGORITHMS)
        elif n in ALGORITHMS:
            names.append(n)
        else:
            raise InputError("--algorithms", f"unknown algorithm {n!r} (choose from all, {', '.join(ALGORITHMS)})")
    return list(dict.fromkeys(names))


def check_params(name: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """Validate parameters for algorithm ``name`` and fill in defaults."""
    spec = get_spec(name)
    out = {k: d for k, (_, d) in spec.params.items()}
    for key, value in (params or {}).items():
        if key not in spec.params:
            allowed = ", ".join(spec.params) or "none"
            raise InputError("--param", f"{name} has no parameter {key!r} (parameters: {allowed})")
        typ, _ = spec.params[key]
        if typ is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if value is not None and not (isinstance(value, typ) and not (typ is not bool and isinstance(value, bool))):
            raise InputError("--param", f"{name}: {key} must be {typ.__name__}, got {value!r}")
        out[key] = value
    return out


def run_algorithm(name: str, inst: Instance, seed: int = 0, params: dict[str, Any] | None = None) -> Result:
    """Run one algorithm on an instance; ``params`` are checked against the registry."""
    p = check_params(name, params)
    fn = _dispatch()[name]
    try:
        return fn(inst, seed, p)
    except InputError as e:
        if e.where in p:  # a parameter's value was rejected: name it as the CLI option it came from
            raise InputError(f"--param {e.where}", e.problem) from None
        raise


def _dispatch() -> dict[str, Callable[[Instance, int, dict[str, Any]], Result]]:
    from schedlab.locality import baselines, dyndloff, online

    def milp(inst: Instance, seed: int, p: dict[str, Any]) -> Result:
        from schedlab.locality.milp import solve_milp

        return solve_milp(inst, time_limit=p["time_limit"], fewest_remote=p["fewest_remote"])

    return {
        "dyndloff": lambda inst, seed, p: dyndloff.dyndloff(inst),
        "dyndlon": lambda inst, seed, p: online.dyndlon(inst, seed, p["delay_threshold"], p["remote_pick"], p["timeline"]),
        "hadoop": lambda inst, seed, p: online.hadoop(inst, seed, p["remote_pick"], p["timeline"]),
        "delay": lambda inst, seed, p: online.delay(inst, seed, p["delay_threshold"], p["remote_pick"], p["timeline"]),
        "ltfpa": lambda inst, seed, p: online.ltfpa(inst, seed, p["threshold"], p["routing"], p["timeline"]),
        "list": lambda inst, seed, p: baselines.list_scheduling(inst),
        "hta": lambda inst, seed, p: baselines.hta(inst, baselines.check_time_limit(p["time_limit"])),
        "bar": lambda inst, seed, p: baselines.bar(inst),
        "milp": milp,
    }
