"""Scheduler components driven one message at a time through a fake Runtime (no kernel, no SimRuntime).

Each test builds a component on :class:`FakeRuntime` — the Runtime protocol
(``now``, ``send``, ``call_later``, ``cancel``, ``rng``) plus ``register`` and
nothing else — hands it messages by calling its handlers directly
(``component.handlers()[type(msg)](msg)``) and checks its outputs: the exact
messages it sent (``FakeRuntime.sent``), the timers it set
(``FakeRuntime.timers``, fired by the test) and what it told its observer
(:class:`FakeObserver`). No component here can see a simulator clock, a
network model, a Recorder or the simulated WorkerPool.

Construction notes (findings about the sans-IO boundary, see the report):

* Megha's GM and LM are built from a :class:`MeghaShared` alone — runtime,
  layout, cluster, task lookup, observer — with no simulator object at all.
* Every other family is built from a :class:`SchedulerContext`, whose fields are
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

import random

import pytest

from schedlab.cluster import Cluster
from schedlab.metrics.recorder import COMMUNICATION, FRAMEWORK_QUEUING, PROCESSING, WORKER_QUEUING
from schedlab.schedulers.base import SchedulerContext
from schedlab.schedulers.centralized import ADDRESS as CENTRALIZED_ADDRESS
from schedlab.schedulers.centralized import CentralizedParams, CentralizedScheduler
from schedlab.schedulers.eagle import EagleNodeMonitors, EagleParams, LongProbes, ProbesRejected
from schedlab.schedulers.hawk import HawkNodeMonitors, HawkParams, StealReplies, StealRequests
from schedlab.schedulers.megha import MeghaParams, MeghaShared
from schedlab.schedulers.megha.gm import GlobalMaster
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.messages import LaunchRejected, LaunchRequest, StateUpdate
from schedlab.schedulers.megha.partitions import Layout, megha_topology
from schedlab.schedulers.pigeon import (
    MASTERS_ADDRESS,
    PigeonCParams,
    PigeonCScheduler,
    PigeonParams,
    PigeonScheduler,
    TaskBatch,
)
from schedlab.schedulers.probing import (
    COMM,
    NODE_MONITORS,
    STAMP,
    CancelJobs,
    EligibleSampler,
    GetTasks,
    NodeMonitors,
    Probes,
    ProbeScheduler,
    TaskReplies,
    new_entry,
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

# -- fakes ------------------------------------------------------------------------------------------


class FakeRuntime:
    """The Runtime protocol and ``register``, nothing else: a settable clock, a sent list, a timer list."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t
        self.sent: list[tuple[object, object]] = []
        self.timers: list[list] = []  # [due, seq, fn, args, cancelled]
        self.components: dict[object, object] = {}
        self._seq = 0

    def register(self, component) -> None:
        assert component.address not in self.components, f"{component.address!r} registered twice"
        self.components[component.address] = component

    def now(self) -> float:
        return self.t

    def send(self, dst, msg) -> None:
        self.sent.append((dst, msg))

    def call_later(self, delay, fn, *args):
        self._seq += 1
        handle = [self.t + delay, self._seq, fn, args, False]
        self.timers.append(handle)
        return handle

    def cancel(self, handle) -> None:
        handle[4] = True

    def rng(self, name: str) -> random.Random:
        return random.Random(f"fake:{name}")  # str seeds are hashed with SHA-512: deterministic

    # -- test helpers --
    def fire_next(self) -> None:
        """Advance the clock to the earliest live timer and run it."""
        live = [h for h in self.timers if not h[4]]
        assert live, "no timer to fire"
        h = min(live, key=lambda x: (x[0], x[1]))
        self.timers.remove(h)
        self.t = h[0]
        h[2](*h[3])

    def take(self) -> list[tuple[object, object]]:
        """The messages sent since the last take."""
        out, self.sent = self.sent, []
        return out


class FakeObserver:
    """Records what components report (the Observer interface)."""

    def __init__(self) -> None:
        self.marks: list[tuple[int, float, int]] = []
        self.groups_reported: list[tuple[list[tuple[int, int]], float]] = []
        self.tasks_reported_one: list[tuple[int, float]] = []

    def mark(self, tid: int, now: float, component: int) -> None:
        self.marks.append((tid, now, component))

    def tasks_reported(self, group, now: float) -> None:
        self.groups_reported.append((list(group), now))

    def task_reported(self, tid: int, now: float) -> bool:
        self.tasks_reported_one.append((tid, now))
        return True


class FakePool:
    """The LocalWorkers interface: records starts; the test calls the finish callbacks itself."""

    def __init__(self) -> None:
        self.started: list[tuple[list[tuple[int, int]], object, int]] = []
        self.preempted: list[tuple[int, int]] = []
        self.running: set[int] = set()

    def start_many(self, placements, on_finish, component) -> None:
        self.started.append((list(placements), on_finish, component))
        self.running.update(t for t, _w in placements)

    def preempt(self, tid: int, worker: int) -> None:
        self.preempted.append((tid, worker))
        self.running.discard(tid)

    def is_running(self, tid: int) -> bool:
        return tid in self.running


def deliver(component, msg) -> None:
    component.handlers()[type(msg)](msg)


def test_the_fake_is_a_runtime_and_nothing_more():
    rt = FakeRuntime()
    assert isinstance(rt, Runtime)
    assert not hasattr(rt, "kernel") and not hasattr(rt, "network")


# -- Megha ------------------------------------------------------------------------------------------
#
# 2 LMs x 2 GMs over 8 workers: partition p = lm * 2 + gm, LM 0 holds workers 0-3 (p0 = {0, 1},
# p1 = {2, 3}), LM 1 holds 4-7 (p2 = {4, 5}, p3 = {6, 7}). Inside a partition the most preferred
# worker (fewest constraints, then lowest id) has the highest bit: in p0, pos 1 = worker 0 and
# pos 0 = worker 1. GM 0's internal partitions are p0 and p2.

ONE_CONSTRAINED = [0, 0, 0, 0b1, 0, 0, 0, 0]  # worker 3 (p1, pos 0) alone has constraint 0


def megha(masks, *, gms=2, lms=2, capacity=None, **params):
    rt = FakeRuntime()
    obs = FakeObserver()
    cl = Cluster.slots(masks) if capacity is None else Cluster.multi_resource(masks, capacity)
    tasks = TaskTable()
    layout = Layout(cl, megha_topology(cl, gms, lms))
    shared = MeghaShared(
        runtime=rt,
        layout=layout,
        cluster=cl,
        tasks=tasks,
        observer=obs,
        workers=None,
        params=MeghaParams(**{"worker_choice": "min-constraints", **params}),
        slot_mode=cl.slot_mode,
    )
    return rt, obs, tasks, layout, shared


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
    rt, _obs, tasks, _layout, shared = megha([0] * 8)
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
    assert lm.free[0][1] == [0.0, 2048.0] and lm.avail[0] == 0b01
    deliver(lm, LaunchRequest(0, [(2, 0, 0)]))  # worker 1 has room
    assert rt.take() == [(POOL_ADDRESS, LaunchBatch([(2, 1)], (("lm", 0), ("gm", 0))))]
    deliver(lm, TasksFinished([(0, 0)]))
    assert lm.free[0][0] == [3.0, 3584.0]  # worker 1 runs task 2 and still has room
    assert lm.free[0][1] == [2.0, 3072.0] and lm.avail[0] == 0b11


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
    assert all(e == [0, 0, 0, False, 0.0, 0.0, 0.0, 0.0, 1.0, 0, 0] for _w, e in probes.items)
    entry = {w: e for w, e in probes.items}
    # worker 2's probe arrived at 1.25 and asked for a task at 1.5 (as a node monitor would set it)
    entry[2][COMM], entry[2][STAMP] = 0.25, 1.5
    rt.t = 2.0
    deliver(sched, GetTasks([(2, entry[2])]))
    assert rt.take() == [(NODE_MONITORS, TaskReplies([(2, entry[2], 0)]))]
    assert obs.marks == [(0, 1.25, WORKER_QUEUING), (0, 2.0, COMMUNICATION)]
    assert entry[2][STAMP] == 2.0
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
    a = new_entry(0, 7, 0, False, 0.0, 0.0, 0, 0.5)
    b = new_entry(0, 8, 0, False, 0.0, 0.0, 0, 0.5)
    c = new_entry(1, 9, 0, False, 0.0, 0.0, 0, 0.5)
    rt.t = 1.0
    deliver(nm, Probes([(0, a), (0, b), (1, c)]))
    # idle workers ask at once, one envelope per scheduler; b queues behind a
    assert rt.take() == [(scheds[0], GetTasks([(0, a)])), (scheds[1], GetTasks([(1, c)]))]
    assert a[COMM] == 0.5 and a[STAMP] == 1.0 and list(nm.queues[0]) == [b]
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
    long_e = new_entry(1, 0, 0, True, 100.0, 100.0, 0, 0.5)
    short_a = new_entry(0, 1, 0, False, 1.0, 2.0, 0, 0.5)
    short_b = new_entry(0, 1, 0, False, 1.0, 2.0, 0, 0.5)
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
    assert short_a[STAMP] == 1.5 and short_a[COMM] == 1.0
    assert list(nm.queues[0]) == [] and nm.rejected == 1


def test_hawk_idle_worker_steals_short_probes_queued_behind_a_long_task():
    rt, _obs, pool, ctx = context([0] * 4, [[1.0]])
    addrs = [("distributed", 0), "central"]
    nm = HawkNodeMonitors(ctx, addrs, HawkParams(), first_general=3)  # workers 0-2: short partition
    long_e = new_entry(1, 0, 0, True, 100.0, 100.0, 0, 1.0)
    s1 = new_entry(0, 1, 0, False, 1.0, 2.0, 0, 1.0)
    s2 = new_entry(0, 1, 0, False, 1.0, 2.0, 0, 1.0)
    s0 = new_entry(0, 2, 0, False, 1.0, 1.0, 0, 1.0)
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
    assert list(nm.queues[3]) == [] and s1[STAMP] == 1.5
    rt.t = 1.75
    deliver(nm, rep)
    assert rt.take() == [(addrs[0], GetTasks([(0, s1)]))]
    assert list(nm.queues[0]) == [s2] and s1[COMM] == 0.25
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
        gm.free[p][0] = [0.0, 3584.0]
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
