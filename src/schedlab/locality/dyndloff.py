"""DynDLOff, the paper's offline algorithm (Section 5): balanced data-local assignment, then remote tasks by deadline.

**Phase I** (Section 5.1, Algorithm 2) builds a *balanced* assignment ``B`` in
which every task is data-local and no task could move to a preferred core
that is more than one unit less loaded (Constraint 2):

1. the greedy initial assignment ``B0`` puts each task, in task order, on the
   least-loaded core of its preferred servers;
2. then it removes *cost-reducing paths*: on the bipartite graph with an arc
   ``s -> t`` when task ``t`` is on server ``s`` and ``t -> s'`` when ``t``
   prefers ``s'``, a depth-first search from the server ``s_max`` with the
   largest ``MAX_srv`` (largest load of a core holding tasks) visits every
   reachable server; if the least ``MIN_srv`` among them, at ``s_min``, is more
   than 1 below ``MAX_srv(s_max)``, flipping the path moves one unit of load
   from ``s_max``'s fullest core to ``s_min``'s emptiest; otherwise ``s_max``
   is DONE. The loop ends when every server is DONE.

**Phase II** (Section 5.2, Algorithm 3) sorts the tasks by their finish time
``F_B(t)`` in ``B`` (descending) and takes the deadlines ``D[i] = F_B(t_{i+1})``.
A deadline passes its test when the tasks finishing after it (which are
data-remote wherever they can still finish by ``D``, by Property 1) fit into
the remote capacity before ``D``: ``sum_s rmax_s >= |T_rem|``, where ``rmax_s``
is the largest ``r`` with ``sum_p floor((D - L_B(p)) / g_s(r)) >= r`` over the
cores of ``s`` loaded below ``D``. Theorem 1 brackets ``rmax_s`` between
``gamma - |cores|`` and ``gamma`` (``gamma * g(gamma) <= ΔL < (gamma+1) g(gamma+1)``,
found by binary search in the precomputed ``R[s][i] = i * g_s(i)``), so each
server needs only a handful of checks. A binary search over ``i`` finds the
last passing deadline ``D[k]``; ``A_k`` (makespan ``D[k]``) and ``A_{k+1}``
(the ``rmax_s`` tasks that fit before ``D[k+1]``, the rest placed by the
max-min policy: each goes to the core whose load after taking it,
``L_init + l_p + (r_p + 1) * g_s(1 + sum_{p in s} r_p)``, is least) are built
and the better one returned.

Choices where the paper is silent:

* ``B0`` ties between servers (equal least core load) go to the server with
  fewer tasks so far, then the lower index; this reproduces Figure 3a
  (makespan 3.5 on Table 2). Ties between cores go to the lower index.
* Within a server all tasks are data-local and cost 1, so Phase I keeps only a
  task -> server map and a task count per core: a server gives up a task from
  its fullest core and takes one on its emptiest. This keeps loads within a
  server balanced to one unit, which the paper's proof relies on implicitly.
* ``MAX_srv`` counts only cores that hold tasks (Figure 3b: ``MAX(s4) = 3.5``
  although core p42 idles at 3.75); ``MIN_srv`` counts every core.
* After a failed search every server it visited is marked DONE, not only
  ``s_max``: they all reach only servers that ``s_max`` reaches and have
  ``MAX_srv <= MAX_srv(s_max)``. A later flip never invalidates a DONE server
  (a server that could not reach the flipped path's end sees the same graph;
  one that could reach it had every newly reachable server's ``MIN`` above its
  own bound). So at the end no cost-reducing path exists anywhere, which is
  what Constraint 2 and Theorem 4 need. The depth-first search runs on the
  server-level graph (``s -> s'`` when a task on ``s`` prefers ``s'``, kept as
  arc counts updated on every flip); the path's tasks are then picked on it.
* Phase II uses ``floor((D - L) / g + 1e-9)`` so that float noise never loses
  a slot that exactly fits; a task that ends up placed on a server holding its
  replica (possible only in the max-min step) is counted, honestly, as local.
* ``A_k`` spreads its remote tasks over the servers with the largest
  ``rmax_s`` first; any split with ``r_s <= rmax_s`` has makespan ``D[k]``.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

import numpy as np

from schedlab.locality.model import (
    Assignment,
    LocalityInstance,
    LocalitySchedule,
    is_local,
    loads_from_counts,
    task_locality,
)

EPS = 1e-9


# -- Phase I -----------------------------------------------------------------------------------------
@dataclass(eq=False)
class PhaseOne:
    """Phase I's output: the balanced assignment ``B`` and how it got there."""

    task_core: np.ndarray  # (T,) B(t)
    core_count: np.ndarray  # (P,) tasks per core in B
    finish: np.ndarray  # (T,) F_B(t) = L_init(B(t)) + position of t on its core
    initial_makespan: float  # makespan(B0)
    makespan: float  # makespan(B)
    paths: int  # cost-reducing paths flipped
    searches: int  # depth-first searches run
    path_log: list[dict] = field(default_factory=list)  # with record=True: each flip's servers, tasks and makespan after


def _server_graph(task_server: np.ndarray, rep_task: np.ndarray, rep_server: np.ndarray, n: int):
    from scipy.sparse import csr_matrix

    rows = task_server[rep_task]
    keep = rows != rep_server
    return csr_matrix((np.ones(int(keep.sum()), dtype=np.int32), (rows[keep], rep_server[keep])), shape=(n, n))


def phase_one(inst: LocalityInstance, record: bool = False) -> PhaseOne:
    """Algorithm 2: greedy data-local ``B0``, then cost-reducing paths until every server is DONE."""
    S, P, T = inst.n_servers, inst.n_cores, inst.n_tasks
    reps = inst.replica_lists()
    cstart = inst.server_core_start.tolist()
    init = inst.initial_load.tolist()
    load = list(init)  # L(p) = L_init(p) + tasks on p (all local, unit cost)
    count = [0] * P

    min_val = np.minimum.reduceat(inst.initial_load, inst.server_core_start[:-1]).tolist()
    min_core = _argmin_per_server(inst)

    def refresh_min(s: int) -> None:
        a, b = cstart[s], cstart[s + 1]
        best, bp = load[a], a
        for p in range(a + 1, b):
            if load[p] < best:
                best, bp = load[p], p
        min_val[s], min_core[s] = best, bp

    def max_active(s: int) -> tuple[float, int]:
        best, bp = -np.inf, -1
        for p in range(cstart[s], cstart[s + 1]):
            if count[p] and load[p] > best:
                best, bp = load[p], p
        return best, bp

    # Step 1: B0 (line 2), ties -> fewer tasks on the server, then lower server index.
    n_on = [0] * S
    task_server = [0] * T
    on_server: list[dict[int, None]] = [dict() for _ in range(S)]
    for t in range(T):
        best_s = -1
        best_key = None
        for s in reps[t]:
            key = (min_val[s], n_on[s], s)
            if best_key is None or key < best_key:
                best_key, best_s = key, s
        p = min_core[best_s]
        count[p] += 1
        load[p] += 1.0
        n_on[best_s] += 1
        task_server[t] = best_s
        on_server[best_s][t] = None
        refresh_min(best_s)

    max_val = [-np.inf] * S
    for s in range(S):
        if n_on[s]:
            max_val[s] = max_active(s)[0]
    initial_makespan = max(max_val)

    # Step 2: cost-reducing paths (lines 3-16), on the server-level graph:
    # adj[s][s'] = number of tasks on s that prefer s' (an arc s -> t -> s' of G).
    adj: list[dict[int, int]] = [dict() for _ in range(S)]
    for t in range(T):
        a = task_server[t]
        row = adj[a]
        for b in reps[t]:
            if b != a:
                row[b] = row.get(b, 0) + 1

    def unlink(t: int, a: int) -> None:
        row = adj[a]
        for b in reps[t]:
            if b != a:
                c = row[b] - 1
                if c:
                    row[b] = c
                else:
                    del row[b]

    def link(t: int, a: int) -> None:
        row = adj[a]
        for b in reps[t]:
            if b != a:
                row[b] = row.get(b, 0) + 1

    done = [False] * S
    heap = [(-max_val[s], s) for s in range(S) if n_on[s]]
    heapq.heapify(heap)
    paths = searches = 0
    log: list[dict] = []
    while heap:
        neg, s_max = heapq.heappop(heap)
        if done[s_max] or -neg != max_val[s_max] or not n_on[s_max]:
            continue
        # DepthFirstSearch(G, s_max) (line 9): every reachable server, with its DFS-tree parent.
        pred = {s_max: -1}
        order = [s_max]
        stack = [(s_max, iter(adj[s_max]))]
        while stack:
            u, it = stack[-1]
            for v in it:
                if v not in pred:
                    pred[v] = u
                    order.append(v)
                    stack.append((v, iter(adj[v])))
                    break
            else:
                stack.pop()
        searches += 1
        s_min = min(order, key=min_val.__getitem__)
        if max_val[s_max] - min_val[s_min] <= 1.0 + EPS:
            for v in order:
                done[v] = True
            continue
        # Flip the path s_max -> ... -> s_min (line 12).
        chain = [s_min]
        while chain[-1] != s_max:
            chain.append(pred[chain[-1]])
        chain.reverse()
        moved = []
        for a, b in zip(chain, chain[1:], strict=False):
            t = next(t for t in on_server[a] if b in reps[t])
            moved.append((t, a, b))
        for t, a, b in moved:
            del on_server[a][t]
            unlink(t, a)
            on_server[b][t] = None
            link(t, b)
            task_server[t] = b
        n_on[s_max] -= 1
        n_on[s_min] += 1
        _, p_hi = max_active(s_max)
        count[p_hi] -= 1
        load[p_hi] -= 1.0
        p_lo = min_core[s_min]
        count[p_lo] += 1
        load[p_lo] += 1.0
        for s in (s_max, s_min):
            refresh_min(s)
            max_val[s] = max_active(s)[0]
            if n_on[s] and not done[s]:
                heapq.heappush(heap, (-max_val[s], s))
        paths += 1
        if record:
            log.append(
                {
                    "servers": [inst.server_name(s) for s in chain],
                    "tasks": [inst.task_name(t) for t, _, _ in moved],
                    "makespan": max(max_val),
                }
            )

    # Line 17: cores for the tasks of each server, by task index; F_B(t) follows.
    task_core = np.empty(T, dtype=np.int64)
    for s in range(S):
        if not n_on[s]:
            continue
        tasks = sorted(on_server[s])
        i = 0
        for p in range(cstart[s], cstart[s + 1]):
            for _ in range(count[p]):
                task_core[tasks[i]] = p
                i += 1
    core_count = np.asarray(count, dtype=np.int64)
    finish = _finish_times(inst, task_core)
    return PhaseOne(
        task_core=task_core,
        core_count=core_count,
        finish=finish,
        initial_makespan=float(initial_makespan),
        makespan=float(finish.max()),
        paths=paths,
        searches=searches,
        path_log=log,
    )


def _argmin_per_server(inst: LocalityInstance) -> list[int]:
    """Index of the least-loaded core of every server (first on ties), vectorized."""
    st = inst.server_core_start
    order = np.lexsort((np.arange(inst.n_cores), inst.initial_load, inst.core_server))
    return order[st[:-1]].tolist()


def _finish_times(inst: LocalityInstance, task_core: np.ndarray) -> np.ndarray:
    """``F(t) = L_init(A(t)) + k`` for the k-th task on its core (tasks on a core in index order)."""
    T = task_core.size
    order = np.lexsort((np.arange(T), task_core))
    sc = task_core[order]
    first = np.r_[True, sc[1:] != sc[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(T), 0))
    pos = np.arange(T) - group_start + 1
    finish = np.empty(T)
    finish[order] = inst.initial_load[sc] + pos
    return finish


def is_balanced(inst: LocalityInstance, task_core: np.ndarray) -> bool:
    """Brute-force check that a data-local assignment has no cost-reducing path (Constraint 2, server level)."""
    from scipy.sparse.csgraph import depth_first_order

    S = inst.n_servers
    local = task_locality(inst, task_core)
    if not local.all():
        return False
    count = np.bincount(task_core, minlength=inst.n_cores)
    load = inst.initial_load + count
    task_server = inst.core_server[task_core]
    mx = np.full(S, -np.inf)
    np.maximum.at(mx, inst.core_server[count > 0], load[count > 0])
    mn = np.minimum.reduceat(load, inst.server_core_start[:-1])
    rep_task = np.repeat(np.arange(inst.n_tasks), inst.task_replica_count)
    g = _server_graph(task_server, rep_task, inst.replica_server, S)
    for s in range(S):
        if mx[s] == -np.inf:
            continue
        order = depth_first_order(g, s, directed=True, return_predecessors=False)
        if mx[s] - mn[order].min() > 1.0 + EPS:
            return False
    return True


# -- Phase II ------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Candidate:
    """One Phase II assignment ``A_i`` with its own bookkeeping."""

    index: int
    deadline: float
    task_core: np.ndarray
    core_local: np.ndarray
    core_remote: np.ndarray
    makespan: float
    remote_tasks: int
    within_deadline: int  # remote tasks placed to finish by the deadline
    max_min: int  # remote tasks placed by the max-min policy


class PhaseTwo:
    """Algorithm 3 over a balanced assignment: deadline tests, the binary search, and the candidate assignments."""

    def __init__(self, inst: LocalityInstance, one: PhaseOne) -> None:
        self.inst = inst
        self.one = one
        T = inst.n_tasks
        self.core_load = inst.initial_load + one.core_count  # L_B(p)
        self.order = np.argsort(-one.finish, kind="stable")  # tasks by F_B descending
        self.deadlines = one.finish[self.order]  # D[i] = F_B(t_{i+1})
        self.finish_sorted = np.sort(one.finish)
        # R[f][i] = i * g_f(i) and G[f][i] = g_f(i) for i = 0..|T| (Section 5.2).
        self.G = inst.cost_tables(T)
        self.R = self.G * np.arange(T + 1)
        self.R[:, 0] = 0.0
        self.tests = 0

    def late_count(self, deadline: float) -> int:
        """``|T_rem|`` for a deadline: tasks with ``F_B(t) > D``."""
        return int(self.inst.n_tasks - np.searchsorted(self.finish_sorted, deadline, side="right"))

    def max_remote(self, deadline: float) -> np.ndarray:
        """``rmax_s`` for every server: the most remote tasks ``s`` can finish by ``deadline`` (Theorem 1 + binary search)."""
        inst = self.inst
        S = inst.n_servers
        space = deadline - self.core_load
        m = space > 0
        cs = inst.core_server[m]
        sp = space[m]
        delta = np.bincount(cs, weights=sp, minlength=S)
        ncores = np.bincount(cs, minlength=S)
        fidx = inst.server_cost
        if len(inst.cost_functions) == 1:
            gamma = np.searchsorted(self.R[0], delta, side="right") - 1
        else:
            gamma = np.empty(S, dtype=np.int64)
            for f in range(len(inst.cost_functions)):
                sel = fidx == f
                gamma[sel] = np.searchsorted(self.R[f], delta[sel], side="right") - 1
        gamma = np.maximum(gamma, 0)
        lo = np.maximum(gamma - ncores, 0)  # Theorem 1: feasible
        hi = gamma  # Theorem 1: nothing above is feasible
        G = self.G
        gs = np.empty(S)

        def capacity(servers: np.ndarray, r: np.ndarray) -> np.ndarray:
            gs[:] = np.inf
            gs[servers] = G[fidx[servers], r]
            per_core = np.floor(sp / gs[cs] + EPS)
            return np.bincount(cs, weights=per_core, minlength=S)[servers]

        act = np.nonzero(lo < hi)[0]
        while act.size:
            mid = (lo[act] + hi[act] + 1) // 2
            ok = capacity(act, mid) >= mid
            lo[act] = np.where(ok, mid, lo[act])
            hi[act] = np.where(ok, hi[act], mid - 1)
            act = act[lo[act] < hi[act]]
        # Guard against float noise in Theorem 1's lower bound: step down until the capacity holds.
        chk = np.nonzero(lo > 0)[0]
        while chk.size:
            bad = chk[capacity(chk, lo[chk]) < lo[chk]]
            if not bad.size:
                break
            lo[bad] -= 1
            chk = bad[lo[bad] > 0]
        return lo

    def passes(self, i: int) -> bool:
        self.tests += 1
        d = float(self.deadlines[i])
        late = self.late_count(d)
        return late == 0 or int(self.max_remote(d).sum()) >= late

    def final_deadline(self) -> int:
        """Largest ``k`` whose deadline ``D[k]`` passes (``D[0]`` always does)."""
        lo, hi = 0, self.inst.n_tasks - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.passes(mid):
                lo = mid
            else:
                hi = mid - 1
        return lo

    def assignment(self, i: int) -> Candidate:
        """``A_i``: tasks finishing after ``D[i]`` moved remote, within the deadline where they fit, the rest by max-min."""
        inst = self.inst
        d = float(self.deadlines[i])
        late = self.late_count(d)
        rmax = self.max_remote(d)
        late_tasks = self.order[:late]  # latest-finishing first
        task_core = self.one.task_core.copy()
        core_local = self.one.core_count.astype(np.int64)
        np.subtract.at(core_local, task_core[late_tasks], 1)

        # Remote tasks that finish by the deadline: r_s <= rmax_s per server, servers with most room first.
        by_room = np.argsort(-rmax, kind="stable")
        before = np.concatenate([[0], np.cumsum(rmax[by_room])[:-1]])
        take = np.zeros_like(rmax)
        take[by_room] = np.minimum(rmax[by_room], np.maximum(late - before, 0))
        # Within each chosen server, fill its cores in order of capacity at g_s(r_s).
        space = d - self.core_load
        cores = np.nonzero((space > 0) & (take[inst.core_server] > 0))[0]
        cs = inst.core_server[cores]
        cap = np.floor(space[cores] / self.G[inst.server_cost[cs], take[cs]] + EPS).astype(np.int64)
        o = np.lexsort((cores, -cap, cs))
        cores, cs, cap = cores[o], cs[o], cap[o]
        used_before = np.cumsum(cap) - cap
        group_first = np.r_[True, cs[1:] != cs[:-1]] if cs.size else np.zeros(0, dtype=bool)
        used_before -= np.maximum.accumulate(np.where(group_first, used_before, 0)) if cs.size else 0
        put = np.clip(take[cs] - used_before, 0, cap)
        slots = np.repeat(cores, put)
        within = int(slots.size)
        placed = late_tasks[:within]
        task_core[placed] = slots
        local = is_local(inst, placed, slots)
        core_local += np.bincount(slots[local], minlength=inst.n_cores)
        core_remote = np.bincount(slots[~local], minlength=inst.n_cores).astype(np.int64)

        # The rest by the max-min policy over server future loads (a min-heap).
        pending = late_tasks[within:][::-1].tolist()  # pop() takes the latest-finishing first
        maxmin = len(pending)
        if pending:
            server_remote = np.bincount(inst.core_server, weights=core_remote, minlength=inst.n_servers).astype(np.int64)
            self._max_min(pending, task_core, core_local, core_remote, server_remote)
        _, makespan = loads_from_counts(inst, core_local, core_remote)
        return Candidate(
            index=i,
            deadline=d,
            task_core=task_core,
            core_local=core_local,
            core_remote=core_remote,
            makespan=makespan,
            remote_tasks=int(core_remote.sum()),
            within_deadline=within,
            max_min=maxmin,
        )

    def _max_min(self, pending: list[int], task_core, core_local, core_remote, server_remote) -> None:
        """Max-min (Section 5.2): each pending task to the core with the least future load, server heap on top."""
        inst = self.inst
        cstart = inst.server_core_start.tolist()
        init = inst.initial_load
        fidx = inst.server_cost
        G = self.G
        n_max = G.shape[1] - 1
        reps = {t: set(inst.replicas_of(t).tolist()) for t in pending}

        def future(s: int) -> tuple[float, int]:
            a, b = cstart[s], cstart[s + 1]
            g = float(G[fidx[s], min(int(server_remote[s]) + 1, n_max)])
            vals = init[a:b] + core_local[a:b] + (core_remote[a:b] + 1) * g
            j = int(np.argmin(vals))
            return float(vals[j]), a + j

        # Future loads only grow when a server is picked, so with n tasks to place only the
        # n servers with the least initial future load can ever be picked: heap just those.
        g1 = G[fidx, np.minimum(server_remote + 1, n_max)]
        vals = init + core_local + (core_remote + 1) * g1[inst.core_server]
        best = np.minimum.reduceat(vals, inst.server_core_start[:-1])
        cand = np.argsort(best, kind="stable")[: len(pending)]
        heap = [(float(best[s]), int(s)) for s in cand]
        heapq.heapify(heap)
        while pending:
            _, s = heapq.heappop(heap)
            _, p = future(s)
            # Prefer a task that is remote here; a task holding a replica on s is local (cost 1).
            idx = len(pending) - 1
            while idx >= 0 and s in reps[pending[idx]]:
                idx -= 1
            t = pending.pop(idx if idx >= 0 else len(pending) - 1)
            task_core[t] = p
            if s in reps[t]:
                core_local[p] += 1
            else:
                core_remote[p] += 1
                server_remote[s] += 1
            heapq.heappush(heap, (future(s)[0], s))


def dyndloff(inst: LocalityInstance) -> LocalitySchedule:
    """Run DynDLOff (Phase I then Phase II) and return the better of ``A_k`` and ``A_{k+1}``."""
    t0 = time.perf_counter()
    one = phase_one(inst)
    t1 = time.perf_counter()
    two = PhaseTwo(inst, one)
    k = two.final_deadline()
    cands = [two.assignment(k)]
    if k + 1 < inst.n_tasks:
        cands.append(two.assignment(k + 1))
    best = min(cands, key=lambda c: (c.makespan, c.remote_tasks))
    t2 = time.perf_counter()
    return LocalitySchedule(
        algorithm="dyndloff",
        assignment=Assignment(best.task_core),
        makespan=best.makespan,
        remote_tasks=best.remote_tasks,
        seconds=t2 - t0,
        details={
            "phase1_seconds": t1 - t0,
            "phase2_seconds": t2 - t1,
            "initial_makespan": one.initial_makespan,
            "balanced_makespan": one.makespan,
            "cost_reducing_paths": one.paths,
            "searches": one.searches,
            "deadline_index": k,
            "deadline": float(two.deadlines[k]),
            "deadline_tests": two.tests,
            "candidates": [
                {
                    "index": c.index,
                    "deadline": c.deadline,
                    "makespan": c.makespan,
                    "remote_tasks": c.remote_tasks,
                    "within_deadline": c.within_deadline,
                    "max_min": c.max_min,
                }
                for c in cands
            ],
        },
    )
