"""Megha's global fair sharing (Algorithm 2) in a real cluster: the LMs' truth travels as messages.

Megha paper, Section IV-C. The decision code is the simulator's
(:class:`~schedlab.schedulers.megha.fairness.FairSharing`, driven by the
simulator's GM and LM classes); what a simulation shares between components
in memory becomes messages here:

* **Holdings.** An LM tells its fair-sharing ledger of every task it starts or
  vacates and every preemption it carries out. In a simulation that ledger is
  the run-wide truth, read at once by every GM; here :class:`LedgerFeed`
  gathers those events and sends them, in order, to every GM in one
  :class:`~schedlab.services.messages.HoldingsReport` per handling step (on
  the ordered LM → GM link, through RabbitMQ). Each GM process keeps its own
  ``FairSharing`` and applies the reports as they arrive; its own users'
  holdings are therefore as fresh as the reports (milliseconds), the others'
  as of its last heartbeat round — the paper's "consistent about its own
  queues, eventually consistent about the others'".
* **Rounds.** The simulator runs one heartbeat round for all LMs and then
  publishes holdings and retries waiting tasks; here each GM does so on its
  own timer every ``heartbeat`` seconds (:func:`attach_gm`).
* **Users.** The client assigns each job to a user with the simulator's
  :class:`~schedlab.schedulers.megha.fairness.UserAssignment` (same seed, same
  users) and submits it to the GM serving that user's queue.
* **Preemption.** The LM's decision is the simulator's; carrying it out needs
  the worker host: the LM's ``workers`` (:class:`HostWorkers`) send
  :class:`~schedlab.services.messages.KillTask` to the host, in order before
  the preempting task's launch. A task can end on its own while the kill is in
  flight; so the LM holds back its ``TaskPreempted`` notice until the host
  answers: *killed* — the notice goes to the victim's GM, which re-queues the
  task; *already ended* — the notice is dropped (the task's completion reaches
  its GM as usual, and the LM ignores that completion since it already
  vacated the task: :class:`~.failures.CompletionRelay`). Either way the task completes exactly once, and the
  preempting task runs on the room the victim left.
"""

from __future__ import annotations

from typing import Any

from schedlab.cluster.model import Cluster
from schedlab.schedulers.megha import MeghaParams
from schedlab.schedulers.megha.fairness import FairSharing, UserAssignment, queue_gms_of
from schedlab.schedulers.megha.gm import GlobalMaster, gm_address
from schedlab.schedulers.megha.lm import LocalMaster
from schedlab.schedulers.megha.messages import TaskPreempted
from schedlab.schedulers.megha.partitions import Layout
from schedlab.services.messages import HoldingsReport, KillTask, TaskKilled
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.tasks import TaskStore
from schedlab.sim.rng import RngStreams
from schedlab.workers.protocol import POOL_ADDRESS


def user_assignment(params: MeghaParams, num_gms: int, seed: int) -> UserAssignment | None:
    """The simulator's job-to-user assignment for a run with ``seed`` (None without fair sharing)."""
    if params.shares is None:
        return None
    return UserAssignment(params.shares, params.queue_gms, num_gms, params.user_assignment, RngStreams(seed).rng("megha:users"))


def holding_event(store: TaskStore, tid: int, p: int, pos: int) -> tuple:
    """The holdings report's event for task ``tid`` running on (p, pos): its user and what it holds."""
    req = store.request.get(tid)
    return ("launch", tid, p, pos, store.user.get(tid, 0), [1.0] if req is None else list(req))


class LedgerFeed:
    """An LM's fair-sharing ledger in a real cluster: its events, sent to every GM in order."""

    def __init__(self, rt: ServiceRuntime, lm: LocalMaster, store: TaskStore, num_gms: int) -> None:
        self.rt = rt
        self.lm = lm
        self.store = store
        self.gms = [gm_address(g) for g in range(num_gms)]
        self.events: list[tuple] = []
        self.reports = 0

    def _add(self, ev: tuple) -> None:
        if not self.events:
            self.rt.call_soon(self.flush)
        self.events.append(ev)

    def launched(self, tid: int, p: int, pos: int) -> None:
        self._add(holding_event(self.store, tid, p, pos))

    def vacated(self, tid: int) -> None:
        self._add(("vacate", tid))

    def settle(self, victim: int) -> None:
        self._add(("settle", victim))

    def flush(self) -> None:
        events, self.events = self.events, []
        if events:
            self.reports += 1
            for g in self.gms:
                self.rt.send(g, HoldingsReport(self.lm.i, events))


class HostWorkers:
    """The LMs' ``workers`` in a real cluster: preemptions become kills on the worker hosts.

    One serves every LM of its runtime (one in a service process, all of them
    in an embedded cluster).
    """

    def __init__(self, rt: ServiceRuntime, store: TaskStore, forget_killed: bool = True) -> None:
        self.rt = rt
        self.lms: dict[Any, LocalMaster] = {}
        self.store = store
        self.forget_killed = forget_killed  # an LM process forgets a task it no longer runs; an embedded store is shared
        self.killing: dict[int, Any] = {}  # victim -> the LM that asked for its kill
        self.held: dict[int, tuple[Any, TaskPreempted]] = {}  # victim -> its TaskPreempted, until the kill is confirmed
        self.preemptions = 0
        self.too_late = 0
        self.on_killed: Any = None  # called with each killed task (an LM process forgets it was launched)
        rt.before_send(TaskPreempted, self._hold)

    def add(self, lm: LocalMaster, num_gms: int) -> None:
        """Serve ``lm`` (built with these workers) and give it its ledger feed."""
        self.lms[lm.address] = lm
        self.rt.add_handler(lm.address, TaskKilled, self._on_killed)
        lm.fairness = LedgerFeed(self.rt, lm, self.store, num_gms)

    # -- LocalWorkers ------------------------------------------------------------------------------
    def is_running(self, tid: int) -> bool:
        # the LM checked its own truth already; the worker host settles a race with the task's end
        return True

    def preempt(self, tid: int, worker: int) -> None:
        lm = self._lm_running(tid)
        self.killing[tid] = lm.address
        self.rt.send(POOL_ADDRESS, KillTask(tid, worker, lm.address))

    def start_many(self, placements: list[tuple[int, int]], on_finish: Any, component: int) -> None:
        raise NotImplementedError("a Megha LM launches tasks by message")

    def _lm_running(self, tid: int) -> LocalMaster:
        for lm in self.lms.values():
            if tid in lm.running:
                return lm
        raise KeyError(f"task {tid} runs on no LM here")

    # -- the host's answer -------------------------------------------------------------------------
    def _hold(self, dst: Any, msg: TaskPreempted) -> TaskPreempted | None:
        if msg.tid in self.killing:
            self.held[msg.tid] = (dst, msg)
            return None
        return msg

    def _on_killed(self, msg: TaskKilled) -> None:
        lm_addr = self.killing.pop(msg.tid, None)
        held = self.held.pop(msg.tid, None)
        if lm_addr is None:
            return  # an answer delivered twice
        if msg.killed:
            self.preemptions += 1
            if self.on_killed is not None:
                self.on_killed(msg.tid)
            if held is not None:
                self.rt.send_now(*held)
        else:
            self.too_late += 1
        if self.forget_killed and msg.tid not in self.lms[lm_addr].running:
            self.store.forget((msg.tid,))

    def counters(self) -> dict[str, int]:
        return {"preemptions": self.preemptions, "preemptions_too_late": self.too_late}


class GMFairness:
    """A GM process's fair sharing: the simulator's FairSharing, fed by the LMs' reports, with its own rounds."""

    def __init__(self, rt: ServiceRuntime, gms: list[GlobalMaster], params: MeghaParams, layout: Layout, cluster: Cluster,
                 store: TaskStore) -> None:
        assert params.shares is not None
        self.rt = rt
        self.fairness = FairSharing(params.shares, queue_gms_of(params.shares, params.queue_gms, layout.num_gms), layout, cluster, store, gms)
        self.heartbeat = params.heartbeat
        self.reports = 0
        self.rounds = 0
        for gm in gms:
            rt.add_handler(gm.address, HoldingsReport, self.apply_report)
        self._timer = rt.call_later(self.heartbeat, self._round)

    def apply_report(self, msg: HoldingsReport) -> None:
        """Fold an LM's holdings events into this GM's ledger (a report, or the holdings of a ``Recovered``)."""
        self.reports += 1
        f = self.fairness
        for ev in msg.events:
            kind = ev[0]
            if kind == "launch":
                if ev[1] not in f.info:  # a report delivered twice applies once
                    f.record_launch(ev[1], ev[2], ev[3], ev[4], ev[5])
            elif kind == "vacate":
                f.record_vacate(ev[1])
            else:
                f.settle(ev[1])

    def _round(self) -> None:
        self.rounds += 1
        self._timer = self.rt.call_later(self.heartbeat, self._round)
        self.fairness.round()

    def stop(self) -> None:
        self._timer.cancel()

    def counters(self) -> dict[str, int]:
        return self.fairness.counters()
