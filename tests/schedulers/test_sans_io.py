"""The sans-IO boundary: every scheduler's components run on a Runtime that is not the simulator's.

:class:`FakeRuntime` implements only the Runtime protocol (``now``, ``send``,
``call_later``, ``cancel``, ``rng``) plus ``register``, with a plain message
queue and a timer list the test pumps by hand — no kernel, no SimRuntime, no
network model. :class:`FakeWorkers` plays the workers (the worker protocol and
the LocalWorkers interface). If a component reached into simulator-only state,
it would fail here. The Megha GM and LM are also driven message by message,
with the exact messages they must send.
"""

from __future__ import annotations

import pytest

from schedlab.cluster import Cluster
from schedlab.metrics.recorder import COMMUNICATION, FRAMEWORK_QUEUING, Recorder
from schedlab.schedulers import registry
from schedlab.schedulers.base import SchedulerContext
from schedlab.schedulers.megha import MeghaParams, MeghaShared
from schedlab.schedulers.megha.gm import GlobalMaster
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.messages import LaunchRejected, LaunchRequest, StateUpdate
from schedlab.schedulers.megha.partitions import Layout, megha_topology
from schedlab.sim.runtime import Component
from schedlab.testing import FakeRuntime
from schedlab.workers.protocol import (
    POOL_ADDRESS,
    LaunchBatch,
    LaunchTask,
    TaskFinished,
    TasksFinished,
)
from schedlab.workload.model import TaskTable


class FakeWorkers(Component):
    """Every worker: runs a task for its duration, reports it; refuses over-allocation."""

    def __init__(self, rt: FakeRuntime, tasks: TaskTable, rec: Recorder) -> None:
        super().__init__(POOL_ADDRESS, rt)
        self.tasks, self.rec = tasks, rec
        self.running: dict[int, int] = {}  # worker -> tid
        self.timers: dict[int, list] = {}
        self.busy_workers = 0

    def handlers(self):
        return {LaunchTask: lambda m: self._one(m.tid, m.worker, lambda: self.rt.send(m.reply_to, TaskFinished(m.tid, m.worker))),
                LaunchBatch: self._batch}

    def _batch(self, m: LaunchBatch) -> None:
        for tid, w in m.items:
            self._one(tid, w, lambda tid=tid, w=w: [self.rt.send(a, TasksFinished([(tid, w)])) for a in m.reply_to])

    def _one(self, tid: int, w: int, report) -> None:
        assert w not in self.running, f"worker {w} over-allocated"
        self.running[w] = tid
        self.busy_workers += 1
        self.rec.task_started(tid, self.rt.now(), w, COMMUNICATION)

        def done() -> None:
            del self.running[w]
            del self.timers[tid]
            self.busy_workers -= 1
            self.rec.task_finished(tid, self.rt.now())
            report()

        self.timers[tid] = self.rt.call_later(self.tasks.duration[tid], done)

    # LocalWorkers, for node monitors that start the tasks they reserved
    def start_many(self, placements, on_finish, component) -> None:
        for tid, w in placements:
            self._one(tid, w, lambda tid=tid, w=w: on_finish([(tid, w)]))

    def preempt(self, tid: int, worker: int) -> None:
        self.rt.cancel(self.timers.pop(tid))
        del self.running[worker]
        self.busy_workers -= 1
        self.rec.task_preempted(tid, self.rt.now())

    def is_running(self, tid: int) -> bool:
        return tid in self.timers


def world(masks, jobs):
    rt = FakeRuntime()
    tasks, rec = TaskTable(), Recorder()
    for arrival, durations in jobs:
        job = tasks.add_job(arrival, durations, [0] * len(durations))
        rec.add_job(job.jid, arrival, durations)
    cl = Cluster.slots(masks)
    pool = FakeWorkers(rt, tasks, rec)
    return rt, tasks, rec, cl, pool


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("megha", {"gms": 2, "lms": 2}),
        ("sparrow", {"schedulers": 2}),
        ("eagle", {}),
        ("hawk", {}),
        ("pigeon", {"distributors": 2, "masters": 2}),
        ("pigeonc", {"distributors": 2, "masters": 2}),
        ("centralized", {}),
    ],
)
def test_every_scheduler_runs_its_jobs_on_a_runtime_that_is_not_the_simulators(name, params):
    jobs = [(0.0, [2.0, 1.0, 3.0]), (0.5, [1.0] * 6), (1.0, [4.0, 0.5])]
    rt, tasks, rec, cl, pool = world([0] * 8, jobs)
    ctx = SchedulerContext(rt, cl, tasks, rec, pool)  # type: ignore[arg-type]
    cls = registry.get(name)
    sched = cls(ctx, registry.parse_params(cls, params))
    for job in tasks.jobs:
        rt.call_later(job.arrival, sched.submit, job)
    rt.pump()
    assert rec.reported == len(tasks), f"{name}: {rec.reported} of {len(tasks)} completions learned"
    assert rec.incomplete_jobs() == 0 and not pool.running
    assert all(rec.start_of(t) == rec.start_of(t) for t in range(len(tasks)))


# -- Megha's GM and LM, message by message -------------------------------------------------------------
def megha_parts(masks, gms=2, lms=2, multi=None, **params):
    rt = FakeRuntime()
    cl = Cluster.slots(masks) if multi is None else Cluster.multi_resource(masks, multi)
    tasks = TaskTable()
    obs = Recorder()
    layout = Layout(cl, megha_topology(cl, gms, lms))
    shared = MeghaShared(rt, layout, cl, tasks, obs, None, MeghaParams(worker_choice="min-constraints", **params), cl.slot_mode)
    return rt, tasks, obs, layout, shared


def test_gm_sends_one_request_per_lm_internal_partitions_first_and_marks_framework_queuing():
    # 2 LMs x 2 GMs, 2 workers per partition: GM 0 owns w0,w1 (LM 0, partition 0) and w4,w5 (LM 1, partition 2)
    rt, tasks, obs, layout, shared = megha_parts([0] * 8)
    job = tasks.add_job(0.0, [5.0] * 5)
    obs.add_job(0, 0.0, [5.0] * 5)
    gm = GlobalMaster(0, shared, rt.rng("gm"))
    rt.t = 0.25
    gm.submit(job.tids)
    assert [dst for dst, _m in rt.sent] == [("lm", 0), ("lm", 1)]
    items = {dst: m.items for dst, m in rt.sent}
    assert all(isinstance(m, LaunchRequest) and m.gm == 0 for _d, m in rt.sent)
    # internal partitions round-robin (0, 2, 0, 2), then one repartition to GM 1's partition in LM 0
    assert [p for _t, p, _pos in items[("lm", 0)]] == [0, 0, 1] and [p for _t, p, _pos in items[("lm", 1)]] == [2, 2]
    assert gm.repartition_requests == 1
    assert [obs.component(FRAMEWORK_QUEUING)[t] for t in job.tids] == [0.25] * 5


def gm_with_a_queue(num_tasks):
    """GM 0 over four one-worker partitions (2 GMs x 2 LMs), a job of ``num_tasks`` 1-s tasks submitted at 0."""
    rt, tasks, obs, layout, shared = megha_parts([0] * 4)
    job = tasks.add_job(0.0, [1.0] * num_tasks)
    obs.add_job(0, 0.0, [1.0] * num_tasks)
    gm = GlobalMaster(0, shared, rt.rng("gm"))
    gm.submit(job.tids)
    return rt, obs, layout, gm


def finish_first_placed(rt, obs, layout, gm):
    """The first task the GM sent runs [0.1, 1.1) and its end reaches the GM at 1.2; returns its (tid, p, pos)."""
    tid, p, pos = rt.sent[0][1].items[0]
    worker = layout.order[p][pos]
    rt.sent.clear()
    obs.task_started(tid, 0.1, worker)
    obs.task_finished(tid, 1.1)
    rt.t = 1.2
    gm.handlers()[TasksFinished](TasksFinished([(tid, worker)]))
    return tid, p, pos


def test_gm_queues_what_does_not_fit_and_dispatches_it_when_its_own_task_finishes():
    rt, obs, layout, gm = gm_with_a_queue(5)
    assert sum(len(m.items) for _d, m in rt.sent) == 4 and gm.waiting_count() == 1
    first_tid, p, pos = finish_first_placed(rt, obs, layout, gm)
    assert obs.reported == 1 and obs.is_reported(first_tid)
    assert [(dst, m.items) for dst, m in rt.sent] == [(("lm", layout.lm_of[p]), [(4, p, pos)])]


def test_gm_folds_a_rejection_and_retries_elsewhere():
    rt, tasks, obs, layout, shared = megha_parts([0] * 8)
    job = tasks.add_job(0.0, [1.0])
    obs.add_job(0, 0.0, [1.0])
    gm = GlobalMaster(0, shared, rt.rng("gm"))
    gm.submit(job.tids)
    (_dst, req), = rt.sent
    tid, p, pos = req.items[0]
    rt.sent.clear()
    # the LM says: that worker is busy (its whole partition is, in fact)
    busy = layout.full[p]
    gm.handlers()[LaunchRejected](LaunchRejected(0, [(tid, p, pos)], StateUpdate(0, False, bits={p: (0, busy)})))
    (_dst, retry), = rt.sent
    assert retry.items[0][0] == tid and retry.items[0][1] != p and gm.rejections == 1


def test_lm_validates_launches_rejects_with_its_state_and_heartbeats_others_only():
    rt, tasks, obs, layout, shared = megha_parts([0, 0, 0, 0, 0b1, 0, 0, 0])
    tasks.add_job(0.0, [1.0, 1.0, 1.0], masks=[0, 0, 0b1])
    lm = LocalMaster(0, shared)
    lm.handlers()[LaunchRequest](LaunchRequest(0, [(0, 0, 1)]))
    (dst, batch), = rt.sent
    assert dst == POOL_ADDRESS and isinstance(batch, LaunchBatch)
    assert batch.items == [(0, layout.order[0][1])] and batch.reply_to == (("lm", 0), ("gm", 0))
    rt.sent.clear()
    # the same worker again (GM 1 racing), and a task needing constraint 0 on a worker without it
    lm.handlers()[LaunchRequest](LaunchRequest(1, [(1, 0, 1), (2, 1, 0)]))
    (dst, rej), = rt.sent
    assert dst == ("gm", 1) and isinstance(rej, LaunchRejected) and [i[0] for i in rej.items] == [1, 2]
    free, busy = rej.update.bits[0]
    assert busy >> 1 & 1 and not free >> 1 & 1 and lm.inconsistencies == 2
    rt.sent.clear()
    lm.heartbeat()
    # GM 0 launched there itself: only GM 1 hears about it (and GM 1 was just told in the rejection)
    assert [dst for dst, _m in rt.sent] == []
    lm.handlers()[TasksFinished](TasksFinished([(0, layout.order[0][1])]))
    lm.heartbeat()
    assert [dst for dst, _m in rt.sent] == [("gm", 1)]
    assert rt.sent[0][1].bits[0][0] >> 1 & 1  # free again


def test_lm_multi_resource_packs_and_rejects_what_does_not_fit():
    rt, tasks, obs, layout, shared = megha_parts([0] * 4, gms=1, lms=1, multi=(4.0, 4096.0))
    tasks.add_job(0.0, [1.0] * 3, requests=[(2.0, 100.0), (2.0, 100.0), (1.0, 100.0)])
    lm = LocalMaster(0, shared)
    lm.handlers()[LaunchRequest](LaunchRequest(0, [(0, 0, 0), (1, 0, 0), (2, 0, 0)]))
    kinds = [type(m).__name__ for _d, m in rt.sent]
    assert kinds == ["LaunchBatch", "LaunchRejected"]
    assert [t for t, _w in rt.sent[0][1].items] == [0, 1] and rt.sent[1][1].items == [(2, 0, 0)]


def test_gm_withdraws_a_waiting_copy_of_a_task_whose_first_run_ended():
    # a real GM requests again a task it believed lost; when the first run's end arrives, the copy must not run
    rt, obs, layout, gm = gm_with_a_queue(6)
    placed = [t for _d, m in rt.sent for t, _p, _pos in m.items]
    waiting = list(gm.waiting)
    assert len(placed) == 4 and len(waiting) == 2
    assert gm.withdraw([waiting[0], placed[0]]) == 1  # a placed task is not waiting: nothing to take
    assert list(gm.waiting) == waiting[1:] and gm.withdraw([waiting[0]]) == 0
    _tid, p, pos = finish_first_placed(rt, obs, layout, gm)
    assert [m.items for _d, m in rt.sent] == [[(waiting[1], p, pos)]]  # the freed worker goes to the other one
