"""Cancelling a job on a real cluster (``schedlab job cancel``): the GM's side, :class:`JobCancels`.

The path is durable end to end, like a submission's:

* **The request.** The client publishes :class:`~.messages.CancelJob` (persistent, confirmed by the broker)
  to the job's GM's *completion log* (``<name>.done.<g>``, :class:`~.recovery.DurableJobs`), then appends
  ``cancel`` to the job ledger (:mod:`~.ledger`). Why the completion log rather than the submission queue: a
  GM reads its log before its jobs at every start, so a GM that restarts knows the job is cancelled before the
  job is delivered to it again — none of its tasks is queued, let alone launched, meanwhile.
* **Holding it.** The GM keeps that message unacknowledged until the job is settled — every task ended — then
  appends ``cancelled`` to the ledger and acknowledges the job and the request together. A GM killed in
  between does it all again; ledger readers keep the first record.
* **Settling.** Queued tasks are taken out of the GM's queue (``GlobalMaster.withdraw``) and end at once as
  ``cancelled`` (a finished and a reported record, so an attached client's run closes). A launch request
  naming a task of a cancelled job never leaves the GM: the task is taken out of it, its worker goes back to
  the view (waiting tasks are matched on it), and it ends the same way. Placed tasks get :class:`~.messages.CancelRuns` through their LM to their
  worker host, which stops the run and reports its end, status ``cancelled``, through the usual end path (the
  LM frees the worker, the GM completes the task); a host named a run before its launch came ends it at once
  when it comes. Every :data:`SWEEP` seconds, while the job has tasks left, the GM looks again (a task
  requested anew after a loss or a recovery, a ``CancelRuns`` lost with an LM that restarted: it is sent again;
  a host takes it twice as once).
* **Racing completion.** Whichever reaches the GM first wins: a job whose last task completed before the
  request came is done (its ``ended`` record is in the ledger; the request is acknowledged and changes
  nothing); once the request came, the job ends ``cancelled`` even if its running tasks complete before
  their kill lands (they ran once, their outcomes are theirs).
* **A request for a job the GM does not have open**: kept until the GM's jobs queue has been drained (the
  job may be on its way) and :data:`WAIT` seconds have passed, then acknowledged — the job ended under an
  earlier process of this GM. A request for a job this process finished is acknowledged at once.

Sans-IO like the rest of the GM: timers and messages go through the runtime, so the deterministic
simulation runs this code as the services do.
"""

from __future__ import annotations

from typing import Any

from schedlab.schedulers.megha.gm import GlobalMaster, lm_address
from schedlab.schedulers.megha.messages import LaunchRequest
from schedlab.services.failures import GMPlacements
from schedlab.services.messages import CancelRuns
from schedlab.services.records import FINISHED, REPORTED, Emit
from schedlab.services.recovery import DurableJobs
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.tasks import TaskStore, split_id
from schedlab.services.worker import CANCELLED

SWEEP = 1.0  # seconds between two looks at the cancelled jobs still open
WAIT = 10.0  # seconds a request for a job not open here is kept once the jobs queue is drained


class JobCancels:
    """A GM's cancelled jobs: the requests it holds, and the settling of each job (see the module docstring).

    ``ack_log(handle)`` acknowledges a request's broker message (once what was emitted before it is in the
    broker)."""

    def __init__(self, rt: ServiceRuntime, gm: GlobalMaster, jobs: DurableJobs, placements: GMPlacements, store: TaskStore,
                 emit: Emit, ack_log: Any) -> None:
        self.rt = rt
        self.gm = gm
        self.jobs = jobs
        self.placements = placements
        self.store = store
        self.emit = emit
        self.ack_log = ack_log
        self.requested: dict[int, list[Any]] = {}  # jid -> the broker handles of its requests (held until settled)
        self.since: dict[int, float] = {}  # jid -> when its first request came
        self.dropped: dict[int, int] = {}  # jid -> its tasks ended without running
        self._timer: Any = None
        self.jobs_cancelled = 0
        self.tasks_dropped = 0
        self.runs_cancelled = 0  # CancelRuns items sent (a run named again counts again)
        self.requests_of_ended_jobs = 0
        jobs.hold = self.requested.__contains__
        jobs.on_open = self._opened
        rt.before_send(LaunchRequest, self._screen)

    def request(self, jid: int, handle: Any) -> None:
        """A :class:`~.messages.CancelJob` from the completion log."""
        if jid in self.jobs.finished:  # ended (or cancelled) under this process already
            self.requests_of_ended_jobs += 1
            self.ack_log(handle)
            return
        self.requested.setdefault(jid, []).append(handle)
        self.since.setdefault(jid, self.rt.now())
        if jid in self.jobs.open:
            self._settle(jid)
        self._arm()

    def settled(self, jid: int) -> dict[str, Any] | None:
        """The job's last task ended: if it was cancelled, its requests are acknowledged and what its ``cancelled``
        record says is returned (None: it was not cancelled)."""
        handles = self.requested.pop(jid, None)
        if handles is None:
            return None
        self.since.pop(jid, None)
        self.jobs_cancelled += 1
        for h in handles:
            self.ack_log(h)
        return {"dropped": self.dropped.pop(jid, 0)}

    # -- settling -----------------------------------------------------------------------------------
    def _opened(self, jid: int, fresh: bool) -> None:
        if jid not in self.requested:
            return
        if fresh:  # its tasks were never queued (DurableJobs.hold): they end now
            self._drop(jid, self.jobs.open_tasks(jid))
        else:
            self._settle(jid)

    def _settle(self, jid: int) -> None:
        """Queued tasks end now; placed ones are stopped on their hosts; the rest (being matched, being
        resolved after a restart) are looked at again at the next sweep."""
        placed, where, lm_of = self.placements.placed, self.gm.layout.where, self.gm.layout.lm_of
        per_lm: dict[int, list[tuple[int, int]]] = {}
        queued = []
        for t in self.jobs.open_tasks(jid):
            w = placed.get(t)
            if w is not None:
                per_lm.setdefault(lm_of[where[w][0]], []).append((t, w))
            elif self.gm.withdraw((t,)):
                queued.append(t)
        for lm, items in per_lm.items():
            self.runs_cancelled += len(items)
            self.rt.send(lm_address(lm), CancelRuns(self.gm.g, items))
        self._drop(jid, queued)

    def _drop(self, jid: int, tids: list[int]) -> None:
        """These tasks of cancelled job ``jid`` end without running."""
        tids = [t for t in tids if self.jobs.job_of.get(t) == jid]  # not ended meanwhile
        if not tids:
            return
        now = self.rt.now()
        for t in tids:
            run, local = split_id(t)
            self.emit(run, (FINISHED, local, now, {"status": CANCELLED, "worker": -1, "launched": False}))
            self.emit(run, (REPORTED, local, now, -1))
        self.dropped[jid] = self.dropped.get(jid, 0) + len(tids)
        self.tasks_dropped += len(tids)
        self.jobs.complete(tids)  # the last one settles the job (DurableJobs.on_done)
        self.store.forget(tids)

    def _screen(self, _dst: Any, msg: LaunchRequest) -> LaunchRequest | None:
        """A launch request naming tasks of a cancelled job: those are taken out (never launched), their workers
        given back to the view (the placements screen, which ran first, marked them placed: undone)."""
        if not self.requested:
            return msg
        job_of, requested = self.jobs.job_of, self.requested
        stop = [it for it in msg.items if job_of.get(it[0]) in requested]
        if not stop:
            return msg
        placed = self.placements.placed
        per_job: dict[int, list[int]] = {}
        for tid, _p, _pos in stop:
            if tid in placed:
                self.placements.unplace(tid)
            per_job.setdefault(job_of[tid], []).append(tid)
        # after this send (never inside the GM's dispatch): the workers go back to the view and waiting tasks are
        # matched on them (found by the GM-restart test: a later job left waiting beside free workers); then the
        # tasks end, which may settle their jobs
        self.rt.call_soon(self.gm.release, stop)
        for jid, tids in per_job.items():
            self.rt.call_soon(self._drop, jid, tids)
        rest = [it for it in msg.items if job_of.get(it[0]) not in requested]
        return LaunchRequest(msg.gm, rest) if rest else None

    def _arm(self) -> None:
        if self._timer is None and self.requested:
            self._timer = self.rt.call_later(SWEEP, self._sweep)

    def _sweep(self) -> None:
        self._timer = None
        now = self.rt.now()
        for jid in list(self.requested):
            if jid in self.jobs.open:
                self._settle(jid)
            elif self.jobs.jobs_drained and now - self.since[jid] >= WAIT:  # not in this GM's queue: it ended before
                self.requests_of_ended_jobs += 1
                self.since.pop(jid, None)
                for h in self.requested.pop(jid):
                    self.ack_log(h)
        self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def counters(self) -> dict[str, int]:
        return {"jobs_cancelled": self.jobs_cancelled, "cancel_tasks_dropped": self.tasks_dropped, "cancel_runs_sent": self.runs_cancelled,
                "cancel_requests_of_ended_jobs": self.requests_of_ended_jobs, "jobs_being_cancelled": len(self.requested)}
