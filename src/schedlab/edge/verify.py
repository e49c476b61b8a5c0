"""The verifier: checks any CRED solution against its instance, rule by rule, and says exactly what is broken.

The rules are the constraints of the report's problem statement (Section 1) and
of the CRED paper's integer program, stated over the explicit
placement and slot schedule of :class:`~schedlab.edge.solution.Solution`:

=========================  =====================================================================
violation kind             rule
=========================  =====================================================================
node_out_of_range          nodes are 0..N−1 (a solution may not switch on more than N nodes)
vm_out_of_range            each node's VMs are 0..S−1
slot_negative              slots start at 0 (execution starts at t = 0)
unknown_job                tasks name jobs 0..J−1
unknown_chunk              chunks are those of C = ∪_j C_j
duplicate_placement        a chunk is placed on a node at most once (replicas go to other nodes)
storage_exceeded           a node stores at most B chunks
placed_during_execution    chunks are placed before execution starts (placed_at <= 0)
chunk_moved                placed chunks are never removed, moved or replaced (removed_at = null)
chunk_not_on_node          a task processes a chunk stored on its node during its slot (data locality)
vm_double_booked           a VM runs at most one task per slot
vms_exceeded               a node runs at most S tasks per slot
chunk_concurrent           at most one VM of a node accesses a given chunk in a slot
chunk_not_in_job           a task processes a chunk its job needs
deadline_missed            a task of job j ends by d_j (slot + 1 <= d_j)
task_missing               every chunk of every job is processed
task_duplicated            … exactly once
active_nodes_mismatch      the solution's claimed active-node count (if any) is the true one
=========================  =====================================================================

An *active node* is one that stores at least one chunk and runs at least one
task (report, Section 1). Everything is vectorised with numpy (sorting and
grouping). Each violation kind reports its count and the first few offending
rows in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schedlab.edge.instance import EdgeInstance
from schedlab.edge.solution import NEVER, Solution

RULES: dict[str, str] = {
    "node_out_of_range": "nodes are numbered 0..N-1",
    "vm_out_of_range": "a node's VMs are numbered 0..S-1",
    "slot_negative": "slots start at 0",
    "unknown_job": "tasks name jobs of the instance",
    "unknown_chunk": "chunks are those the jobs need",
    "duplicate_placement": "a chunk is placed on a node at most once",
    "storage_exceeded": "a node stores at most B chunks",
    "placed_during_execution": "chunks are placed before execution starts (t <= 0)",
    "chunk_moved": "placed chunks are never moved or removed",
    "chunk_not_on_node": "a task's chunk is stored on its node during its slot",
    "vm_double_booked": "a VM runs at most one task per slot",
    "vms_exceeded": "a node runs at most S tasks per slot",
    "chunk_concurrent": "at most one VM of a node processes a chunk in a slot",
    "chunk_not_in_job": "a task processes a chunk its job needs",
    "deadline_missed": "every task ends by its job's deadline",
    "task_missing": "every chunk of every job is processed",
    "task_duplicated": "every chunk of every job is processed exactly once",
    "active_nodes_mismatch": "the claimed active-node count is the true one",
}
MAX_EXAMPLES = 5


@dataclass
class Violation:
    kind: str
    count: int
    examples: list[str]

    @property
    def rule(self) -> str:
        return RULES[self.kind]

    def __str__(self) -> str:
        more = f" (+{self.count - len(self.examples)} more)" if self.count > len(self.examples) else ""
        return f"{self.kind} x{self.count} — {self.rule}: " + "; ".join(self.examples) + more


@dataclass
class Verdict:
    ok: bool
    active_nodes: int
    violations: list[Violation] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "active_nodes": self.active_nodes,
            "violations": [{"kind": v.kind, "rule": v.rule, "count": v.count, "examples": v.examples} for v in self.violations],
            "stats": self.stats,
        }

    def summary(self) -> str:
        if self.ok:
            return f"ok: {self.active_nodes} active nodes"
        return f"{sum(v.count for v in self.violations)} violations: " + ", ".join(f"{v.kind} x{v.count}" for v in self.violations)


def _groups(*cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort rows by ``cols`` (first = primary); return the order, group start positions and group sizes."""
    n = len(cols[0])
    if n == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e
    order = np.lexsort(cols[::-1])
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for c in cols:
        s = c[order]
        change[1:] |= s[1:] != s[:-1]
    starts = np.flatnonzero(change)
    counts = np.diff(np.append(starts, n))
    return order, starts, counts


class _Report:
    def __init__(self) -> None:
        self.violations: list[Violation] = []

    def add(self, kind: str, rows: np.ndarray, describe) -> None:
        """Record the offending ``rows`` under ``kind`` (placement and task rows of one kind add up)."""
        rows = np.asarray(rows)
        if not len(rows):
            return
        examples = [describe(int(r)) for r in rows[:MAX_EXAMPLES]]
        for v in self.violations:
            if v.kind == kind:
                v.count += len(rows)
                v.examples = (v.examples + examples)[:MAX_EXAMPLES]
                return
        self.violations.append(Violation(kind, len(rows), examples))


def verify(inst: EdgeInstance, sol: Solution) -> Verdict:
    """Check every rule; ``Verdict.ok`` iff none is broken."""
    dem = inst.demand
    N, S, B, J, M = inst.nodes, inst.vms_per_node, inst.chunks_per_node, inst.num_jobs, inst.num_chunks
    rep = _Report()
    pn, pch = sol.placement_node, sol.placement_chunk
    placed_at, removed_at = sol.placed_at, sol.removed_at
    assert placed_at is not None and removed_at is not None
    tj, tch, tn, tv, ts = sol.task_job, sol.task_chunk, sol.task_node, sol.task_vm, sol.task_slot

    def task(r: int) -> str:
        return f"task {r} (job {tj[r]}, chunk {tch[r]}, node {tn[r]}, vm {tv[r]}, slot {ts[r]})"

    def copy(r: int) -> str:
        return f"placement {r} (chunk {pch[r]} on node {pn[r]})"

    # Ranges.
    rep.add("node_out_of_range", np.flatnonzero((pn < 0) | (pn >= N)), lambda r: f"{copy(r)}: node not in 0..{N - 1}")
    rep.add("node_out_of_range", np.flatnonzero((tn < 0) | (tn >= N)), lambda r: f"{task(r)}: node not in 0..{N - 1}")
    rep.add("vm_out_of_range", np.flatnonzero((tv < 0) | (tv >= S)), lambda r: f"{task(r)}: vm not in 0..{S - 1}")
    rep.add("slot_negative", np.flatnonzero(ts < 0), lambda r: f"{task(r)}: slot < 0")
    job_ok = (tj >= 0) & (tj < J)
    rep.add("unknown_job", np.flatnonzero(~job_ok), lambda r: f"{task(r)}: no job {tj[r]} (jobs are 0..{J - 1})")
    ids = inst.chunk_ids
    pidx = np.minimum(np.searchsorted(ids, pch), M - 1)
    p_known = ids[pidx] == pch
    tidx = np.minimum(np.searchsorted(ids, tch), M - 1)
    t_known = ids[tidx] == tch
    rep.add("unknown_chunk", np.flatnonzero(~p_known), lambda r: f"{copy(r)}: no job needs chunk {pch[r]}")
    rep.add("unknown_chunk", np.flatnonzero(~t_known), lambda r: f"{task(r)}: no job needs chunk {tch[r]}")

    # Placement: once per node, at most B per node, before execution, never moved.
    order, starts, counts = _groups(pn, pch)
    dup = order[starts[counts > 1]]
    rep.add("duplicate_placement", dup, lambda r: f"chunk {pch[r]} placed {int(((pn == pn[r]) & (pch == pch[r])).sum())} times on node {pn[r]}")
    distinct_nodes = pn[order[starts]] if len(order) else pn
    nodes, per_node = np.unique(distinct_nodes, return_counts=True)
    over = np.flatnonzero(per_node > B)
    rep.add("storage_exceeded", over, lambda i: f"node {nodes[i]} stores {per_node[i]} chunks > B={B}")
    rep.add("placed_during_execution", np.flatnonzero(placed_at > 0), lambda r: f"{copy(r)} placed at t={placed_at[r]} > 0")
    rep.add("chunk_moved", np.flatnonzero(removed_at != NEVER), lambda r: f"{copy(r)} removed at t={removed_at[r]}")

    # Data locality: the task's chunk is on its node throughout its slot.
    rep.add("chunk_not_on_node", _unplaced_tasks(sol, tidx, t_known, pidx, p_known), lambda r: f"{task(r)}: chunk {tch[r]} is not on node {tn[r]} during slot {ts[r]}")

    # Per-slot capacity of VMs and of chunk access.
    order, starts, counts = _groups(tn, tv, ts)
    rep.add("vm_double_booked", order[starts[counts > 1]], lambda r: f"node {tn[r]} vm {tv[r]} slot {ts[r]} runs {int(((tn == tn[r]) & (tv == tv[r]) & (ts == ts[r])).sum())} tasks")
    order, starts, counts = _groups(tn, ts)
    busy = counts > S
    rep.add("vms_exceeded", order[starts[busy]], lambda r: f"node {tn[r]} slot {ts[r]} runs {int(((tn == tn[r]) & (ts == ts[r])).sum())} tasks > S={S}")
    order, starts, counts = _groups(tn, tch, ts)
    rep.add("chunk_concurrent", order[starts[counts > 1]], lambda r: f"chunk {tch[r]} on {int(((tn == tn[r]) & (tch == tch[r]) & (ts == ts[r])).sum())} VMs of node {tn[r]} in slot {ts[r]}")

    # Jobs: right chunks, by the deadline, each exactly once.
    valid = job_ok & t_known
    key = np.where(valid, np.where(job_ok, tj, 0) * M + tidx, -1)
    inst_key = dem.task_job * M + dem.task_chunk  # unique: a job's chunks are distinct
    inst_order = np.argsort(inst_key)
    sorted_keys = inst_key[inst_order]
    pos = np.minimum(np.searchsorted(sorted_keys, key), len(sorted_keys) - 1)
    member = valid & (sorted_keys[pos] == key)
    rep.add("chunk_not_in_job", np.flatnonzero(valid & ~member), lambda r: f"{task(r)}: job {tj[r]} does not need chunk {tch[r]}")
    deadline = inst.deadlines[np.where(job_ok, tj, 0)]
    late = np.flatnonzero(valid & (ts + 1 > deadline))
    rep.add("deadline_missed", late, lambda r: f"{task(r)} ends at t={ts[r] + 1} > deadline {inst.deadlines[tj[r]]}")
    done = np.bincount(inst_order[pos[member]], minlength=len(inst_key))
    missing = np.flatnonzero(done == 0)
    rep.add("task_missing", missing, lambda i: f"job {dem.task_job[i]} chunk {ids[dem.task_chunk[i]]} is never processed")
    twice = np.flatnonzero(done > 1)
    rep.add("task_duplicated", twice, lambda i: f"job {dem.task_job[i]} chunk {ids[dem.task_chunk[i]]} is processed {done[i]} times")

    active = int(len(np.intersect1d(np.unique(pn), np.unique(tn))))
    claimed = sol.claimed_active_nodes
    if claimed is not None and claimed != active:
        rep.violations.append(Violation("active_nodes_mismatch", 1, [f"solution claims {claimed} active nodes, it has {active}"]))
    stats = {
        "tasks": int(len(tj)),
        "placements": int(len(pn)),
        "nodes_storing": int(len(np.unique(pn))),
        "nodes_running": int(len(np.unique(tn))),
        "makespan": int(ts.max() + 1) if len(ts) else 0,
    }
    return Verdict(not rep.violations, active, rep.violations, stats)


def _unplaced_tasks(sol: Solution, tidx: np.ndarray, t_known: np.ndarray, pidx: np.ndarray, p_known: np.ndarray) -> np.ndarray:
    """Tasks with no placement row of their (node, chunk) covering their slot."""
    assert sol.placed_at is not None and sol.removed_at is not None
    tn, ts = sol.task_node, sol.task_slot
    if len(tn) == 0:
        return np.zeros(0, dtype=np.int64)
    all_nodes = np.unique(np.concatenate([sol.placement_node, tn]))
    m = int(max(pidx.max(initial=0), tidx.max(initial=0))) + 1
    p_rows = np.flatnonzero(p_known)
    if len(p_rows) == 0:
        return np.flatnonzero(t_known)
    p_key = np.searchsorted(all_nodes, sol.placement_node[p_rows]) * m + pidx[p_rows]
    t_key = np.where(t_known, np.searchsorted(all_nodes, tn) * m + tidx, -1)
    order = np.argsort(p_key, kind="stable")
    sk = p_key[order]
    lo = np.searchsorted(sk, t_key, side="left")
    hi = np.searchsorted(sk, t_key, side="right")
    found = t_known & (hi > lo)
    # Common case: one copy per (node, chunk); check its time window directly.
    first = p_rows[order[np.minimum(lo, len(order) - 1)]]
    covered = found & (sol.placed_at[first] <= ts) & (sol.removed_at[first] >= ts + 1)
    # Several copies of the same (node, chunk) (itself a violation): any copy may cover the slot.
    for r in np.flatnonzero(found & ~covered & (hi - lo > 1)):
        rows = p_rows[order[lo[r] : hi[r]]]
        if ((sol.placed_at[rows] <= ts[r]) & (sol.removed_at[rows] >= ts[r] + 1)).any():
            covered[r] = True
    return np.flatnonzero(~covered & t_known)
