"""Worker hosts that fail: leases, lost tasks relaunched, hosts that come back empty — with no task run twice.

Megha paper, Section IV (last paragraphs): a failed worker is restarted and
its LM relaunches its tasks from its active-task list. Here:

* **Lease.** Every worker host tells its LM it is alive every
  ``worker_lease / 3`` seconds (:class:`HostBeacon` →
  :class:`~schedlab.services.messages.HostAlive`, through the broker, with an
  incarnation drawn when the process starts and the tasks it runs). An LM that
  hears nothing from a host for ``worker_lease`` seconds declares it down
  (:class:`HostMonitor`): the simulator's LM code vacates every task on its
  workers and tells each task's GM (``LocalMaster.workers_down`` →
  ``TaskLost``), and the GM re-queues it as a new request — the relaunch. The
  workers stay unavailable to every GM, through the usual state updates.
* **Rejoin.** A host heard from again after it was declared down — restarted
  (a new incarnation: it runs nothing) or back from a partition (the same
  incarnation, perhaps still running the lost tasks) — has whatever it still
  runs killed (those tasks were relaunched) and its workers come back empty
  (``workers_up``). A host that restarts *within* its lease is noticed by its
  new incarnation and handled the same way. A beacon of an incarnation
  replaced since (late on the wire) is dropped: a process replaced never
  comes back.
* **No launch reaches the wrong process.** Launches to a worker host carry
  the incarnation the LM knew when it sent them; a restarted host refuses
  older ones (409) — an HTTP retry of a launch to a host that died would
  otherwise start, on its successor, a task the LM had already handed back.
* **One witness of task ends.** A host reports ends only to the LM that
  launched the tasks (:class:`CompletionRelay`), which records them and tells
  the GM: a host dying between a report to the LM and one to the GM can no
  longer leave the GM waiting for a task the LM believes ended.
* **Exactly once.** A lost task can still end on a host that was only cut off
  and report its completion. The LM drops ends of tasks it does not run on
  that worker (:class:`CompletionRelay`); each GM remembers the worker
  it placed each task on and drops a completion from any other worker — the
  lost run's — and a ``TaskLost`` for a task that already completed
  (:class:`GMPlacements`). So a task completes once, and is re-queued only if
  it had not completed.
* **Records.** A GM that accepts a ``TaskLost`` emits a ``lost`` event: the
  run's records end the lost run there, like a preemption's, and count it
  (``lost_runs``).

Choices: the lease is the cluster file's ``worker_lease`` (default 2 s, so
tasks are relaunched within about 2.7 s of a crash); a host's first beacon
goes out at once, so a host is never declared down before it could speak;
an LM counts a host alive from its own start (a host that never comes up is
declared down after one lease).
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from typing import Any

from schedlab.schedulers.megha.gm import GlobalMaster, lm_address
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.messages import (
    LaunchRejected,
    LaunchRequest,
    PreemptRejected,
    PreemptRequest,
    TaskLost,
    TaskPreempted,
)
from schedlab.services.messages import HostAlive, HostFinished, KillTask, TaskKilled, VerifyEnds
from schedlab.services.records import FINISHED, LOST, Emit
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.tasks import split_id
from schedlab.services.worker import REFUSED
from schedlab.workers.protocol import POOL_ADDRESS, TasksFinished

log = logging.getLogger("schedlab.services.failures")

REPLACED_KEPT = 8  # incarnations of a host an LM remembers as replaced (a host restarting that often within a beacon's delay on the wire: rare)
RECENT = 1 << 16  # completions a GM remembers (tid -> worker), to record again an end whose LM died before recording it


class HostBeacon:
    """A worker host's side of its lease: ``HostAlive`` to its LM every ``every`` seconds. ``running()``: the
    host's runs as ``(tid, worker, launch id)``.

    It also notices when its own process stood still — frozen, starved of CPU — for about its lease (``lease``;
    from ``lease - every`` on, as its LM may count from a beacon sent just before): its LM may have declared it
    down meanwhile and relaunched its runs elsewhere. Those runs are **stale** (``stale``, their launch ids): a
    new LM process taking over must not adopt them — the old process that knew they were lost is gone (found by
    the deterministic simulation, seed 3111623: a host frozen 5 s, its run relaunched and completed elsewhere,
    its LM killed; the new LM process adopted the frozen run, whose end, recorded, was the task's second)."""

    def __init__(self, rt: ServiceRuntime, host: int, lm: int, running: Callable[[], list[tuple[int, int, int]]], every: float,
                 incarnation: int, lease: float | None = None) -> None:
        self.rt = rt
        self.host = host
        self.lm = lm_address(lm)
        self.running = running
        self.every = every
        self.lease = lease if lease is not None else 3 * every
        self.incarnation = incarnation  # drawn afresh by each process of the host
        self.ran_at = rt.now()  # the last time this process was seen running on time (a beacon, a takeover's question)
        self.stale: set[int] = set()  # launch ids of runs that were here through a stall of about the lease
        self.stalls = 0
        self._timer = rt.call_soon(self._beat)

    def check_stall(self) -> None:
        """Mark every run here stale if the process stood still for about its lease since it last ran on time."""
        now = self.rt.now()
        if now - self.ran_at >= self.lease - self.every:
            self.stalls += 1
            # every run here now (those of an earlier stall still running are among them)
            self.stale = {launch for _t, _w, launch in self.running() if launch}
        self.ran_at = now

    def _beat(self) -> None:
        self._timer = self.rt.call_later(self.every, self._beat)
        self.check_stall()
        runs = self.running()
        self.rt.send(self.lm, HostAlive(self.host, self.incarnation, [(t, w) for t, w, _l in runs], self.rt.now(),
                                        [launch for _t, _w, launch in runs]))

    def stop(self) -> None:
        self._timer.cancel()


class HostMonitor:
    """An LM's side: which of its worker hosts are up, and what happens when one stops answering."""

    def __init__(self, rt: ServiceRuntime, lm: LocalMaster, workers_of_host: dict[int, list[int]], lease: float) -> None:
        self.rt = rt
        self.lm = lm
        self.lease = lease
        where = lm.layout.where
        self.positions = {h: [where[w] for w in ws] for h, ws in workers_of_host.items()}
        now = rt.now()
        self.last: dict[int, float] = {h: now for h in self.positions}  # alive from the LM's own start
        self.incarnation: dict[int, int] = {}
        # host -> its incarnations replaced since (the latest few): a beacon of one of them is late — it waited on
        # the wire while the host restarted — and is no news (found by the deterministic simulation, seed 964086:
        # such a beacon read as a second restart declared the task just launched on the new process lost, and that
        # launch, already on its way, ran it there while its GM requested it again elsewhere)
        self.replaced: dict[int, deque[int]] = {}
        self.stale_beacons = 0
        self.down: set[int] = set()
        # host -> the latest deadline of a launch sent to it: a down host's beacon sent before then may predate a
        # launch it took since (found by the deterministic simulation, seed 2006893: a beacon delayed on the wire
        # brought the host back "running nothing" while it ran a launch that had come after it — that worker was
        # launched onto again and refused the launch)
        self.promised: dict[int, float] = {}
        self.early_beacons = 0
        self.hosts_down = 0
        self.hosts_rejoined = 0
        self.tasks_relaunched = 0
        self.zombie_kills = 0
        self.stalls = 0  # checks that found this LM had not run for a while (its own silence, not the hosts')
        self.on_lost: Callable[[int], None] | None = None  # each lost task (an LM process forgets it was launched)
        self.on_alive: Callable[[HostAlive], None] | None = None  # every beacon of a host that is up (launches in doubt)
        rt.add_handler(lm.address, HostAlive, self._on_alive)
        if not rt.accepts(lm.address, TaskKilled):
            rt.add_handler(lm.address, TaskKilled, lambda _msg: None)  # kills of lost runs: nothing to do after
        self._due = rt.now() + lease / 3
        self._timer = rt.call_later(lease / 3, self._check)

    def _on_alive(self, msg: HostAlive) -> None:
        h = msg.host
        if h not in self.positions:
            return
        if msg.incarnation in self.replaced.get(h, ()):
            self.stale_beacons += 1
            return
        self.last[h] = self.rt.now()
        known = self.incarnation.get(h)
        self._set_incarnation(h, msg.incarnation)
        if h not in self.down and known is not None and known != msg.incarnation:
            self._declare_down(h, "restarted")  # died and came back within its lease: its tasks are gone
        if h in self.down:
            # the same process, its beacon older than a launch's deadline: it may have taken that launch since (a
            # restarted one refuses launches to the process before it: its beacon says all)
            if known == msg.incarnation and msg.at < self.promised.get(h, 0.0):
                self.early_beacons += 1
                return
            self._rejoin(h, msg)
        elif self.on_alive is not None:
            self.on_alive(msg)

    def deadline(self, h: int) -> float:
        """Until when host ``h`` may act on a launch sent now: this LM cannot declare it down before then
        (it does so only after ``lease`` seconds without news, and news only comes later than the last)."""
        return self.last.get(h, self.rt.now()) + self.lease

    def launch_deadline(self, h: int) -> float:
        """:meth:`deadline`, for a launch sent to ``h`` now: remembered, for a beacon sent before it says nothing
        of whether the host took that launch."""
        d = self.deadline(h)
        if d > self.promised.get(h, 0.0):
            self.promised[h] = d
        return d

    def _check(self) -> None:
        now = self.rt.now()
        late = now - self._due
        if late > self.lease / 3:
            # this LM did not run for a while (a long GC, CPU starvation, SIGSTOP): it could hear nobody, and the
            # beacons sent meanwhile wait in its sockets — silence over its own stall is not the hosts' (found by
            # the deterministic simulation's pauses: every host declared down on waking, their runs relaunched)
            self.stalls += 1
            last = self.last
            for h in last:
                last[h] = min(now, last[h] + late)
        for h, t in self.last.items():
            if h not in self.down and now - t > self.lease:
                self.rt.guarded(self._declare_down, h, f"silent for {now - t:.1f} s")
        self._due = now + self.lease / 3
        self._timer = self.rt.call_later(self.lease / 3, self._check)

    def mark_down(self, h: int) -> None:
        """A host that did not answer an LM process taking over: down (nothing of it was adopted)."""
        if h not in self.down:
            self.down.add(h)
            self.hosts_down += 1
            log.warning("worker host %d did not answer: down until it is heard again", h)

    def heard(self, h: int, incarnation: int) -> None:
        """A host answered an LM process taking over (its tasks are adopted): alive, in this incarnation."""
        self.last[h] = self.rt.now()
        self._set_incarnation(h, incarnation)
        self.down.discard(h)

    def _set_incarnation(self, h: int, incarnation: int) -> None:
        known = self.incarnation.get(h)
        if known is not None and known != incarnation:
            self.replaced.setdefault(h, deque(maxlen=REPLACED_KEPT)).append(known)
        self.incarnation[h] = incarnation

    def _declare_down(self, h: int, why: str) -> None:
        self.down.add(h)
        self.hosts_down += 1
        lost = self.lm.workers_down(self.positions[h])
        self.tasks_relaunched += len(lost)
        if self.on_lost is not None:
            for tid in lost:
                self.on_lost(tid)  # its relaunch is a new launch, not a repeat
        log.warning("worker host %d down (%s): %d task(s) to relaunch", h, why, len(lost))

    def _rejoin(self, h: int, msg: HostAlive) -> None:
        # lost runs still going (a partition, not a crash): stop them — each by its launch, for the kill may reach
        # the host after the task, requested again, was launched there anew (found by the deterministic
        # simulation, seed 110246: the new run killed, and nobody told)
        for (tid, worker), launch in zip(msg.running, msg.launches or [0] * len(msg.running), strict=True):
            self.zombie_kills += 1
            self.rt.send(POOL_ADDRESS, KillTask(tid, worker, self.lm.address, launch))
        self.down.discard(h)
        self.hosts_rejoined += 1
        self.lm.workers_up(self.positions[h])
        log.warning("worker host %d back (%d lost run(s) stopped)", h, len(msg.running))

    def stop(self) -> None:
        self._timer.cancel()

    def counters(self) -> dict[str, int]:
        return {"hosts_down": self.hosts_down, "hosts_rejoined": self.hosts_rejoined, "tasks_relaunched": self.tasks_relaunched,
                "lost_runs_stopped": self.zombie_kills, "monitor_stalls": self.stalls, "stale_beacons": self.stale_beacons,
                "early_beacons": self.early_beacons}


class CompletionRelay:
    """LMs are the one witness of task ends: a host's ``HostFinished`` goes to the LM that launched the tasks,
    which records each end, applies it, and tells the task's GM (the rest of ``reply_to``).

    Were the host to tell the LM and the GM separately, a host dying between the two messages would
    leave the LM believing the task ended and the GM waiting for it for ever (found by the chaos
    campaign). Ends of tasks the LM does not run on that worker — a lost or preempted run ending
    late — are dropped here, before they are recorded.
    """

    def __init__(self, rt: ServiceRuntime, lms: list[LocalMaster], emit: Emit) -> None:
        self.rt = rt
        self.emit = emit
        self.lms = {lm.address: lm for lm in lms}
        self.dropped = 0
        self.completed: Any = None  # a RecentIds of the ends relayed, for a restarted GM's questions (:mod:`~.recovery`)
        self.takeover = False  # an LM process draining its queue after taking over: ends nobody adopted go to their GM
        self.verify_sent = 0
        # vouch(tid, launch id): is this the end of the run the LM launched (or adopted)? An earlier run of the same
        # task on the same worker ends with another launch id (found by the deterministic simulation)
        self.vouch: Callable[[int, int], bool] | None = None
        self.flush_records: Callable[[], None] | None = None  # hand the records emitted so far to the publisher now
        # on_refused([(tid, worker)]): launches the host refused (status ``refused``: never started) — the LM hands
        # those tasks back; without it they are dropped like other ends it cannot vouch for
        self.on_refused: Callable[[list[tuple[int, int]]], None] | None = None
        self.refusals = 0
        # found_ended(tid, gm address, sent): an end sent to its GM to verify while the process takes over — the
        # takeover tells the GM it found that run ended (recovery.LMTakeover.found), or the GM, hearing the takeover
        # before the VerifyEnds, would count the task lost and run it again
        self.found_ended: Callable[[int, Any, float], None] | None = None
        # adopted(tid, launch id): is this the end of a run the LM process adopted from its host at its start? Its GM
        # may have counted that run lost and placed the task elsewhere since (a host cut off past its lease): the GM
        # judges its end (VerifyEnds), and the LM lets the run go (let_go(tid)) — found by a crafted schedule of
        # the deterministic simulation: the stale run ended before the GM's StaleRuns reached the LM, and its end,
        # vouched for, was the task's second
        self.adopted: Callable[[int, int], bool] | None = None
        self.let_go: Callable[[int], None] | None = None
        self.adopted_verified = 0
        for addr in self.lms:
            def on_finished(msg: HostFinished, a: Any = addr) -> None:  # the default binds each LM's own address
                self._on_finished(a, msg)

            rt.add_handler(addr, HostFinished, on_finished)

    def _on_finished(self, addr: Any, msg: HostFinished) -> None:
        lm = self.lms[addr]
        running, order = lm.running, lm.layout.order
        group = []
        refused: list[tuple[int, int]] = []
        unvouched: list[tuple[tuple[int, int], tuple, int]] = []
        launches = msg.launches or [0] * len(msg.group)
        sents = msg.sent or [0.0] * len(msg.group)
        vouch = self.vouch
        for (tid, w), (started, ended, outcome), launch, sent in zip(msg.group, msg.runs, launches, sents, strict=True):
            where = running.get(tid)
            if where is None or order[where[0]][where[1]] != w or (vouch is not None and not vouch(tid, launch)):
                if self.takeover and where is None:
                    unvouched.append(((tid, w), (started, ended, outcome), launch))
                    if self.found_ended is not None and outcome.get("status") != REFUSED:
                        for other in msg.reply_to:
                            if other != addr:
                                self.found_ended(tid, other, sent)
                else:
                    self.dropped += 1
                continue
            if self.adopted is not None and self.adopted(tid, launch):
                unvouched.append(((tid, w), (started, ended, outcome), launch))
                self.adopted_verified += 1
                if self.let_go is not None:
                    self.let_go(tid)
                continue
            if outcome.get("status") == REFUSED:
                refused.append((tid, w))
                continue
            group.append((tid, w))
            if self.completed is not None:
                self.completed.add(tid)
            run, local = split_id(tid)
            self.emit(run, (FINISHED, local, ended, {**outcome, "worker": w, "started_at": started}))
        if refused:
            self.refusals += len(refused)
            if self.on_refused is not None:
                self.on_refused(refused)
        if unvouched:  # ended while no LM process watched, or adopted: the GM, which knows where it placed them, decides
            self.verify_sent += len(unvouched)
            for other in msg.reply_to:
                if other != addr:
                    self.rt.send(other, VerifyEnds([e for e, _r, _l in unvouched], [r for _e, r, _l in unvouched],
                                                   [la for _e, _r, la in unvouched]))
        if not group:
            return
        if self.flush_records is not None:
            # the ends' records leave before the GM hears of them: an LM killed in between would otherwise leave a
            # GM that knows the task completed and a client that never learns how (found by the simulation)
            self.flush_records()
        done = TasksFinished(group)
        self.rt.deliver(addr, done)
        for other in msg.reply_to:
            if other != addr:
                self.rt.send(other, done)


class GMPlacements:
    """A GM process remembers where it placed each task: completions from elsewhere, and losses of tasks
    already completed, are dropped; an accepted loss is recorded."""

    def __init__(self, rt: ServiceRuntime, gm: GlobalMaster, emit: Emit) -> None:
        self.rt = rt
        self.gm = gm
        self.emit = emit
        self.placed: dict[int, int] = {}  # tid -> worker of its current run
        self.sent_at: dict[int, float] = {}  # tid -> when its current request left (0: held again after a restart)
        # tid -> the incarnation of its LM's process this GM knew of when it requested the task there (0: held
        # again after a restart): a run launched by an earlier LM process is not the current request's
        self.placed_under: dict[int, int] = {}
        self.incarnations: dict[int, int] = {}  # LM -> the incarnation (fencing token) of its latest process heard of
        self.last_sent = 0.0  # when the request being sent now left (stamped in its envelope: links' fence)
        self.recent: OrderedDict[int, int] = OrderedDict()  # the last RECENT completions: tid -> worker
        self.ends_repeated = 0
        self.withdrawn = 0
        self.stale_rejections = 0
        self.on_orphans: Callable[[list[int]], None] | None = None  # completions of tasks this process does not know
        # ends to verify of tasks this process knows no placement of: (tid, worker, (started, ended, outcome))
        self.on_unjudged: Callable[[list[tuple[int, int, tuple]]], None] | None = None
        # after_records(fn): fn once the records emitted so far are in the broker (None: at once). A task whose
        # run this GM recorded lost is requested again only then: had the GM died with the ``lost`` record
        # unsent, the client would see the task start twice without a loss between (found by the deterministic
        # simulation, seed 114073: a GM cut from the broker, then killed)
        self.after_records: Callable[[Callable[[], None]], None] | None = None
        self.unrecorded: Counter[int] = Counter()  # tid -> its losses recorded and not yet in the broker
        self.held: Counter[int] = Counter()  # tid -> its requests held until then (never sent yet: not lost at a takeover)
        self.requests_held = 0
        self.dropped_completions = 0
        self.dropped_losses = 0
        order = gm.layout.order
        rt.before_send(LaunchRequest, self._launching)
        rt.before_send(PreemptRequest, self._preempting)
        rt.before_delivery(TasksFinished, self._finished)
        rt.before_delivery(TaskLost, self._lost)
        rt.before_delivery(TaskPreempted, self._preempted)
        rt.before_delivery(LaunchRejected, self._rejected)
        rt.before_delivery(PreemptRejected, self._preempt_rejected)
        self.order = order

    def adopt(self, running: list[tuple[int, int, int]], sent: list[float] | None = None) -> None:
        """Tasks an LM runs for this GM, learned after a restart (:mod:`~.recovery`); ``sent``: for each, the
        first send time of the request that started its run, as the LM knows it (0: unknown).

        A task this process placed there itself keeps its request's stamps: an LM's answer can come late, after
        the restarted GM requested the task again onto the same worker, and a loss notice of the earlier run,
        later still, must not end the current one (found by the deterministic simulation, seed 314505). A task
        held again takes the LM's stamp, for the same reason: a predecessor's earlier run of it on the same
        worker, handed back, left a loss notice in this GM's queue (seed 1021700)."""
        order, placed = self.order, self.placed
        stamps = sent or [0.0] * len(running)
        for (tid, p, pos), stamp in zip(running, stamps, strict=True):
            worker = order[p][pos]
            if placed.get(tid) == worker:
                continue
            placed[tid] = worker
            self.sent_at[tid] = stamp
            self.placed_under[tid] = 0

    def stale(self, running: list[tuple[int, int, int]]) -> list[int]:
        """Which of an LM's running ``(tid, p, pos)`` (its ``Recovered``) are stale runs: the task completed here,
        or this GM placed it on another worker since — its request there is the task's current one (a request
        is placed only once the task's previous run was let go). Their indices in ``running``."""
        order, placed, recent = self.order, self.placed, self.recent
        out = []
        for k, (tid, p, pos) in enumerate(running):
            w = placed.get(tid)
            if (w is not None and w != order[p][pos]) or (w is None and tid in recent):
                out.append(k)
        return out

    def unplace(self, tid: int) -> int:
        """The task is placed nowhere any more; returns the worker it was placed on."""
        self.sent_at.pop(tid, None)
        self.placed_under.pop(tid, None)
        return self.placed.pop(tid)

    def losses_recorded(self, tids: list[int]) -> None:
        """``lost`` records of these tasks were just emitted: their new requests wait until the records are in
        the broker (see ``after_records``)."""
        if self.after_records is None or not tids:
            return
        done = Counter(tids)
        self.unrecorded += done

        def recorded() -> None:
            self.unrecorded -= done  # (a Counter keeps only what is left)

        self.after_records(recorded)

    def _launching(self, dst: Any, msg: LaunchRequest) -> LaunchRequest | None:
        order, now = self.order, self.rt.now()
        self.last_sent = now
        under = self.incarnations.get(self.gm.layout.lm_of[msg.items[0][1]], 0) if msg.items else 0
        for tid, p, pos in msg.items:
            self.placed[tid] = order[p][pos]
            self.sent_at[tid] = now
            self.placed_under[tid] = under
        if self.unrecorded and self.after_records is not None and any(t in self.unrecorded for t, _p, _pos in msg.items):
            # placed already (a redelivered job's resolution must not request it again), sent once the loss's
            # record is in the broker — stamped again then (found by the deterministic simulation, seed 101389)
            self.requests_held += 1
            mine = Counter(t for t, _p, _pos in msg.items)
            self.held += mine

            def release() -> None:
                self.held -= mine
                self.rt.send(dst, msg)

            self.after_records(release)  # after the records' own callback (FIFO): the loss is recorded by then
            return None
        return msg

    def _preempting(self, _dst: Any, msg: PreemptRequest) -> PreemptRequest:
        self.placed[msg.tid] = self.order[msg.p][msg.pos]
        self.sent_at[msg.tid] = self.last_sent = self.rt.now()
        self.placed_under[msg.tid] = self.incarnations.get(self.gm.layout.lm_of[msg.p], 0)
        return msg

    def forget(self, items: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """These requests never took effect: their tasks are placed nowhere now (queued again, or requested
        anew — a new request places them again). A task left placed while it waits in the GM's queue would be
        requested a second time when its LM takes over without it (found by the deterministic simulation).
        Returns the requests that still stood (a task completed or requested again since is left alone)."""
        placed, order = self.placed, self.order
        out = []
        for item in items:
            tid, p, pos = item
            if placed.get(tid) == order[p][pos]:
                self.unplace(tid)
                out.append(item)
        return out

    def _rejected(self, _dst: Any, msg: LaunchRejected) -> LaunchRejected | None:
        """A rejection applies to the request it answers: a late one (a retried request answered twice, its
        first answer lost then found) is dropped if this GM has requested the task again since."""
        if msg.sent:
            items = [it for it in msg.items if self.sent_at.get(it[0]) == msg.sent]
            if len(items) != len(msg.items):
                self.stale_rejections += len(msg.items) - len(items)
                # the state it carries is applied all the same: the LM reset this GM's pending delta to build it,
                # and it comes in order (found by the deterministic simulation: a view left stale)
                msg = LaunchRejected(msg.lm, items, msg.update, msg.sent)
        self.forget(msg.items)
        return msg

    def _preempt_rejected(self, _dst: Any, msg: PreemptRejected) -> PreemptRejected:
        self.forget([(msg.tid, msg.p, msg.pos)])
        return msg

    def _finished(self, _dst: Any, msg: TasksFinished) -> TasksFinished | None:
        placed = self.placed
        group = [(tid, w) for tid, w in msg.group if placed.get(tid) == w]
        recent = self.recent
        if len(group) != len(msg.group) and self.on_orphans is not None:
            # an end relayed by an LM of a task this process never placed nor completed: it restarted, and the
            # task's job will come back to it (DurableJobs keeps the completion)
            orphans = [tid for tid, _w in msg.group if tid not in placed and tid not in recent]
            if orphans:
                mine = set(orphans)
                self.gm.freed_unknown(w for tid, w in msg.group if tid in mine)
                store: Any = self.gm.tasks  # a TaskStore: a task of a job not delivered again yet is in no queue
                known = [t for t in orphans if t in store]
                if known:
                    self.withdrawn += self.gm.withdraw(known)
                self.on_orphans(orphans)
        for tid, w in group:
            self.unplace(tid)
            recent[tid] = w
        # a run believed lost at an LM's takeover that ended after all: its copy requested again must not run.
        # Only a task whose description this process holds can wait in a queue (found by the deterministic
        # simulation, seed 108345: a placed task of a job this GM had let go)
        held: Any = self.gm.tasks  # a TaskStore
        self.withdrawn += self.gm.withdraw(tid for tid, _w in group if tid in held)
        while len(recent) > RECENT:
            recent.popitem(last=False)
        if len(group) == len(msg.group):
            return msg
        self.dropped_completions += len(msg.group) - len(group)
        return TasksFinished(group) if group else None

    def _lost(self, _dst: Any, msg: TaskLost) -> TaskLost | None:
        worker = self.placed.get(msg.tid)
        if worker is None or worker != self.order[msg.p][msg.pos]:
            self.dropped_losses += 1  # completed already, or already relaunched elsewhere
            return None
        sent = self.sent_at.get(msg.tid, 0.0)
        if msg.sent and sent and msg.sent != sent:
            # the loss of an earlier run (its request sent before this one), late: this run goes on (found by the
            # deterministic simulation: an LM's loss notice held back by its broker reconnection)
            self.dropped_losses += 1
            return None
        self.unplace(msg.tid)
        run, local = split_id(msg.tid)
        self.emit(run, (LOST, local, self.rt.now(), worker))
        self.losses_recorded([msg.tid])
        return msg

    def _preempted(self, _dst: Any, msg: TaskPreempted) -> TaskPreempted | None:
        """A preemption notice applies once (the broker may deliver it again)."""
        if self.placed.get(msg.tid) != self.order[msg.p][msg.pos]:
            self.dropped_losses += 1
            return None
        self.unplace(msg.tid)
        return msg

    def lost_at_takeover(self, lm: int, running: set[int], since: float, exclude: set[int]) -> list[int]:
        """An LM process took over at ``since`` and runs ``running``: this GM's tasks placed on that LM before
        then and not among them (nor in ``exclude``, requests in doubt) were lost with the LM's old process's
        knowledge — their runs ended record-wise here, and the caller requests them again."""
        lm_of, where, now = self.gm.layout.lm_of, self.gm.layout.where, self.rt.now()
        held = self.held
        lost = [tid for tid, w in self.placed.items()
                if lm_of[where[w][0]] == lm and tid not in running and tid not in exclude and tid not in held
                and self.sent_at.get(tid, 0.0) < since]
        for tid in lost:
            worker = self.unplace(tid)
            run, local = split_id(tid)
            self.emit(run, (LOST, local, now, worker))
        self.losses_recorded(lost)
        return lost

    def placed_under_older(self, lm: int, incarnation: int, keep: set[int]) -> list[tuple[int, int, int]]:
        """This GM's requests to LM ``lm`` standing now (``(tid, p, pos)``), placed while it knew only a process of
        that LM older than ``incarnation``, except the tasks in ``keep``."""
        lm_of, where, under = self.gm.layout.lm_of, self.gm.layout.where, self.placed_under
        out = []
        for tid, w in self.placed.items():
            p, pos = where[w]
            if lm_of[p] == lm and under.get(tid, 0) < incarnation and tid not in keep and tid not in self.held:
                out.append((tid, p, pos))
        return out

    def verify_ends(self, group: list[tuple[int, int]], runs: list[tuple[float, float, dict]],
                    launches: list[int] | None = None) -> list[tuple[int, int]]:
        """Ends an LM could not vouch for (:class:`~.messages.VerifyEnds`): those of tasks this GM placed on
        that worker are recorded here (``finished``) and returned, to be completed; the rest are dropped.

        A run launched by an LM process earlier than the one this GM knew of when it placed the task (a launch
        id carries its LM process's incarnation) is an earlier run's: its task, counted lost at a takeover, was
        requested again onto the same worker (found by the deterministic simulation, seed 3543).

        An end of a task this process knows nothing of (it restarted, and the task's job has not come back
        yet) cannot be judged here: it goes to ``on_unjudged``, which keeps it until the job's resolution can."""
        accepted = []
        unjudged = []
        under = self.placed_under
        for (tid, w), (started, ended, outcome), launch in zip(group, runs, launches or [0] * len(group), strict=True):
            if self.placed.get(tid) == w and (not launch or launch >> 32 >= under.get(tid, 0)):
                accepted.append((tid, w))
                run, local = split_id(tid)
                self.emit(run, (FINISHED, local, ended, {**outcome, "worker": w, "started_at": started}))
            elif self.recent.get(tid) == w:
                # completed here already: the LM that relayed it died before its own record of the end reached
                # the broker, and the host's report came again — the same run's end, recorded again (the client
                # counts a repeat of the same run once)
                self.ends_repeated += 1
                run, local = split_id(tid)
                self.emit(run, (FINISHED, local, ended, {**outcome, "worker": w, "started_at": started}))
            elif tid not in self.placed and tid not in self.recent and self.on_unjudged is not None:
                unjudged.append((tid, w, (started, ended, outcome)))
            else:
                self.dropped_completions += 1
        if unjudged and self.on_unjudged is not None:
            self.on_unjudged(unjudged)
        return accepted

    def counters(self) -> dict[str, int]:
        return {"completions_dropped": self.dropped_completions, "losses_dropped": self.dropped_losses, "ends_recorded_again": self.ends_repeated,
                "requests_withdrawn": self.withdrawn, "rejections_dropped": self.stale_rejections,
                "requests_held_for_loss_records": self.requests_held}
