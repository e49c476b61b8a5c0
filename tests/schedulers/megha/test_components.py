"""Megha's GM and LM driven one message at a time through a fake Runtime (no kernel, no SimRuntime).

Each test builds a component on :class:`FakeRuntime` — the Runtime protocol
(``now``, ``send``, ``call_later``, ``cancel``, ``rng``) plus ``register`` and
nothing else — hands it messages by calling its handlers directly
(``component.handlers()[type(msg)](msg)``) and checks its outputs: the exact
messages it sent (``FakeRuntime.sent``), the timers it set
(``FakeRuntime.timers``, fired by the test) and what it told its observer
(:class:`FakeObserver`). No component here can see a simulator clock, a
network model, a Recorder or the simulated WorkerPool.

The other families' components are tested the same way in ``tests/schedulers/test_components.py``.

Construction note (a finding about the sans-IO boundary, see the report):

* Megha's GM and LM are built from a :class:`MeghaShared` alone — runtime,
  layout, cluster, task lookup, observer — with no simulator object at all.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlab.metrics.recorder import COMMUNICATION, FRAMEWORK_QUEUING, PROCESSING
from schedlab.schedulers.megha.gm import GlobalMaster
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.messages import LaunchRejected, LaunchRequest, StateUpdate
from schedlab.workers.protocol import POOL_ADDRESS, LaunchBatch, TasksFinished
from tests.schedulers.helpers import deliver
from tests.schedulers.megha.helpers import megha

# -- Megha ------------------------------------------------------------------------------------------
#
# 2 LMs x 2 GMs over 8 workers: partition p = lm * 2 + gm, LM 0 holds workers 0-3 (p0 = {0, 1},
# p1 = {2, 3}), LM 1 holds 4-7 (p2 = {4, 5}, p3 = {6, 7}). Inside a partition the most preferred
# worker (fewest constraints, then lowest id) has the highest bit: in p0, pos 1 = worker 0 and
# pos 0 = worker 1. GM 0's internal partitions are p0 and p2.

ONE_CONSTRAINED = [0, 0, 0, 0b1, 0, 0, 0, 0]  # worker 3 (p1, pos 0) alone has constraint 0


def test_layout_positions_used_below():
    _rt, _obs, _tasks, layout, _sh = megha(ONE_CONSTRAINED)
    assert layout.order == [[1, 0], [3, 2], [5, 4], [7, 6]]
    assert layout.owner == [0, 1, 0, 1] and layout.lm_of == [0, 0, 1, 1]
    assert layout.eligible(0b1) == (0, 0b01, 0, 0)


def test_gm_one_request_per_lm_internal_partitions_first_round_robin():
    rt, obs, tasks, _layout, shared = megha([0] * 8)
    job = tasks.add_job(0.0, [5.0] * 5)
    gm = GlobalMaster(0, shared, rt.rng("x"))
    assert rt.components == {("gm", 0): gm}
    rt.t = 0.25
    gm.submit(job.tids)
    # internal p0, p2, p0, p2 (most preferred worker first), then a repartition to GM 1's p1
    assert rt.take() == [
        (("lm", 0), LaunchRequest(0, [(0, 0, 1), (2, 0, 0), (4, 1, 1)])),
        (("lm", 1), LaunchRequest(0, [(1, 2, 1), (3, 2, 0)])),
    ]
    assert obs.marks == [(t, 0.25, FRAMEWORK_QUEUING) for t in (0, 2, 4, 1, 3)]
    assert gm.counters() == {"requests": 5, "repartition_requests": 1, "rejected_requests": 0}
    assert rt.timers == []  # no processing cost: nothing deferred
    # the round-robin position carries over to the next arrivals: p1 was just used, p3 is next
    obs.marks.clear()
    job2 = tasks.add_job(0.5, [1.0])
    rt.t = 0.5
    gm.submit(job2.tids)
    assert rt.take() == [(("lm", 1), LaunchRequest(0, [(5, 3, 1)]))]
    assert obs.marks == [(5, 0.5, FRAMEWORK_QUEUING)]


def test_gm_queues_a_task_no_free_worker_can_run_until_a_state_update_frees_one():
    rt, obs, tasks, _layout, shared = megha(ONE_CONSTRAINED)
    tasks.add_job(0.0, [1.0], masks=[0b1])
    gm = GlobalMaster(0, shared, rt.rng("x"))
    rt.t = 1.0
    deliver(gm, StateUpdate(0, False, bits={1: (0, 0b11)}))  # LM 0: workers 2 and 3 busy
    assert gm.avail[1] == 0 and rt.take() == []
    gm.submit([0])
    assert rt.take() == [] and obs.marks == [] and gm.waiting_count() == 1
    rt.t = 2.0
    deliver(gm, StateUpdate(0, False, bits={1: (0b10, 0)}))  # worker 2 free: it lacks constraint 0
    assert rt.take() == [] and gm.waiting_count() == 1
    rt.t = 3.0
    deliver(gm, StateUpdate(0, False, bits={1: (0b01, 0)}))  # worker 3 free
    assert rt.take() == [(("lm", 0), LaunchRequest(0, [(0, 1, 0)]))]
    assert obs.marks == [(0, 3.0, FRAMEWORK_QUEUING)]
    assert gm.waiting_count() == 0 and gm.repartition_requests == 1
    assert gm.avail[1] == 0b10 and gm.reserved[1] == 0b01


def test_gm_dispatches_a_queued_task_when_its_own_task_frees_a_suitable_worker():
    rt, obs, tasks, _layout, shared = megha(ONE_CONSTRAINED)
    tasks.add_job(0.0, [1.0, 1.0, 1.0], masks=[0, 0b1, 0b1])
    gm = GlobalMaster(0, shared, rt.rng("x"))
    rt.t = 0.5
    gm.submit([0, 1, 2])
    # task 1 takes worker 3, the only one with constraint 0; task 2 waits
    assert rt.take() == [(("lm", 0), LaunchRequest(0, [(0, 0, 1), (1, 1, 0)]))]
    assert gm.waiting_count() == 1
    obs.marks.clear()
    rt.t = 2.0
    deliver(gm, TasksFinished([(0, 0)]))  # worker 0 is free, but cannot run task 2
    assert obs.groups_reported == [([(0, 0)], 2.0)]
    assert rt.take() == [] and gm.waiting_count() == 1
    rt.t = 3.0
    deliver(gm, TasksFinished([(1, 3)]))
    assert obs.groups_reported[-1] == ([(1, 3)], 3.0)
    assert rt.take() == [(("lm", 0), LaunchRequest(0, [(2, 1, 0)]))]
    assert obs.marks == [(2, 3.0, FRAMEWORK_QUEUING)] and gm.waiting_count() == 0


def test_gm_folds_a_rejection_and_retries_elsewhere():
    rt, obs, tasks, _layout, shared = megha([0] * 8)
    tasks.add_job(0.0, [1.0])
    gm = GlobalMaster(0, shared, rt.rng("x"))
    rt.t = 1.0
    gm.submit([0])
    assert rt.take() == [(("lm", 0), LaunchRequest(0, [(0, 0, 1)]))]
    obs.marks.clear()
    rt.t = 1.5
    # LM 0: both workers of p0 are busy (another GM got there first)
    deliver(gm, LaunchRejected(0, [(0, 0, 1)], StateUpdate(0, False, bits={0: (0, 0b11)})))
    assert gm.avail[0] == 0 and gm.reserved[0] == 0
    # the next internal partition in round-robin order: p2 on LM 1
    assert rt.take() == [(("lm", 1), LaunchRequest(0, [(0, 2, 1)]))]
    assert obs.marks == [(0, 1.5, COMMUNICATION), (0, 1.5, FRAMEWORK_QUEUING)]
    assert gm.rejections == 1 and gm.reserved[2] == 0b10


def test_gm_rejection_with_nowhere_else_to_go_waits_for_the_next_update():
    rt, obs, tasks, _layout, shared = megha(ONE_CONSTRAINED)
    tasks.add_job(0.0, [1.0], masks=[0b1])
    gm = GlobalMaster(0, shared, rt.rng("x"))
    gm.submit([0])
    assert rt.take() == [(("lm", 0), LaunchRequest(0, [(0, 1, 0)]))]
    deliver(gm, LaunchRejected(0, [(0, 1, 0)], StateUpdate(0, False, bits={1: (0, 0b01)})))
    assert rt.take() == [] and gm.waiting_count() == 1
    rt.t = 4.0
    deliver(gm, StateUpdate(0, False, bits={1: (0b01, 0)}))
    assert rt.take() == [(("lm", 0), LaunchRequest(0, [(0, 1, 0)]))]


def test_gm_processing_cost_defers_its_messages_to_a_timer_and_queues_inputs_meanwhile():
    rt, obs, tasks, _layout, shared = megha([0] * 8, gm_match_cost=0.25)
    tasks.add_job(0.0, [1.0] * 3)
    gm = GlobalMaster(0, shared, rt.rng("x"))
    rt.t = 1.0
    gm.submit([0, 1])
    assert rt.take() == [] and len(rt.timers) == 1 and rt.timers[0][0] == 1.5
    assert obs.marks == [(0, 1.0, FRAMEWORK_QUEUING), (1, 1.0, FRAMEWORK_QUEUING)]
    rt.t = 1.25
    gm.submit([2])  # the GM is busy until 1.5: this waits
    assert len(rt.timers) == 1 and obs.marks[2:] == []
    rt.fire_next()
    assert rt.t == 1.5
    assert rt.take() == [
        (("lm", 0), LaunchRequest(0, [(0, 0, 1)])),
        (("lm", 1), LaunchRequest(0, [(1, 2, 1)])),
    ]
    # processing until the requests left; task 2's handling starts now, after its wait
    assert obs.marks[2:] == [
        (0, 1.5, PROCESSING),
        (1, 1.5, PROCESSING),
        (2, 1.5, FRAMEWORK_QUEUING),
    ]
    rt.fire_next()
    assert rt.t == 1.75
    assert rt.take() == [(("lm", 0), LaunchRequest(0, [(2, 0, 0)]))]
    assert obs.marks[5:] == [(2, 1.75, PROCESSING)]
    assert rt.timers == []


def test_lm_accepts_a_valid_request_with_one_launch_batch():
    rt, obs, tasks, _layout, shared = megha(ONE_CONSTRAINED)
    tasks.add_job(0.0, [1.0, 1.0], masks=[0, 0b1])
    lm = LocalMaster(0, shared)
    assert rt.components == {("lm", 0): lm}
    # task 0 on worker 0 (GM 0's p0), task 1 on worker 3 (GM 1's p1: a repartition)
    deliver(lm, LaunchRequest(0, [(0, 0, 1), (1, 1, 0)]))
    assert rt.take() == [(POOL_ADDRESS, LaunchBatch([(0, 0), (1, 3)], (("lm", 0), ("gm", 0))))]
    assert lm.avail == {0: 0b01, 1: 0b10}
    assert lm.launched == 2 and lm.repartitions == 1 and lm.inconsistencies == 0
    assert obs.marks == [] and rt.timers == []


def test_lm_rejects_a_busy_worker_with_its_state_for_that_gm():
    rt, obs, tasks, _layout, shared = megha([0] * 8)
    tasks.add_job(0.0, [1.0, 1.0, 1.0])
    lm = LocalMaster(0, shared)
    deliver(lm, LaunchRequest(0, [(0, 0, 1)]))  # GM 0 takes worker 0
    rt.take()
    # GM 1 races for worker 0, and also asks for worker 2 (free)
    deliver(lm, LaunchRequest(1, [(1, 0, 1), (2, 1, 1)]))
    assert rt.take() == [
        (POOL_ADDRESS, LaunchBatch([(2, 2)], (("lm", 0), ("gm", 1)))),
        # p0: worker 0 (pos 1) busy; GM 1's own launch on p1 is left out of its update
        (("gm", 1), LaunchRejected(0, [(1, 0, 1)], StateUpdate(0, False, bits={0: (0, 0b10)}))),
    ]
    assert lm.inconsistencies == 1
    assert obs.inconsistencies == [(1, rt.now(), 1)]  # the series: GM 1's request, now


def test_lm_rejects_a_worker_lacking_the_tasks_constraints():
    rt, _obs, tasks, _layout, shared = megha(ONE_CONSTRAINED)
    tasks.add_job(0.0, [1.0], masks=[0b1])
    lm = LocalMaster(0, shared)
    deliver(lm, LaunchRequest(0, [(0, 1, 1)]))  # worker 2 is free but lacks constraint 0
    assert rt.take() == [
        (("gm", 0), LaunchRejected(0, [(0, 1, 1)], StateUpdate(0, False, bits={1: (0b10, 0)}))),
    ]
    assert lm.avail == {0: 0b11, 1: 0b11} and lm.running == {}


def test_lm_heartbeat_sends_each_gm_only_the_other_gms_changes():
    rt, _obs, tasks, _layout, shared = megha([0] * 8)
    tasks.add_job(0.0, [1.0, 1.0, 1.0])
    lm = LocalMaster(0, shared)
    deliver(lm, LaunchRequest(0, [(0, 0, 1)]))  # GM 0: worker 0
    deliver(lm, LaunchRequest(1, [(1, 1, 1)]))  # GM 1: worker 2
    assert [m for _d, m in rt.take()] == [
        LaunchBatch([(0, 0)], (("lm", 0), ("gm", 0))),
        LaunchBatch([(1, 2)], (("lm", 0), ("gm", 1))),
    ]
    lm.heartbeat()
    assert rt.take() == [
        (("gm", 0), StateUpdate(0, False, bits={1: (0, 0b10)})),  # GM 1's launch only
        (("gm", 1), StateUpdate(0, False, bits={0: (0, 0b10)})),  # GM 0's launch only
    ]
    lm.heartbeat()
    assert rt.take() == []  # deltas: nothing new
    deliver(lm, TasksFinished([(0, 0)]))
    assert rt.take() == []
    lm.heartbeat()
    assert rt.take() == [(("gm", 1), StateUpdate(0, False, bits={0: (0b10, 0)}))]
    assert lm.updates_sent == 3
    # worker 0 is free again: a request for it is accepted
    deliver(lm, LaunchRequest(1, [(2, 0, 1)]))
    assert rt.take() == [(POOL_ADDRESS, LaunchBatch([(2, 0)], (("lm", 0), ("gm", 1))))]


def test_lm_multi_resource_packs_two_tasks_and_rejects_a_third_that_does_not_fit():
    rt, _obs, tasks, _layout, shared = megha([0, 0], gms=1, lms=1, capacity=(4.0, 4096.0))
    assert not shared.slot_mode
    tasks.add_job(0.0, [1.0] * 3, requests=[(2.0, 1024.0), (2.0, 1024.0), (1.0, 512.0)])
    lm = LocalMaster(0, shared)
    deliver(lm, LaunchRequest(0, [(0, 0, 1), (1, 0, 1), (2, 0, 1)]))  # all on worker 0 (4 cores)
    assert rt.take() == [
        (POOL_ADDRESS, LaunchBatch([(0, 0), (1, 0)], (("lm", 0), ("gm", 0)))),
        # the worker's free vector plus what GM 0's own tasks hold there (the GM subtracts its holdings)
        (
            ("gm", 0),
            LaunchRejected(0, [(2, 0, 1)], StateUpdate(0, False, free={0: {1: (4.0, 4096.0)}})),
        ),
    ]
    assert lm.state.free[0][1] == (0.0, 2048.0) and lm.avail[0] == 0b01
    deliver(lm, LaunchRequest(0, [(2, 0, 0)]))  # worker 1 has room
    assert rt.take() == [(POOL_ADDRESS, LaunchBatch([(2, 1)], (("lm", 0), ("gm", 0))))]
    deliver(lm, TasksFinished([(0, 0)]))
    assert lm.state.free[0][0] == (3.0, 3584.0)  # worker 1 runs task 2 and still has room
    assert lm.state.free[0][1] == (2.0, 3072.0) and lm.avail[0] == 0b11


@pytest.mark.parametrize("worker_choice", ["random", "min-constraints"])
def test_gm_worker_choice_is_deterministic_under_the_fakes_named_rng(worker_choice):
    def run():
        rt, _obs, tasks, _layout, shared = megha([0] * 8, worker_choice=worker_choice)
        tasks.add_job(0.0, [1.0] * 6)
        gm = GlobalMaster(0, shared, rt.rng("x"))
        gm.submit(range(6))
        return rt.take()

    assert run() == run()


def test_fair_sharing_on_a_gm_that_knows_only_its_own_tasks():
    # A real GM's task store holds its own users' tasks only; other users' running tasks are known
    # from the LMs' holdings reports (user, amount). A victim candidate from the last round's
    # snapshot may have ended since: its amount must still be known, and the preemption is asked
    # (the LM, holding the truth, refuses it).
    from schedlab.schedulers.megha.fairness import FairSharing
    from schedlab.schedulers.megha.messages import PreemptRequest
    from schedlab.services.tasks import TaskStore

    rt, _obs, _tasks, layout, shared = megha([0, 0], gms=2, lms=1, capacity=(2.0, 4096.0), shares=[0.5, 0.5])
    store = TaskStore()
    store.add_job(1, 0.0, [200], [1.0], [0], [(1.0, 256.0)], user=1)
    shared.tasks = store
    gm = GlobalMaster(1, shared, rt.rng("gm1"))
    fair = FairSharing([0.5, 0.5], [0, 1], layout, shared.cluster, store, [gm])
    # user 0 (GM 0's) fills both workers: 4 tasks GM 1 never saw
    for k, (p, pos) in enumerate([(0, 0), (0, 0), (1, 0), (1, 0)]):
        fair.record_launch(100 + k, p, pos, 0, [1.0, 256.0])
    fair.publish()
    fair.record_vacate(103)  # ended after the round: GM 1 still believes it runs
    for p in range(2):
        gm.view.free[p][0] = (0.0, 3584.0)
    assert fair.try_preempt(gm, 200)
    (dst, msg), = rt.take()
    assert isinstance(msg, PreemptRequest) and msg.victim == 103 and msg.tid == 200
    assert fair.pending[1] == [-0.25, 0.25]  # GM 1 counts its pending preemption in its estimates


def test_gm_requeues_a_lost_task_and_matches_it_again():
    # GM 0 placed task 0 on worker 0 (p0, pos 1); the LM reports the worker failed: the GM believes
    # it busy and sends the task elsewhere at once (its view has room)
    from schedlab.schedulers.megha.messages import TaskLost

    rt, _obs, tasks, _layout, shared = megha([0] * 8)
    tasks.add_job(0.0, [5.0], None, None, 5.0)
    gm = GlobalMaster(0, shared, rt.rng("gm0"))
    gm.submit([0])
    (dst, req), = rt.take()
    (tid, p, pos), = req.items
    gm.handlers()[TaskLost](TaskLost(tid, p, pos))
    (dst2, again), = rt.take()
    assert isinstance(again, LaunchRequest) and again.items[0][0] == 0 and again.items[0][1:] != (p, pos)
    assert not gm.avail[p] >> pos & 1 and gm.counters()["tasks_lost"] == 1


def test_lm_workers_down_relaunches_their_tasks_and_up_brings_them_back_empty():
    from schedlab.schedulers.megha.messages import TaskLost

    rt, _obs, tasks, layout, shared = megha([0] * 8)
    for _ in range(2):
        tasks.add_job(0.0, [5.0], None, None, 5.0)
    lm = LocalMaster(0, shared)
    lm.handlers()[LaunchRequest](LaunchRequest(1, [(0, 0, 1), (1, 1, 0)]))
    rt.take()
    lost = lm.workers_down([(0, 1)])
    assert lost == [0] and 0 not in lm.running and 1 in lm.running
    (dst, msg), = rt.take()
    assert dst == ("gm", 1) and msg == TaskLost(0, 0, 1)
    assert not lm.avail[0] >> 1 & 1  # down: not offered to anyone
    lm.handlers()[LaunchRequest](LaunchRequest(0, [(5, 0, 1)]))
    assert isinstance(rt.take()[0][1], LaunchRejected)
    lm.workers_up([(0, 1)])
    assert lm.avail[0] >> 1 & 1
    lm.heartbeat()
    sent = rt.take()
    assert any(isinstance(m, StateUpdate) and 0 in m.bits and m.bits[0][0] >> 1 & 1 for _d, m in sent)


def test_gm_matches_waiting_tasks_to_a_freed_worker_by_what_is_left_after_each_match():
    # one 5-core worker; tasks of 2, 2, 2 and 1 cores wait; an update frees the worker: after two 2-core
    # tasks 1 core is left, so the third waits and the 1-core task behind it goes (each match replaces the
    # worker's free vector in the view, and the next match must read the new one)
    rt, _obs, tasks, _layout, shared = megha([0], gms=1, lms=1, capacity=(5.0, 4096.0))
    tasks.add_job(0.0, [5.0] * 4, requests=[(2.0, 512.0)] * 3 + [(1.0, 512.0)])
    gm = GlobalMaster(0, shared, rt.rng("gm0"))
    deliver(gm, StateUpdate(0, False, free={0: {0: (0.0, 0.0)}}))
    gm.submit([0, 1, 2, 3])
    assert rt.take() == [] and gm.waiting_count() == 4
    deliver(gm, StateUpdate(0, False, free={0: {0: (5.0, 4096.0)}}))
    ((dst, req),) = rt.take()
    assert dst == ("lm", 0) and [tid for tid, _p, _pos in req.items] == [0, 1, 3]
    assert gm.waiting_count() == 1 and gm.view.free[0][0] == (0.0, 2560.0)


@given(st.lists(st.tuples(st.sampled_from(["launch", "vacate", "round"]), st.integers(0, 11), st.integers(0, 1), st.integers(0, 1)),
                max_size=80))
def test_fair_sharing_rounds_publish_exactly_the_truth(steps):
    # A round brings only the tasks launched or vacated since the last one up to date: what the GMs
    # read afterwards is what a fresh copy of the truth would be (tasks relaunched elsewhere, vacated
    # twice, launched and vacated within one round)
    from schedlab.schedulers.megha.fairness import FairSharing

    _rt, _obs, _tasks, layout, shared = megha([0] * 4, gms=2, lms=1, shares=[0.5, 0.5])
    fair = FairSharing([0.5, 0.5], [0, 1], layout, shared.cluster, shared.tasks, [])
    user_of = {}
    for op, tid, p, pos in steps:
        if op == "launch" and tid not in fair.info:
            user = user_of.setdefault(tid, tid % 2)
            fair.record_launch(tid, p, pos, user, [1.0])
        elif op == "vacate":
            fair.record_vacate(tid)
        elif op == "round":
            fair.publish()
            assert fair.published_running == [dict(r) for r in fair.running]
            assert fair.published_info == fair.info
            assert fair.published_used == fair.used
