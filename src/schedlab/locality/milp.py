"""An exact mixed-integer program for the DynDL problem (Section 3), solved by HiGHS through ``scipy.optimize.milp``.

For optimality gaps on small instances (tens of task-core pairs; the model has
``|T|·|P|`` binaries). Variables: ``x[t,p]`` (task ``t`` on core ``p``),
``a[p]`` (core ``p`` is active), ``z[p]`` (remote tasks on ``p``),
``y[s,k]`` (server ``s`` holds exactly ``k`` remote tasks) and the makespan ``C``:

* ``sum_p x[t,p] = 1``; ``z[p] = sum of x[t,p]`` over tasks not preferring ``srv(p)``;
* ``sum_k y[s,k] = 1`` and ``sum_k k·y[s,k] = sum_{p in s} z[p]`` (so ``y`` picks ``r_s``);
* ``a[p] >= x[t,p]`` — only active cores count towards the makespan;
* for every core ``p`` and every ``k``:
  ``C >= L_init(p)·a[p] + (local tasks on p) + g_s(k)·z[p] - M·(1 - y[s,k])``
  with ``M = g_s(k)·K_s`` (``K_s`` = tasks that could be remote on ``s``): the
  one ``k`` that ``y`` selects gives the true load ``L_init + l_p + r_p·g_s(r_s)``,
  the others are slack.

The objective is ``min C``. With ``fewest_remote=True`` a second solve keeps
``C`` at the optimum and minimizes the number of remote tasks — the optimal
assignment with the fewest remote tasks, which is what Theorem 4 is about.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from schedlab.errors import InputError
from schedlab.locality.model import Assignment, LocalityInstance, LocalitySchedule, evaluate

MAX_PAIRS = 20_000


@contextlib.contextmanager
def _silence_stdout():
    """HiGHS occasionally prints diagnostics straight to file descriptor 1; keep them out of our output (e.g. --json)."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no real stdout (e.g. captured): nothing to protect
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def solve_milp(inst: LocalityInstance, time_limit: float = 60.0, fewest_remote: bool = False) -> LocalitySchedule:
    """The optimal assignment of a small instance (``details['status']`` says whether optimality was proven)."""
    T, P, S = inst.n_tasks, inst.n_cores, inst.n_servers
    if isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or not time_limit > 0:
        raise InputError("time_limit", f"must be a number of seconds > 0, got {time_limit!r}")
    if T * P > MAX_PAIRS:
        raise InputError("milp", f"instance too large for the exact MILP ({T} tasks x {P} cores > {MAX_PAIRS} pairs)")
    t0 = time.perf_counter()
    reps = [set(r) for r in inst.replica_lists()]
    core_server = inst.core_server.tolist()
    K = [sum(1 for t in range(T) if s not in reps[t]) for s in range(S)]
    gtab = inst.cost_tables(max(T, 1))

    nx = T * P
    ia = nx
    iz = ia + P
    iy = [0] * S
    n = iz + P
    for s in range(S):
        iy[s] = n
        n += K[s] + 1
    iC = n
    n += 1

    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def row(entries: list[tuple[int, float]], lb: float, ub: float) -> None:
        r = len(lo)
        for c, v in entries:
            rows.append(r)
            cols.append(c)
            vals.append(v)
        lo.append(lb)
        hi.append(ub)

    def x(t: int, p: int) -> int:
        return t * P + p

    for t in range(T):
        row([(x(t, p), 1.0) for p in range(P)], 1, 1)
    for p in range(P):
        s = core_server[p]
        row([(iz + p, 1.0)] + [(x(t, p), -1.0) for t in range(T) if s not in reps[t]], 0, 0)
        for t in range(T):
            row([(ia + p, 1.0), (x(t, p), -1.0)], 0, np.inf)
    for s in range(S):
        row([(iy[s] + k, 1.0) for k in range(K[s] + 1)], 1, 1)
        row([(iy[s] + k, float(k)) for k in range(1, K[s] + 1)] + [(iz + p, -1.0) for p in inst.cores_of(s)], 0, 0)
    for p in range(P):
        s = core_server[p]
        g = gtab[int(inst.server_cost[s])]
        local = [(x(t, p), -1.0) for t in range(T) if s in reps[t]]
        for k in range(K[s] + 1):
            gk = float(g[k]) if k > 0 else 0.0
            big = gk * K[s]
            row([(iC, 1.0), (ia + p, -float(inst.initial_load[p])), *local, (iz + p, -gk), (iy[s] + k, -big)], -big, np.inf)

    A = coo_matrix((vals, (rows, cols)), shape=(len(lo), n)).tocsr()
    lb = np.zeros(n)
    ub = np.ones(n)
    for p in range(P):
        ub[iz + p] = K[core_server[p]]
    ub[iC] = np.inf
    integrality = np.ones(n)
    integrality[iC] = 0
    cons = [LinearConstraint(A, np.asarray(lo), np.asarray(hi))]
    def solve(objective: np.ndarray, upper: np.ndarray):
        # HiGHS's presolve occasionally ends in "Solve error" (status 4) on these tiny models
        # (seen with theta = 0, where every remote cost is 1); solving without presolve works then.
        res = None
        for presolve in (True, False):
            options = {"time_limit": float(time_limit), "mip_rel_gap": 1e-9, "presolve": presolve}
            with _silence_stdout():
                res = milp(objective, constraints=cons, integrality=integrality, bounds=Bounds(lb, upper), options=options)
            if res.status != 4:
                break
        return res

    c = np.zeros(n)
    c[iC] = 1.0
    res = solve(c, ub)
    if res.x is None:
        raise InputError("time_limit", f"the MILP found no assignment within {time_limit:g} s ({res.message}); allow more time")
    status = "optimal" if res.status == 0 else "time_limit"
    sol = res.x
    opt = float(sol[iC])
    if fewest_remote and status == "optimal":
        c2 = np.zeros(n)
        c2[iz : iz + P] = 1.0
        ub2 = ub.copy()
        ub2[iC] = opt + 1e-7 * max(1.0, abs(opt))
        res2 = solve(c2, ub2)
        if res2.x is not None:
            sol = res2.x
            if res2.status != 0:
                status = "time_limit"
    xs = sol[:nx].reshape(T, P)
    task_core = np.argmax(xs, axis=1).astype(np.int64)
    ev = evaluate(inst, Assignment(task_core))
    return LocalitySchedule(
        algorithm="milp",
        assignment=Assignment(task_core),
        makespan=ev.makespan,
        remote_tasks=ev.remote_tasks,
        seconds=time.perf_counter() - t0,
        details={"status": status, "objective": opt, "message": res.message},
    )
