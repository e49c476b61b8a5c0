"""GM → LM requests that may not have arrived: slow and partitioned links, with no task placed twice.

A launch (or preemption) request goes from a GM to an LM over HTTP and is
answered synchronously. When the network fails, the GM's transport tells it
which requests did not get an answer, and how they failed
(:class:`LaunchLinks`):

* **never sent** — queued behind a request that failed: certainly not acted
  on. The GM takes the workers back in its view and requests the tasks again
  at once (``GlobalMaster.launch_failed``), elsewhere if it can.
* **refused unread** — the LM process answering refused it as too old (``409
  stale request``): first sent more than :data:`REQUEST_FRESH` seconds ago (a
  slow link, or retries that took that long), or before that LM process took
  over (it was meant for its predecessor, which may have acted on an earlier
  try). It is in doubt, as below, without suspending the LM.
* **unreachable** — no answer after the transport's retries. The LM may have
  launched the tasks and lost only the reply, so requesting them elsewhere now
  could run them twice. They are **in doubt**: the GM suspends the LM (no new
  task is matched on its partitions — they go to the other LMs), asks it for
  its state again (``Recover``, every few seconds until it answers, which
  resumes it), and asks it what became of the tasks in doubt (``Resolve``):
  running or completed there — nothing to do; neither — requested again.
  That question is asked only once the requests can no longer take effect.
  **The fence:** every request carries the time it was first sent (its
  retries repeat it), and an LM process acts on a request only if that time is
  less than :data:`REQUEST_FRESH` seconds ago and after the process itself
  took over. So a request delayed on the wire, or retried into a standby that
  took over meanwhile, is refused, never run after the LM has told what it
  runs; and a GM that hears an LM process took over (its ``Recovered`` with
  ``since``) can count as lost what it sent before ``since`` and is not
  running there — the LM decided with the same number. (Hosts' clocks are
  assumed synchronised to well under a second, as the run records already
  assume; a skew only delays, since both sides compare the GM's own stamp.)

A task in doubt that its GM has meanwhile heard of otherwise (completed, lost
with its worker) is left to that news. Choices: GM → LM requests time out
after :data:`REQUEST_TIMEOUT` seconds and are tried :data:`REQUEST_TRIES`
times (a GM learns of a dead link within about 7 s; the worker hosts' links
keep the transport's longer defaults).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from schedlab.schedulers.megha.gm import GlobalMaster, lm_address
from schedlab.schedulers.megha.messages import LaunchRequest, PreemptRequest
from schedlab.services.failures import GMPlacements
from schedlab.services.messages import Resolve, Resolved
from schedlab.services.records import LOST
from schedlab.services.runtime import ServiceRuntime
from schedlab.services.tasks import split_id

log = logging.getLogger("schedlab.services.links")

REQUEST_FRESH = 3.0  # seconds after its signature an LM still acts on a launch request
REQUEST_TIMEOUT = 2.0  # seconds a GM waits for one try of a request to an LM
REQUEST_TRIES = 3
FENCE_MARGIN = 1.0  # seconds beyond REQUEST_FRESH before a GM asks about requests in doubt (clock skew)
ASK_AGAIN = 2.0  # seconds between questions to an LM that has not answered


class Questions:
    """``Resolve`` questions from one GM to LMs: each asked again every :data:`ASK_AGAIN` s until every LM
    asked has answered, then ``done(completed, running)`` with the union of the answers."""

    def __init__(self, rt: ServiceRuntime, gm: GlobalMaster) -> None:
        self.rt = rt
        self.g = gm.g
        self.open: dict[int, list] = {}  # ask -> [tids, LMs yet to answer, completed, running, done]
        self._next = 0
        rt.add_handler(gm.address, Resolved, self._on_resolved)

    def ask(self, lms: set[int], tids: list[int], done: Callable[[set[int], set[int]], None]) -> None:
        self._next += 1
        self.open[self._next] = [tids, set(lms), set(), set(), done]
        self._send(self._next)

    def _send(self, ask: int) -> None:
        entry = self.open.get(ask)
        if entry is None:
            return
        for i in sorted(entry[1]):
            self.rt.send(lm_address(i), Resolve(self.g, ask, entry[0]))
        self.rt.call_later(ASK_AGAIN, self._send, ask)

    def _on_resolved(self, msg: Resolved) -> None:
        entry = self.open.get(msg.ask)
        if entry is None or msg.lm not in entry[1]:
            return  # an answer to a question asked twice
        entry[1].discard(msg.lm)
        entry[2].update(msg.completed)
        entry[3].update(msg.running)
        if not entry[1]:
            del self.open[msg.ask]
            entry[4](entry[2], entry[3])


class LaunchLinks:
    """A GM's requests that got no answer from their LM (see the module)."""

    def __init__(self, rt: ServiceRuntime, gm: GlobalMaster, placements: GMPlacements, questions: Questions, recovery: Any) -> None:
        self.rt = rt
        self.gm = gm
        self.placements = placements
        self.questions = questions
        self.recovery = recovery
        self.order = gm.layout.order
        self.suspensions = 0
        self.never_sent = 0  # queued behind a failed request: requested again at once
        self.stale = 0  # refused unread by the LM process answering
        self.in_doubt = 0
        self.doubt_running = 0  # in doubt, found running (or completed) at the LM
        self.doubt_again = 0  # in doubt, found nowhere: requested again
        self.doubt_barriers = 0  # in doubt, found nowhere: this GM's queue read before requesting again
        self.pending: dict[int, tuple[int, float | None]] = {}  # tid -> (LM, stamp) of its request in doubt, not settled yet
        # a request's first send time, as the transport stamped it (None: unknown): a report of an earlier request
        # that got no answer says nothing of the task's current one (the router's request_sent)
        self.request_sent: Callable[[Any], float | None] = lambda _msg: None
        recovery.in_doubt = self.doubtful
        recovery.doubt = self.doubt_at_takeover

    def undelivered(self, dst: Any, msgs: list[Any], outcome: str) -> None:
        """The transport's report: ``msgs`` to ``dst`` got no answer — ``unsent`` (never left: certainly not
        acted on), ``refused`` (refused unread: not acted on), ``stale`` (the LM process answering refused it
        unread; an earlier one may have acted on it), ``reply refused`` (the LM's answer failed authentication:
        the LM acted on it — found on the testbed with a GM's clock 45 s off) or ``unreachable``."""
        if not (isinstance(dst, tuple) and dst[0] == "lm"):
            return
        # a task requested twice in the batch (a request retried, then requested again): the later request is
        # the one that stands — settling both would request the task twice (found by the deterministic simulation)
        latest = {it[0]: (it, self.request_sent(m)) for m in msgs for it in _items(m)}
        # and a task requested again since, by a request that did not fail, onto the same worker even: that one
        # stands (found by the deterministic simulation, seed 1808007: an earlier request to an LM that took over,
        # reported unsent, unplaced the task's new request there, and the task was requested a third time elsewhere
        # while the second ran it)
        sent_at = self.placements.sent_at
        items = [it for it, stamp in latest.values() if stamp is None or sent_at.get(it[0], stamp) == stamp]
        if not items:
            return
        if outcome in ("unsent", "refused"):
            items = self.placements.forget(items)  # those still standing (a task may have completed meanwhile)
            self.never_sent += len(items)
            if items:
                self.gm.launch_failed(items)
            return
        i = dst[1]
        if outcome == "unreachable" and i not in self.gm.suspended:
            self.suspensions += 1
            log.warning("GM %d: LM %d does not answer; %d task(s) in doubt, no new task goes there until it answers",
                        self.gm.g, i, len(items))
            self.gm.suspend_lm(i)
            self.recovery.ask_again(i)
        # a task requested anew, elsewhere, since this request left (its LM took over without it, say) is settled
        # by that request: its doubt would shield the new one from a later takeover's losses, and settle nothing
        # (found by the deterministic simulation, a standby elsewhere taking over after a broker restart)
        placed, order = self.placements.placed, self.order
        items = [it for it in items if placed.get(it[0], order[it[1]][it[2]]) == order[it[1]][it[2]]]
        if not items:
            return
        self.in_doubt += len(items)
        if outcome == "stale":
            self.stale += len(items)
        stamps = [self.placements.sent_at.get(t) for t, _p, _pos in items]  # a newer request for a task settles it
        for (t, _p, _pos), stamp in zip(items, stamps, strict=True):
            self.pending[t] = (i, stamp)
        self.rt.call_later(REQUEST_FRESH + FENCE_MARGIN, self.questions.ask,
                           {i}, [t for t, _p, _pos in items], lambda c, r: self._settle(items, stamps, c, r))

    def _settle(self, items: list[tuple[int, int, int]], stamps: list[float | None], completed: set[int], running: set[int]) -> None:
        again = []
        for (tid, p, pos), stamp in zip(items, stamps, strict=True):
            doubt = self.pending.get(tid)
            if doubt is not None and doubt[1] == stamp:  # (a task never stamped has no entry: found by the simulation)
                del self.pending[tid]
            if tid in completed or tid in running:
                self.doubt_running += 1
            else:
                again.append(((tid, p, pos), stamp))
        if not again:
            return
        # found nowhere: run again — once this GM has read what its queue holds now. The LM process answering may
        # not be the one that ran the task: the old one relayed its end through the broker, and this GM's link to
        # the broker may be slow (found by the deterministic simulation, seed 3739733: a takeover whose host
        # answered too late to count the end found; the end, relayed at 8.5 s, reached the GM at 23.9 s, after
        # the answer by HTTP at 20.0 s — the task ran twice)
        barrier = self.recovery.barrier
        if barrier is None:
            self._again(again)
        else:
            self.rt.spawn(self._again_after(barrier, again), "requests in doubt, found nowhere")

    async def _again_after(self, barrier: Callable[[], Awaitable[None]], again: list[tuple[tuple[int, int, int], float | None]]) -> None:
        self.doubt_barriers += 1
        await barrier()
        self._again(again)

    def _again(self, found_nowhere: list[tuple[tuple[int, int, int], float | None]]) -> None:
        placed, sent_at, order = self.placements.placed, self.placements.sent_at, self.order
        # still as the doubtful request left it (not ended, not requested anew meanwhile): request again
        again = [(tid, p, pos) for (tid, p, pos), stamp in found_nowhere if placed.get(tid) == order[p][pos] and sent_at.get(tid) == stamp]
        self.doubt_again += len(again)
        if again:
            # it may have started at an LM process that is gone since (its run ended with that process): the
            # records end that run before the task starts again (found by the deterministic simulation)
            now = self.rt.now()
            for tid, p, pos in again:
                run, local = split_id(tid)
                self.placements.emit(run, (LOST, local, now, order[p][pos]))
            self.placements.losses_recorded([tid for tid, _p, _pos in again])  # requested again once recorded
            self.placements.forget(again)
            self.gm.launch_failed(again)

    def doubt_at_takeover(self, lm: int, items: list[tuple[int, int, int]]) -> None:
        """Requests placed under an LM's old process and not found by its new one: in doubt (``stale``)."""
        self.undelivered(lm_address(lm), [LaunchRequest(self.gm.g, items)], "stale")

    def doubtful(self, lm: int) -> set[int]:
        """The tasks whose current request, to LM ``lm``, is in doubt (a request superseded since is not)."""
        sent_at = self.placements.sent_at
        return {t for t, (i, stamp) in self.pending.items() if i == lm and sent_at.get(t) == stamp}

    def counters(self) -> dict[str, int]:
        return {"lm_suspensions": self.suspensions, "requests_never_sent": self.never_sent, "requests_stale": self.stale,
                "requests_in_doubt": self.in_doubt,
                "doubt_found_placed": self.doubt_running, "doubt_requested_again": self.doubt_again,
                "doubt_barriers": self.doubt_barriers}


def _items(msg: Any) -> list[tuple[int, int, int]]:
    if isinstance(msg, LaunchRequest):
        return list(msg.items)
    if isinstance(msg, PreemptRequest):
        return [(msg.tid, msg.p, msg.pos)]
    return []
