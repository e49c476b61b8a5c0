"""Scheduler components other than Megha's driven one message at a time through a fake Runtime (no kernel, no SimRuntime).

Each test builds a component on :class:`FakeRuntime` — the Runtime protocol
(``now``, ``send``, ``call_later``, ``cancel``, ``rng``) plus ``register`` and
nothing else — hands it messages by calling its handlers directly
(``component.handlers()[type(msg)](msg)``) and checks its outputs: the exact
messages it sent (``FakeRuntime.sent``), the timers it set
(``FakeRuntime.timers``, fired by the test) and what it told its observer
(:class:`FakeObserver`). No component here can see a simulator clock, a
network model, a Recorder or the simulated WorkerPool.

Megha's GM and LM are tested the same way in ``tests/schedulers/megha/test_components.py``.

Construction notes (findings about the sans-IO boundary, see the report):

* Every family here (all but Megha) is built from a :class:`SchedulerContext`, whose fields are
  annotated with simulator classes (``recorder: Recorder``, ``pool:
  WorkerPool``; ``schedlab.schedulers.base`` imports
  ``schedlab.workers.simulated`` for that). The components only use the
  Observer and LocalWorkers methods, so a FakeObserver and a FakePool work
  here, but the typed contract is the simulator's.
* Pigeon's Distributor, Master and Masters cannot be built on their own: they
  take the ``_PigeonBase`` scheduler object (a ``Scheduler`` built from a
  SchedulerContext) and read ``rt``, ``rec``, ``tasks``, ``cluster``, ``fqw``,
  ``cutoff``, ``dist_addr`` … from it. So the tests build the whole
  ``PigeonScheduler``/``PigeonCScheduler`` on the fake and then drive its
  ``Masters`` and ``Distributor`` components by messages.
* The centralized scheduler *is* the Scheduler (``Scheduler`` + ``Component``);
  it is built from a SchedulerContext too.
* Eagle's and Hawk's node monitors are built from a SchedulerContext (they
  read ``cluster``, ``runtime`` and ``pool``) and the hybrid scheduler's
  addresses; no scheduler object is needed.
"""

from __future__ import annotations

from schedlab.cluster import Cluster
from schedlab.metrics.recorder import COMMUNICATION, FRAMEWORK_QUEUING, PROCESSING, WORKER_QUEUING
from schedlab.schedulers.base import SchedulerContext
from schedlab.schedulers.centralized import ADDRESS as CENTRALIZED_ADDRESS
from schedlab.schedulers.centralized import CentralizedParams, CentralizedScheduler
from schedlab.schedulers.eagle import EagleNodeMonitors, EagleParams, LongProbes, ProbesRejected
from schedlab.schedulers.hawk import HawkNodeMonitors, HawkParams, StealReplies, StealRequests
from schedlab.schedulers.pigeon import (
    MASTERS_ADDRESS,
    PigeonCParams,
    PigeonCScheduler,
    PigeonParams,
    PigeonScheduler,
    TaskBatch,
)
from schedlab.schedulers.probing import (
    NODE_MONITORS,
    CancelJobs,
    EligibleSampler,
    GetTasks,
    NodeMonitors,
    Probe,
    Probes,
    ProbeScheduler,
    TaskReplies,
)
from schedlab.sim.runtime import Runtime
from schedlab.workers.protocol import (
    POOL_ADDRESS,
    LaunchBatch,
    LaunchTask,
    TaskFinished,
    TasksFinished,
)
from schedlab.workload.model import TaskTable
from tests.schedulers.helpers import FakeObserver, FakePool, FakeRuntime, deliver


def test_the_fake_is_a_runtime_and_nothing_more():
    rt = FakeRuntime()
    assert isinstance(rt, Runtime)
    assert not hasattr(rt, "kernel") and not hasattr(rt, "network")


# -- contexts for the other families ----------------------------------------------------------------


def context(masks, durations_per_job, masks_per_job=None):
    rt = FakeRuntime()
    obs = FakeObserver()
    pool = FakePool()
    cl = Cluster.slots(masks)
    tasks = TaskTable()
    for i, durations in enumerate(durations_per_job):
        tm = masks_per_job[i] if masks_per_job is not None else None
        tasks.add_job(float(i), durations, tm)
    return rt, obs, pool, SchedulerContext(rt, cl, tasks, obs, pool)  # type: ignore[arg-type]


# -- Sparrow: the probing scheduler and the node monitors -------------------------------------------


def test_sparrow_scheduler_probes_binds_late_cancels_and_learns_completions():
    rt, obs, _pool, ctx = context([0] * 4, [[1.0, 1.0]])
    sched = ProbeScheduler(
        0, ("sparrow", 0), ctx, EligibleSampler([0] * 4), probe_ratio=2.0, rng_name="sparrow:0"
    )
    assert rt.components == {("sparrow", 0): sched}
    rt.t = 1.0
    sched.submit(ctx.tasks.jobs[0])
    ((dst, probes),) = rt.take()
    # batch sampling: d * m = 4 probes on 4 distinct workers, each an entry of job 0, group 0
    assert dst == NODE_MONITORS and isinstance(probes, Probes)
    assert sorted(w for w, _e in probes.items) == [0, 1, 2, 3]
    fields = ("sched", "jid", "gid", "long", "est", "rem", "acc", "comm", "stamp", "tries", "mask")
    assert all([getattr(e, f) for f in fields] == [0, 0, 0, False, 0.0, 0.0, 0.0, 0.0, 1.0, 0, 0] for _w, e in probes.items)
    entry = {w: e for w, e in probes.items}
    # worker 2's probe arrived at 1.25 and asked for a task at 1.5 (as a node monitor would set it)
    entry[2].comm, entry[2].stamp = 0.25, 1.5
    rt.t = 2.0
    deliver(sched, GetTasks([(2, entry[2])]))
    assert rt.take() == [(NODE_MONITORS, TaskReplies([(2, entry[2], 0)]))]
    assert obs.marks == [(0, 1.25, WORKER_QUEUING), (0, 2.0, COMMUNICATION)]
    assert entry[2].stamp == 2.0
    # two more requests: one gets the last task, the other a no-op; the job's probes are cancelled
    rt.t = 3.0
    deliver(sched, GetTasks([(0, entry[0]), (1, entry[1])]))
    assert rt.take() == [
        (NODE_MONITORS, TaskReplies([(0, entry[0], 1), (1, entry[1], -1)])),
        (NODE_MONITORS, CancelJobs([0])),
    ]
    assert sched.counters() == {"probes": 4, "get_task_requests": 3, "noop_replies": 1}
    rt.t = 5.0
    deliver(sched, TasksFinished([(0, 2), (1, 0)]))
    assert obs.groups_reported == [([(0, 2), (1, 0)], 5.0)] and rt.take() == []


def test_sparrow_node_monitors_late_binding_and_cancellation():
    rt, _obs, pool, ctx = context([0] * 3, [[1.0]])
    scheds = [("sparrow", 0), ("sparrow", 1)]
    nm = NodeMonitors(ctx, scheds)
    assert rt.components == {NODE_MONITORS: nm}
    a = Probe(0, 7, 0, False, 0.0, 0.0, 0, 0.5)
    b = Probe(0, 8, 0, False, 0.0, 0.0, 0, 0.5)
    c = Probe(1, 9, 0, False, 0.0, 0.0, 0, 0.5)
    rt.t = 1.0
    deliver(nm, Probes([(0, a), (0, b), (1, c)]))
    # idle workers ask at once, one envelope per scheduler; b queues behind a
    assert rt.take() == [(scheds[0], GetTasks([(0, a)])), (scheds[1], GetTasks([(1, c)]))]
    assert a.comm == 0.5 and a.stamp == 1.0 and list(nm.queues[0]) == [b]
    rt.t = 1.5
    deliver(nm, TaskReplies([(0, a, 70), (1, c, -1)]))
    assert rt.take() == []  # worker 1 got a no-op and has nothing queued: idle
    ((placements, on_finish, component),) = pool.started
    assert placements == [(70, 0)] and component == COMMUNICATION
    deliver(nm, CancelJobs([8]))
    rt.t = 3.0
    on_finish([(70, 0)])
    # the completion goes to task 70's scheduler; b's job was cancelled, so worker 0 goes idle
    assert rt.take() == [(scheds[0], TasksFinished([(70, 0)]))]
    assert nm.counters() == {"probes_cancelled": 1} and list(nm.state) == [0, 0, 0]


# -- Eagle and Hawk node monitors -------------------------------------------------------------------


def test_eagle_node_monitor_sends_a_short_probe_back_from_a_worker_with_long_work():
    rt, _obs, _pool, ctx = context([0] * 2, [[1.0]])
    addrs = [("distributed", 0), "central"]
    nm = EagleNodeMonitors(ctx, addrs, EagleParams())
    long_e = Probe(1, 0, 0, True, 100.0, 100.0, 0, 0.5)
    short_a = Probe(0, 1, 0, False, 1.0, 2.0, 0, 0.5)
    short_b = Probe(0, 1, 0, False, 1.0, 2.0, 0, 0.5)
    rt.t = 1.0
    deliver(nm, LongProbes([(0, long_e)], bitmap=0b01, stamp=0.75))
    assert rt.take() == [("central", GetTasks([(0, long_e)]))]
    rt.t = 1.5
    deliver(nm, Probes([(0, short_a), (1, short_b)]))
    # worker 0 holds long work: short_a goes back with the long-work vector worker 0 last received
    assert rt.take() == [
        (addrs[0], GetTasks([(1, short_b)])),
        (addrs[0], ProbesRejected([(short_a, 0b01, 0.75)])),
    ]
    assert short_a.stamp == 1.5 and short_a.comm == 1.0
    assert list(nm.queues[0]) == [] and nm.rejected == 1


def test_hawk_idle_worker_steals_short_probes_queued_behind_a_long_task():
    rt, _obs, pool, ctx = context([0] * 4, [[1.0]])
    addrs = [("distributed", 0), "central"]
    nm = HawkNodeMonitors(ctx, addrs, HawkParams(), first_general=3)  # workers 0-2: short partition
    long_e = Probe(1, 0, 0, True, 100.0, 100.0, 0, 1.0)
    s1 = Probe(0, 1, 0, False, 1.0, 2.0, 0, 1.0)
    s2 = Probe(0, 1, 0, False, 1.0, 2.0, 0, 1.0)
    s0 = Probe(0, 2, 0, False, 1.0, 1.0, 0, 1.0)
    rt.t = 1.0
    deliver(nm, Probes([(3, long_e), (3, s1), (3, s2), (0, s0)]))
    assert rt.take() == [("central", GetTasks([(3, long_e)])), (addrs[0], GetTasks([(0, s0)]))]
    rt.t = 1.25
    deliver(nm, TaskReplies([(3, long_e, 10), (0, s0, -1)]))
    assert [p for p, _cb, _c in pool.started] == [[(10, 3)]]
    # worker 0 is idle with nothing queued: it tries to steal
    ((dst, req),) = rt.take()
    assert (dst, req) == (NODE_MONITORS, StealRequests([0], 1))
    rt.t = 1.5
    deliver(nm, req)
    # the only general worker (3) runs a long task with s1, s2 queued behind it
    ((dst, rep),) = rt.take()
    assert (dst, rep) == (NODE_MONITORS, StealReplies([0], {0: [s1, s2]}, 1))
    assert list(nm.queues[3]) == [] and s1.stamp == 1.5
    rt.t = 1.75
    deliver(nm, rep)
    assert rt.take() == [(addrs[0], GetTasks([(0, s1)]))]
    assert list(nm.queues[0]) == [s2] and s1.comm == 0.25
    assert nm.counters() == {
        "probes_cancelled": 0,
        "steal_attempts": 1,
        "steals": 1,
        "stolen_probes": 2,
    }


# -- Pigeon / PigeonC: distributors and masters -----------------------------------------------------


def test_pigeonc_masters_place_queue_and_serve_on_completion():
    # two groups of two: master 0 = workers {0, 1}, master 1 = {2, 3}; worker 3 has constraint 0
    rt, obs, _pool, ctx = context([0, 0, 0, 0b1], [[1.0] * 4], [[0, 0, 0, 0b1]])
    sched = PigeonCScheduler(ctx, PigeonCParams(distributors=1, masters=2))
    masters = rt.components[MASTERS_ADDRESS]
    assert set(rt.components) == {MASTERS_ADDRESS, ("distributor", 0)}
    rt.t = 0.5
    deliver(masters, TaskBatch(0, True, {0: [0, 1, 2], 1: [3]}))
    assert rt.take() == [
        (POOL_ADDRESS, LaunchBatch([(0, 0), (1, 1), (3, 3)], (MASTERS_ADDRESS, ("distributor", 0))))
    ]
    assert obs.marks == [(t, 0.5, COMMUNICATION) for t in (0, 1, 2, 3)]
    assert sched.counters()["queued_at_master"] == 1
    obs.marks.clear()
    rt.t = 2.0
    deliver(masters, TasksFinished([(3, 3)]))  # master 1 has nothing queued
    assert rt.take() == [] and obs.marks == []
    rt.t = 2.5
    deliver(masters, TasksFinished([(0, 0)]))
    assert rt.take() == [
        (POOL_ADDRESS, LaunchBatch([(2, 0)], (MASTERS_ADDRESS, ("distributor", 0))))
    ]
    assert obs.marks == [(2, 2.5, FRAMEWORK_QUEUING)]


def test_pigeonc_distributor_sends_constrained_tasks_to_the_only_master_that_can_run_them():
    rt, obs, _pool, ctx = context([0, 0, 0, 0b1], [[1.0, 1.0]], [[0b1, 0b1]])
    PigeonCScheduler(ctx, PigeonCParams(distributors=1, masters=2))
    dist = rt.components[("distributor", 0)]
    dist.submit(ctx.tasks.jobs[0])
    assert rt.take() == [(MASTERS_ADDRESS, TaskBatch(0, True, {1: [0, 1]}))]
    rt.t = 4.0
    deliver(dist, TasksFinished([(0, 3)]))
    assert obs.groups_reported == [([(0, 3)], 4.0)] and rt.take() == []


def test_pigeon_distributor_spreads_a_long_job_evenly_over_the_masters():
    rt, _obs, _pool, ctx = context([0] * 4, [[100.0] * 4])
    PigeonScheduler(ctx, PigeonParams(distributors=1, masters=2))
    rt.components[("distributor", 0)].submit(ctx.tasks.jobs[0])
    assert rt.take() == [(MASTERS_ADDRESS, TaskBatch(0, False, {0: [0, 2], 1: [1, 3]}))]


# -- centralized --------------------------------------------------------------------------------------


def test_centralized_decisions_take_timers_and_freed_workers_go_to_waiting_tasks():
    # worker 0 (no constraints) is preferred; worker 1 alone has constraint 0
    rt, obs, _pool, ctx = context([0, 0b1], [[1.0, 1.0, 1.0]], [[0, 0b1, 0b1]])
    sched = CentralizedScheduler(
        ctx, CentralizedParams(decision_cost=0.5, scan_cost_per_worker=0.25)
    )
    assert rt.components == {CENTRALIZED_ADDRESS: sched}
    sched.submit(ctx.tasks.jobs[0])
    # decision for task 0: first fit scans 1 worker -> 0.5 + 0.25 s
    assert rt.take() == [] and [(h[0], h[3]) for h in rt.timers] == [(0.75, (0, 0))]
    rt.fire_next()
    assert rt.take() == [(POOL_ADDRESS, LaunchTask(0, 0, CENTRALIZED_ADDRESS))]
    rt.fire_next()  # task 1 on worker 1: 2 workers scanned
    assert rt.t == 1.75
    assert rt.take() == [(POOL_ADDRESS, LaunchTask(1, 1, CENTRALIZED_ADDRESS))]
    rt.fire_next()  # task 2: nothing fits, a failed decision; it waits
    assert rt.t == 2.75 and rt.take() == [] and rt.timers == []
    assert obs.marks == [
        (0, 0.0, FRAMEWORK_QUEUING),
        (0, 0.75, PROCESSING),
        (1, 0.75, FRAMEWORK_QUEUING),
        (1, 1.75, PROCESSING),
        (2, 1.75, FRAMEWORK_QUEUING),
        (2, 2.75, PROCESSING),
    ]
    assert sched.counters() == {"decisions": 3, "failed_decisions": 1}
    rt.t = 3.0
    deliver(sched, TaskFinished(0, 0))  # worker 0 lacks constraint 0: task 2 keeps waiting
    assert obs.tasks_reported_one == [(0, 3.0)] and rt.timers == [] and rt.take() == []
    rt.t = 4.0
    deliver(sched, TaskFinished(1, 1))
    assert obs.tasks_reported_one[-1] == (1, 4.0)
    assert [(h[0], h[3]) for h in rt.timers] == [(4.0 + 0.5 + 0.25 * 2, (2, 1))]
    rt.fire_next()
    assert rt.take() == [(POOL_ADDRESS, LaunchTask(2, 1, CENTRALIZED_ADDRESS))]
    assert obs.marks[-2:] == [(2, 4.0, FRAMEWORK_QUEUING), (2, 5.0, PROCESSING)]
