"""A worker host as a service: its workers running the tasks its LM launches, its lease, its answers to a new LM.

``schedlab serve worker --id N`` runs one (:mod:`~.node`). It takes task
launches and kills from its LM over HTTP and beacons to its LM
(:class:`~.failures.HostBeacon`). Around the
:class:`~.worker.WorkerHost`:

* **No launch reaches the wrong process.** A launch carries the incarnation
  of this host its LM knew (a restarted host refuses older ones: 409) and the
  id of the LM process that sent it (once an LM process taking over has asked
  this host what it runs, launches from older LM processes are refused); a
  launch delivered again (an HTTP retry after a lost reply) runs once.
* **A takeover's question** (``HostState``) is answered only once every task
  end this host reported before is in the broker: the answer leaves out tasks
  that already ended, and were their ends still on their way the new LM would
  neither adopt them nor find their ends in its queue — their GMs would
  request them again, run twice (seen under load).
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any

from schedlab.schedulers.megha.gm import lm_address
from schedlab.services.failures import HostBeacon
from schedlab.services.messages import CancelRuns, HostFinished, HostReport, HostState
from schedlab.services.nodes import (
    NodeEnv,
    PortTaken,
    RecordsPublisher,
    Response,
    ServiceNode,
    host_address,
)
from schedlab.services.tasks import RecentIds
from schedlab.services.wire import Frame, WireError
from schedlab.services.worker import WorkerHost
from schedlab.workers.protocol import LaunchBatch, LaunchTask

log = logging.getLogger("schedlab.services.node")

ENDS_PUBLISHED_WITHIN = 5.0  # seconds a host answering a takeover waits for its earlier ends to reach the broker
LAUNCH_MARGIN = 0.1  # seconds before the LM's lease on this host runs out from which a launch is refused (clock skew)


def gm_of(reply_to: tuple) -> int:
    """The GM a run's ``reply_to`` names (0 where it names none)."""
    return next((a[1] for a in reply_to if isinstance(a, tuple) and a[0] == "gm"), 0)


class HostNode(ServiceNode):
    """One worker host process."""

    role = "worker"

    def __init__(self, env: NodeEnv, ident: int) -> None:
        super().__init__(env, ident)
        self.address = host_address(ident)
        self.lm = env.plan.hosts[ident]
        self.host: WorkerHost | None = None
        self.beacon: HostBeacon | None = None
        self.publisher: RecordsPublisher | None = None
        self.lm_incarnation: int | None = None  # the LM process it takes launches from (once one asked)
        self.launch_ids = RecentIds()  # launches it took (an HTTP retry of one is not run again)
        self.stale_runs_stopped = 0  # runs stopped at a takeover's question after a stall (see HostBeacon)
        self._launch_of_msg: dict[int, int] = {}  # id of a launch message being admitted -> its launch id
        self._sent_of_msg: dict[int, float] = {}  # ... -> the first send time of the GM's request it carries out

    def build(self) -> None:
        rt, plan = self.rt, self.plan
        publisher = self.publisher = RecordsPublisher(rt, self.broker)
        self.broker.at_flush = publisher.at_flush
        host = self.host = self.component = WorkerHost(self.address, rt, plan.cluster, plan.workers_of_host[self.id], self.store,
                                                       publisher.emit, forget_finished=True)
        every = plan.worker_lease / 3
        self.beacon = HostBeacon(rt, self.id, self.lm, lambda: [(t, e[0], host.launch_of.get(t, 0)) for t, e in host.active.items()], every,
                                 self.env.incarnation(), plan.worker_lease)
        # a beacon is superseded by the next: one try, given up within a beacon period (the LM hears of the host
        # as soon as a link heals, not after a long timeout of a beacon lost in the cut — found by the simulation)
        self.router.tries["lm"] = (every, 1)
        rt.add_handler(self.address, HostState, self._host_state)
        # what it sends its LM names the LM process it answered last: an older process learns it was replaced
        rt.before_send(HostFinished, self._stamp_end)
        self.router.incarnation_of = lambda dst: self.lm_incarnation if dst[0] == "lm" else None
        for cls in (LaunchBatch, LaunchTask):
            rt.before_delivery(cls, self._launching)
            rt.after_delivery(cls, self._launched)

    async def start(self) -> None:
        if not self.env.bind():
            raise PortTaken(self)
        await self.broker.connect()
        self.build()
        self.serving = True
        self.started_at = self.rt.now()

    async def stop(self) -> None:
        if self.beacon is not None:
            self.beacon.stop()
        if self.host is not None:
            self.host.stop()
        if self.publisher is not None and self.publisher.pending:
            self.publisher.flush()

    def _stamp_end(self, _dst: Any, msg: HostFinished) -> HostFinished:
        msg.lm_incarnation = self.lm_incarnation or 0
        return msg

    def _host_state(self, msg: HostState) -> None:
        """An LM process taking over asks what this host runs; launches from any other LM process are refused."""
        assert self.beacon is not None and self.host is not None
        self.lm_incarnation = msg.incarnation
        host = self.host
        # runs that were here through a stall of about the lease may have been declared lost and relaunched by
        # the LM process this one replaces: stopped, not handed over (HostBeacon)
        beacon = self.beacon
        beacon.check_stall()
        if beacon.stale:
            for tid in [t for t in host.active if host.launch_of.get(t, 0) in beacon.stale]:
                host.kill(tid)
                self.stale_runs_stopped += 1
            beacon.stale.clear()
        running = [(tid, w, gm_of(reply_to)) for tid, (w, reply_to, _h) in host.active.items()]
        launches = [host.launch_of.get(tid, 0) for tid, _w, _g in running]
        sent = [host.sent_of.get(tid, 0.0) for tid, _w, _g in running]
        ended = [(tid, gm_of(reply_to), at) for tid, reply_to, at in host.recent_ends]
        self.rt.send(lm_address(msg.lm), HostReport(self.id, self.beacon.incarnation, running, launches, ended, sent))

    # -- requests -------------------------------------------------------------------------------
    def check(self, dst: Any, msg: Any, tasks: Any) -> None:
        super().check(dst, msg, tasks)
        if isinstance(msg, HostState):
            if msg.lm != self.lm:
                raise WireError(f"unknown LM {msg.lm} (host {self.id} belongs to LM {self.lm})")
        elif isinstance(msg, LaunchBatch | LaunchTask):
            assert self.host is not None
            known = {t.tid for t in tasks or ()}
            launches = msg.items if isinstance(msg, LaunchBatch) else [(msg.tid, msg.worker)]
            for tid, w in launches:
                if w not in self.host.workers:
                    raise WireError(f"unknown worker {w} (not on host {self.id})")
                if tid not in known and tid not in self.store:
                    raise WireError(f"bad request: task {tid} comes without its description")
        elif isinstance(msg, CancelRuns):
            assert self.host is not None
            for _tid, w in msg.items:
                if w not in self.host.workers:
                    raise WireError(f"unknown worker {w} (not on host {self.id})")

    def screen(self, src: Any, msg: Any, meta: tuple, signed_at: float) -> tuple[str, str] | None:
        inc, bid, _sent, until = meta
        assert self.beacon is not None
        if isinstance(msg, HostState) and self.lm_incarnation is not None and msg.incarnation < self.lm_incarnation:
            # a late question of an LM process replaced since (a standby elsewhere took over): answering it would
            # hand this host back to that process
            return "stale question", f"from an LM process that has been replaced ({msg.incarnation}, now {self.lm_incarnation})"
        if bid is not None and bid in self.launch_ids:
            return None  # a retry of a launch taken already: answered as taken (admit leaves it out), never refused —
            # the LM would hand back a task that runs here (found by the deterministic simulation)
        if until is not None and self.rt.now() >= until - LAUNCH_MARGIN:
            return "stale launch", f"came {self.rt.now() - until:+.2f} s after the LM's lease on this host ran out (it may have relaunched it)"
        if inc is not None and inc != self.beacon.incarnation:
            return "stale launch", f"meant for incarnation {inc}; this host restarted as {self.beacon.incarnation}"
        if bid is not None and self.lm_incarnation is not None and bid >> 32 != self.lm_incarnation:
            return "stale launch", f"from an LM process that has been replaced ({bid >> 32}, now {self.lm_incarnation})"
        return None

    def admit(self, frames: list[Frame]) -> list[Frame]:
        """A launch delivered again (an HTTP retry) runs once; each run started remembers its launch's id (the
        LM tells this run's end from an earlier run's of the same task on the same worker by it)."""
        assert self.host is not None
        fresh = []
        for frame in frames:
            bid = frame[5][1]
            if bid is not None and bid in self.launch_ids:
                self.host.duplicate_launches += 1
                continue
            if bid is not None:
                self.launch_ids.add(bid)
                self._launch_of_msg[id(frame[2])] = bid
            if frame[5][2]:
                self._sent_of_msg[id(frame[2])] = frame[5][2]
            fresh.append(frame)
        return fresh

    def _launching(self, _dst: Any, msg: Any) -> Any:
        assert self.host is not None
        self.host.current_launch = self._launch_of_msg.pop(id(msg), 0)
        self.host.current_sent = self._sent_of_msg.pop(id(msg), 0.0)
        return msg

    def _launched(self, _dst: Any, msg: Any) -> None:
        assert self.host is not None
        self.host.current_launch = 0
        self.host.current_sent = 0.0

    def after_request(self, frames: list[Frame]) -> Coroutine[Any, Any, Response | None] | None:
        if not any(isinstance(f[2], HostState) for f in frames):
            return None
        return self._ends_published()

    async def _ends_published(self) -> Response | None:
        """A takeover's question: every end this host reported before this answer is in the broker first."""
        assert self.host is not None
        self.host.flush_ends()
        done = self.rt.event()
        self.broker.when_published(done.set)
        if not await self.rt.wait(done, ENDS_PUBLISHED_WITHIN):  # the broker is away: no answer rather than one that hides ends
            log.warning("takeover question from an LM not answered: ends not in the broker after %g s", ENDS_PUBLISHED_WITHIN)
            return 503, "broker away: ends not yet in the broker\n"
        return None

    def status(self) -> dict[str, Any]:
        out = super().status()
        if self.host is not None:
            out.update(self.host.status())
        if self.beacon is not None:
            out.update(stalls=self.beacon.stalls, stale_runs_stopped=self.stale_runs_stopped)
        return out
