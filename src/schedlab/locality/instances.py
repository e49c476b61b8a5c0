"""DynDL instances: the paper's Table 2, the paper's generator (Section 6.1.1) and a JSON format.

Generator (Section 6.1.1). Core ``m`` (0-based) belongs to server
``m // core_num``; its initial load is drawn uniformly from ``[0, f_init(m)]``
with ``f_init(m) = alpha * (m // core_num) + beta`` — the paper writes
``alpha * m / core_num + beta`` right after mapping core ``m`` to server
``m / core_num``, so we read ``m / core_num`` as that server index (cores of one
server share a range; servers with larger IDs are more loaded when
``alpha > 0``). Each task gets ``replicas`` (3) *distinct* servers drawn
uniformly from ``[0, |S|)`` — HDFS never puts two replicas of a block on one
server, the paper does not say. Every server uses
``g(n) = 1 + theta * min(n, core_num)``. Draws come from named streams of
:class:`~schedlab.sim.rng.RngStreams`, so an instance is a pure function of its
parameters and seed.

JSON format (``"format": "schedlab.locality/1"``)::

    {
      "format": "schedlab.locality/1",
      "name": "table2",
      "cost_functions": {"default": {"kind": "linear", "theta": 0.5, "cap": null}},
      "servers": [{"name": "s1", "initial_loads": [0.75, 0.5], "cost": "default"}, ...],
      "tasks": [{"name": "t1", "replicas": ["s1", "s2"]}, ...]
    }

A server gives either ``initial_loads`` (one number per core) or ``cores``
(that many idle cores), or both if they agree. ``cost`` names an entry of
``cost_functions`` and defaults to ``"default"``. Cost functions are
``{"kind": "linear", "theta": θ, "cap": n | null}`` (``g(n) = 1 + θ·min(n, cap)``)
or ``{"kind": "table", "values": [g(1), g(2), …]}`` (the last value holds
beyond the table). Replicas name servers (or give 0-based indices). Every
problem is reported as an :class:`~schedlab.errors.InputError` whose ``where``
is ``file: field.path``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.locality.model import CostFunction, LinearCost, LocalityInstance, TableCost
from schedlab.memory import check_fits
from schedlab.sim.rng import RngStreams

FORMAT = "schedlab.locality/1"
BUNDLED = ("table2",)


# -- the paper's worked example ---------------------------------------------------------------------
def table2_instance() -> LocalityInstance:
    """Table 2 (Section 4): 4 servers x 2 cores, 5 tasks, ``g_s(n) = 1 + 0.5 n``.

    The extracted text gives core p32's initial load as "14"; any value above
    3.25 gives the same example (p32 never matters), so we keep 14.
    """
    return LocalityInstance.from_lists(
        initial_loads=[[0.75, 0.5], [0.25, 2.0], [2.25, 14.0], [2.5, 3.75]],
        # DL_srv(t): s1 holds t1; s2 holds t1..t4; s3 holds t3, t4, t5; s4 holds t2, t5.
        replicas=[[0, 1], [1, 3], [1, 2], [1, 2], [2, 3]],
        cost=LinearCost(0.5),
        server_names=["s1", "s2", "s3", "s4"],
        task_names=["t1", "t2", "t3", "t4", "t5"],
        name="table2",
    )


# -- the paper's generator ------------------------------------------------------------------------------
def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise InputError(name, f"must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_float(name: str, value: Any, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating) or not math.isfinite(value) or value < low:
        raise InputError(name, f"must be a finite number >= {low:g}, got {value!r}")
    return float(value)


def draw_distinct(rng: np.random.Generator, n_rows: int, k: int, n: int) -> np.ndarray:
    """``n_rows`` rows of ``k`` distinct integers uniform on ``[0, n)`` (redrawing rows that repeat a value)."""
    out = rng.integers(0, n, size=(n_rows, k))
    if k == 1:
        return out
    while True:
        srt = np.sort(out, axis=1)
        dup = np.nonzero((np.diff(srt, axis=1) == 0).any(axis=1))[0]
        if dup.size == 0:
            return out
        out[dup] = rng.integers(0, n, size=(dup.size, k))


def generate(
    tasks: int = 100,
    servers: int = 50,
    core_num: int = 40,
    alpha: float = 0.0,
    beta: float = 100.0,
    theta: float = 1.0,
    replicas: int = 3,
    seed: int = 0,
) -> LocalityInstance:
    """The paper's workload generator (Section 6.1.1; defaults are Table 3's)."""
    tasks = _check_int("--tasks", tasks, 1)
    servers = _check_int("--servers", servers, 1)
    core_num = _check_int("--cores", core_num, 1)
    replicas = _check_int("--replicas", replicas, 1)
    alpha = _check_float("--alpha", alpha)
    beta = _check_float("--beta", beta)
    theta = _check_float("--theta", theta)
    if replicas > servers:
        raise InputError("--replicas", f"{replicas} distinct replica servers asked for, but there are only {servers} servers")
    if seed is None or isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError("--seed", f"must be an integer >= 0, got {seed!r}")
    # int64 replica lists and draws (about 3 words per replica), float loads per core
    check_fits("--tasks", tasks * replicas, 24, "task replicas")
    check_fits("--servers", servers * core_num, 24, "cores (servers x cores)")
    streams = RngStreams(seed)
    n_cores = servers * core_num
    server_of_core = np.arange(n_cores) // core_num
    upper = alpha * server_of_core + beta
    loads = streams.np_rng("locality.initial_loads").random(n_cores) * upper
    reps = draw_distinct(streams.np_rng("locality.replicas"), tasks, replicas, servers)
    return LocalityInstance(
        server_core_start=np.arange(servers + 1, dtype=np.int64) * core_num,
        initial_load=loads,
        replica_start=np.arange(tasks + 1, dtype=np.int64) * replicas,
        replica_server=reps.reshape(-1).astype(np.int64),
        cost_functions=(LinearCost(theta, core_num),),
        server_cost=np.zeros(servers, dtype=np.int64),
        name=f"gen(T={tasks},S={servers},c={core_num},alpha={alpha:g},beta={beta:g},theta={theta:g},seed={seed})",
    )


# -- JSON --------------------------------------------------------------------------------------------------
def _cost_from_json(spec: Any, where: str) -> CostFunction:
    if not isinstance(spec, dict):
        raise InputError(where, f"must be an object like {{\"kind\": \"linear\", \"theta\": 1}}, got {type(spec).__name__}")
    kind = spec.get("kind")
    if kind == "linear":
        unknown = set(spec) - {"kind", "theta", "cap"}
        if unknown:
            raise InputError(f"{where}.{sorted(unknown)[0]}", "unknown field (a linear cost has theta and cap)")
        if "theta" not in spec:
            raise InputError(f"{where}.theta", "missing")
        theta = _check_float(f"{where}.theta", spec["theta"])
        cap = spec.get("cap")
        if cap is not None:
            cap = _check_int(f"{where}.cap", cap, 1)
        return LinearCost(theta, cap)
    if kind == "table":
        unknown = set(spec) - {"kind", "values"}
        if unknown:
            raise InputError(f"{where}.{sorted(unknown)[0]}", "unknown field (a table cost has values)")
        values = spec.get("values")
        if not isinstance(values, list) or not values:
            raise InputError(f"{where}.values", "must be a non-empty list of numbers g(1), g(2), ...")
        vals = [_check_float(f"{where}.values[{i}]", v, 1.0) for i, v in enumerate(values)]
        for i in range(1, len(vals)):
            if vals[i] < vals[i - 1]:
                raise InputError(f"{where}.values[{i}]", f"must be >= the previous value {vals[i - 1]:g} (g is non-decreasing)")
        return TableCost(tuple(vals))
    if kind is None:
        raise InputError(f"{where}.kind", "missing (linear or table)")
    raise InputError(f"{where}.kind", f"unknown kind {kind!r} (choose from linear, table)")


def instance_from_dict(doc: Any, source: str = "instance") -> LocalityInstance:
    """A :class:`~schedlab.locality.model.LocalityInstance` from the parsed JSON document (see the module docstring)."""

    def at(path: str) -> str:
        return f"{source}: {path}"

    if not isinstance(doc, dict):
        raise InputError(source, f"the top level must be a JSON object, got {type(doc).__name__}")
    fmt = doc.get("format", FORMAT)
    if fmt != FORMAT:
        raise InputError(at("format"), f"unsupported format {fmt!r} (expected {FORMAT!r})")
    unknown = set(doc) - {"format", "name", "cost_functions", "servers", "tasks"}
    if unknown:
        raise InputError(at(sorted(unknown)[0]), "unknown field")
    funcs_doc = doc.get("cost_functions", {"default": {"kind": "linear", "theta": 1.0}})
    if not isinstance(funcs_doc, dict) or not funcs_doc:
        raise InputError(at("cost_functions"), "must be a non-empty object mapping names to cost functions")
    funcs: dict[str, CostFunction] = {}
    for key, spec in funcs_doc.items():
        funcs[key] = _cost_from_json(spec, at(f"cost_functions.{key}"))

    servers = doc.get("servers")
    if servers is None:
        raise InputError(at("servers"), "missing")
    if not isinstance(servers, list) or not servers:
        raise InputError(at("servers"), "must be a non-empty list of servers")
    loads: list[list[float]] = []
    names: list[str] = []
    costs: list[CostFunction] = []
    for s, srv in enumerate(servers):
        w = f"servers[{s}]"
        if not isinstance(srv, dict):
            raise InputError(at(w), f"must be an object, got {type(srv).__name__}")
        unknown = set(srv) - {"name", "cores", "initial_loads", "cost"}
        if unknown:
            raise InputError(at(f"{w}.{sorted(unknown)[0]}"), "unknown field")
        name = srv.get("name", f"s{s + 1}")
        if not isinstance(name, str) or not name:
            raise InputError(at(f"{w}.name"), f"must be a non-empty string, got {name!r}")
        if name in names:
            raise InputError(at(f"{w}.name"), f"duplicate server name {name!r}")
        cores = srv.get("cores")
        init = srv.get("initial_loads")
        if cores is None and init is None:
            raise InputError(at(f"{w}.initial_loads"), "missing (give initial_loads, one per core, or cores)")
        if cores is not None:
            cores = _check_int(at(f"{w}.cores"), cores, 1)
        if init is None:
            assert cores is not None  # one of the two is given (checked above)
            init_l = [0.0] * cores
        else:
            if not isinstance(init, list) or not init:
                raise InputError(at(f"{w}.initial_loads"), "must be a non-empty list of numbers, one per core")
            init_l = [_check_float(at(f"{w}.initial_loads[{i}]"), x) for i, x in enumerate(init)]
            if cores is not None and cores != len(init_l):
                raise InputError(at(f"{w}.cores"), f"says {cores} cores but initial_loads has {len(init_l)} values")
        cost_name = srv.get("cost", "default")
        if cost_name not in funcs:
            raise InputError(at(f"{w}.cost"), f"no cost function named {cost_name!r} (have {', '.join(sorted(funcs))})")
        names.append(name)
        loads.append(init_l)
        costs.append(funcs[cost_name])

    tasks = doc.get("tasks")
    if tasks is None:
        raise InputError(at("tasks"), "missing")
    if not isinstance(tasks, list) or not tasks:
        raise InputError(at("tasks"), "must be a non-empty list of tasks")
    index = {n: i for i, n in enumerate(names)}
    reps: list[list[int]] = []
    tnames: list[str] = []
    for t, task in enumerate(tasks):
        w = f"tasks[{t}]"
        if not isinstance(task, dict):
            raise InputError(at(w), f"must be an object, got {type(task).__name__}")
        unknown = set(task) - {"name", "replicas"}
        if unknown:
            raise InputError(at(f"{w}.{sorted(unknown)[0]}"), "unknown field")
        name = task.get("name", f"t{t + 1}")
        if not isinstance(name, str) or not name:
            raise InputError(at(f"{w}.name"), f"must be a non-empty string, got {name!r}")
        r = task.get("replicas")
        if r is None:
            raise InputError(at(f"{w}.replicas"), "missing")
        if not isinstance(r, list) or not r:
            raise InputError(at(f"{w}.replicas"), "must be a non-empty list of server names")
        row: list[int] = []
        for i, ref in enumerate(r):
            if isinstance(ref, str):
                if ref not in index:
                    raise InputError(at(f"{w}.replicas[{i}]"), f"no server named {ref!r}")
                row.append(index[ref])
            elif isinstance(ref, int) and not isinstance(ref, bool):
                if not 0 <= ref < len(names):
                    raise InputError(at(f"{w}.replicas[{i}]"), f"no server with index {ref} (there are {len(names)})")
                row.append(ref)
            else:
                raise InputError(at(f"{w}.replicas[{i}]"), f"must be a server name or index, got {ref!r}")
            if row[-1] in row[:-1]:
                raise InputError(at(f"{w}.replicas[{i}]"), f"server {names[row[-1]]!r} is listed twice")
        reps.append(row)
        tnames.append(name)
    if len(set(tnames)) != len(tnames):
        dup = next(n for n in tnames if tnames.count(n) > 1)
        raise InputError(at(f"tasks[{tnames.index(dup, tnames.index(dup) + 1)}].name"), f"duplicate task name {dup!r}")
    inst_name = doc.get("name", Path(source).stem)
    if not isinstance(inst_name, str):
        raise InputError(at("name"), f"must be a string, got {inst_name!r}")
    return LocalityInstance.from_lists(loads, reps, costs, server_names=names, task_names=tnames, name=inst_name)


def load_instance(path: str | Path) -> LocalityInstance:
    """Read a JSON instance file, or a bundled name (``table2``)."""
    if str(path) == "table2":
        return table2_instance()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(p), "no such file (or bundled instance: table2)") from None
    except IsADirectoryError:
        raise InputError(str(p), "is a directory, not an instance file") from None
    except UnicodeDecodeError as e:
        raise InputError(str(p), f"not UTF-8 text ({e.reason})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{p}:{e.lineno}", f"malformed JSON: {e.msg} (column {e.colno})") from None
    return instance_from_dict(doc, str(p))


def instance_to_dict(inst: LocalityInstance) -> dict[str, Any]:
    """The JSON form of ``inst`` (round-trips through :func:`instance_from_dict`)."""
    funcs = {}
    for f, func in enumerate(inst.cost_functions):
        funcs["default" if f == 0 else f"cost{f}"] = func.describe()
    keys = list(funcs)
    servers = []
    for s in range(inst.n_servers):
        entry: dict[str, Any] = {
            "name": inst.server_name(s),
            "initial_loads": inst.initial_load[inst.cores_of(s).start : inst.cores_of(s).stop].tolist(),
        }
        if inst.server_cost[s] != 0:
            entry["cost"] = keys[int(inst.server_cost[s])]
        servers.append(entry)
    tasks = [
        {"name": inst.task_name(t), "replicas": [inst.server_name(int(s)) for s in inst.replicas_of(t)]}
        for t in range(inst.n_tasks)
    ]
    return {"format": FORMAT, "name": inst.name, "cost_functions": funcs, "servers": servers, "tasks": tasks}
