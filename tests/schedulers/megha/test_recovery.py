"""A restarted GM's view, rebuilt from the LMs' ``recovery_state``, is the view of a GM that never died.

Property test over random runs of two GMs and two LMs on the fake Runtime (slot and multi-resource
mode): tasks submitted to either GM, launched, finished in random order, heartbeats in between. Once
the messages settle and heartbeat rounds carry no more news, a fresh GM 0 that knows nothing
(``view_unknown``) and folds in each LM's ``recovery_state(0)`` (``recover``) must hold exactly the
surviving GM 0's view: the same available workers, the same workers held by its own tasks, and in
multi-resource mode the same free vectors and own holdings.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.megha import MeghaShared
from schedlab.schedulers.megha.gm import GlobalMaster
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.workers.protocol import POOL_ADDRESS, LaunchBatch, TasksFinished
from tests.schedulers.helpers import FakeRuntime
from tests.schedulers.megha.helpers import megha

steps = st.lists(
    st.one_of(
        st.tuples(st.just("submit"), st.integers(0, 1), st.integers(1, 4), st.sampled_from([(1.0, 512.0), (2.0, 1024.0), (3.0, 256.0)])),
        st.tuples(st.just("finish"), st.integers(0, 63)),
        st.tuples(st.just("heartbeat"), st.integers(0, 1)),
    ),
    min_size=1,
    max_size=40,
)


def pump(rt, comps, running) -> None:
    """Deliver every message sent until none is left; launches become running tasks."""
    while rt.sent:
        for dst, msg in rt.take():
            if dst == POOL_ADDRESS:
                assert isinstance(msg, LaunchBatch)
                running.extend((tid, w, msg.reply_to) for tid, w in msg.items)
            else:
                comps[dst].handlers()[type(msg)](msg)


@settings(max_examples=60, deadline=None)
@given(steps=steps, multi=st.booleans())
def test_a_gm_rebuilt_from_the_lms_holds_the_view_of_one_that_never_died(steps, multi):
    rt, _obs, tasks, layout, shared = megha([0, 0, 0, 0b1, 0, 0, 0, 0], capacity=(4.0, 4096.0) if multi else None)
    gms = [GlobalMaster(g, shared, rt.rng(f"gm{g}")) for g in range(2)]
    lms = [LocalMaster(i, shared) for i in range(2)]
    comps = {c.address: c for c in gms + lms}
    running: list = []
    for step in steps:
        if step[0] == "submit":
            _kind, g, n, req = step
            job = tasks.add_job(0.0, [1.0] * n, requests=[req] * n if multi else None)
            gms[g].submit(job.tids)
        elif step[0] == "finish" and running:
            tid, w, reply_to = running.pop(step[1] % len(running))
            for dst in reply_to:
                comps[dst].handlers()[TasksFinished](TasksFinished([(tid, w)]))
        elif step[0] == "heartbeat":
            lms[step[1]].heartbeat()
        pump(rt, comps, running)
    for _round in range(50):  # settle: heartbeat rounds until one carries no news (a round can trigger launches)
        for lm in lms:
            lm.heartbeat()
        if not rt.sent:
            break
        pump(rt, comps, running)
    assert not rt.sent, "the heartbeat rounds did not settle"

    rt2 = FakeRuntime()
    fresh = GlobalMaster(0, MeghaShared(rt2, layout, shared.cluster, tasks, shared.observer, None, shared.params, shared.slot_mode),
                         rt2.rng("fresh"))
    fresh.view_unknown()
    assert not any(fresh.avail)
    for lm in lms:
        fresh.recover(*lm.recovery_state(0))
        fresh.recover(*lm.recovery_state(0))  # an LM asked twice answers twice: the second answer changes nothing
    old = gms[0]
    assert fresh.avail == old.avail
    assert fresh.reserved == old.reserved
    if multi:
        assert fresh.view.free == old.view.free
        assert {k: v for k, v in fresh.view.mine.items() if max(v) > 1e-9} == {k: v for k, v in old.view.mine.items() if max(v) > 1e-9}
    assert rt2.sent == []  # nothing waits at the fresh GM, so the recovery itself requests nothing


def test_a_suspended_lm_gets_no_request_until_it_is_resumed_and_a_failed_request_gives_its_worker_back():
    from schedlab.schedulers.megha.messages import LaunchRequest

    rt, _obs, tasks, _layout, shared = megha([0] * 8)
    gm = GlobalMaster(0, shared, rt.rng("x"))
    gm.suspend_lm(0)
    job = tasks.add_job(0.0, [1.0] * 5)
    gm.submit(job.tids)
    # LM 1 alone: its two partitions (p2 internal, then p3 external), one task waits
    sent = rt.take()
    assert [dst for dst, _m in sent] == [("lm", 1)] and len(sent[0][1].items) == 4
    assert all(p in (2, 3) for _t, p, _pos in sent[0][1].items) and gm.waiting_count() == 1
    # the request never took effect (refused unread): the workers are free again in the view, the
    # tasks are requested again at once — still on LM 1 only, and the waiting task with them
    avail_before = list(gm.avail)
    gm.launch_failed(sent[0][1].items)
    again = rt.take()
    assert [dst for dst, _m in again] == [("lm", 1)] and sorted(again[0][1].items) == sorted(sent[0][1].items)
    assert gm.avail == avail_before and gm.waiting_count() == 1
    # resumed (its state arrived): the waiting task goes to LM 0 as soon as the view gains a worker there
    gm.resume_lm(0)
    job2 = tasks.add_job(0.0, [1.0])
    gm.submit(job2.tids)
    assert rt.take() == [(("lm", 0), LaunchRequest(0, [(job2.tids[0], 0, 1)]))]
