"""A worker host: the workers of one machine, running the tasks their LM launched, for real.

It speaks the worker protocol of :mod:`schedlab.workers.protocol` like the
simulated :class:`~schedlab.workers.simulated.WorkerPool`: a
:class:`~schedlab.workers.protocol.LaunchBatch` (or ``LaunchTask``) starts
tasks, and each task's end is answered with
:class:`~schedlab.workers.protocol.TasksFinished` to every ``reply_to``
address (in Megha: the LM and the task's GM — the third hop of the papers'
3·ND). Tasks that end in the same turn of the event loop and answer the same
addresses travel in one message, as simultaneous ends do in the simulator.

What a task runs is its spec (:class:`~schedlab.services.execution.TaskSpec`):
a sleep, the Megha paper's synthetic task that burns the CPU it asked for, or
a command. A task with no spec sleeps for its duration — the trace replay's
default, which measures the scheduler rather than the machine. Sleeps are
loop timers, not processes, so one host can run thousands.

A cancelled job's runs (:class:`~schedlab.services.messages.CancelRuns`, :mod:`~.cancel`) are stopped and
reported as ended with status ``cancelled`` through the usual end path (the LM frees the worker, the GM
completes the task); a run named before its launch came is remembered, and when the launch comes it ends at
once, never started.

Like the simulated pool, the host is a referee: a task sent to a worker that
lacks its constraints or the room for it (slot mode: a busy worker;
multi-resource mode: a request above the free vector) is refused and counted
(``refused_launches``) — with LMs validating against their true state, it
never happens, and the tests check that it does not. Should it happen all
the same (a wrong truth), the refusal goes to the LM like an end, with status
``refused``: the LM hands the task back and its GM requests it again, so the
task still runs once instead of waiting for ever.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Iterable
from typing import Any

from schedlab.cluster.model import Cluster
from schedlab.services.execution import start_task
from schedlab.services.messages import CancelRuns, HostFinished, KillTask, TaskKilled
from schedlab.services.records import FINISHED, PREEMPTED, STARTED, Emit
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.tasks import RecentIds, TaskStore, split_id
from schedlab.services.timings import Histogram, component_histograms
from schedlab.sim.runtime import Component
from schedlab.workers.protocol import LaunchBatch, LaunchTask, TaskFinished

log = logging.getLogger("schedlab.services.worker")
EPS = 1e-9
_OK = {"status": "ok"}
ENDS_KEPT = 4096  # the last runs ended through an LM a host remembers (for an LM taking over; see recent_ends)
CANCELLED = "cancelled"  # the status of a run stopped, or never started, because its job was cancelled
REFUSED = "refused"  # the status of a launch this host refused (never started): its LM hands the task back


class WorkerHost(Component):
    """Some workers of the data center (by global worker id) and the tasks running on them."""

    def __init__(self, address: Any, runtime: ServiceRuntime, cluster: Cluster, workers: Iterable[int], tasks: TaskStore, emit: Emit,
                 forget_finished: bool = False) -> None:
        super().__init__(address, runtime)
        self.forget_finished = forget_finished  # a host of its own forgets a task once done; an embedded one shares the store
        self.rt: ServiceRuntime = runtime
        self.cluster = cluster
        self.tasks = tasks
        self.emit = emit
        self.workers = set(workers)
        self.masks = cluster.machine_masks
        self.slot_mode = cluster.slot_mode
        self.running: dict[int, int] = {}  # slot mode: worker -> tid
        self.free: dict[int, list[float]] = {}
        if not self.slot_mode:
            assert cluster.capacity is not None
            self.free = {w: [float(x) for x in cluster.capacity[w]] for w in self.workers}
        self.active: dict[int, tuple[int, tuple, Any]] = {}  # tid -> (worker, reply_to, timer or asyncio task)
        self.launch_of: dict[int, int] = {}  # tid -> the id of the launch that started its run (a host process: its LM's)
        # (tid, reply_to) of the last runs ended here through an LM (bounded): told to an LM process taking over,
        # whose GMs then wait for those ends rather than count the tasks lost (:class:`~.messages.HostReport`)
        self.recent_ends: deque[tuple[int, tuple, float]] = deque(maxlen=ENDS_KEPT)  # (tid, reply_to, request sent)
        self.sent_of: dict[int, float] = {}  # tid -> the first send time of the GM's request that started its run
        self.current_sent = 0.0  # set by the host process while a launch is delivered (0: unknown)
        self.current_launch = 0  # set by the host process while a launch is delivered (0: unknown)
        # reply_to -> (tid, worker, started, ended, outcome, launch id, request's first send time)
        self._outbox: dict[tuple, list[tuple]] = {}
        self._flush_scheduled = False
        self.started = 0
        self.finished = 0
        self.failed = 0  # runs that ended with another status than ok (a non-zero exit, an error, a timeout)
        self.allocation = Histogram()  # start − the job's arrival at its GM, where the launch carried it (timings)
        self.components = component_histograms()  # start − the LM's last mark: communication (timings)
        self.refused_launches = 0
        self.duplicate_launches = 0
        self.superseded = 0  # runs stopped by a new launch of their task
        self.preempted = 0
        self.started_at: dict[int, float] = {}
        self.cancelled = RecentIds()  # tasks of cancelled jobs named before their launch came: they never start
        self.cancelled_runs = 0
        self._single: set[int] = set()  # tasks launched alone (LaunchTask): their end goes straight to reply_to

    def handlers(self):
        return {LaunchBatch: self._on_batch, LaunchTask: self._on_launch, KillTask: self._on_kill, CancelRuns: self._on_cancel}

    # -- launching --------------------------------------------------------------------------------
    def _on_batch(self, msg: LaunchBatch) -> None:
        for tid, worker in msg.items:
            self._start(tid, worker, msg.reply_to, batch=True)

    def _on_launch(self, msg: LaunchTask) -> None:
        self._start(msg.tid, msg.worker, (msg.reply_to,), batch=False)

    def _refuse(self, tid: int, worker: int, why: str, reply_to: tuple, batch: bool) -> None:
        self.refused_launches += 1
        log.error("refused task %d on worker %d: %s", tid, worker, why)
        if batch:  # through an LM: told like an end (never started), on the ends' ordered path
            now = self.rt.now()
            self._outbox.setdefault(reply_to, []).append((tid, worker, now, now, {"status": REFUSED, "reason": why},
                                                          self.current_launch, self.current_sent))
            if not self._flush_scheduled:
                self._flush_scheduled = True
                self.rt.call_soon(self._flush)

    def _start(self, tid: int, worker: int, reply_to: tuple, batch: bool) -> None:
        if tid in self.active:
            launch = self.launch_of.get(tid, 0)
            if not self.current_launch or not launch or launch == self.current_launch:
                self.duplicate_launches += 1  # already running here (a launch delivered again): it runs once
                return
            # a new launch of a task still running here: its LM no longer counts that run (it handed it back, or
            # lost it with this host's lease) — the run it launched now is the one, the old one stops
            self._stop(tid)
            self.superseded += 1
        if worker not in self.workers:
            self._refuse(tid, worker, "not a worker of this host", reply_to, batch)
            return
        tasks = self.tasks
        if tid not in tasks:
            self._refuse(tid, worker, "unknown task", reply_to, batch)
            return
        if tasks.mask[tid] & ~self.masks[worker]:
            self._refuse(tid, worker, f"lacks constraints {tasks.mask[tid] & ~self.masks[worker]:#x}", reply_to, batch)
            return
        if self.slot_mode:
            if worker in self.running:
                self._refuse(tid, worker, f"busy with task {self.running[worker]}", reply_to, batch)
                return
            self.running[worker] = tid
        else:
            req = tasks.request[tid] or ()
            fv = self.free[worker]
            if any(r > fv[k] + EPS for k, r in enumerate(req)):
                self._refuse(tid, worker, f"request {tuple(req)} above free {tuple(fv)}", reply_to, batch)
                return
            for k, r in enumerate(req):
                fv[k] -= r
        now = self.rt.now()
        run, local = split_id(tid)
        self.emit(run, (STARTED, local, now, worker))
        self.started_at[tid] = now
        self.started += 1
        arrival = tasks.arrival.get(tid)
        if arrival is not None:
            self.allocation.observe(now - arrival)
        marked = tasks.marked.get(tid)
        if marked is not None:
            self.components["communication"].observe(now - marked)
        spec = tasks.spec.get(tid)
        if tid in self.cancelled:  # its job was cancelled before this launch came: it ends at once, never run
            handle: Any = self.rt.call_soon(self._finish, tid, {"status": CANCELLED}, batch)
            self.cancelled_runs += 1
        elif spec is None or spec.kind == "sleep":
            seconds = tasks.duration[tid] if spec is None else spec.duration
            handle = self.rt.call_later(seconds, self._finish, tid, _OK, batch)
        else:
            handle = self.rt.spawn(self._execute(tid, spec, batch), f"task {tid}")
        self.active[tid] = (worker, reply_to, handle)
        if not batch:
            self._single.add(tid)
        if self.current_launch:
            self.launch_of[tid] = self.current_launch
        if self.current_sent:
            self.sent_of[tid] = self.current_sent

    async def _execute(self, tid: int, spec: Any, batch: bool) -> None:
        """Run the task; a command that fails runs again on this worker, up to ``spec.retries`` more times (its
        outcome is the last attempt's, with ``attempts``). A kill (preemption, a lost lease) stops the attempts."""
        attempts, retries = 0, int(getattr(spec, "retries", 0))
        while True:
            attempts += 1
            try:
                outcome = await start_task(spec).wait()
                result = dataclasses.asdict(outcome)
            except Exception as e:  # the task's own failure is its outcome, never the host's
                result = {"status": "error", "error": f"{type(e).__name__}: {e}"}
            if result.get("status") == "ok" or attempts > retries:
                break
        if retries:
            result["attempts"] = attempts
        self._finish(tid, result, batch)

    # -- finishing --------------------------------------------------------------------------------
    def _finish(self, tid: int, outcome: dict, batch: bool) -> None:
        entry = self.active.pop(tid, None)
        if entry is None:
            return
        worker, reply_to, _handle = entry
        self._release(tid, worker)
        self._single.discard(tid)
        self.finished += 1
        if outcome.get("status", "ok") != "ok":
            self.failed += 1
        launch = self.launch_of.pop(tid, 0)
        sent = self.sent_of.pop(tid, 0.0)
        started = self.started_at.pop(tid, 0.0)
        now = self.rt.now()
        if self.forget_finished:
            self.tasks.forget((tid,))
        if not batch:
            run, local = split_id(tid)
            self.emit(run, (FINISHED, local, now, outcome))
            for addr in reply_to:
                self.rt.send(addr, TaskFinished(tid, worker))
            return
        # the LM that launched it records the end and tells the GM (HostFinished): one witness
        self.recent_ends.append((tid, reply_to, sent))
        self._outbox.setdefault(reply_to, []).append((tid, worker, started, now, outcome, launch, sent))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.rt.call_soon(self._flush)

    def _release(self, tid: int, worker: int) -> None:
        if self.slot_mode:
            if self.running.get(worker) == tid:
                del self.running[worker]
        else:
            fv = self.free[worker]
            for k, r in enumerate(self.tasks.request[tid] or ()):
                fv[k] += r

    def flush_ends(self) -> None:
        """Hand the ends waiting in the outbox to the transport now (not at the loop's next turn)."""
        if self._flush_scheduled:
            self._flush()

    def _flush(self) -> None:
        self._flush_scheduled = False
        out, self._outbox = self._outbox, {}
        for reply_to, ended in out.items():
            group = [(tid, w) for tid, w, *_x in ended]
            runs = [(s, e, o) for _t, _w, s, e, o, *_x in ended]
            self.rt.send(reply_to[0], HostFinished(group, reply_to, runs, [x[5] for x in ended], sent=[x[6] for x in ended]))

    # -- control ----------------------------------------------------------------------------------
    def _on_kill(self, msg: KillTask) -> None:
        """A preemption (fair sharing): kill the task if it still runs, and tell the LM which it was."""
        entry = self.active.get(msg.tid)
        killed = (entry is not None and entry[0] == msg.worker and (not msg.launch or self.launch_of.get(msg.tid) == msg.launch)
                  and self.kill(msg.tid))
        if killed:
            self.preempted += 1
            run, local = split_id(msg.tid)
            self.emit(run, (PREEMPTED, local, self.rt.now(), msg.worker))
        self.rt.send(msg.reply_to, TaskKilled(msg.tid, killed))

    def _on_cancel(self, msg: CancelRuns) -> None:
        """Runs of a cancelled job: each stops and ends as ``cancelled`` (a command's processes are killed);
        one not launched here yet is remembered. Named again (the GM repeats itself until the ends come): no-op."""
        for tid, worker in msg.items:
            entry = self.active.get(tid)
            if entry is None:
                self.cancelled.add(tid)
            elif entry[0] == worker:
                entry[2].cancel()  # a sleep's timer, or the coroutine running a command (cancelling it kills it)
                self.cancelled_runs += 1
                self._finish(tid, {"status": CANCELLED}, tid not in self._single)

    def kill(self, tid: int) -> bool:
        """Stop a running task without reporting it (a preemption or a shutdown)."""
        if not self._stop(tid):
            return False
        if self.forget_finished:
            self.tasks.forget((tid,))
        return True

    def _stop(self, tid: int) -> bool:
        entry = self.active.pop(tid, None)
        if entry is None:
            return False
        worker, _reply_to, handle = entry
        handle.cancel()
        self._release(tid, worker)
        self._single.discard(tid)
        self.started_at.pop(tid, None)
        self.launch_of.pop(tid, None)
        self.sent_of.pop(tid, None)
        return True

    def stop(self) -> None:
        for tid in list(self.active):
            self.kill(tid)

    def status(self) -> dict[str, int]:
        return {"workers": len(self.workers), "running": len(self.active), "started": self.started,
                "finished": self.finished, "failed": self.failed, "preempted": self.preempted, "refused_launches": self.refused_launches, "duplicate_launches": self.duplicate_launches,
                "cancelled_runs": self.cancelled_runs}
