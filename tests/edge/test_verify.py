"""The verifier: accepts every algorithm's schedule on random instances, rejects each kind of violation shown to it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.edge.compare import ALGORITHMS, HEURISTICS
from schedlab.edge.cred import cred_m
from schedlab.edge.milp import solve_milp
from schedlab.edge.solution import NEVER, Solution
from schedlab.edge.verify import RULES, verify
from tests.edge.helpers import figure2_instance, instances

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@SETTINGS
@given(instances(), st.sampled_from(sorted(HEURISTICS)))
def test_verifier_accepts_every_algorithm(inst, name):
    sol = ALGORITHMS.run(name, inst)
    verdict = verify(inst, sol)
    assert verdict.ok, verdict.summary()
    assert verdict.stats["tasks"] == inst.num_tasks


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_jobs=5, max_chunks=6, max_deadline=4))
def test_verifier_accepts_the_milp_optimum(inst):
    res = solve_milp(inst, upper=verify(inst, cred_m(inst)).active_nodes, max_variables=None)
    assert res.status == "optimal"
    assert verify(inst, res.solution).ok


def test_verifier_accepts_large_generated_instance():
    from schedlab.edge.generate import generate_instance

    inst = generate_instance(jobs=300, chunks=2000, chunks_per_job="uniform:5,20", deadlines="10,20,30", chunks_per_node=32, vms_per_node=4, seed=3)
    for name in HEURISTICS:
        assert verify(inst, ALGORITHMS.run(name, inst)).ok


def test_solution_json_round_trip(tmp_path):
    from schedlab.edge.solution import load_solution

    inst = figure2_instance()
    sol = cred_m(inst)
    sol.save(tmp_path / "s.json")
    back = load_solution(tmp_path / "s.json")
    assert verify(inst, back).ok
    assert back.to_dict() == sol.to_dict()


# -- mutations: each breaks one rule ----------------------------------------------------------------
def _with(sol: Solution, **cols) -> Solution:
    s = sol.copy()
    for k, v in cols.items():
        setattr(s, k, np.asarray(v, dtype=np.int64))
    return s


def _append_task(sol: Solution, r: int, **changes) -> Solution:
    cols = {k: np.append(getattr(sol, k), changes.get(k.removeprefix("task_"), getattr(sol, k)[r])) for k in ("task_job", "task_chunk", "task_node", "task_vm", "task_slot")}
    return _with(sol, **cols)


def _set_task(sol: Solution, r: int, **changes) -> Solution:
    cols = {}
    for k, v in changes.items():
        a = getattr(sol, f"task_{k}").copy()
        a[r] = v
        cols[f"task_{k}"] = a
    return _with(sol, **cols)


def m_node_out_of_range(inst, sol, r, rng):
    n = sol.task_node[r]  # renumber one whole node to N: everything else stays consistent
    return _with(sol, task_node=np.where(sol.task_node == n, inst.nodes, sol.task_node), placement_node=np.where(sol.placement_node == n, inst.nodes, sol.placement_node)), True


def m_vm_out_of_range(inst, sol, r, rng):
    return _set_task(sol, r, vm=inst.vms_per_node + int(rng.integers(3))), True


def m_slot_negative(inst, sol, r, rng):
    return _set_task(sol, r, slot=-1 - int(rng.integers(3))), False  # also before the chunk is placed


def m_unknown_job(inst, sol, r, rng):
    return _set_task(sol, r, job=inst.num_jobs + int(rng.integers(3))), False  # and the real task goes missing


def m_unknown_chunk(inst, sol, r, rng):
    return _set_task(sol, r, chunk=int(inst.chunk_ids.max()) + 1), False


def m_duplicate_placement(inst, sol, r, rng):
    k = int(rng.integers(len(sol.placement_node)))
    return _with(sol, placement_node=np.append(sol.placement_node, sol.placement_node[k]), placement_chunk=np.append(sol.placement_chunk, sol.placement_chunk[k]),
                 placed_at=np.append(sol.placed_at, 0), removed_at=np.append(sol.removed_at, NEVER)), True


def m_storage_exceeded(inst, sol, r, rng):
    n = sol.task_node[r]
    held = set(sol.placement_chunk[sol.placement_node == n].tolist())
    fresh = [c for c in inst.chunk_ids.tolist() if c not in held]
    fresh += list(range(int(inst.chunk_ids.max()) + 1, int(inst.chunk_ids.max()) + 1 + inst.chunks_per_node + 1))  # unknown ids if needed
    add = fresh[: inst.chunks_per_node + 1 - len(held)]
    k = len(add)
    return _with(sol, placement_node=np.append(sol.placement_node, [n] * k), placement_chunk=np.append(sol.placement_chunk, add),
                 placed_at=np.append(sol.placed_at, [0] * k), removed_at=np.append(sol.removed_at, [NEVER] * k)), False


def m_placed_during_execution(inst, sol, r, rng):
    k = int(rng.integers(len(sol.placement_node)))
    placed = sol.placed_at.copy()
    placed[k] = 1 + int(rng.integers(5))
    return _with(sol, placed_at=placed), False  # tasks of that copy before the new time lose their chunk too


def m_chunk_moved(inst, sol, r, rng):
    k = int(rng.integers(len(sol.placement_node)))
    removed = sol.removed_at.copy()
    removed[k] = int(sol.task_slot.max()) + 1  # removed only after the last slot: nothing else breaks
    return _with(sol, removed_at=removed), True


def m_chunk_not_on_node(inst, sol, r, rng):
    keep = ~((sol.placement_node == sol.task_node[r]) & (sol.placement_chunk == sol.task_chunk[r]))
    return _with(sol, placement_node=sol.placement_node[keep], placement_chunk=sol.placement_chunk[keep], placed_at=sol.placed_at[keep], removed_at=sol.removed_at[keep]), True


def m_vm_double_booked(inst, sol, r, rng):
    same = np.flatnonzero((sol.task_node == sol.task_node[r]) & (sol.task_slot == sol.task_slot[r]) & (sol.task_vm != sol.task_vm[r]))
    if len(same):  # two tasks of one slot on one node: put both on one VM
        return _set_task(sol, int(same[0]), vm=sol.task_vm[r]), False
    return _append_task(sol, r), False  # run the task twice on its VM


def m_vms_exceeded(inst, sol, r, rng):
    out = sol
    for k in range(inst.vms_per_node + 1):  # S+1 extra tasks in one slot of one node
        out = _append_task(out, r, vm=inst.vms_per_node + k)
    return out, False


def m_chunk_concurrent(inst, sol, r, rng):
    busy = set(sol.task_vm[(sol.task_node == sol.task_node[r]) & (sol.task_slot == sol.task_slot[r])].tolist())
    free = [v for v in range(inst.vms_per_node + 1) if v not in busy]
    return _append_task(sol, r, vm=free[0]), False  # the same chunk on a second VM in the same slot


def m_chunk_not_in_job(inst, sol, r, rng):
    c = sol.task_chunk[r]
    others = [j for j in range(inst.num_jobs) if c not in set(inst.job_chunks[inst.job_start[j] : inst.job_start[j + 1]].tolist())]
    if not others:
        return None, False
    return _set_task(sol, r, job=others[int(rng.integers(len(others)))]), False


def m_deadline_missed(inst, sol, r, rng):
    return _set_task(sol, r, slot=int(inst.deadlines.max()) + int(rng.integers(1, 4))), True


def m_task_missing(inst, sol, r, rng):
    keep = np.arange(sol.num_tasks) != r
    return _with(sol, **{k: getattr(sol, k)[keep] for k in ("task_job", "task_chunk", "task_node", "task_vm", "task_slot")}), True


def m_task_duplicated(inst, sol, r, rng):
    return _append_task(sol, r, slot=int(sol.task_slot.max()) + 1), False  # late too, if past the deadline


def m_active_nodes_mismatch(inst, sol, r, rng):
    s = sol.copy()
    s.claimed_active_nodes = int(sol.claimed_active_nodes) + 1 + int(rng.integers(3))
    return s, True


MUTATIONS = {name.removeprefix("m_"): fn for name, fn in globals().items() if name.startswith("m_")}


def test_every_rule_has_a_mutation():
    assert set(MUTATIONS) == set(RULES)


@pytest.mark.parametrize("kind", sorted(RULES))
@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
@given(inst=instances(), data=st.data())
def test_verifier_rejects_each_violation(kind, inst, data):
    name = data.draw(st.sampled_from(sorted(HEURISTICS)))
    sol = ALGORITHMS.run(name, inst)
    r = data.draw(st.integers(0, sol.num_tasks - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    bad, only = MUTATIONS[kind](inst, sol, r, rng)
    if bad is None:
        return  # this instance cannot show the violation (e.g. every job needs the chunk)
    if kind != "active_nodes_mismatch":
        # Removing a node's last task or copy really changes the active-node count; drop the claim so
        # that the exact-set check below sees only the rule the mutation targets.
        bad.claimed_active_nodes = None
    verdict = verify(inst, bad)
    assert not verdict.ok
    assert kind in verdict.kinds(), verdict.summary()
    if only:  # the mutation breaks exactly this rule, so nothing else may be reported
        assert verdict.kinds() == {kind}, verdict.summary()
    v = next(v for v in verdict.violations if v.kind == kind)
    assert v.count >= 1 and v.examples and all(isinstance(e, str) and e for e in v.examples)


def test_violation_messages_are_precise():
    inst = figure2_instance()
    sol = cred_m(inst)
    r = int(np.flatnonzero((sol.task_job == 3) & (sol.task_chunk == 6))[0])
    late = _set_task(sol, r, slot=7)
    v = verify(inst, late)
    assert v.kinds() == {"deadline_missed"}
    assert v.violations[0].examples == [f"task {r} (job 3, chunk 6, node {sol.task_node[r]}, vm {sol.task_vm[r]}, slot 7) ends at t=8 > deadline 4"]
    moved = sol.copy()
    moved.removed_at = moved.removed_at.copy()
    moved.removed_at[0] = 1
    v = verify(inst, moved)
    assert "chunk_moved" in v.kinds() and "chunk_not_on_node" in v.kinds()


@pytest.mark.parametrize("kind", sorted(RULES))
@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_each_violation_on_the_figure2_example(kind, name):
    """Deterministic companion of the property test: every mutation applies here and is caught."""
    inst = figure2_instance()
    sol = ALGORITHMS.run(name, inst)
    rng = np.random.default_rng(0)
    for r in (0, sol.num_tasks // 2, sol.num_tasks - 1):
        bad, only = MUTATIONS[kind](inst, sol, r, rng)
        assert bad is not None
        if kind != "active_nodes_mismatch":
            bad.claimed_active_nodes = None
        verdict = verify(inst, bad)
        assert kind in verdict.kinds(), verdict.summary()
        if only:
            assert verdict.kinds() == {kind}, verdict.summary()
