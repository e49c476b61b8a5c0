"""ideal and centralized on hand-built cases: their defining behaviour, worked out by hand."""

from __future__ import annotations

import pytest

from schedlab import simulate
from schedlab.cluster import Cluster
from schedlab.errors import InputError
from schedlab.schedulers import available, get, parse_params
from schedlab.workload.trace import TraceJob
from tests.helpers import jobs

LAT = 0.0005


def run(scheduler, trace, masks, **kw):
    return simulate(scheduler, trace, cluster=Cluster.slots(masks), constraints=False, **kw)


def test_ideal_places_instantly_and_queues_fifo():
    r = run("ideal", jobs((0.0, [2.0, 1.0, 1.0]), (0.5, [1.0])), [0, 0])
    t = r.tasks.set_index("task")
    # two workers: tasks 0 and 1 start at 0; task 2 waits for task 1's worker (t=1); task 3 (arrived 0.5) for t=2
    assert t.start.tolist() == [0.0, 0.0, 1.0, 2.0]
    assert t.worker.tolist()[:3] == [0, 1, 1]
    assert t.framework_queuing.tolist() == [0.0, 0.0, 1.0, 1.5]
    assert t.communication.sum() == 0 and t.processing.sum() == 0
    j = r.jobs
    assert j.jrt_delay.tolist() == [0.0, 1.5]
    assert r.summary["messages"] == {}


def test_ideal_min_constraints_keeps_versatile_workers_free():
    # worker 0 has constraint 0, worker 1 none: an unconstrained task takes worker 1,
    # so the later constrained task still finds worker 0 free.
    trace = [TraceJob(0.0, 5.0, [5.0], masks=[0]), TraceJob(1.0, 1.0, [1.0], masks=[0b1])]
    r = run("ideal", trace, [0b1, 0b0])
    assert r.tasks.worker.tolist() == [1, 0]
    assert r.jobs.jrt_delay.tolist() == [0.0, 0.0]


def test_ideal_never_places_a_task_on_a_worker_without_its_constraints():
    trace = [TraceJob(0.0, 1.0, [3.0, 1.0], masks=[0b10, 0b10])]
    r = run("ideal", trace, [0b01, 0b11, 0b00])
    assert r.tasks.worker.tolist() == [1, 1]
    assert r.tasks.start.tolist() == [0.0, 3.0]


def test_tasks_no_worker_satisfies_are_dropped_and_counted():
    trace = [TraceJob(0.0, 1.0, [1.0, 1.0], masks=[0b100, 0]), TraceJob(1.0, 1.0, [1.0], masks=[0b100])]
    r = run("ideal", trace, [0b1])
    c = r.summary["counters"]
    assert c["tasks_dropped_unsatisfiable"] == 2 and c["jobs_unschedulable"] == 1
    assert r.summary["jobs"] == 1 and r.summary["tasks"] == 1


def test_centralized_unloaded_delay_is_two_latencies_and_one_decision():
    r = run("centralized", jobs((0.0, [1.0])), [0] * 4)
    decision = 20e-6 + 1e-8 * 1  # first fit finds a free worker at rank 1
    assert r.jobs.jrt_delay.iloc[0] == pytest.approx(2 * LAT + decision)
    t = r.tasks.iloc[0]
    assert t.processing == pytest.approx(decision) and t.communication == pytest.approx(LAT)
    assert r.summary["messages"] == {"LaunchTask": 1, "TaskFinished": 1}


def test_centralized_serial_decisions_make_tasks_queue_in_the_framework():
    r = run("centralized", jobs((0.0, [1.0, 1.0, 1.0])), [0] * 10, params={"decision_cost": 1.0, "scan_cost_per_worker": 0.0})
    t = r.tasks
    assert t.framework_queuing.tolist() == pytest.approx([0.0, 1.0, 2.0])
    assert t.processing.tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert t.start.tolist() == pytest.approx([1 + LAT, 2 + LAT, 3 + LAT])
    assert (t.allocation_time - t[["framework_queuing", "processing", "worker_queuing", "communication"]].sum(axis=1)).abs().max() < 1e-12


def test_centralized_cost_grows_with_the_workers_scanned():
    # all workers busy except the least preferred: the decision scans all 1000
    trace = [TraceJob(0.0, 9.0, [9.0] * 999), TraceJob(1.0, 1.0, [1.0])]
    r = run("centralized", trace, [0] * 1000, params={"decision_cost": 0.0, "scan_cost_per_worker": 1e-6})
    last = r.tasks.iloc[-1]
    assert last.processing == pytest.approx(1000e-6)


def test_centralized_learns_of_a_free_worker_only_from_the_completion_message():
    r = run("centralized", jobs((0.0, [1.0]), (0.5, [1.0])), [0], params={"decision_cost": 0.0, "scan_cost_per_worker": 0.0})
    t = r.tasks
    # task 1 can start only after task 0's TaskFinished reaches the scheduler (1 + 2 latencies)
    assert t.start.iloc[1] == pytest.approx(1.0 + LAT + LAT + LAT)


def test_multi_resource_packing():
    cl = Cluster.multi_resource([0], capacity=(4.0, 100.0))
    trace = [TraceJob(0.0, 1.0, [1.0, 1.0, 1.0], requests=[(2, 10), (2, 10), (2, 10)])]
    r = simulate("ideal", trace, cluster=cl, constraints=False)
    assert r.tasks.start.tolist() == [0.0, 0.0, 1.0]
    assert r.utilization.cores.tolist() == pytest.approx([1.0, 0.5])


def test_registry_and_params():
    assert {"ideal", "centralized"} <= set(available())
    with pytest.raises(InputError, match="unknown scheduler 'nope'"):
        get("nope")
    with pytest.raises(InputError, match="param bogus: unknown parameter"):
        parse_params(get("ideal"), {"bogus": 1})
    with pytest.raises(InputError, match="param decision_cost"):
        parse_params(get("centralized"), {"decision_cost": -1})
    with pytest.raises(InputError, match="param worker_choice"):
        parse_params(get("ideal"), {"worker_choice": "best"})
