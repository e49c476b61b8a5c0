"""A Global Master that crashes and restarts: its view from the LMs, its jobs from the broker, no task run twice.

Megha paper, Section IV (last paragraphs): GMs are stateless — a GM's view is
rebuilt from the LMs, which hold the truth. Here every GM process starts that
way, whether the cluster is new or the GM was SIGKILLed a second ago:

* **View.** The GM starts with nothing available (``GlobalMaster.view_unknown``)
  and asks every LM to :class:`~.messages.Recover` it (HTTP). Each LM answers
  with :class:`~.messages.Recovered`: a full snapshot of its partitions (the
  GM's pending delta restarts from it), the tasks it runs for that GM (with
  their descriptions) and, with fair sharing, every task it runs as holdings.
  The GM folds the snapshot into its view and holds its running tasks again
  (``GlobalMaster.recover``; :class:`~.failures.GMPlacements` learns where they
  run, so their completions, losses and preemptions apply as before). The
  answer restarts the ordered LM → GM link at its number: whatever the LM sent
  the GM's predecessor, still in the GM's queue, is dropped — the snapshot
  already contains it. Once every LM answered (or after
  :data:`RECOVER_WAIT` seconds, the silent LMs being asked again every
  :data:`ASK_AGAIN` seconds and their partitions unavailable until they answer)
  the GM starts consuming its queues.
* **Jobs** (:class:`DurableJobs`). Submission goes through the GM's durable
  queue, and a job's message is **acknowledged when the last of its tasks
  completes** — later than "once its tasks are placed": a task that is placed,
  then lost with its worker or preempted while its GM is down, would otherwise
  be in nobody's hands (its ``TaskLost`` went to the dead GM). So every job a
  dead GM had not finished comes back to its successor, marked *redelivered*
  by RabbitMQ.
* **What a redelivered job's tasks became** is the LMs' truth, asked with
  :class:`~.messages.Resolve`: a task the GM holds again from a ``Recovered``
  is running — it completes as usual; a task an LM reports completed is done
  (the GM reports its completion to the client, since the dead GM may not
  have); any other task is requested again, after a ``lost`` record that ends
  whatever run it had. An LM knows the tasks it completed from the last
  2¹⁸ ends it relayed (bounded memory: a task completed that long before its
  job is redelivered would run again). The question waits until no request
  of a predecessor can still take effect (:data:`~.links.REQUEST_FRESH` +
  :data:`~.links.FENCE_MARGIN` after this process started: 4 s): an answer
  given earlier could be overtaken by such a request still on the wire.

Choices where the paper is silent: every GM start is a recovery (one code
path, exercised by every test and every ``cluster up``); a dead GM's jobs wait
in its durable queue until it restarts (``cluster up`` restarts nothing by
itself — a supervisor, ``schedlab chaos`` or the operator does); no other GM
takes them over, since each GM serves its own users' queues. A redelivered
job waits for every LM's answer, so while an LM is unreachable such jobs wait
too.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from schedlab.schedulers.megha.gm import GlobalMaster, lm_address
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.services.failures import GMPlacements
from schedlab.services.links import FENCE_MARGIN, REQUEST_FRESH, Questions
from schedlab.services.messages import (
    HoldingsReport,
    HostReport,
    HostState,
    KillTask,
    Recover,
    Recovered,
    Resolve,
    Resolved,
    StaleRuns,
    SubmitJob,
    VerifyEnds,
)
from schedlab.services.records import FINISHED, LOST, RECOVERED_REPORT, REPORTED, Emit
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.tasks import RecentIds, TaskStore, split_id
from schedlab.workers.protocol import POOL_ADDRESS, TasksFinished

log = logging.getLogger("schedlab.services.recovery")

RECOVER_WAIT = 5.0  # seconds a starting GM waits for every LM's state before it starts on what it has
ASK_AGAIN = 2.0  # seconds between questions to an LM that has not answered


class GMRecovery:
    """A GM process's start: every LM's state, then its queues (see the module)."""

    def __init__(self, rt: ServiceRuntime, gm: GlobalMaster, placements: GMPlacements, num_lms: int, fair: Any = None) -> None:
        self.rt = rt
        self.gm = gm
        self.placements = placements
        self.fair = fair
        self.missing = set(range(num_lms))
        self.started = 0.0
        self.recovered_in: float | None = None  # seconds from the start until every LM had answered
        self.adopted = 0  # running tasks held again from the LMs' answers
        self.answers = 0
        self._done = rt.event()
        self._timer: Any = None
        self.in_doubt: Callable[[int], set[int]] = lambda _lm: set()  # tasks whose request to an LM is in doubt (links)
        # doubt(lm, items): requests that may have reached an LM's old process, settled as in doubt (links)
        self.doubt: Callable[[int, list[tuple[int, int, int]]], None] | None = None
        self.lost_at_takeovers = 0
        self.takeovers_seen = 0
        # barrier(): returns once everything in this GM's queue now has been delivered (None: nothing to wait for)
        self.barrier: Callable[[], Awaitable[None]] | None = None
        self.takeover_barriers = 0
        self.copies_withdrawn = 0
        self.stale_runs = 0
        rt.add_handler(gm.address, Recovered, self._on_recovered)
        rt.add_handler(gm.address, VerifyEnds, self._on_verify)

    async def run(self, wait: float = RECOVER_WAIT) -> None:
        """Ask every LM; return once all answered, or after ``wait`` seconds (the rest are asked again)."""
        self.started = self.rt.now()
        self.gm.view_unknown()
        self._ask()
        if not await self.rt.wait(self._done, wait):
            log.warning("GM %d: no state yet from LM(s) %s after %.0f s; starting without their partitions",
                        self.gm.g, ", ".join(map(str, sorted(self.missing))), wait)

    def ask_again(self, i: int) -> None:
        """LM ``i`` stopped answering: ask for its state again until it answers (which resumes it in the view)."""
        self.missing.add(i)
        if self._timer is None:
            self._ask()

    def _ask(self) -> None:
        for i in sorted(self.missing):
            self.rt.send(lm_address(i), Recover(self.gm.g))
        self._timer = self.rt.call_later(ASK_AGAIN, self._ask) if self.missing else None

    def _on_recovered(self, msg: Recovered) -> None:
        """Every answer is applied (an LM asked twice answers twice; each snapshot is that LM's whole truth).

        The first ``Recovered`` of an LM process — its announcement, or an answer that overtook it — tells what
        the process did not find running: this GM's tasks placed there before it took over and not in
        ``running`` are lost. Only the first: a later one of the same process (the announcement, late, after
        an answer) would count as lost tasks the process took on since (found by the deterministic simulation).

        The losses are counted only once this GM has read what its queue holds now (``barrier``): an end the
        old process relayed before it died is in that queue, and an answer by HTTP, or a slow link to the
        broker, brings the takeover first. The new process cannot tell of it: the old one had its host's end
        acknowledged once the relay was in the broker, and the host may not answer the takeover in time (found
        by the deterministic simulation, seed 2209162: a relay held 6 s by a cut, then 4 s more on the GM's slow
        link; the task counted lost 33 ms before its end arrived, and run again)."""
        self.answers += 1
        incarnations = self.placements.incarnations
        before = incarnations.get(msg.lm)
        first = before is None or msg.incarnation > before
        if first:
            incarnations[msg.lm] = msg.incarnation
        if first and msg.since:  # an LM process that took over: what it did not find running is lost
            self.takeovers_seen += before is not None
            # a task the process found at its start, running or lately ended, is not lost, though not running
            # now: its end may still be in this GM's queue behind this message, which may be an HTTP answer
            # (found by the deterministic simulation, seeds 104129 and 105420)
            sent_at = self.placements.sent_at
            # the run of this GM's current request (see Recovered); either stamp unknown (0: a task held again from
            # an LM's state has none here) protects it, as before stamps (found by the simulation, seed 307230)
            found = {t for t, s in zip(msg.found, msg.found_sent or [0.0] * len(msg.found), strict=True)
                     if not s or not sent_at.get(t) or s == sent_at.get(t)}
            keep = {t for t, _p, _pos in msg.running} | self.in_doubt(msg.lm) | found
            if self.barrier is None:
                self._takeover_losses(msg.lm, keep, msg.since)
            else:
                self.rt.spawn(self._losses_after_barrier(msg.lm, keep, msg.since), f"losses at LM {msg.lm}'s takeover")
            # requested since the process started, but under an older one: with a standby elsewhere the request
            # may have reached the old process, which may have answered and been fenced off by the hosts — in
            # doubt, settled by asking this one once the request is too old to act on (found by the simulation)
            late = self.placements.placed_under_older(msg.lm, msg.incarnation, keep)
            if late and before is not None and self.doubt is not None:
                self.doubt(msg.lm, late)
        # a task the LM runs for this GM is not requested again: a copy waiting in the queue — its run counted lost
        # by the LM's old process (a host cut off past its lease), its new request rejected and queued — is taken
        # out before the snapshot frees workers to match it on (found by a crafted schedule of the deterministic
        # simulation: the copy ran beside the adopted run, the placement followed the adopted one, and the copy's
        # end was dropped — the task never completed)
        running, running_sent = msg.running, msg.running_sent
        # a run the LM's process adopted from its host after its old process counted it lost — a host cut off past
        # its lease — whose task this GM has placed elsewhere since, or completed: not this GM's, and the LM stops it
        # (found by a crafted schedule of the deterministic simulation with 8 s tasks: the adopted run moved the
        # task's placement back to it, both runs ended, and each end was recorded)
        stale = self.placements.stale(running)
        if stale:
            order, gone = self.placements.order, set(stale)
            self.rt.send(lm_address(msg.lm), StaleRuns(self.gm.g, [(running[k][0], order[running[k][1]][running[k][2]]) for k in stale]))
            self.stale_runs += len(stale)
            running_sent = [s for k, s in enumerate(running_sent) if k not in gone] if running_sent else running_sent
            running = [r for k, r in enumerate(running) if k not in gone]
        store: Any = self.gm.tasks  # a TaskStore: a task of a job not delivered again yet is in no queue
        held = [t for t, _p, _pos in running if t in store]
        if held:
            self.copies_withdrawn += self.gm.withdraw(held)
        self.gm.recover(msg.update, running)
        self.placements.adopt(running, running_sent)
        if self.fair is not None and msg.holdings:
            self.fair.apply_report(HoldingsReport(msg.lm, msg.holdings))
        if msg.lm in self.missing:
            self.missing.discard(msg.lm)
            self.adopted += len(msg.running)
            if not self.missing and not self._done.is_set():
                self.recovered_in = self.rt.now() - self.started
                self._done.set()
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                log.info("GM %d recovered from every LM in %.3f s (%d running task(s) held again)", self.gm.g,
                         self.recovered_in, self.adopted)

    async def _losses_after_barrier(self, lm: int, keep: set[int], since: float) -> None:
        assert self.barrier is not None
        self.takeover_barriers += 1
        await self.barrier()
        self._takeover_losses(lm, keep, since)

    def _takeover_losses(self, lm: int, keep: set[int], since: float) -> None:
        """This GM's tasks placed on LM ``lm`` before its process took over at ``since``, still placed there and
        not in ``keep``: lost, requested again (those that ended meanwhile are placed no more)."""
        lost = self.placements.lost_at_takeover(lm, keep, since, set())
        self.lost_at_takeovers += len(lost)
        if lost:
            log.warning("GM %d: LM %d took over without %d of this GM's task(s): requested again", self.gm.g, lm, len(lost))
            self.gm.request_again(lost)

    def _on_verify(self, msg: VerifyEnds) -> None:
        accepted = self.placements.verify_ends(msg.group, msg.runs, msg.launches)
        if accepted:
            self.rt.deliver(self.gm.address, TasksFinished(accepted))

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def counters(self) -> dict[str, Any]:
        return {"recovered_in": self.recovered_in, "lms_missing": sorted(self.missing), "tasks_adopted": self.adopted,
                "lm_takeovers_seen": self.takeovers_seen, "tasks_lost_at_takeovers": self.lost_at_takeovers,
                "takeover_barriers": self.takeover_barriers, "queued_copies_withdrawn": self.copies_withdrawn,
                "stale_runs_named": self.stale_runs}


class DurableJobs:
    """A GM's jobs from its durable submission queue, each acknowledged when its last task completes, and its
    completion log.

    ``ack(message)`` acknowledges a job's broker message (once the run records before it are confirmed);
    ``ack_log(handle)`` one of the completion log's; ``frontend`` is the GM's
    :class:`~.gm_node.GMFrontend`, which files a job and queues its tasks.

    **The completion log.** Which tasks of an open job completed is known to
    the GM that saw the completions and to the LMs that relayed them (their
    recent ends) — both in memory. A GM that restarts, after one of those LMs
    restarted too, would find such a task neither running nor completed and run
    it again (found by the deterministic simulation: a GM killed, then an LM).
    So the GM writes each completion of an open job to a durable queue of its
    own (:class:`~.messages.Done`, ``<name>.done.<g>``) that it consumes itself,
    and acknowledges those messages only when their jobs are acknowledged. A
    restarted GM reads that log before its jobs; a task of a job delivered again
    that the log names is done.

    **Completions of unknown tasks** (``orphans``): an end relayed by an LM is
    authoritative (an LM relays only the end of the run it believes current),
    so a GM that does not know the task — it restarted, and the task's job is
    still in its queue, or only in the log — keeps it as done rather than
    dropping it.

    **Ends to verify of unknown tasks** (``to_judge``): an end an LM could not
    vouch for (:class:`~.messages.VerifyEnds`: its process that launched the run
    died with the end unpublished) is judged against the GM's placement, which a
    restarted GM does not know until the task's job comes back and every LM has
    answered about it. Such an end is kept until then: if no LM runs the task
    and none completed it, the run that ended is the task's last, and its end
    completes it — running it again would run it twice (found by the
    deterministic simulation, seed 417684). Kept ends of tasks whose job does not
    come back (acknowledged already) are dropped once the queue is drained.
    """

    def __init__(self, rt: ServiceRuntime, gm: GlobalMaster, frontend: Any, placements: GMPlacements, store: TaskStore,
                 num_lms: int, emit: Emit, ack: Any, questions: Questions, log: Any = None, ack_log: Any = None) -> None:
        self.rt = rt
        self.gm = gm
        self.frontend = frontend
        self.placements = placements
        self.store = store
        self.num_lms = num_lms
        self.emit = emit
        self.ack = ack
        self.log = log  # log(tids): write these completions to the completion log (None: no log)
        self.ack_log = ack_log
        self.open: dict[int, list] = {}  # jid -> [tasks not completed yet, the job's broker messages, its tasks]
        self.job_of: dict[int, int] = {}  # tid -> jid, for the tasks not completed yet
        self.finished = RecentIds()  # jobs acknowledged (an acknowledgement lost in a broker restart brings one back)
        self.questions = questions
        self.done_before: set[int] = set()  # tasks known completed whose job this process has not opened (yet)
        self.logged: dict[int, int] = {}  # tid -> its open job, for completed tasks of open jobs (the log keeps them)
        self.unknown: set[int] = set()  # tasks the log names whose job has not come back (yet)
        self.log_entries: dict[int, list] = {}  # log message key -> [handle, tids it waits for]
        self.log_keys: dict[int, list[int]] = {}  # tid -> keys of the log messages waiting for it
        self._log_key = 0
        self.jobs_drained = False  # every job waiting in the queue at the start has been delivered
        self.resolving: set[int] = set()  # tasks of jobs delivered again, asked about, not answered for yet
        # no LM acts on a request its predecessors sent once this is past (the fence, :mod:`~.links`: every such
        # request was first sent before this process started): an answer asked for earlier could be overtaken by a
        # request still on the wire (found by the deterministic simulation, seed 916441: a slow GM-LM link, the GM
        # crashed, its successor asked, heard "neither", requested the task elsewhere, then the old request arrived)
        self.fenced_at = rt.now() + REQUEST_FRESH + FENCE_MARGIN
        self.to_judge: dict[int, tuple[int, tuple]] = {}  # tid -> (worker, run) of an end to verify (see the class)
        # barrier(): returns once everything in this GM's queue now has been delivered (None: nothing to wait for)
        self.barrier: Callable[[], Awaitable[None]] | None = None
        self.resolution_barriers = 0
        self.tasks_found_ended = 0
        self.jobs_resolved = 0
        self.tasks_found_running = 0
        self.tasks_found_completed = 0
        self.tasks_found_in_log = 0
        self.tasks_requested_again = 0
        self.deliveries_again = 0
        self.orphans = 0
        self.on_done: Any = None  # on_done(jid): a job's last task completed (the job ledger, :mod:`~.ledger`)
        # a cancelled job (:mod:`~.cancel`): ``hold(jid)`` True keeps its tasks out of the GM's queue when it is
        # opened; ``on_open(jid, fresh)`` hears of every job opened (fresh: delivered for the first time)
        self.hold: Callable[[int], bool] | None = None
        self.on_open: Callable[[int, bool], None] | None = None
        rt.after_delivery(TasksFinished, self._finished)
        placements.on_orphans = self.orphan_completions
        placements.on_unjudged = self.unjudged_ends

    # -- the queue ----------------------------------------------------------------------------------
    def on_job(self, msg: SubmitJob, redelivered: bool, message: Any) -> None:
        jid = msg.jid
        entry = self.open.get(jid)
        if entry is not None:  # delivered again: a broker restart (the first delivery's channel is gone), or published
            # twice (the client's confirmation was lost in a broker restart): every delivery is acknowledged
            self.deliveries_again += 1
            entry[1].append(message)
            return
        if jid in self.finished:
            self.deliveries_again += 1
            self.ack(message)
            return
        self._open(msg, message)
        if not redelivered:
            held = self.hold is not None and self.hold(jid)
            self.frontend.admit(msg, submit=() if held else None)
            if self.on_open is not None:
                self.on_open(jid, True)
            return
        # a job a predecessor of this GM had not finished: each task is completed, running, or to run again
        self.frontend.admit(msg, submit=())
        self.jobs_resolved += 1
        now = self.rt.now()
        known = [t for t in msg.tids if t in self.done_before]
        for t in known:  # the completion log, or an end relayed to this process, names it
            self.done_before.discard(t)
            self.tasks_found_in_log += 1
            self._report_again(t, now)
            self._completed(t)
        placed = self.placements.placed
        ask = [t for t in msg.tids if t not in placed and t in self.job_of]
        self.tasks_found_running += sum(1 for t in msg.tids if t in placed)
        if ask:
            self.resolving.update(ask)
            wait = self.fenced_at - now
            if wait > 0:
                self.rt.call_later(wait, self._ask, ask)
            else:
                self._ask(ask)
        if self.on_open is not None:
            self.on_open(jid, False)

    def _ask(self, tids: list[int]) -> None:
        self.questions.ask(set(range(self.num_lms)), tids, lambda completed, running: self._resolved(tids, completed, running))

    def open_tasks(self, jid: int) -> list[int]:
        """The tasks of open job ``jid`` not completed yet (none if it is not open)."""
        entry = self.open.get(jid)
        return [] if entry is None else [t for t in entry[2] if t in self.job_of]

    def complete(self, tids: list[int]) -> None:
        """These tasks of open jobs are done without an end from an LM (a cancelled job's, never launched):
        counted as completions, written to the completion log."""
        done = [t for t in tids if self._completed(t)]
        if done:
            self._log(done)

    def open_jobs(self) -> list[dict[str, Any]]:
        """The jobs of this GM's queue not finished yet: tasks in all, placed (running), completed."""
        placed = self.placements.placed
        out = []
        for jid, (left, _messages, tids) in self.open.items():
            running = sum(1 for t in tids if t in placed and t in self.job_of)
            out.append({"job": jid, "tasks": len(tids), "running": running, "completed": len(tids) - left})
        return out

    def _open(self, msg: SubmitJob, message: Any) -> None:
        self.open[msg.jid] = [len(msg.tids), [message], list(msg.tids)]
        job_of = self.job_of
        for t in msg.tids:
            job_of[t] = msg.jid

    def _report_again(self, tid: int, now: float) -> None:
        run, local = split_id(tid)
        self.emit(run, (REPORTED, local, now, RECOVERED_REPORT))  # its GM died, maybe before reporting it
        self.store.forget((tid,))

    def _resolved(self, tids: list[int], completed: set[int], running: set[int]) -> None:
        """Every LM answered about a job delivered again: its tasks completed somewhere are done, those running
        somewhere are left to that LM's state (its ``Recovered``, still to come, holds them again), the rest run.

        A task no LM knows is run again only once this GM has read what its queue holds now (``barrier``): an
        LM process that took over may have found the task's end in its own queue and sent it here to verify
        before it answered — the answer, by HTTP, overtakes it (found by the deterministic simulation, seed
        2511417: the VerifyEnds came 1 s after the task was requested again, and it ran twice)."""
        placed = self.placements.placed
        if self.barrier is not None and any(t in self.job_of and t not in completed and t not in running and t not in placed
                                            and t not in self.to_judge for t in tids):
            self.resolution_barriers += 1
            self.rt.spawn(self._resolved_after_barrier(tids, completed, running), "resolution")
            return
        self._resolve(tids, completed, running)

    async def _resolved_after_barrier(self, tids: list[int], completed: set[int], running: set[int]) -> None:
        assert self.barrier is not None
        await self.barrier()
        self._resolve(tids, completed, running)

    def _resolve(self, tids: list[int], completed: set[int], running: set[int]) -> None:
        now = self.rt.now()
        again = []
        done = []
        resolving, to_judge = self.resolving, self.to_judge
        for t in tids:
            run, local = split_id(t)
            resolving.discard(t)
            ended = to_judge.pop(t, None)
            if t not in self.job_of:
                continue  # settled meanwhile (an end that came from the queue)
            if t in completed:
                self.tasks_found_completed += 1
                self._report_again(t, now)
                if self._completed(t):
                    done.append(t)
            elif t in running or t in self.placements.placed:
                # running at an LM; or placed since the question — held again from an LM's state, or requested
                # anew after a loss accepted meanwhile (found by the deterministic simulation, seed 201043)
                self.tasks_found_running += 1
            elif ended is not None:  # its last run ended, and no LM could vouch for the end (see the class)
                worker, (started, end, outcome) = ended
                self.tasks_found_ended += 1
                self.emit(run, (FINISHED, local, end, {**outcome, "worker": worker, "started_at": started}))
                self._report_again(t, now)
                if self._completed(t):
                    done.append(t)
            else:
                self.emit(run, (LOST, local, now, -1))  # a run it had, if any, ended with its worker or its GM
                again.append(t)
        if done:
            self._log(done)
        self.tasks_requested_again += len(again)
        if again:
            self.placements.losses_recorded(again)
            self.gm.withdraw(again)  # a copy queued meanwhile (a loss accepted since the question) is not queued twice
            self.gm.submit(again)

    # -- completions --------------------------------------------------------------------------------
    def _finished(self, _dst: Any, msg: TasksFinished) -> None:
        done = []
        for t, _w in msg.group:
            if self._completed(t):
                done.append(t)
            elif not self.jobs_drained and t not in self.done_before:
                # a task this process holds again (an LM's answer at its start) that ended before its job came
                # back: kept, for when it does (found by the deterministic simulation)
                self.done_before.add(t)
                done.append(t)
        if done:
            self._log(done)

    def orphan_completions(self, tids: list[int]) -> None:
        """Ends relayed by an LM of tasks this GM process does not know as placed (see the class)."""
        now = self.rt.now()
        done = []
        for t in tids:
            if t in self.job_of:  # a job delivered again, its task being resolved
                self._report_again(t, now)
                self._completed(t)
                done.append(t)
            elif t not in self.done_before:
                self.done_before.add(t)
                done.append(t)
        self.orphans += len(done)
        if done:
            self._log(done)

    def unjudged_ends(self, ends: list[tuple[int, int, tuple]]) -> None:
        """Ends to verify of tasks this GM process knows no placement of (see the class): kept while the task's
        job is being resolved, or may still come back; dropped otherwise (an end of a finished job's task)."""
        for tid, worker, run in ends:
            if tid in self.resolving or (not self.jobs_drained and tid not in self.job_of):
                self.to_judge[tid] = (worker, run)

    def _completed(self, tid: int) -> bool:
        """The task of an open job completed (True), or it was not one (False)."""
        jid = self.job_of.pop(tid, None)
        if jid is None:
            return False
        entry = self.open[jid]
        entry[0] -= 1
        if entry[0] == 0:
            del self.open[jid]
            self.finished.add(jid)
            if self.on_done is not None:
                self.on_done(jid)
            for m in entry[1]:
                self.ack(m)
            for t in entry[2]:
                self._settle(t)
        elif self.log is not None:
            self.logged[tid] = jid
        return True

    # -- the completion log -------------------------------------------------------------------------
    def _log(self, tids: list[int]) -> None:
        if self.log is not None:
            self.log(tids)

    def on_log(self, tids: list[int], redelivered: bool, handle: Any) -> None:
        """A message of the completion log: kept (unacknowledged) until the jobs of its tasks are acknowledged."""
        now = self.rt.now()
        waiting = []
        for t in tids:
            if t in self.job_of:  # a predecessor learned it: the task of this open job is done
                self.tasks_found_in_log += 1
                self._report_again(t, now)
                self._completed(t)
            if t in self.logged:  # its job is open
                waiting.append(t)
            elif not self.jobs_drained:
                # a task of a job not delivered yet (maybe never: acknowledged already, see drained)
                self.done_before.add(t)
                self.unknown.add(t)
                waiting.append(t)
        if not waiting:
            self.ack_log(handle)
            return
        self._log_key += 1
        key = self._log_key
        self.log_entries[key] = [handle, set(waiting)]
        for t in waiting:
            self.log_keys.setdefault(t, []).append(key)

    def _settle(self, tid: int) -> None:
        """The job of ``tid`` is acknowledged (or was, before this process): log messages no longer wait for it."""
        self.logged.pop(tid, None)
        self.unknown.discard(tid)
        for key in self.log_keys.pop(tid, ()):
            entry = self.log_entries.get(key)
            if entry is None:
                continue
            entry[1].discard(tid)
            if not entry[1]:
                del self.log_entries[key]
                self.ack_log(entry[0])

    def drained(self) -> None:
        """Every job that waited in the queue at the start has been delivered: what the log names of jobs that did
        not come back belongs to jobs acknowledged already."""
        self.jobs_drained = True
        for t in [t for t in self.to_judge if t not in self.resolving]:
            del self.to_judge[t]
        for t in [t for t in self.unknown if t not in self.logged]:
            self.done_before.discard(t)
            self._settle(t)

    def counters(self) -> dict[str, int]:
        return {"jobs_open": len(self.open), "jobs_resolved": self.jobs_resolved, "tasks_found_running": self.tasks_found_running,
                "tasks_found_completed": self.tasks_found_completed, "tasks_found_in_log": self.tasks_found_in_log,
                "tasks_found_ended": self.tasks_found_ended, "resolution_barriers": self.resolution_barriers,
                "tasks_requested_again": self.tasks_requested_again, "jobs_delivered_again": self.deliveries_again,
                "completions_of_unknown_tasks": self.orphans, "log_messages_held": len(self.log_entries)}


def recovered(lm: LocalMaster, gm: int, holding: Any = None, process: LMTakeover | None = None,
              sent_of: Callable[[int], float] | None = None) -> Recovered:
    """LM ``lm``'s whole truth for GM ``gm``: a snapshot, the GM's running tasks and, with fair sharing
    (``holding``: tid, p, pos -> its holdings event), every task as holdings. ``process``: the LM process's
    start (when it took over, its fencing token, and the GM's tasks it found running or lately ended).
    ``sent_of(tid)``: the first send time of the request that started the task's run here (0: unknown)."""
    update, running = lm.recovery_state(gm)
    holdings = [] if holding is None else [holding(t, p, pos) for t, (p, pos, _g) in lm.running.items()]
    running_sent = [] if sent_of is None else [sent_of(t) for t, _p, _pos in running]
    if process is None:
        return Recovered(lm.i, update, running, holdings, running_sent=running_sent)
    found = sorted(process.found.get(gm, {}).items())
    return Recovered(lm.i, update, running, holdings, process.started, process.incarnation, [t for t, _s in found],
                     [s for _t, s in found], running_sent)


class LMRecovery:
    """An LM's answers to a restarted GM: its state (:class:`Recover`) and what became of tasks (:class:`Resolve`).

    ``completed`` holds the ids of the last task ends this LM relayed (:class:`~.failures.CompletionRelay`).
    """

    def __init__(self, rt: ServiceRuntime, lm: LocalMaster, completed: RecentIds, holding: Any = None) -> None:
        self.rt = rt
        self.lm = lm
        self.completed = completed
        self.holding = holding  # fair sharing: tid, p, pos -> its holdings event
        self.process: LMTakeover | None = None  # this LM process's start: when, and its incarnation
        # after_records(fn): fn once the records emitted so far are in the broker (None: at once). An answer that
        # a task completed waits for the end's record: had this LM died with it unsent, the GM would report the
        # task done and the client never learn how it ended (found by the deterministic simulation, seed 200336)
        self.after_records: Callable[[Callable[[], None]], None] | None = None
        self.sent_of: Callable[[int], float] | None = None  # tid -> its run's request's first send time (recovered)
        self.recoveries = 0
        rt.add_handler(lm.address, Recover, self._on_recover)
        rt.add_handler(lm.address, Resolve, self._on_resolve)

    def _on_recover(self, msg: Recover) -> None:
        self.recoveries += 1
        self.rt.send(self.lm.gm_addr[msg.gm], recovered(self.lm, msg.gm, self.holding, self.process, self.sent_of))

    def _on_resolve(self, msg: Resolve) -> None:
        running, completed = self.lm.running, self.completed
        done = [t for t in msg.tids if t in completed and t not in running]
        here = [t for t in msg.tids if t in running]
        answer = Resolved(self.lm.i, msg.ask, done, here)
        # an end this process found at its start and sent the GM to verify (it could not vouch for it) leaves
        # before the answer does: the GM reads its queue before it runs again a task no LM knows (DurableJobs)
        found = self.process.found.get(msg.gm, {}) if self.process is not None else {}
        if (done or any(t in found for t in msg.tids)) and self.after_records is not None:
            self.after_records(lambda: self.rt.send(self.lm.gm_addr[msg.gm], answer))
        else:
            self.rt.send(self.lm.gm_addr[msg.gm], answer)

    def counters(self) -> dict[str, int]:
        return {"gm_recoveries_served": self.recoveries}



class LMTakeover:
    """An LM process's start: its state rebuilt from its worker hosts, then announced to every GM.

    Every LM process starts this way — the first, a restarted one, a standby
    taking over — with its port already bound (only one process can serve as
    LM *i*: the fence). It asks each of its worker hosts what it runs
    (:class:`~.messages.HostState`; from then on the host refuses launches from
    any other LM process) and holds those tasks again
    (``LocalMaster.host_back``); a host that does not answer within the lease
    is down (its workers come back empty when it is heard again, anything it
    still runs being stopped). The node then drains what waited in the LM's
    queue — ends of tasks nobody adopted go to their GM to verify
    (:class:`~.messages.VerifyEnds`) — and :meth:`announce` sends every GM a
    ``Recovered`` with the time the process started: each GM treats its tasks
    placed on this LM before then and not running here as lost, and requests
    them again — except those the hosts reported at the start, running or
    ended lately (their last :data:`~.worker.ENDS_KEPT` each): their ends,
    relayed by this process or the old one, may still be on their way to the
    GM behind this message (an HTTP answer overtakes the broker).
    """

    def __init__(self, rt: ServiceRuntime, lm: LocalMaster, monitor: Any, positions: dict[int, list[tuple[int, int]]],
                 incarnation: int, holding: Any = None) -> None:
        self.rt = rt
        self.lm = lm
        self.monitor = monitor
        self.positions = positions  # host -> its workers' (p, pos)
        self.where = lm.layout.where
        self.incarnation = incarnation
        self.holding = holding
        self.started = rt.now()
        self.waiting = set(positions)
        self.adopted = 0
        self.lost_runs_stopped = 0  # runs two hosts reported: the older launch's, stopped
        self.hosts_silent: list[int] = []
        self.rebuilt_in: float | None = None
        self._answered = rt.event()
        self.launch_of: dict[int, int] | None = None  # the LM's launch ids of its tasks: those of adopted runs are added
        self.sent_of: Callable[[int], float] | None = None  # tid -> its run's request's first send time (recovered)
        self.adopted_runs: dict[int, int] | None = None  # tid -> launch of each run adopted from the hosts (their ends: VerifyEnds)
        # gm -> {tid: sent} of its tasks the hosts reported running or lately ended (sent: the first send time of the
        # GM's request that started the run; 0: unknown)
        self.found: dict[int, dict[int, float]] = {}
        rt.add_handler(lm.address, HostReport, self._on_report)

    async def rebuild(self, wait: float) -> None:
        """Ask every host until it answers; after ``wait`` seconds the silent ones are down."""
        rt = self.rt
        self.lm.view_unknown()
        deadline = rt.now() + wait
        while self.waiting and rt.now() < deadline:
            for h in sorted(self.waiting):
                rt.send(("host", h), HostState(self.lm.i, self.incarnation))
            await rt.wait(self._answered, min(0.5, max(0.01, deadline - rt.now())))
            self._answered.clear()
        for h in sorted(self.waiting):
            self.unreachable(h)
        self.rebuilt_in = rt.now() - self.started

    def _on_report(self, msg: HostReport) -> None:
        h = msg.host
        if h not in self.waiting:
            return  # answered twice, or too late (it is down; its beacons bring it back empty)
        self.waiting.discard(h)
        where, lm = self.where, self.lm
        launch_of = self.launch_of if self.launch_of is not None else {}
        # a task another host reported running too: one of the runs was lost and its task launched again before this
        # process began (the host paused or cut off past its lease) — the newer launch is the task's run, the other
        # is stopped, by its launch (found by the deterministic simulation, seed 1701901: the lost run's launch,
        # reported second, replaced the current one's, whose end was then dropped; the task never completed)
        adopt = []
        for (tid, w, gm), launch, sent in zip(msg.running, msg.launches or [0] * len(msg.running),
                                              msg.sent or [0.0] * len(msg.running), strict=True):
            if tid in lm.running:
                kept = launch_of.get(tid, 0)
                if launch <= kept:
                    self.lost_runs_stopped += 1
                    self.rt.send(POOL_ADDRESS, KillTask(tid, w, lm.address, launch))
                    continue
                p, pos, _g = lm.running[tid]
                self.lost_runs_stopped += 1
                self.rt.send(POOL_ADDRESS, KillTask(tid, lm.layout.order[p][pos], lm.address, kept))
                lm.drop_run(tid)
            adopt.append((tid, w, gm, launch, sent))
        lm.host_back(self.positions[h], [(tid, *where[w], gm) for tid, w, gm, _l, _s in adopt])
        for tid, _w, _g, launch, _s in adopt:
            if launch and self.launch_of is not None:
                self.launch_of[tid] = launch
            if launch and self.adopted_runs is not None:
                self.adopted_runs[tid] = launch
        self.adopted += len(adopt)
        found = self.found
        for tid, gm, sent in msg.ended:  # newest last: of two runs ended, the later
            found.setdefault(gm, {})[tid] = sent
        for tid, _w, gm, _l, sent in adopt:
            found.setdefault(gm, {})[tid] = sent  # (and one running over one ended)
        self.monitor.heard(h, msg.incarnation)
        self._answered.set()

    def found_ended(self, tid: int, gm: Any, sent: float) -> None:
        """An end this process found in its queue and sent ``gm`` to verify (no process vouches for it): the
        GM's task ended, not lost — though its host may not have answered (found by the deterministic simulation,
        seed 2421959: the host's answer, held until its own ends were confirmed by a broker just back, came after
        the lease; the GM heard the takeover by HTTP before the VerifyEnds through the broker, counted the task
        lost and ran it again)."""
        if isinstance(gm, tuple) and gm[0] == "gm":
            self.found.setdefault(gm[1], {})[tid] = sent

    def unreachable(self, h: int) -> None:
        """The host did not take the question at all (not up yet, or gone): it is down until heard again."""
        if h in self.waiting:
            self.waiting.discard(h)
            self.hosts_silent.append(h)
            self.monitor.mark_down(h)
            self._answered.set()

    def announce(self) -> None:
        for g in range(self.lm.G):
            self.rt.send(self.lm.gm_addr[g], recovered(self.lm, g, self.holding, self, self.sent_of))

    def counters(self) -> dict[str, Any]:
        return {"rebuilt_in": self.rebuilt_in, "tasks_adopted_from_hosts": self.adopted, "hosts_silent_at_start": self.hosts_silent,
                "takeover_lost_runs_stopped": self.lost_runs_stopped}
