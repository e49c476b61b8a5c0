"""The algorithm registry of :mod:`schedlab.locality`: names, parameters and one entry point, :func:`run_algorithm`.

Names are the ones used everywhere (CLI, JSON, CSV); ``label`` is the paper's
spelling, used in tables and plots. ``online`` algorithms learn a core's
initial load only when it frees up (:mod:`schedlab.locality.online`);
``offline`` ones know all initial loads; ``exact`` is the MILP.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from schedlab.algorithms import Algorithm, AlgorithmParams, AlgorithmRegistry
from schedlab.errors import InputError
from schedlab.locality.model import LocalityInstance, LocalitySchedule
from schedlab.locality.online import RemotePick, Routing, Timeline

# -- parameters ----------------------------------------------------------------------------------------------------
RemotePickField = Annotated[
    RemotePick,
    Field(description="which task a core takes when it goes remote: random (uniform, from the run's seed) or first (the lowest-numbered)"),
]
TimelineField = Annotated[
    Timeline,
    Field(description="the online run's clock: running (finished remote tasks keep their time) or model (the cost model applied so far)"),
]


class HadoopParams(AlgorithmParams):
    remote_pick: RemotePickField = "random"
    timeline: TimelineField = "running"


class DelayParams(AlgorithmParams):
    delay_threshold: float = Field(
        3.0,
        ge=0,
        allow_inf_nan=False,
        description="W: how long a free core with no data-local task waits before it takes a remote one "
        "(DynDLOn waits max(g_s(r_s), W) once its server runs a remote task)",
    )
    remote_pick: RemotePickField = "random"
    timeline: TimelineField = "running"


class LtfpaParams(AlgorithmParams):
    threshold: int = Field(0, ge=0, description="an idle core serves another server's queue only when that queue holds more than this many tasks")
    routing: Routing = Field("load", description="where each task is queued: load (the preferred server whose next local slot ends first) or queue (the shortest queue)")
    timeline: TimelineField = "running"


class ListParams(AlgorithmParams):
    remote_cost: Literal["dynamic", "static"] = Field(
        "dynamic",
        description="how LIST predicts a remote task's finish: dynamic (g_s at the server's remote count after it joins, the paper's text) "
        "or static (g_s(1) whatever the count: a sensitivity reading, not the paper's)",
    )


class HtaParams(AlgorithmParams):
    time_limit: float | None = Field(None, gt=0, description="stop with a timeout after this many seconds (none: no limit)")


class LocalityMilpParams(AlgorithmParams):
    time_limit: float = Field(60.0, gt=0, description="seconds the MILP solver may run")
    fewest_remote: bool = Field(False, description="a second solve keeps the optimal makespan and minimises the remote tasks")


# -- how each algorithm is run ---------------------------------------------------------------------------------------
def _dyndloff(inst: LocalityInstance, seed: int, p: AlgorithmParams) -> LocalitySchedule:
    from schedlab.locality.dyndloff import dyndloff

    return dyndloff(inst)


def _dyndlon(inst: LocalityInstance, seed: int, p: DelayParams) -> LocalitySchedule:
    from schedlab.locality.online import dyndlon

    return dyndlon(inst, seed, p.delay_threshold, p.remote_pick, p.timeline)


def _hadoop(inst: LocalityInstance, seed: int, p: HadoopParams) -> LocalitySchedule:
    from schedlab.locality.online import hadoop

    return hadoop(inst, seed, p.remote_pick, p.timeline)


def _delay(inst: LocalityInstance, seed: int, p: DelayParams) -> LocalitySchedule:
    from schedlab.locality.online import delay

    return delay(inst, seed, p.delay_threshold, p.remote_pick, p.timeline)


def _ltfpa(inst: LocalityInstance, seed: int, p: LtfpaParams) -> LocalitySchedule:
    from schedlab.locality.online import ltfpa

    return ltfpa(inst, seed, p.threshold, p.routing, p.timeline)


def _list(inst: LocalityInstance, seed: int, p: ListParams) -> LocalitySchedule:
    from schedlab.locality.baselines import list_scheduling

    return list_scheduling(inst, p.remote_cost)


def _hta(inst: LocalityInstance, seed: int, p: HtaParams) -> LocalitySchedule:
    from schedlab.locality.baselines import hta

    return hta(inst, p.time_limit)


def _bar(inst: LocalityInstance, seed: int, p: AlgorithmParams) -> LocalitySchedule:
    from schedlab.locality.baselines import bar

    return bar(inst)


def _milp(inst: LocalityInstance, seed: int, p: LocalityMilpParams) -> LocalitySchedule:
    from schedlab.locality.milp import solve_milp

    return solve_milp(inst, time_limit=p.time_limit, fewest_remote=p.fewest_remote)


# -- the registry --------------------------------------------------------------------------------------------------
ALGORITHMS: AlgorithmRegistry[LocalityInstance, LocalitySchedule] = AlgorithmRegistry(
    "locality",
    [
        Algorithm("dyndloff", "DynDLOff", "offline", "DynDL offline: balanced local assignment, then remote tasks by deadline (Section 5)", _dyndloff),
        Algorithm(
            "dyndlon",
            "DynDLOn",
            "online",
            "DynDL online: delay scheduling whose delay grows with the server's remote cost (Algorithm 1)",
            _dyndlon,
            DelayParams,
            seeded=True,
        ),
        Algorithm("hadoop", "Hadoop", "online", "Hadoop default: local task if any, else a random task", _hadoop, HadoopParams, seeded=True),
        Algorithm("delay", "DELAY", "online", "delay scheduling with a fixed threshold", _delay, DelayParams, seeded=True),
        Algorithm("ltfpa", "LTFPA", "online", "local-tasks-first priority: load-balanced local queues, idle cores steal from the longest", _ltfpa, LtfpaParams),
        Algorithm("list", "LIST", "offline", "list scheduling: each task, in order, where it finishes earliest", _list, ListParams),
        Algorithm("hta", "HTA", "offline", "Fischer-Su-Yin max-cover/bal-assign with cluster-wide remote cost", _hta, HtaParams),
        Algorithm("bar", "BAR", "offline", "Balance-Reduce with cluster-wide remote cost", _bar),
        Algorithm("milp", "MILP", "exact", "exact mixed-integer program (HiGHS), small instances only", _milp, LocalityMilpParams),
    ],
)

#: The paper's eight algorithms, in the order used by tables and plots.
PAPER_ALGORITHMS = ("dyndloff", "dyndlon", "hadoop", "delay", "ltfpa", "list", "hta", "bar")
#: Algorithms that ignore DynDL's per-server dynamic remote cost (Section 6.1.1).
NON_DYNAMIC = ("hadoop", "delay", "ltfpa", "hta", "bar")


def label(name: str) -> str:
    return ALGORITHMS.get(name).label if name in ALGORITHMS else name


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
            raise InputError("--algorithms", f"unknown algorithm {n!r} (choose from all, {', '.join(ALGORITHMS.names())})")
    return list(dict.fromkeys(names))


def run_algorithm(name: str, inst: LocalityInstance, seed: int = 0, params: dict[str, Any] | AlgorithmParams | None = None) -> LocalitySchedule:
    """Run one algorithm on an instance: ``ALGORITHMS.run`` (``params`` validated against its ``Params``)."""
    return ALGORITHMS.run(name, inst, seed=seed, params=params)
