"""The simulated workers: start, end, refuse over-allocation, and preempt only when asked to follow tasks."""

from __future__ import annotations

import pytest

from schedlab.engine import build_cluster
from schedlab.errors import InvariantError
from schedlab.metrics.recorder import COMMUNICATION, Recorder
from schedlab.sim import SimRuntime
from schedlab.workers.simulated import WorkerPool
from schedlab.workload.model import TaskTable


def make_pool(durations: list[float]) -> tuple[SimRuntime, WorkerPool, Recorder]:
    rt = SimRuntime(seed=0)
    cluster = build_cluster(4, None, 0, constraints=False)
    tasks, rec = TaskTable(), Recorder(spill=False)
    job = tasks.add_job(0.0, durations)
    rec.add_job(job.jid, 0.0, durations)
    return rt, WorkerPool(rt, cluster, tasks, rec), rec


def test_tasks_ending_together_are_one_group_and_workers_are_freed():
    rt, pool, _rec = make_pool([2.0, 1.0, 2.0])
    ended: list = []
    pool.start_many([(0, 0), (1, 1), (2, 2)], lambda g: ended.append((rt.now(), list(g))), COMMUNICATION)
    assert pool.busy_workers == 3
    rt.kernel.run()
    assert ended == [(1.0, [(1, 1)]), (2.0, [(0, 0), (2, 2)])]
    assert pool.busy_workers == 0 and pool.running == [-1] * 4


def test_a_busy_worker_is_refused():
    rt, pool, _rec = make_pool([5.0, 5.0])
    pool.start_many([(0, 3)], lambda g: None, COMMUNICATION)
    with pytest.raises(InvariantError, match="worker 3 over-allocated"):
        pool.start_many([(1, 3)], lambda g: None, COMMUNICATION)


def test_preemption_needs_the_pool_to_follow_running_tasks():
    rt, pool, _rec = make_pool([5.0, 5.0])
    pool.start_many([(0, 0)], lambda g: None, COMMUNICATION)
    with pytest.raises(InvariantError, match="allow_preemption"):
        pool.preempt(0, 0)
    with pytest.raises(InvariantError, match="allow_preemption"):
        pool.is_running(0)
    with pytest.raises(InvariantError, match="before the first task"):
        pool.allow_preemption()


def test_a_preempted_task_leaves_its_group_and_reports_nothing():
    rt, pool, rec = make_pool([5.0, 5.0])
    pool.allow_preemption()
    ended: list = []
    pool.start_many([(0, 0), (1, 1)], lambda g: ended.append(list(g)), COMMUNICATION)
    assert pool.is_running(0) and pool.is_running(1)
    pool.preempt(0, 0)
    assert not pool.is_running(0) and pool.running[0] == -1
    with pytest.raises(InvariantError, match="not running"):
        pool.preempt(0, 0)
    rt.kernel.run()
    assert ended == [[(1, 1)]]
    assert rec.counters.get("preemptions") == 1
