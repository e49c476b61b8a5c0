"""The offline baselines of Section 6.1.1: LIST, HTA and BAR, adapted to multicore servers with initial loads.

All three know the initial loads. Each returns its assignment with the DynDL
makespan recomputed from its final local/remote counts (``loads_from_counts``);
HTA and BAR *plan* with their own cost model (below), reported in
``details['planned_makespan']``.

**LIST** (Section 6.1.1, after Graham's list scheduling [49]). Tasks in index
order; each goes to the core where it would finish earliest given everything
assigned so far: ``L_init + l_p + 1 + r_p·g_s(r_s)`` if the task is local on
``s``, ``L_init + l_p + (r_p + 1)·g_s(r_s + 1)`` if remote — the dynamic cost
on each server is taken into account, as the paper says. (A local option is
never worse than the remote option on the same core, so the global minimum
over "as remote" loads is only a candidate when no local core beats it.) Ties
go to the lower core index and to local over remote. ``remote_cost="static"``
predicts every remote task at g_s(1) instead: not the paper's LIST, a reading
for the sensitivity study (:mod:`schedlab.locality.sensitivity`).

**HTA** (Fischer, Su & Yin, SPAA'10, Algorithm 2 "max-cover / bal-assign").
Reading taken: the HTA model has single-processor servers without initial
loads, a local cost ``w_loc = 1`` and a remote cost ``w_rem(R)`` that grows
with the *total* number ``R`` of remote tasks in the cluster. The algorithm
raises a threshold ``τ``; max-cover extends the previous partial assignment to
a maximum set of data-local tasks with at most ``τ`` per server (augmenting
paths), bal-assign gives each uncovered task, as a remote task of pessimistic
cost ``w_rem(m - |covered|)``, to the server with the least (virtual) load, and
the best assignment over all ``τ`` wins. Adaptation: HTA's servers are our
cores; ``τ`` is a time, core ``p`` may hold ``floor(τ - L_init(p))`` covered
tasks (those it finishes by ``τ``), so ``τ`` runs over the times at which a
core gains a slot, ``L_init(p) + k``; a core whose new slot finds no augmenting
path is closed for good (a free slot never gains one later); bal-assign is the
water-filling it amounts to (each remote task to the core whose load is least,
all remote tasks costing the same), computed by bisection on the level;
``w_rem`` for a core on server ``s`` is ``g_s(R)`` — DynDL's cost function
evaluated at the *cluster-wide* count, which is what "its data transfer costs
change with the total number of servers' data-remote tasks" (Section 6.1.1)
says. The best ``τ`` is picked by HTA's own estimate. ``time_limit`` stops a
run that would take too long (Figure 8 reports HTA timing out at 20,000 tasks).

**BAR** (Jin et al., CCGrid'11, "Balance-Reduce"; same authors as DynDL).
Reading taken: the balance phase builds an all-local, load-balanced
assignment by moving tasks along augmenting paths from loaded to idle servers
— DynDLOff's Phase I is its multicore generalisation, so we run Phase I. The
reduce phase repeatedly takes one task off the core with the latest
completion time (a local one if it has any) and gives it, as a remote task, to
the core with the earliest completion time after the move, as long as the
job's completion time — under BAR's HTA-style cost ``g_s(R)`` with ``R`` the
cluster-wide remote count, which raises every remote task's cost when one more
is added — strictly decreases.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from schedlab.errors import InputError
from schedlab.locality.dyndloff import phase_one
from schedlab.locality.model import (
    Assignment,
    LocalityInstance,
    LocalitySchedule,
    loads_from_counts,
)

EPS = 1e-9


class Timeout(Exception):
    """An algorithm ran past its ``time_limit``."""


# -- LIST ------------------------------------------------------------------------------------------------------
def list_scheduling(inst: LocalityInstance, remote_cost: str = "dynamic") -> LocalitySchedule:
    """LIST: tasks in order, each on the core where it would finish earliest (dynamic remote costs included).

    ``remote_cost="static"`` predicts every remote task at ``g_s(1)`` — LIST
    without the dynamic cost, a sensitivity reading (the makespan is still
    evaluated with the true cost).
    """
    if remote_cost not in ("dynamic", "static"):
        raise ValueError(f"unknown remote_cost {remote_cost!r}")
    dynamic = remote_cost == "dynamic"
    t0 = time.perf_counter()
    T, P, S = inst.n_tasks, inst.n_cores, inst.n_servers
    G = inst.cost_tables(T + 1)
    grow = G[inst.server_cost]  # (S, T+2) g_s(n)
    reps = inst.replica_lists()
    st = inst.server_core_start
    srv = inst.core_server
    init = inst.initial_load
    core_local = np.zeros(P, dtype=np.int64)
    core_remote = np.zeros(P, dtype=np.int64)
    server_remote = np.zeros(S, dtype=np.int64)
    g_cur = grow[:, 1].copy()  # g_s(r_s) (only paid when r_s > 0)
    g_next = grow[:, 1].copy()  # g_s(r_s + 1)
    load_now = init.copy()  # init + l + r * g_cur
    as_remote = init + g_next[srv]  # init + l + (r + 1) * g_next
    task_core = np.empty(T, dtype=np.int64)
    n_remote = 0
    for t in range(T):
        best_p, best_v = -1, np.inf
        for s in reps[t]:
            a, b = st[s], st[s + 1]
            j = int(np.argmin(load_now[a:b]))
            v = load_now[a + j] + 1.0
            if v < best_v or (v == best_v and a + j < best_p):
                best_p, best_v = a + j, v
        j = int(np.argmin(as_remote))
        remote = as_remote[j] < best_v
        p = j if remote else best_p
        s = int(srv[p])
        task_core[t] = p
        a, b = st[s], st[s + 1]
        if remote:
            n_remote += 1
            core_remote[p] += 1
            server_remote[s] += 1
            r = int(server_remote[s])
            if dynamic:
                g_cur[s] = grow[s, r]
                g_next[s] = grow[s, r + 1]
            load_now[a:b] = init[a:b] + core_local[a:b] + core_remote[a:b] * g_cur[s]
            as_remote[a:b] = init[a:b] + core_local[a:b] + (core_remote[a:b] + 1) * g_next[s]
        else:
            core_local[p] += 1
            load_now[p] += 1.0
            as_remote[p] += 1.0
    _, makespan = loads_from_counts(inst, core_local, core_remote)
    return LocalitySchedule("list", Assignment(task_core), makespan, int(core_remote.sum()), time.perf_counter() - t0, {})


# -- HTA ---------------------------------------------------------------------------------------------------------
def _water_fill(base: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """Remote tasks per core when ``n`` tasks of cost ``w_p`` go one by one to the least-loaded core.

    The greedy takes the ``n`` smallest start times ``base_p + j·w_p`` (``j >= 0``);
    bisection on the level finds them in ``O(P log)`` instead of ``O(n log P)``.
    """
    if n == 0:
        return np.zeros(base.size, dtype=np.int64)
    i0 = int(np.argmin(base))
    lo = float(base[i0]) - 1.0
    hi = float(base[i0] + (n - 1) * w[i0])

    def count(level: float) -> np.ndarray:
        return np.where(base <= level, np.floor((level - base) / w) + 1, 0).astype(np.int64)

    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if count(mid).sum() >= n:
            hi = mid
        else:
            lo = mid
    k = count(lo)
    short = n - int(k.sum())
    if short > 0:
        nxt = base + k * w
        take = np.argsort(nxt, kind="stable")[:short]
        k[take] += 1
    return k


def hta(inst: LocalityInstance, time_limit: float | None = None) -> LocalitySchedule:
    """HTA's max-cover / bal-assign over increasing thresholds, adapted to cores with initial loads."""
    time_limit = check_time_limit(time_limit)
    t0 = time.perf_counter()
    T, P = inst.n_tasks, inst.n_cores
    reps = inst.replica_lists()
    rep_sets = [set(r) for r in reps]
    srv = inst.core_server.tolist()
    init = inst.initial_load
    G = inst.cost_tables(T)
    gsrv = G[inst.server_cost][inst.core_server]  # (P, T+1): g_{srv(p)}(n)
    server_tasks: list[list[int]] = [[] for _ in range(inst.n_servers)]
    for t, rs in enumerate(reps):
        for s in rs:
            server_tasks[s].append(t)
    unmatched_at: list[dict[int, None]] = [dict.fromkeys(ts) for ts in server_tasks]
    match = [-1] * T  # core of each covered task
    covered = np.zeros(P, dtype=np.int64)
    n_matched = 0

    def cover(t: int, p: int) -> None:
        match[t] = p
        for s in reps[t]:
            unmatched_at[s].pop(t, None)

    def augment(p: int) -> bool:
        """One more covered task through core ``p``'s new slot (max-cover's augmenting path), if any."""
        s0 = srv[p]
        visited = {s0}
        # Each frame: (server, core whose slot the server fills, iterator over its local tasks)
        stack = [(s0, p, iter(server_tasks[s0]))]
        moves: list[tuple[int, int]] = []  # (task, new core)
        while stack:
            u, slot, it = stack[-1]
            if unmatched_at[u]:
                t = next(iter(unmatched_at[u]))
                cover(t, slot)
                for task, core in moves:
                    match[task] = core
                return True
            advanced = False
            for t in it:
                q = match[t]
                if q < 0 or q == slot:
                    continue
                v = srv[q]
                if v in visited:
                    continue
                visited.add(v)
                moves.append((t, slot))
                stack.append((v, q, iter(server_tasks[v])))
                advanced = True
                break
            if not advanced:
                stack.pop()
                if moves:  # undo the move that led into the dead end
                    moves.pop()
        return False

    best: tuple[float, list[int]] | None = None
    evaluations = 0
    slots = [(float(init[p]) + 1.0, p) for p in range(P)]
    heapq.heapify(slots)
    while slots and n_matched < T:
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            raise Timeout(f"hta: more than {time_limit:g} s")
        tau, p = heapq.heappop(slots)
        if not augment(p):
            continue  # this core's free slot can never be used: close it
        covered[p] += 1
        n_matched += 1
        heapq.heappush(slots, (float(init[p]) + covered[p] + 1.0, p))
        # bal-assign for the new cover; HTA's estimate of the result.
        R = T - n_matched
        w = gsrv[:, R] if R > 0 else np.ones(P)
        base = init + covered
        extra = _water_fill(base, w, R)
        loads = base + extra * w
        used = (covered + extra) > 0
        est = float(loads[used].max())
        evaluations += 1
        if best is None or est < best[0] - EPS:
            best = (est, list(match))
    assert best is not None  # at least one task is coverable: every task has a replica server with a core
    planned, snap = best
    # Rebuild the chosen assignment: covered tasks stay, the others fill the water-filling slots.
    task_core = np.asarray(snap, dtype=np.int64)
    covered = np.bincount(task_core[task_core >= 0], minlength=P)
    rest = [t for t in range(T) if snap[t] < 0]
    R = len(rest)
    if R:
        w = gsrv[:, R]
        extra = _water_fill(init + covered, w, R)
        cores = np.repeat(np.arange(P), extra)
        task_core[rest] = cores
    local = np.array([srv[int(task_core[t])] in rep_sets[t] for t in range(T)])
    core_local = np.bincount(task_core[local], minlength=P)
    core_remote = np.bincount(task_core[~local], minlength=P)
    _, makespan = loads_from_counts(inst, core_local, core_remote)
    return LocalitySchedule(
        "hta",
        Assignment(task_core),
        makespan,
        int(core_remote.sum()),
        time.perf_counter() - t0,
        {"planned_makespan": planned, "thresholds_evaluated": evaluations},
    )


# -- BAR ---------------------------------------------------------------------------------------------------------
def bar(inst: LocalityInstance) -> LocalitySchedule:
    """BAR: Phase I as the balance phase, then reduce moves under the cluster-wide remote cost while they help."""
    t0 = time.perf_counter()
    T, P = inst.n_tasks, inst.n_cores
    one = phase_one(inst)
    rep_sets = [set(r) for r in inst.replica_lists()]
    srv = inst.core_server
    init = inst.initial_load
    G = inst.cost_tables(T + 1)
    gsrv = G[inst.server_cost][srv]  # (P, T+2)
    task_core = one.task_core.copy()
    core_locals: list[list[int]] = [[] for _ in range(P)]
    for t in np.argsort(one.finish, kind="stable").tolist():
        core_locals[int(task_core[t])].append(t)
    core_remotes: list[list[int]] = [[] for _ in range(P)]
    loc = one.core_count.astype(np.int64)
    rem = np.zeros(P, dtype=np.int64)
    R = 0

    def bar_loads(loc: np.ndarray, rem: np.ndarray, R: int) -> tuple[np.ndarray, float]:
        ld = init + loc + rem * gsrv[:, max(R, 1)]
        used = (loc + rem) > 0
        return ld, float(ld[used].max())

    loads, current = bar_loads(loc, rem, R)
    moves = 0
    while True:
        used = (loc + rem) > 0
        p_max = int(np.argmax(np.where(used, loads, -np.inf)))
        from_local = loc[p_max] > 0
        t = core_locals[p_max][-1] if from_local else core_remotes[p_max][-1]
        loc2, rem2 = loc.copy(), rem.copy()
        if from_local:
            loc2[p_max] -= 1
        else:
            rem2[p_max] -= 1
        # Destination: least completion time after receiving the task as a remote one.
        R_remote = R + 1 if from_local else R
        ld2 = init + loc2 + rem2 * gsrv[:, max(R_remote, 1)]
        cand = ld2 + gsrv[:, max(R_remote, 1)]
        cand[p_max] = np.inf
        q = int(np.argmin(cand))
        if int(srv[q]) in rep_sets[t]:
            loc2[q] += 1
            R2 = R if from_local else R - 1
        else:
            rem2[q] += 1
            R2 = R_remote
        loads2, new = bar_loads(loc2, rem2, R2)
        if not new < current - EPS:
            break
        if from_local:
            core_locals[p_max].pop()
        else:
            core_remotes[p_max].pop()
        (core_locals if int(srv[q]) in rep_sets[t] else core_remotes)[q].append(t)
        task_core[t] = q
        loc, rem, R, loads, current = loc2, rem2, R2, loads2, new
        moves += 1
    _, makespan = loads_from_counts(inst, loc, rem)
    return LocalitySchedule(
        "bar",
        Assignment(task_core),
        makespan,
        int(rem.sum()),
        time.perf_counter() - t0,
        {"planned_makespan": current, "balanced_makespan": one.makespan, "reduce_moves": moves},
    )


def check_time_limit(value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InputError("time_limit", f"must be a number of seconds > 0, got {value!r}")
    return float(value)
