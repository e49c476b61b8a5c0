"""The DynDL scheduling model (Jin et al., Appl. Sci. 2018, Section 3) and its evaluator.

A computing system is a set of servers, each with a fixed number of identical
cores, and a set of unit tasks, each preferring the servers that store a
replica of its input block (``DL_srv(t)``). An assignment maps every task to a
core. A task on a core of one of its preferred servers is *data-local* and
costs 1; otherwise it is *data-remote* and costs ``g_s(r_s)``, where ``s`` is
the core's server, ``r_s`` the number of data-remote tasks the assignment puts
on ``s`` and ``g_s`` a non-decreasing function (the *remote-cost function*).
The load of a core is its initial load plus the costs of its tasks, and the
makespan is the largest load over *active* cores (cores with at least one task).

:func:`evaluate` recomputes all of that from nothing but the task-to-core map —
locality is re-derived from the replica sets, ``r_s`` recounted — so it is the
independent check of every algorithm's own bookkeeping.

Choices where the paper is silent:

* ``g_s(n)`` must be >= 1 (a remote task never costs less than a local one) and
  non-decreasing; the paper asks for ``g_s > 1`` but the built-in
  ``1 + theta * min(n, cap)`` with ``theta = 0`` (a network with no cost for
  remote reads) is a useful limit, so 1 is allowed.
* Online schedulers may keep a free core idle on purpose (delay scheduling).
  The paper models a core's idle time by its initial load (Section 3), so an
  :class:`Assignment` may carry per-core ``idle`` time, added to the initial
  load; offline algorithms leave it at zero and the evaluator is then exactly
  the paper's formula.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from schedlab.errors import InputError

# Relative tolerance used when two computations of the same load are compared.
LOAD_RTOL = 1e-9


# -- remote-cost functions -----------------------------------------------------------------------
class CostFunction:
    """A non-decreasing remote-cost function ``g(n) >= 1`` of the number ``n >= 1`` of remote tasks on a server."""

    name: str = "cost"

    def __call__(self, n: int) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def table(self, n_max: int) -> np.ndarray:
        """``g(n)`` for ``n = 0 .. n_max`` as floats (entry 0 holds ``g(1)``; no server has 0 remote tasks that cost anything)."""
        n_max = max(int(n_max), 1)
        values = np.array([float(self(max(n, 1))) for n in range(n_max + 1)], dtype=float)
        _check_table(values[1:], self.name)
        return values

    def describe(self) -> dict:
        """The JSON form of this function (see :mod:`schedlab.locality.instances`)."""
        raise InputError(self.name, "a Python callable cost function has no JSON form")


def _check_table(values: np.ndarray, name: str) -> None:
    """``values[i] = g(i + 1)`` must be finite, >= 1 and non-decreasing."""
    if not np.all(np.isfinite(values)):
        raise InputError(name, "remote-cost function returned a non-finite value")
    if values.size and values.min() < 1.0:
        i = int(np.argmax(values < 1.0))
        raise InputError(name, f"remote cost must be >= 1 (the cost of a local task), got g({i + 1}) = {values[i]:g}")
    bad = np.nonzero(np.diff(values) < 0)[0]
    if bad.size:
        i = int(bad[0])
        raise InputError(name, f"remote-cost function must be non-decreasing, but g({i + 2}) = {values[i + 1]:g} < g({i + 1}) = {values[i]:g}")


@dataclass(frozen=True)
class LinearCost(CostFunction):
    """The paper's ``g(n) = 1 + theta * min(n, cap)`` (Section 6.1.1; ``cap = None`` means no cap, as in Table 2)."""

    theta: float
    cap: int | None = None
    name: str = "linear"

    def __post_init__(self) -> None:
        if not (isinstance(self.theta, int | float) and math.isfinite(self.theta) and self.theta >= 0):
            raise InputError(self.name, f"theta must be a finite number >= 0, got {self.theta!r}")
        if self.cap is not None and (not isinstance(self.cap, int) or isinstance(self.cap, bool) or self.cap < 1):
            raise InputError(self.name, f"cap must be an integer >= 1 or null, got {self.cap!r}")

    def __call__(self, n: int) -> float:
        m = n if self.cap is None else min(n, self.cap)
        return 1.0 + self.theta * m

    def table(self, n_max: int) -> np.ndarray:
        n = np.maximum(np.arange(max(int(n_max), 1) + 1), 1)
        if self.cap is not None:
            n = np.minimum(n, self.cap)
        return 1.0 + self.theta * n.astype(float)

    def describe(self) -> dict:
        return {"kind": "linear", "theta": self.theta, "cap": self.cap}


@dataclass(frozen=True)
class TableCost(CostFunction):
    """A user table: ``g(n) = values[n-1]`` for ``n <= len(values)``, the last value beyond."""

    values: tuple[float, ...]
    name: str = "table"

    def __post_init__(self) -> None:
        if len(self.values) == 0:
            raise InputError(self.name, "a cost table needs at least one value")
        _check_table(np.asarray(self.values, dtype=float), self.name)

    def __call__(self, n: int) -> float:
        return float(self.values[min(max(n, 1), len(self.values)) - 1])

    def table(self, n_max: int) -> np.ndarray:
        n = np.maximum(np.arange(max(int(n_max), 1) + 1), 1)
        v = np.asarray(self.values, dtype=float)
        return v[np.minimum(n, v.size) - 1]

    def describe(self) -> dict:
        return {"kind": "table", "values": list(self.values)}


@dataclass(frozen=True, eq=False)
class CallableCost(CostFunction):
    """Any Python callable ``n -> g(n)``; checked (>= 1, non-decreasing) on the range an algorithm tabulates."""

    fn: Callable[[int], float]
    name: str = "callable"

    def __call__(self, n: int) -> float:
        return float(self.fn(n))


def as_cost_function(g: CostFunction | Callable[[int], float]) -> CostFunction:
    return g if isinstance(g, CostFunction) else CallableCost(g)


# -- instances -------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class LocalityInstance:
    """A DynDL scheduling instance, stored as flat arrays (cores of a server are contiguous).

    Build one with :meth:`from_lists` (or :func:`schedlab.locality.instances.generate` /
    :func:`~schedlab.locality.instances.load_instance`).
    """

    server_core_start: np.ndarray  # (S+1,) cores of server s are server_core_start[s]:server_core_start[s+1]
    initial_load: np.ndarray  # (P,) L_init(p)
    replica_start: np.ndarray  # (T+1,) replicas of task t are replica_server[replica_start[t]:replica_start[t+1]]
    replica_server: np.ndarray  # (nnz,) server indices, distinct within a task
    cost_functions: tuple[CostFunction, ...]
    server_cost: np.ndarray  # (S,) index into cost_functions
    server_names: tuple[str, ...] | None = None
    task_names: tuple[str, ...] | None = None
    name: str = "instance"
    core_server: np.ndarray = field(init=False, repr=False)
    task_replica_count: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        counts = np.diff(self.server_core_start)
        object.__setattr__(self, "core_server", np.repeat(np.arange(counts.size, dtype=np.int64), counts))
        object.__setattr__(self, "task_replica_count", np.diff(self.replica_start))

    # sizes
    @property
    def n_servers(self) -> int:
        return int(self.server_core_start.size - 1)

    @property
    def n_cores(self) -> int:
        return int(self.initial_load.size)

    @property
    def n_tasks(self) -> int:
        return int(self.replica_start.size - 1)

    def cores_of(self, s: int) -> range:
        return range(int(self.server_core_start[s]), int(self.server_core_start[s + 1]))

    def replicas_of(self, t: int) -> np.ndarray:
        return self.replica_server[self.replica_start[t] : self.replica_start[t + 1]]

    def replica_lists(self) -> list[list[int]]:
        """``DL_srv(t)`` for every task as Python lists (for loops over tasks)."""
        rs, st = self.replica_server.tolist(), self.replica_start.tolist()
        return [rs[st[t] : st[t + 1]] for t in range(self.n_tasks)]

    def cost_of_server(self, s: int) -> CostFunction:
        return self.cost_functions[int(self.server_cost[s])]

    def g(self, s: int, n: int) -> float:
        """``g_s(n)``."""
        return self.cost_of_server(s)(n)

    def cost_tables(self, n_max: int) -> np.ndarray:
        """``G[f, n] = g_f(n)`` for each distinct cost function ``f`` and ``n = 0 .. n_max`` (entry 0 = ``g_f(1)``)."""
        return np.vstack([f.table(n_max) for f in self.cost_functions])

    def server_name(self, s: int) -> str:
        return self.server_names[s] if self.server_names else f"s{s + 1}"

    def task_name(self, t: int) -> str:
        return self.task_names[t] if self.task_names else f"t{t + 1}"

    def core_name(self, p: int) -> str:
        s = int(self.core_server[p])
        return f"{self.server_name(s)}.p{p - int(self.server_core_start[s]) + 1}"

    @classmethod
    def from_lists(
        cls,
        initial_loads: Sequence[Sequence[float]],
        replicas: Sequence[Sequence[int]],
        cost: CostFunction | Callable[[int], float] | Sequence[CostFunction | Callable[[int], float]],
        *,
        server_names: Sequence[str] | None = None,
        task_names: Sequence[str] | None = None,
        name: str = "instance",
    ) -> LocalityInstance:
        """An instance from per-server lists of core initial loads and per-task lists of replica servers.

        ``cost`` is one remote-cost function for every server or a sequence with one per server.
        """
        n_servers = len(initial_loads)
        if n_servers == 0:
            raise InputError("servers", "an instance needs at least one server")
        for s, loads in enumerate(initial_loads):
            if len(loads) == 0:
                raise InputError(f"servers[{s}]", "a server needs at least one core")
            for i, x in enumerate(loads):
                if not (isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and x >= 0):
                    raise InputError(f"servers[{s}].initial_loads[{i}]", f"must be a finite number >= 0, got {x!r}")
        if len(replicas) == 0:
            raise InputError("tasks", "an instance needs at least one task")
        for t, reps in enumerate(replicas):
            if len(reps) == 0:
                raise InputError(f"tasks[{t}].replicas", "a task needs at least one replica server")
            if len(set(reps)) != len(reps):
                raise InputError(f"tasks[{t}].replicas", f"replica servers must be distinct, got {list(reps)}")
            for i, s in enumerate(reps):
                if not (isinstance(s, int | np.integer) and 0 <= s < n_servers):
                    raise InputError(f"tasks[{t}].replicas[{i}]", f"no server {s!r} (there are {n_servers})")
        if isinstance(cost, CostFunction) or callable(cost):
            funcs: tuple[CostFunction, ...] = (as_cost_function(cost),)
            server_cost = np.zeros(n_servers, dtype=np.int64)
        else:
            if len(cost) != n_servers:
                raise InputError("cost", f"expected one cost function per server ({n_servers}), got {len(cost)}")
            uniq: list[CostFunction] = []
            index: dict[int, int] = {}
            idx = []
            for g in cost:
                key = id(g)
                if key not in index:
                    index[key] = len(uniq)
                    uniq.append(as_cost_function(g))
                idx.append(index[key])
            funcs = tuple(uniq)
            server_cost = np.asarray(idx, dtype=np.int64)
        starts = np.zeros(n_servers + 1, dtype=np.int64)
        starts[1:] = np.cumsum([len(x) for x in initial_loads])
        rstart = np.zeros(len(replicas) + 1, dtype=np.int64)
        rstart[1:] = np.cumsum([len(r) for r in replicas])
        return cls(
            server_core_start=starts,
            initial_load=np.asarray([float(x) for loads in initial_loads for x in loads], dtype=float),
            replica_start=rstart,
            replica_server=np.asarray([int(s) for r in replicas for s in r], dtype=np.int64),
            cost_functions=funcs,
            server_cost=server_cost,
            server_names=tuple(server_names) if server_names is not None else None,
            task_names=tuple(task_names) if task_names is not None else None,
            name=name,
        )


# -- assignments and the evaluator ---------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Assignment:
    """``A: T -> P`` as an array of core indices, plus per-core idle time kept on purpose by online schedulers."""

    task_core: np.ndarray  # (T,) core of each task
    idle: np.ndarray | None = None  # (P,) or None (= all zero)

    def idle_or_zero(self, n_cores: int) -> np.ndarray:
        return np.zeros(n_cores) if self.idle is None else self.idle


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Everything the paper defines for one assignment (Section 3)."""

    makespan: float
    remote_tasks: int
    task_local: np.ndarray  # (T,) bool: A(t) in DL_core(t)
    task_cost: np.ndarray  # (T,) C_A(t)
    server_remote: np.ndarray  # (S,) r_s
    core_load: np.ndarray  # (P,) L_A(p), idle included
    core_active: np.ndarray  # (P,) bool


def task_locality(inst: LocalityInstance, task_core: np.ndarray) -> np.ndarray:
    """For each task, whether its core's server holds one of its replicas."""
    srv = inst.core_server[task_core]
    hit = np.repeat(srv, inst.task_replica_count) == inst.replica_server
    return np.logical_or.reduceat(hit, inst.replica_start[:-1])


def is_local(inst: LocalityInstance, tasks: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """Whether each ``tasks[i]`` would be data-local on ``cores[i]``."""
    tasks = np.asarray(tasks, dtype=np.int64)
    if tasks.size == 0:
        return np.zeros(0, dtype=bool)
    cnt = inst.task_replica_count[tasks]
    offsets = np.concatenate([[0], np.cumsum(cnt)[:-1]])
    gather = np.repeat(inst.replica_start[tasks] - offsets, cnt) + np.arange(int(cnt.sum()))
    hit = inst.replica_server[gather] == np.repeat(inst.core_server[cores], cnt)
    return np.logical_or.reduceat(hit, offsets)


def remote_cost_per_server(inst: LocalityInstance, server_remote: np.ndarray) -> np.ndarray:
    """``g_s(r_s)`` for every server (1.0 where ``r_s = 0``; nothing pays it then)."""
    out = np.ones(inst.n_servers)
    n_max = int(server_remote.max()) if server_remote.size else 0
    if n_max == 0:
        return out
    for f, func in enumerate(inst.cost_functions):
        sel = (inst.server_cost == f) & (server_remote > 0)
        if sel.any():
            out[sel] = func.table(n_max)[server_remote[sel]]
    return out


def check_complete(inst: LocalityInstance, task_core: np.ndarray) -> None:
    """Raise ``ValueError`` unless every task is mapped to an existing core."""
    tc = np.asarray(task_core)
    if tc.shape != (inst.n_tasks,):
        raise ValueError(f"assignment covers {tc.size} tasks, the instance has {inst.n_tasks}")
    if tc.size and (tc.min() < 0 or tc.max() >= inst.n_cores):
        bad = int(np.nonzero((tc < 0) | (tc >= inst.n_cores))[0][0])
        raise ValueError(f"task {inst.task_name(bad)} is not assigned to a core (got {int(tc[bad])})")


def evaluate(inst: LocalityInstance, assignment: Assignment | np.ndarray) -> Evaluation:
    """The paper's costs for ``assignment``, recomputed from scratch (Section 3).

    ``C_A(t) = 1`` if ``t`` is data-local, else ``g_s(r_s)``; ``L_A(p) = L_init(p) + idle(p) + sum C_A(t)``;
    ``makespan(A) = max`` of ``L_A`` over active cores.
    """
    if not isinstance(assignment, Assignment):
        assignment = Assignment(np.asarray(assignment, dtype=np.int64))
    tc = np.asarray(assignment.task_core, dtype=np.int64)
    check_complete(inst, tc)
    local = task_locality(inst, tc)
    srv = inst.core_server[tc]
    server_remote = np.bincount(srv[~local], minlength=inst.n_servers)
    g = remote_cost_per_server(inst, server_remote)
    cost = np.where(local, 1.0, g[srv])
    load = inst.initial_load + assignment.idle_or_zero(inst.n_cores) + np.bincount(tc, weights=cost, minlength=inst.n_cores)
    active = np.bincount(tc, minlength=inst.n_cores) > 0
    makespan = float(load[active].max()) if active.any() else 0.0
    return Evaluation(
        makespan=makespan,
        remote_tasks=int((~local).sum()),
        task_local=local,
        task_cost=cost,
        server_remote=server_remote,
        core_load=load,
        core_active=active,
    )


def loads_from_counts(
    inst: LocalityInstance,
    core_local: np.ndarray,
    core_remote: np.ndarray,
    idle: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """Core loads and makespan from per-core local/remote task counts — the bookkeeping algorithms keep.

    Every remote task on server ``s`` costs ``g_s(r_s)``, so a core's load is
    ``L_init + idle + l_p + r_p * g_s(r_s)``.
    """
    server_remote = np.bincount(inst.core_server, weights=core_remote, minlength=inst.n_servers).astype(np.int64)
    g = remote_cost_per_server(inst, server_remote)
    load = inst.initial_load + core_local + core_remote * g[inst.core_server]
    if idle is not None:
        load = load + idle
    active = (core_local + core_remote) > 0
    return load, float(load[active].max()) if active.any() else 0.0


@dataclass(eq=False)
class LocalitySchedule:
    """What one algorithm run returns: its assignment and its own account of the paper's measures.

    ``makespan`` and ``remote_tasks`` come from the algorithm's own bookkeeping
    (under the DynDL cost model); :func:`evaluate` on ``assignment`` must agree.
    ``details`` holds algorithm-specific facts (phase times, deadlines, the
    cost the algorithm *planned* with when its model differs from DynDL's…).
    """

    algorithm: str
    assignment: Assignment
    makespan: float
    remote_tasks: int
    seconds: float = 0.0
    details: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {
            "algorithm": self.algorithm,
            "makespan": self.makespan,
            "remote_tasks": self.remote_tasks,
            "seconds": self.seconds,
        }
