"""The exact optimum of small CRED instances, by mixed-integer programming (HiGHS through scipy.optimize.milp).

This is the CRED paper's integer program (cloud right-sizing as integer optimisation), written over
*deadline intervals* instead of single slots, which is exact (see
:mod:`schedlab.edge.plan`: per node and interval any amounts within L_k per
chunk and S·L_k in total can be laid out slot by slot, and deadlines only
constrain cumulative amounts). With U candidate nodes, M chunks and D deadline
classes:

* y_n ∈ {0,1} — node n is switched on; p_{n,c} ∈ {0,1} — chunk c is stored on n;
  x_{n,c,k} ∈ {0..L_k} — slots chunk c gets on node n in interval k;
* Σ_c p_{n,c} <= B·y_n (storage); Σ_c x_{n,c,k} <= S·L_k·y_n (VMs);
  x_{n,c,k} <= L_k·p_{n,c} (locality, and one VM per chunk per slot);
* Σ_n Σ_{k<=i} x_{n,c,k} >= W_{c,i} for every class i, with equality for the
  last class (deadlines; each task processed once);
* y_n >= y_{n+1} (symmetry), Σ_n y_n >= the lower bound; minimise Σ_n y_n.

U is the smaller of N and a known feasible node count (CRED-M's, when it fits
in N), so the program is never bigger than needed. The ``slots`` formulation —
one binary per (node, chunk, slot) — is the paper's program taken literally; it
is kept to cross-check the interval one in the tests and is only practical for
tiny instances.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from schedlab.edge.bounds import lower_bound
from schedlab.edge.instance import EdgeInstance
from schedlab.edge.plan import solution_from_units
from schedlab.edge.solution import Solution

DEFAULT_MAX_VARIABLES = 4000  # "small" for compare --optimum auto
HARD_MAX_VARIABLES = 200_000  # beyond this the MILP is not even built (memory), whatever is asked
DEFAULT_TIME_LIMIT = 30.0


@dataclass
class MilpResult:
    status: str  # optimal, time_limit, infeasible, too_large
    optimum: int | None  # proven optimum (status optimal) else None
    best: int | None  # best solution found
    bound: float | None  # proven lower bound on the optimum
    seconds: float
    variables: int
    solution: Solution | None = None
    info: dict[str, Any] = field(default_factory=dict)


def milp_variables(inst: EdgeInstance, nodes: int, formulation: str = "intervals") -> int:
    dem = inst.demand
    m = dem.num_chunks
    depth = dem.num_classes if formulation == "intervals" else int(dem.deadlines[-1])
    return nodes * (1 + m + m * depth)


class _Rows:
    """Sparse constraint rows collected as (row, col, value) triplets."""

    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.hi: list[np.ndarray] = []
        self.n = 0

    def add(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        self.r.append(np.asarray(rows) + self.n)
        self.c.append(np.asarray(cols))
        self.v.append(np.asarray(vals, dtype=float))
        self.lo.append(np.asarray(lo, dtype=float))
        self.hi.append(np.asarray(hi, dtype=float))
        self.n += len(lo)

    def constraint(self, nvars: int) -> LinearConstraint:
        A = coo_matrix((np.concatenate(self.v), (np.concatenate(self.r), np.concatenate(self.c))), shape=(self.n, nvars)).tocsr()
        return LinearConstraint(A, np.concatenate(self.lo), np.concatenate(self.hi))


def solve_milp(
    inst: EdgeInstance,
    upper: int | None = None,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    max_variables: int | None = DEFAULT_MAX_VARIABLES,
    formulation: str = "intervals",
) -> MilpResult:
    """Minimum active nodes; ``upper`` = a known feasible node count (caps the candidate nodes)."""
    if formulation not in ("intervals", "slots"):
        raise ValueError(f"unknown formulation {formulation!r}")
    t0 = time.perf_counter()
    dem = inst.demand
    U = inst.nodes if upper is None else min(inst.nodes, upper)
    nvars = milp_variables(inst, U, formulation)
    if max_variables is not None and nvars > max_variables:
        return MilpResult("too_large", None, None, None, 0.0, nvars)
    M = dem.num_chunks
    S, B = inst.vms_per_node, inst.chunks_per_node
    if formulation == "intervals":
        widths = dem.lengths  # an "interval" per deadline class
        interval_end = dem.deadlines
    else:
        widths = np.ones(int(dem.deadlines[-1]), dtype=np.int64)  # one "interval" per slot
        interval_end = np.arange(1, int(dem.deadlines[-1]) + 1)
    K = len(widths)
    # Variable layout: y[n] | p[n, c] | x[n, c, k]
    y0, p0, x0 = 0, U, U + U * M

    def P(n, c):
        return p0 + n * M + c

    def X(n, c, k):
        return x0 + (n * M + c) * K + k

    n_idx, c_idx, k_idx = (a.ravel() for a in np.meshgrid(np.arange(U), np.arange(M), np.arange(K), indexing="ij"))
    rows = _Rows()
    # Storage: sum_c p[n,c] - B y[n] <= 0
    nn, cc = np.meshgrid(np.arange(U), np.arange(M), indexing="ij")
    rows.add(np.concatenate([nn.ravel(), np.arange(U)]), np.concatenate([P(nn.ravel(), cc.ravel()), y0 + np.arange(U)]),
             np.concatenate([np.ones(U * M), -B * np.ones(U)]), np.full(U, -np.inf), np.zeros(U))
    # VMs: sum_c x[n,c,k] - S L_k y[n] <= 0
    nk = n_idx * K + k_idx
    ny, ky = np.meshgrid(np.arange(U), np.arange(K), indexing="ij")
    rows.add(np.concatenate([nk, (ny * K + ky).ravel()]), np.concatenate([X(n_idx, c_idx, k_idx), y0 + ny.ravel()]),
             np.concatenate([np.ones(len(nk)), -S * widths[ky.ravel()]]), np.full(U * K, -np.inf), np.zeros(U * K))
    # Locality: x[n,c,k] - L_k p[n,c] <= 0
    r = np.arange(len(n_idx))
    rows.add(np.concatenate([r, r]), np.concatenate([X(n_idx, c_idx, k_idx), P(n_idx, c_idx)]),
             np.concatenate([np.ones(len(r)), -widths[k_idx]]), np.full(len(r), -np.inf), np.zeros(len(r)))
    # Deadlines: for each chunk c and class i, units in intervals ending by d_i >= W[c, i]; equality for the total.
    W = dem.cumulative
    D = dem.num_classes
    last_k = np.searchsorted(interval_end, dem.deadlines, side="right") - 1  # last interval ending by d_i
    rr, cols = [], []
    for i in range(D):
        sel = k_idx <= last_k[i]
        rr.append(c_idx[sel] * D + i)
        cols.append(X(n_idx[sel], c_idx[sel], k_idx[sel]))
    hi = W.astype(float).copy()
    hi[:, :-1] = np.inf
    rows.add(np.concatenate(rr), np.concatenate(cols), np.ones(sum(len(a) for a in rr)), W.ravel(), hi.ravel())
    # Symmetry and the lower bound.
    if U > 1:
        s = np.arange(U - 1)
        rows.add(np.concatenate([s, s]), np.concatenate([s, s + 1]), np.concatenate([np.ones(U - 1), -np.ones(U - 1)]),
                 np.zeros(U - 1), np.full(U - 1, np.inf))
    lb = lower_bound(inst)
    rows.add(np.zeros(U, dtype=np.int64), np.arange(U), np.ones(U), np.array([lb]), np.array([np.inf]))

    cost = np.zeros(nvars)
    cost[:U] = 1.0
    ub = np.concatenate([np.ones(U), np.ones(U * M), widths[k_idx].astype(float)])
    res = milp(
        cost,
        integrality=np.ones(nvars),
        bounds=Bounds(np.zeros(nvars), ub),
        constraints=rows.constraint(nvars),
        options={"time_limit": float(time_limit), "mip_rel_gap": 0.0, "disp": False},
    )
    seconds = time.perf_counter() - t0
    bound = getattr(res, "mip_dual_bound", None)
    if res.x is None:
        status = "infeasible" if res.status == 2 else "time_limit"
        return MilpResult(status, None, None, bound, seconds, nvars, info={"message": res.message})
    x = np.rint(res.x).astype(np.int64)
    best = int(x[:U].sum())
    amounts = x[x0:].reshape(U, M, K)
    if formulation == "slots":  # sum the slots of each deadline interval
        owner = np.searchsorted(dem.deadlines, np.arange(K), side="right")
        amounts = np.stack([amounts[:, :, owner == k].sum(axis=2) for k in range(D)], axis=2)
    node = np.repeat(np.arange(U), M)
    chunk = np.tile(np.arange(M), U)
    sol = solution_from_units(inst, node, chunk, amounts.reshape(U * M, D), "milp", {"formulation": formulation})
    optimal = res.status == 0
    if bound is not None and np.isfinite(bound) and optimal:
        bound = float(best)
    return MilpResult("optimal" if optimal else "time_limit", best if optimal else None, best, bound, seconds, nvars, sol)
