"""CRED-S (equal deadlines) and CRED-M (several deadlines): the report's Sections 3 and 4, after the CRED paper.

**CRED-S** (report Section 3, Algorithm 1 with SCHEDULE, Algorithm 2). For one
deadline d, each chunk c still needs R_c slots; on one node it can get at most
f_c = min(R_c, d) of them (only one VM may read a chunk in a slot, so a node
gives a chunk at most one slot per time step — the report's "minimum of actual
slot required and deadline"). Repeat until nothing is left:

1. sort chunks by f_c, largest first (the array R_d; ties by chunk index);
2. if the B largest need more than one node can run (Σ f > S·d), take H_{B,d}:
   the window of B *contiguous* chunks of the sorted array closest to its tail
   (the smallest chunks) whose f-sum still reaches S·d. Such a window exists
   because the head window exceeds S·d, and window sums only fall towards the
   tail; the tail-most one overshoots S·d by less than its largest f, so every
   chunk in it gets work;
3. otherwise any B chunks fit together: take the B largest (report: "place any
   B chunks into a node");
4. open a node, place the chosen chunks, and SCHEDULE S·d slots among them from
   the smallest f up (so as many chunks as possible finish and leave the list;
   at most the largest one is served in part and stays with its remainder, to
   be replicated on a later node). Chunks that would get no slot are not placed.

The slots are laid out on the new node by McNaughton's wrap-around rule over
[0, d) (:meth:`~schedlab.edge.plan.NodePlan.fill_fresh`), which is valid
because every f <= d and the total <= S·d.

**CRED-M** (report Section 4, Algorithm 3). Deadline classes are handled one by
one, d↑_1 first. For class i:

1. *Reuse chunks already placed* — "CRED-M first schedules time slots for
   deadlines from d↑_i to d↑_D": for every class k >= i, each chunk already
   stored on active nodes gets its class-k demand on those nodes, in the spare
   slots before d↑_k. This costs no storage, so it goes first, and future
   classes' demand goes to the intervals after d↑_i first so that the current
   class keeps its window;
2. *Reuse spare storage* — active nodes that store fewer than B chunks and still
   have free slots before d↑_i take class-i chunks, those with the most demand
   left first (the report's "attempt to assign chunks to active nodes"), in node
   opening order;
3. *New nodes* — CRED-S on what is left, with deadline d↑_i. New nodes are
   empty, so all of [0, d↑_i) is theirs; their slots after d↑_i become spare
   capacity that steps 1–2 reuse for later classes.

Readings taken where the report is silent or garbled (see also the package docstring):

* F_{c,i} counts the jobs of class i that need chunk c (per-class, not
  cumulative); spare slots before an earlier deadline may serve a later class
  (running early is always allowed), and the slot-to-job matching at the end is
  earliest-deadline-first.
* The report's SCHEDULE pseudocode is garbled (it subtracts k after zeroing it).
  We implement its prose: serve the smallest chunks first, cap each at d.
* The H_{B,d} test uses the capped f (the slots a node can actually give), so
  the window really fills a node.
* When fewer than B chunks remain but they need more than one node, the window
  is all of them.
"""

from __future__ import annotations

import numpy as np

from schedlab.edge.instance import EdgeInstance
from schedlab.edge.plan import NodePlan, materialize
from schedlab.edge.solution import Solution


def cred_s_new_nodes(plan: NodePlan, chunks: np.ndarray, remaining: np.ndarray, i: int) -> int:
    """CRED-S for class i: open new nodes until ``remaining`` (slots per dense chunk) is served; return how many."""
    d = int(sum(plan.lengths[: i + 1]))
    B = plan.B
    capacity = plan.S * d
    keep = remaining > 0
    ch = np.asarray(chunks, dtype=np.int64)[keep]
    r = np.asarray(remaining, dtype=np.int64)[keep].copy()
    opened = 0
    while len(ch):
        f = np.minimum(r, d)
        order = np.lexsort((ch, -f))  # R_d: largest f first, ties by chunk index
        ch, r, f = ch[order], r[order], f[order]
        b = min(B, len(ch))
        if f[:b].sum() > capacity:
            if len(ch) > B:
                cs = np.concatenate(([0], np.cumsum(f)))
                windows = cs[B:] - cs[:-B]  # windows[p] = f[p] + … + f[p+B-1], non-increasing in p
                p = int(np.searchsorted(-windows, -capacity, side="right")) - 1  # tail-most window >= S·d
                chosen = np.arange(p, p + B)
            else:
                chosen = np.arange(len(ch))
        else:
            chosen = np.arange(b)
        # SCHEDULE: from the smallest f up, until the node's S·d slots are used.
        pieces: list[tuple[int, int]] = []
        budget = capacity
        for idx in chosen[::-1].tolist():
            give = min(int(f[idx]), budget)
            if give == 0:
                break
            pieces.append((int(ch[idx]), give))
            r[idx] -= give
            budget -= give
        plan.fill_fresh(plan.open_node(), pieces, i)
        opened += 1
        left = r > 0
        ch, r = ch[left], r[left]
    return opened


def _reuse_placed_chunks(plan: NodePlan, remaining: list[list[int]], placed: list[int], current: int) -> None:
    """Step 1 of CRED-M: demand of classes >= current goes to nodes that already store the chunk."""
    num_classes = plan.num_intervals
    for k in range(current, num_classes):
        for c in placed:
            want = remaining[c][k]
            if want == 0:
                continue
            for n in plan.nodes_of[c]:
                want -= plan.assign(n, c, k, want, current)
                if want == 0:
                    break
            remaining[c][k] = want


def _reuse_spare_storage(plan: NodePlan, remaining: list[list[int]], chunks: list[int], i: int) -> None:
    """Step 2 of CRED-M: class-i chunks go to active nodes with free storage and free slots before d↑_i."""
    B = plan.B
    nodes = [n for n in range(plan.num_nodes) if plan.stored[n] < B and plan.free_before(n, i) > 0]
    if not nodes:
        return
    todo = sorted((c for c in chunks if remaining[c][i] > 0), key=lambda c: (-remaining[c][i], c))
    head = 0
    for n in nodes:
        j = head
        while j < len(todo) and plan.stored[n] < B and plan.free_before(n, i) > 0:
            c = todo[j]
            if remaining[c][i] and not plan.holds(n, c):
                remaining[c][i] -= plan.assign(n, c, i, remaining[c][i])
            if remaining[c][i] == 0 and j == head:
                head += 1
            j += 1


def cred_m_plan(inst: EdgeInstance, reuse: bool = True) -> NodePlan:
    """Run CRED-M on ``inst``; with ``reuse=False`` every class gets its own nodes (CRED-S per deadline)."""
    dem = inst.demand
    plan = NodePlan(inst)
    remaining: list[list[int]] = dem.demand.tolist()
    placed: list[int] = []  # chunks stored on some node, in first-placement order
    is_placed = [False] * dem.num_chunks
    for i in range(dem.num_classes):
        chunks = np.flatnonzero(dem.demand[:, i]).tolist()
        if reuse and plan.num_nodes:
            _reuse_placed_chunks(plan, remaining, placed, i)
            _reuse_spare_storage(plan, remaining, chunks, i)
        left = np.array([remaining[c][i] for c in chunks], dtype=np.int64)
        cred_s_new_nodes(plan, np.array(chunks, dtype=np.int64), left, i)
        for c in chunks:
            remaining[c][i] = 0
        # Chunks placed at this step (by reuse or on new nodes) join the reusable set.
        for c in chunks:
            if not is_placed[c] and plan.nodes_of[c]:
                is_placed[c] = True
                placed.append(c)
    return plan


def cred_m(inst: EdgeInstance) -> Solution:
    """CRED-M: deadline classes in order, reusing active nodes' chunks, storage and slots before opening nodes."""
    plan = cred_m_plan(inst)
    return materialize(inst, plan, "cred-m", {"nodes_opened": plan.num_nodes})


def cred_s(inst: EdgeInstance) -> Solution:
    """CRED-S. With several deadlines, every job is given the earliest one (the equal-deadline
    algorithm is only defined for one deadline; meeting the earliest meets them all)."""
    earliest = int(inst.deadlines.min())
    flat = inst if (inst.deadlines == earliest).all() else inst.with_deadlines(np.full(inst.num_jobs, earliest))
    plan = cred_m_plan(flat)
    return materialize(flat, plan, "cred-s", {"nodes_opened": plan.num_nodes, "deadline_used": earliest})


def cred_s_per_deadline(inst: EdgeInstance) -> Solution:
    """Ablation of CRED-M without reuse: CRED-S on each deadline class with its own new nodes."""
    plan = cred_m_plan(inst, reuse=False)
    return materialize(inst, plan, "cred-s-per-deadline", {"nodes_opened": plan.num_nodes})
