"""The paper's worked example: Table 2 (4 servers x 2 cores, 5 tasks, g(n) = 1 + 0.5 n).

* Section 4, Example 1 / Figure 2: Hadoop's default makespan 3.5, delay
  scheduling's 3.25, DynDLOn's 3.25, with the assignments the text describes;
* Section 5.1, Figure 3: DynDLOff's greedy initial assignment has makespan
  3.5, the first cost-reducing path (s4 -> s3 -> s2 -> s1) brings it to 3.25;
* the optimum (MILP) is 3.0, which DynDLOff reaches.
"""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.locality.algorithms import PAPER_ALGORITHMS, run_algorithm
from schedlab.locality.dyndloff import PhaseTwo, dyndloff, is_balanced, phase_one
from schedlab.locality.instances import table2_instance
from schedlab.locality.milp import solve_milp
from schedlab.locality.model import Assignment, evaluate
from schedlab.locality.online import delay, dyndlon, hadoop

TIMELINES = ("running", "model")


@pytest.fixture(scope="module")
def inst():
    return table2_instance()


def cores(inst, result) -> list[str]:
    return [inst.core_name(int(p)) for p in result.assignment.task_core]


def test_instance_is_table_2(inst) -> None:
    assert (inst.n_servers, inst.n_cores, inst.n_tasks) == (4, 8, 5)
    assert inst.initial_load.tolist() == [0.75, 0.5, 0.25, 2.0, 2.25, 14.0, 2.5, 3.75]
    assert [inst.replicas_of(t).tolist() for t in range(5)] == [[0, 1], [1, 3], [1, 2], [1, 2], [2, 3]]
    assert [inst.g(0, n) for n in (1, 2, 3)] == [1.5, 2.0, 2.5]


def test_evaluator_on_figure_2_assignments(inst) -> None:
    # Figure 2a (Hadoop): t1 p21, t2 p12, t3 p11, t4 p21, t5 p22 -> s1 has two remote tasks (cost 2 each).
    a = evaluate(inst, Assignment(np.array([2, 1, 0, 2, 3])))
    assert a.makespan == 3.5
    assert a.remote_tasks == 3
    assert a.task_cost.tolist() == [1.0, 2.0, 2.0, 1.0, 1.5]
    # Figure 2b (delay scheduling): t5 waits for p31 instead.
    b = evaluate(inst, Assignment(np.array([2, 1, 0, 2, 4])))
    assert b.makespan == 3.25
    # Inactive cores do not count: p32 idles at 14.
    assert not b.core_active[5]


@pytest.mark.parametrize("timeline", TIMELINES)
def test_example_1_hadoop_makespan_3_5(inst, timeline) -> None:
    r = hadoop(inst, remote_pick="first", timeline=timeline)
    assert r.makespan == 3.5
    # p21 takes t1 and t4, p12 and p11 take t2 and t3 remotely, p22 takes t5 remotely.
    assert cores(inst, r) == ["s2.p1", "s1.p2", "s1.p1", "s2.p1", "s2.p2"]
    assert evaluate(inst, r.assignment).makespan == 3.5


@pytest.mark.parametrize("timeline", TIMELINES)
@pytest.mark.parametrize("threshold", [3.0, 0.4])
def test_example_1_delay_scheduling_makespan_3_25(inst, timeline, threshold) -> None:
    r = delay(inst, delay_threshold=threshold, remote_pick="first", timeline=timeline)
    assert r.makespan == 3.25
    assert cores(inst, r)[4] == "s3.p1"  # p22 waits; p31 frees at 2.25 and takes t5 locally
    if threshold == 0.4:  # Figure 2b's trajectory: p12 and p11 wait a little, then take t2 and t3
        assert cores(inst, r)[:3] == ["s2.p1", "s1.p2", "s1.p1"]
        assert r.details["idle_time"] == pytest.approx(0.8)


@pytest.mark.parametrize("timeline", TIMELINES)
@pytest.mark.parametrize("threshold", [3.0, 0.25])
def test_example_1_dyndlon_makespan_3_25(inst, timeline, threshold) -> None:
    r = dyndlon(inst, delay_threshold=threshold, remote_pick="first", timeline=timeline)
    assert r.makespan == 3.25
    # Figure 2c: s1 never gets a second remote task.
    assert evaluate(inst, r.assignment).server_remote[0] <= 1


def test_phase_one_initial_assignment_and_first_cost_reducing_path(inst) -> None:
    one = phase_one(inst, record=True)
    assert one.initial_makespan == 3.5  # Figure 3a
    first = one.path_log[0]
    assert first["servers"] == ["s4", "s3", "s2", "s1"]  # Figure 3b's shadowed path
    # t5 moves to s3, a task preferring s2 and s3 (t4 here, t3 in the figure: they are twins) to s2, t1 to s1.
    assert first["tasks"][0] == "t5" and first["tasks"][2] == "t1" and first["tasks"][1] in ("t3", "t4")
    assert first["makespan"] == 3.25  # Figure 3c
    assert one.paths == 1 and one.makespan == 3.25  # Figure 3d: balanced
    assert is_balanced(inst, one.task_core)


def test_phase_two_and_optimum(inst) -> None:
    r = dyndloff(inst)
    two = PhaseTwo(inst, phase_one(inst))
    assert two.deadlines.tolist() == [3.25, 3.0, 2.25, 1.5, 1.25]
    assert r.details["deadline_index"] == 1  # D[1] = 3 passes (one remote task fits on s1), D[2] = 2.25 fails
    assert r.makespan == 3.0 and r.remote_tasks == 1
    opt = solve_milp(inst)
    assert opt.details["status"] == "optimal"
    assert opt.makespan == pytest.approx(3.0)


def test_all_algorithms_on_table_2(inst) -> None:
    for name in PAPER_ALGORITHMS:
        r = run_algorithm(name, inst, seed=0)
        assert r.makespan >= 3.0 - 1e-9
        assert evaluate(inst, r.assignment).makespan == pytest.approx(r.makespan)
