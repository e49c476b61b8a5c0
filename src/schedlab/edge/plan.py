"""The planning state shared by every CRED algorithm, and its conversion into a full slot-by-slot schedule.

Algorithms do not pick individual (VM, slot) pairs. They decide, per node n,
chunk c and *deadline interval* k = [d↑_{k−1}, d↑_k), how many unit tasks
``units[n, c][k]`` of chunk c run on node n in that interval (each takes one
VM for one slot). Two facts make this
exact rather than an approximation (and the MILP in :mod:`schedlab.edge.milp`
uses the same variables):

1. **Inside one interval any such amounts can be laid out.** If every chunk's
   amount on node n in interval k is at most L_k and their sum is at most S·L_k,
   McNaughton's wrap-around rule — write the amounts one after another into an
   S × L_k grid, VM by VM — gives a slot schedule in which no VM runs two tasks
   at once and no chunk is on two VMs in the same slot (a piece of length <= L_k
   that wraps from the end of one VM's row to the start of the next cannot
   overlap itself in time). Conversely, any slot schedule has such amounts.
2. **Deadlines only constrain cumulative amounts.** The slots of chunk c (over
   all nodes) can be matched to the jobs needing c, earliest slot to earliest
   deadline, and every job meets its deadline iff for each class i chunk c has at
   least W_{c,i} = Σ_{k<=i} F_{c,k} slots before d↑_i. Algorithms keep this by
   only giving class i's demand to intervals k <= i.

:class:`NodePlan` holds, per node, the free VM-slots left in each interval
(``free[n][k]``, initially S·L_k), the chunks stored (at most B), and the units
per (node, chunk, interval). :meth:`NodePlan.assign` gives a chunk as many
units as one node can still take for one class. :func:`materialize` turns the
plan into a :class:`~schedlab.edge.solution.Solution` with every chunk placed at
t = 0 on the nodes that process it, and every task on a concrete VM and slot.
"""

from __future__ import annotations

import numpy as np

from schedlab.edge.instance import EdgeInstance
from schedlab.edge.solution import Solution
from schedlab.errors import InvariantError


class NodePlan:
    """Nodes opened so far with their free interval capacity, stored chunks and assigned units."""

    def __init__(self, inst: EdgeInstance) -> None:
        dem = inst.demand
        self.S = inst.vms_per_node
        self.B = inst.chunks_per_node
        self.lengths: list[int] = dem.lengths.tolist()
        self.num_intervals = len(self.lengths)
        self.free: list[list[int]] = []  # free[n][k]: VM-slots still free on node n in interval k
        self.stored: list[int] = []  # chunks stored on node n
        self.units: dict[tuple[int, int], list[int]] = {}  # (n, c) -> units per interval
        self.nodes_of: list[list[int]] = [[] for _ in range(dem.num_chunks)]  # chunk -> nodes storing it

    @property
    def num_nodes(self) -> int:
        return len(self.free)

    def open_node(self) -> int:
        self.free.append([self.S * length for length in self.lengths])
        self.stored.append(0)
        return len(self.free) - 1

    def holds(self, n: int, c: int) -> bool:
        return (n, c) in self.units

    def place(self, n: int, c: int) -> list[int]:
        if self.stored[n] >= self.B:
            raise InvariantError(f"node {n} already stores B={self.B} chunks; cannot place chunk {c}")
        u = [0] * self.num_intervals
        self.units[(n, c)] = u
        self.stored[n] += 1
        self.nodes_of[c].append(n)
        return u

    def free_before(self, n: int, i: int) -> int:
        """Free VM-slots on node n before deadline d↑_i."""
        return sum(self.free[n][: i + 1])

    def interval_order(self, n: int, i: int, current: int) -> list[int]:
        """Intervals to fill, in order, for class i's demand while the algorithm works on class ``current``.

        Intervals after the current deadline first, latest first: the current class
        cannot use them, so demand of later classes should go there before it eats
        into the current window. Inside the current window (k <= current), the
        interval with the most free VMs per slot first — the interval-level form of
        filling the emptiest slots first, which keeps room for the next chunks
        (the Gale–Ryser greedy).
        """
        late = list(range(i, current, -1))
        window = range(min(i, current) + 1)
        free, lengths = self.free[n], self.lengths
        early = sorted(window, key=lambda k: (-free[k] / lengths[k], -k))
        return late + early

    def assign(self, n: int, c: int, i: int, want: int, current: int | None = None) -> int:
        """Give chunk c up to ``want`` units on node n for class i (placing c if needed); return how many."""
        if want <= 0:
            return 0
        u = self.units.get((n, c))
        free, lengths = self.free[n], self.lengths
        if u is None:
            if self.stored[n] >= self.B or self.free_before(n, i) == 0:
                return 0
            u = self.place(n, c)
        got = 0
        for k in self.interval_order(n, i, i if current is None else current):
            a = min(want - got, free[k], lengths[k] - u[k])
            if a > 0:
                u[k] += a
                free[k] -= a
                got += a
                if got == want:
                    break
        return got

    def fill_fresh(self, n: int, pieces: list[tuple[int, int]], i: int) -> None:
        """Put ``(chunk, amount)`` pieces on node n, empty before d↑_i, by McNaughton's rule over [0, d↑_i).

        The caller guarantees amounts <= d↑_i and their sum <= S·d↑_i (CRED-S's
        SCHEDULE); the wrap-around layout then always fits, and its per-interval
        amounts are what the plan records.
        """
        horizon = sum(self.lengths[: i + 1])
        if any(self.free[n][k] != self.S * self.lengths[k] for k in range(i + 1)):
            raise InvariantError(f"node {n} is not empty before deadline {horizon}")
        bounds = np.cumsum([0, *self.lengths[: i + 1]]).tolist()
        offset = 0
        for c, a in pieces:
            u = self.units.get((n, c))
            if u is None:
                u = self.place(n, c)
            start = offset % horizon
            # The piece covers slots [start, start + a) of one VM row, wrapping to the next row's start.
            spans = [(start, min(start + a, horizon))]
            if start + a > horizon:
                spans.append((0, start + a - horizon))
            for lo, hi in spans:
                for k in range(i + 1):
                    overlap = min(hi, bounds[k + 1]) - max(lo, bounds[k])
                    if overlap > 0:
                        u[k] += overlap
                        self.free[n][k] -= overlap
            offset += a
        if offset > self.S * horizon:
            raise InvariantError(f"node {n}: {offset} units over a fresh window of S*d = {self.S * horizon}")


def materialize(inst: EdgeInstance, plan: NodePlan, algorithm: str, info: dict | None = None) -> Solution:
    """The full solution of a plan: chunks placed at t = 0 where they are used, tasks on VMs and slots."""
    keys = [(n, c) for (n, c), u in plan.units.items() if any(u)]
    if not keys:
        raise InvariantError("the plan assigns no units")
    kn = np.array([k[0] for k in keys], dtype=np.int64)
    kc = np.array([k[1] for k in keys], dtype=np.int64)
    amounts = np.array([plan.units[k] for k in keys], dtype=np.int64)  # (P, D)
    return _build_solution(inst, kn, kc, amounts, algorithm, info or {})


def solution_from_units(inst: EdgeInstance, node: np.ndarray, chunk: np.ndarray, amounts: np.ndarray, algorithm: str, info: dict | None = None) -> Solution:
    """Like :func:`materialize`, from arrays: ``amounts[r, k]`` units of dense chunk ``chunk[r]`` on ``node[r]`` in interval k."""
    keep = amounts.sum(axis=1) > 0
    return _build_solution(inst, node[keep], chunk[keep], amounts[keep], algorithm, info or {})


def _build_solution(inst: EdgeInstance, kn: np.ndarray, kc: np.ndarray, amounts: np.ndarray, algorithm: str, info: dict) -> Solution:
    dem = inst.demand
    # Number the nodes that got work 0, 1, … in opening order, so ids stay below N whenever N suffices.
    used, kn = np.unique(kn, return_inverse=True)
    kn = kn.astype(np.int64)
    lengths = dem.lengths
    starts = np.concatenate(([0], dem.deadlines[:-1]))
    nd = len(lengths)
    lim_ok = (amounts <= lengths[None, :]).all()
    # Pieces: one per (node, chunk, interval) with a positive amount, laid out per (node, interval).
    rows, ks = np.nonzero(amounts)
    a = amounts[rows, ks]
    pn, pc = kn[rows], kc[rows]
    order = np.lexsort((pc, ks, pn))
    pn, pc, ks, a = pn[order], pc[order], ks[order], a[order]
    group = pn * nd + ks
    ends = np.cumsum(a)
    group_start_pos = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    group_base = np.repeat(ends[group_start_pos] - a[group_start_pos], np.diff(np.r_[group_start_pos, len(a)]))
    offset = ends - a - group_base  # McNaughton offset of each piece inside its node's interval grid
    group_total = np.add.reduceat(a, group_start_pos) if len(a) else a
    if not lim_ok or (len(a) and (group_total > inst.vms_per_node * lengths[ks[group_start_pos]]).any()):
        raise InvariantError(f"{algorithm}: plan exceeds an interval's capacity (chunk > L_k or node > S*L_k)")
    # Expand pieces into unit tasks.
    total = int(a.sum())
    piece = np.repeat(np.arange(len(a)), a)
    within = np.arange(total) - np.repeat(ends - a, a)
    pos = offset[piece] + within
    length = lengths[ks[piece]]
    unit_node = pn[piece]
    unit_chunk = pc[piece]
    unit_vm = pos // length
    unit_slot = starts[ks[piece]] + pos % length
    # Earliest-deadline-first matching of each chunk's slots to the jobs that need it.
    if total != len(dem.task_job):
        raise InvariantError(f"{algorithm}: plan has {total} units for {len(dem.task_job)} tasks")
    u_order = np.lexsort((unit_vm, unit_node, unit_slot, unit_chunk))
    t_order = np.lexsort((dem.task_job, dem.task_deadline, dem.task_chunk))
    if not np.array_equal(unit_chunk[u_order], dem.task_chunk[t_order]):
        raise InvariantError(f"{algorithm}: plan's units per chunk differ from the chunk's demand")
    task_job = dem.task_job[t_order]
    task_chunk = inst.chunk_ids[dem.task_chunk[t_order]]
    # Placement: each (node, chunk) pair with units, at t = 0, kept for good.
    return Solution(
        placement_node=kn,
        placement_chunk=inst.chunk_ids[kc],
        task_job=task_job,
        task_chunk=task_chunk,
        task_node=unit_node[u_order],
        task_vm=unit_vm[u_order],
        task_slot=unit_slot[u_order],
        algorithm=algorithm,
        claimed_active_nodes=len(used),
        info=info,
    )
