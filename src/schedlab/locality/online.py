"""Online scheduling (Section 4): an event-driven run in which cores free up over time, and four policies.

The scheduler does not know the initial loads: core ``p`` shows up when it
becomes free (at ``L_init(p)`` first, then each time it finishes its task), and
the policy either gives it a task or lets it wait. Policies:

* ``hadoop`` — Hadoop's default (Section 6.1.1): a data-local task if the
  server has one, else a random task at once.
* ``delay`` — DELAY, delay scheduling with a fixed threshold ``W`` (Section
  6.1.1, [7]): a free core with no data-local task waits; once it has waited
  ``W`` it takes a random task. ``W = 3`` as in the paper's simulations.
* ``dyndlon`` — DynDLOn, Algorithm 1: as DELAY, but the wait is
  ``p.delay = W`` when the core's server runs no remote task and
  ``max(g_s(r_s), W)`` otherwise, so that a server with remote tasks waits
  about one remote task's running time before taking another.
* ``ltfpa`` — LTFPA, the local-tasks-first priority algorithm (Xie & Lu,
  INFOCOM'15, as used by Pandas, and as Section 6.1.1 describes it). Reading
  taken: a load-balancing phase first puts every task into the data-local
  queue ``Q_m`` of one preferred server — the one whose next local slot
  (``L_init`` of its least-loaded core plus the tasks already queued there,
  one unit each) ends first, i.e. join-the-shortest-queue measured in time,
  which is Xie & Lu's weighted-workload routing for one locality level; then
  the event-driven service: a free core of server ``m`` serves the head of
  ``Q_m``; if ``Q_m`` is empty it serves the head of the longest queue in the
  system when that queue holds more than ``threshold`` tasks (default 0: any
  non-empty queue — Xie & Lu's priority rule of serving a remote task only
  when no local one is left); otherwise the core stays idle for good (queues
  only shrink). The paper files LTFPA with the offline algorithms and times
  its load-balancing phase (Figure 9), so routing uses the initial loads;
  ``routing="queue"`` is the purely online variant (JSQ by queue length). Its
  remote tasks cost ``g_s(r_s)`` like everyone's: in the DynDL model their
  runtime is deterministic, not the random variable of Pandas.

Timing. The run's clock needs task running times before the assignment is
complete, while the paper's cost model (Section 3) charges every remote task
on ``s`` the cost ``g_s(r_s)`` of the *final* count. Example 1 settles how the
clock moves: a local task runs for 1, a remote task starting on ``s`` runs for
``g_s(r_s)`` with ``r_s`` the remote tasks assigned to ``s`` so far, and when
another remote task joins ``s`` the ones *running* there slow down to the new
cost ("t2's and t3's running time increase from 1.5 to 2"). Two readings of
what happens to remote tasks that have already *finished* are offered:

* ``timeline="running"`` (default): finished tasks keep their time, as on a
  real server; only running remote tasks stretch. The run then reproduces the
  paper's online findings (DynDLOn ahead of Hadoop and DELAY as ``beta``
  grows), because a scheduler that piles remote tasks onto a server pays for
  all of them in the final cost.
* ``timeline="model"``: the clock *is* the cost model applied to the
  assignment so far — every remote task on ``s``, finished or not, costs the
  current ``g_s(r_s)``, so a core's free time is always
  ``L_init + idle + l_p + r_p·g_s(r_s)`` and may move later after the fact (a
  waiting core whose free time moves past the present is busy again). The
  clock's last finish time then equals the paper's makespan exactly.

Either way the makespan reported is the paper's: that of the final assignment
under the Section 3 model, with the time cores were kept idle on purpose added
to their initial loads (see :mod:`schedlab.locality.model`);
``details['timeline_makespan']`` is the last finish time on the run's clock.
Both readings give Example 1's makespans (Hadoop 3.5, delay scheduling 3.25).

Choices where the paper is silent:

* Algorithm 1 resets ``p.wait`` when it assigns a task, which would count the
  task's running time as waiting; we start a core's wait when it becomes free.
  A waiting core is offered again when its wait reaches ``p.delay`` (nothing
  else can give it a local task: tasks never arrive, they only get taken).
* ``randomtask(T)`` is uniform over the unassigned tasks, drawn from the named
  stream ``locality.<algorithm>`` of the run's seed; ``remote_pick="first"``
  takes the lowest-numbered one instead (Example 1's narrative). The
  data-local task is the lowest-numbered unassigned one the server holds
  ("foreach t in T").
* Events at the same time: cores that become free before waiting cores whose
  delay expires, then by core index.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from typing import Literal, get_args

import numpy as np

from schedlab.errors import InputError
from schedlab.locality.model import (
    Assignment,
    LocalityInstance,
    LocalitySchedule,
    loads_from_counts,
)
from schedlab.sim.rng import RngStreams

FREE, WAKE = 0, 1
BUSY, WAITING, OFF = 0, 1, 2
LOCAL, REMOTE, WAIT, STOP = 0, 1, 2, 3
# The accepted values of the string parameters (the registry's Params use the Literal types).
RemotePick = Literal["random", "first"]
Timeline = Literal["running", "model"]
Routing = Literal["load", "queue"]
REMOTE_PICKS: tuple[str, ...] = get_args(RemotePick)
TIMELINES: tuple[str, ...] = get_args(Timeline)


class OnlineRun:
    """The event-driven run; a policy decides what a free core does."""

    def __init__(self, inst: LocalityInstance, seed: int, stream: str, remote_pick: str = "random", timeline: str = "running") -> None:
        if remote_pick not in REMOTE_PICKS:
            raise InputError("remote_pick", f"unknown remote pick {remote_pick!r} (choose from {', '.join(REMOTE_PICKS)})")
        if timeline not in TIMELINES:
            raise InputError("timeline", f"unknown timeline {timeline!r} (choose from {', '.join(TIMELINES)})")
        self.inst = inst
        self.model_timeline = timeline == "model"
        T, P, S = inst.n_tasks, inst.n_cores, inst.n_servers
        self.rng = RngStreams(seed).rng(stream)
        self.remote_pick = remote_pick
        self.reps = [set(r) for r in inst.replica_lists()]
        self.core_server = inst.core_server.tolist()
        cstart = inst.server_core_start.tolist()
        self.server_cores = [range(cstart[s], cstart[s + 1]) for s in range(S)]
        G = inst.cost_tables(T)
        self.g_rows = [G[int(f)].tolist() for f in inst.server_cost]  # g_s(n) = g_rows[s][n]
        self.init = inst.initial_load.tolist()
        self.base = list(self.init)  # L_init + idle + local tasks
        self.local = [0] * P
        self.remote = [0] * P
        self.idle = [0.0] * P
        self.server_remote = [0] * S
        self.g_now = [self.g_rows[s][1] for s in range(S)]
        self.state = [BUSY] * P
        self.finish_at = list(self.init)  # when the core's current (or last) task ends on the run's clock
        self.task_start = [0.0] * P  # when the core's current task started
        self.runs_remote = [False] * P  # whether that task is data-remote
        self.wait_start = [0.0] * P
        self.version = [0] * P
        self.heap: list[tuple[float, int, int, int]] = [(self.init[p], FREE, p, 0) for p in range(P)]
        heapq.heapify(self.heap)
        self.task_core = [-1] * T
        self.pool = list(range(T))  # unassigned tasks; pos[t] its index
        self.pos = list(range(T))
        self.first_ptr = 0
        local_lists: list[list[int]] = [[] for _ in range(S)]
        for t in range(T):
            for s in sorted(self.reps[t]):
                local_lists[s].append(t)
        self.local_lists = local_lists
        self.local_ptr = [0] * S
        self.now = 0.0
        self.events = 0

    # -- what policies use ----------------------------------------------------------------------------
    def local_task(self, s: int) -> int:
        """Lowest-numbered unassigned task with a replica on ``s`` (or -1)."""
        lst = self.local_lists[s]
        i = self.local_ptr[s]
        tc = self.task_core
        while i < len(lst) and tc[lst[i]] >= 0:
            i += 1
        self.local_ptr[s] = i
        return lst[i] if i < len(lst) else -1

    def pick_remote(self) -> int:
        if self.remote_pick == "first":
            i = self.first_ptr
            tc = self.task_core
            while tc[i] >= 0:
                i += 1
            self.first_ptr = i
            return i
        return self.pool[self.rng.randrange(len(self.pool))]

    def free_time(self, p: int) -> float:
        """On the model timeline: ``L_init + idle + l_p + r_p * g_s(r_s)``."""
        return self.base[p] + self.remote[p] * self.g_now[self.core_server[p]]

    # -- mechanics -----------------------------------------------------------------------------------------
    def assign(self, t: int, p: int) -> None:
        now = self.now
        gap = now - self.wait_start[p]
        self.idle[p] += gap
        self.base[p] += gap
        i = self.pos[t]
        last = self.pool.pop()
        if last != t:
            self.pool[i] = last
            self.pos[last] = i
        s = self.core_server[p]
        self.task_core[t] = p
        self.task_start[p] = now
        if s in self.reps[t]:
            self.local[p] += 1
            self.base[p] += 1.0
            self.runs_remote[p] = False
            cost = 1.0
        else:
            self.remote[p] += 1
            self.server_remote[s] += 1
            self.runs_remote[p] = True
            g = self.g_rows[s][self.server_remote[s]]
            if g != self.g_now[s]:
                self.g_now[s] = g
                for q in self.server_cores[s]:
                    if q != p:
                        self._dearer(q, s)
            cost = g
        self.state[p] = BUSY
        self.version[p] += 1
        finish = self.free_time(p) if self.model_timeline else now + cost
        self.finish_at[p] = finish
        heapq.heappush(self.heap, (finish, FREE, p, self.version[p]))

    def _dearer(self, q: int, s: int) -> None:
        """Server ``s`` got one more remote task, so its remote tasks cost more: move core ``q``'s free time."""
        st = self.state[q]
        if st == OFF:
            return
        if not self.model_timeline:
            # Only a remote task still running slows down; finished ones keep their time.
            if st == BUSY and self.runs_remote[q] and self.finish_at[q] > self.now:
                self.finish_at[q] = self.task_start[q] + self.g_now[s]
                self.version[q] += 1
                heapq.heappush(self.heap, (self.finish_at[q], FREE, q, self.version[q]))
            return
        if not self.remote[q]:
            return
        ft = self.free_time(q)
        self.finish_at[q] = ft
        self.version[q] += 1
        if st == BUSY or ft > self.now:
            self.state[q] = BUSY
            heapq.heappush(self.heap, (ft, FREE, q, self.version[q]))
        else:  # still free, but only since ft: re-offer now with its wait measured from ft
            self.wait_start[q] = ft
            heapq.heappush(self.heap, (self.now, WAKE, q, self.version[q]))

    def run(self, policy) -> None:
        heap = self.heap
        while heap and self.pool:
            when, kind, p, ver = heapq.heappop(heap)
            if ver != self.version[p]:
                continue
            self.now = when
            self.events += 1
            if kind == FREE:
                self.wait_start[p] = when
            action, arg = policy(self, p, self.core_server[p])
            if action in (LOCAL, REMOTE):
                self.assign(arg, p)
            elif action == WAIT:
                self.state[p] = WAITING
                self.version[p] += 1
                heapq.heappush(heap, (arg, WAKE, p, self.version[p]))
            else:
                self.state[p] = OFF

    def result(self, algorithm: str, seconds: float, details: dict) -> LocalitySchedule:
        inst = self.inst
        local = np.asarray(self.local, dtype=np.int64)
        remote = np.asarray(self.remote, dtype=np.int64)
        idle = np.asarray(self.idle)
        _, makespan = loads_from_counts(inst, local, remote, idle)
        active = (local + remote) > 0
        clock = float(np.asarray(self.finish_at)[active].max()) if active.any() else 0.0
        return LocalitySchedule(
            algorithm=algorithm,
            assignment=Assignment(np.asarray(self.task_core, dtype=np.int64), idle),
            makespan=makespan,
            remote_tasks=int(remote.sum()),
            seconds=seconds,
            details={
                "timeline": "model" if self.model_timeline else "running",
                "timeline_makespan": clock,
                "events": self.events,
                "idle_time": float(idle.sum()),
                **details,
            },
        )


# -- delay-scheduling family: Hadoop (W = 0), DELAY (fixed W) and DynDLOn (W or g_s(r_s)) ------------------
def _delay_policy(kind: str, threshold: float):
    def policy(run: OnlineRun, p: int, s: int):
        t = run.local_task(s)
        if t >= 0:
            return LOCAL, t
        if kind == "hadoop":
            return REMOTE, run.pick_remote()
        if kind == "dyndlon" and run.server_remote[s] > 0:
            wait = max(run.g_now[s], threshold)  # Algorithm 1, line 8
        else:
            wait = threshold  # lines 5-6 (and DELAY always)
        until = run.wait_start[p] + wait
        if run.now >= until:
            return REMOTE, run.pick_remote()
        return WAIT, until

    return policy


def _check_threshold(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) or value < 0:
        raise InputError(name, f"must be a finite number >= 0, got {value!r}")
    return float(value)


def _run_delay_family(kind: str, inst: LocalityInstance, seed: int, threshold: float, remote_pick: str, timeline: str) -> LocalitySchedule:
    t0 = time.perf_counter()
    run = OnlineRun(inst, seed, f"locality.{kind}", remote_pick, timeline)
    run.run(_delay_policy(kind, threshold))
    details = {} if kind == "hadoop" else {"delay_threshold": threshold}
    return run.result(kind, time.perf_counter() - t0, details)


def hadoop(inst: LocalityInstance, seed: int = 0, remote_pick: str = "random", timeline: str = "running") -> LocalitySchedule:
    """Hadoop's default scheduler: local if possible, else a random task immediately."""
    return _run_delay_family("hadoop", inst, seed, 0.0, remote_pick, timeline)


def delay(inst: LocalityInstance, seed: int = 0, delay_threshold: float = 3.0, remote_pick: str = "random", timeline: str = "running") -> LocalitySchedule:
    """DELAY: delay scheduling with a fixed threshold (3 in the paper's simulations)."""
    return _run_delay_family("delay", inst, seed, _check_threshold("delay_threshold", delay_threshold), remote_pick, timeline)


def dyndlon(inst: LocalityInstance, seed: int = 0, delay_threshold: float = 3.0, remote_pick: str = "random", timeline: str = "running") -> LocalitySchedule:
    """DynDLOn (Algorithm 1) with initial delay threshold ``W = delay_threshold``."""
    return _run_delay_family("dyndlon", inst, seed, _check_threshold("delay_threshold", delay_threshold), remote_pick, timeline)


# -- LTFPA ----------------------------------------------------------------------------------------------------------
ROUTINGS: tuple[str, ...] = get_args(Routing)


def ltfpa(inst: LocalityInstance, seed: int = 0, threshold: int = 0, routing: str = "load", timeline: str = "running") -> LocalitySchedule:
    """LTFPA: route tasks into per-server local queues; idle cores serve their queue, else the longest one."""
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
        raise InputError("threshold", f"must be an integer >= 0, got {threshold!r}")
    if routing not in ROUTINGS:
        raise InputError("routing", f"unknown routing {routing!r} (choose from {', '.join(ROUTINGS)})")
    t0 = time.perf_counter()
    run = OnlineRun(inst, seed, "locality.ltfpa", timeline=timeline)
    S = inst.n_servers
    queues: list[deque[int]] = [deque() for _ in range(S)]
    if routing == "load":
        # Load-balancing phase: each task joins the preferred server whose next local slot ends first.
        slots = [sorted(run.init[c.start : c.stop]) for c in run.server_cores]
        for t, reps in enumerate(inst.replica_lists()):
            m = min(reps, key=lambda s: (slots[s][0], s))
            queues[m].append(t)
            heapq.heapreplace(slots[m], slots[m][0] + 1.0)
    else:
        for t, reps in enumerate(inst.replica_lists()):
            m = min(reps, key=lambda s: (len(queues[s]), s))
            queues[m].append(t)
    longest = [(-len(q), s) for s, q in enumerate(queues) if q]
    heapq.heapify(longest)

    def policy(run: OnlineRun, p: int, m: int):
        q = queues[m]
        if q:
            t = q.popleft()
            if q:
                heapq.heappush(longest, (-len(q), m))
            return LOCAL, t
        while longest:
            neg, s = longest[0]
            if -neg != len(queues[s]):
                heapq.heappop(longest)
                continue
            if -neg > threshold:
                heapq.heappop(longest)
                t = queues[s].popleft()
                if queues[s]:
                    heapq.heappush(longest, (-len(queues[s]), s))
                return REMOTE, t
            break
        return STOP, None

    run.run(policy)
    return run.result("ltfpa", time.perf_counter() - t0, {"threshold": threshold, "routing": routing})
