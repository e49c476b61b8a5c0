"""The live view of a running Megha cluster (``schedlab dashboard --cluster FILE``): what its nodes report, as it changes.

Sources:

* every node's ``/v1/status`` (:func:`schedlab.services.remote.fetch_statuses`,
  signed with the cluster's secret), read every ``every`` seconds (1 by
  default): one small request per node and period, what ``cluster status``
  does once;
* the live snapshots replaying clients publish (:mod:`schedlab.services.live`):
  allocation-time percentiles over a sliding window, with the four components,
  consumed from the cluster's live queue, which exists while the dashboard does.

From two consecutive reads it derives what no single one says: per GM its
placements per second (launch requests sent minus those refused by the LMs'
validation), per LM its inconsistencies (rejected launches) per minute over the
last minute; over time the utilization (tasks running on the worker hosts over
their worker slots) and the placement rate; and the **failures and
recoveries**: a node that stops answering or answers again (with another
process id: restarted), worker hosts an LM declares down or rejoined and the
tasks it hands back, a GM suspending an LM or seeing a standby take over, GMs
asking again for tasks in doubt, and refused (unauthenticated) input.

Each read gives a new :meth:`LiveMonitor.state` (one JSON object), pushed to every
open page (:meth:`LiveMonitor.subscribe`, server-sent events); the page holds
the history it draws.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from typing import Any

from schedlab.services.clusterfile import LoadedCluster

log = logging.getLogger("schedlab.dashboard")
HISTORY_SECONDS = 600.0
EVENTS_KEPT = 100
RUN_STALE_SECONDS = 30.0  # a run's live figures are dropped this long after its last snapshot

# counters whose increase is an event: (role, counter, kind, what it says)
COUNTER_EVENTS = (
    ("lm", "hosts_down", "failure", "worker host(s) declared down"),
    ("lm", "hosts_rejoined", "recovery", "worker host(s) rejoined"),
    ("lm", "tasks_relaunched", "recovery", "task(s) of lost hosts handed back to their GMs"),
    ("lm", "tasks_adopted_from_hosts", "recovery", "running task(s) adopted from the hosts after a restart"),
    ("gm", "lm_suspensions", "failure", "LM suspension(s): requests held until it answers"),
    ("gm", "lm_takeovers_seen", "recovery", "LM standby takeover(s) seen"),
    ("gm", "tasks_requested_again", "recovery", "task(s) in doubt requested again"),
    ("gm", "jobs_delivered_again", "recovery", "job(s) delivered again from the durable queue"),
    ("gm", "tasks_lost", "failure", "task run(s) lost with their worker, queued again"),
)


class LiveMonitor:
    """Reads a cluster's nodes every ``every`` seconds and keeps what the live page shows."""

    def __init__(self, loaded: LoadedCluster, every: float = 1.0) -> None:
        self.loaded = loaded
        self.every = every
        self.partitions = len(loaded.spec.gms)  # per LM: one partition per GM
        self.prev: dict[tuple[str, int], dict[str, Any]] = {}
        self.prev_time: float | None = None
        self.inconsistency_marks: dict[int, deque[tuple[float, int]]] = {}
        self.events: deque[dict[str, Any]] = deque(maxlen=EVENTS_KEPT)
        self.runs: dict[int, dict[str, Any]] = {}
        self.live_problem: str | None = None
        self.ignored_messages = 0
        self.latest: dict[str, Any] | None = None
        self._subscribers: set[asyncio.Queue[str]] = set()
        self._task: asyncio.Task | None = None
        self._live_task: asyncio.Task | None = None
        self._amqp: Any = None
        self._session: Any = None  # one HTTP session for every read: connections kept open

    # -- running ----------------------------------------------------------------------------------
    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop())
        self._live_task = asyncio.create_task(self._listen_live())

    async def stop(self) -> None:
        for task in (self._task, self._live_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._amqp is not None:
            with contextlib.suppress(Exception):
                await self._amqp.close()
        if self._session is not None:
            await self._session.close()

    async def _loop(self) -> None:
        while True:
            try:
                await self.poll()
            except Exception as e:  # a bug here must not stop the dashboard: logged, tried again next period
                log.exception("live view: reading the cluster failed: %s", e)
            await asyncio.sleep(self.every)

    async def poll(self) -> dict[str, Any]:
        import aiohttp

        from schedlab.services.remote import fetch_statuses

        if self._session is None:
            self._session = aiohttp.ClientSession()
        statuses = await fetch_statuses(self.loaded, timeout=max(1.0, self.every), session=self._session)
        state = self.update(time.time(), statuses)
        text = json.dumps(state, separators=(",", ":"))
        for q in list(self._subscribers):
            while not q.empty():  # a page that fell behind gets the latest state only, not a backlog
                q.get_nowait()
            q.put_nowait(text)
        return state

    def subscribe(self) -> asyncio.Queue[str]:
        q: asyncio.Queue[str] = asyncio.Queue()
        if self.latest is not None:
            q.put_nowait(json.dumps(self.latest, separators=(",", ":")))
        self._subscribers.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[str]) -> None:
        self._subscribers.discard(q)

    async def _listen_live(self, retry: float = 5.0) -> None:
        """Consume the clients' live snapshots. Without a broker (or with another dashboard holding the
        queue) the view goes on without them, says why, and tries again every ``retry`` seconds; once
        connected, the link connects again (to another broker of a cluster) and restores the consumer."""
        from schedlab.services.auth import Verifier
        from schedlab.services.clusterfile import require_secret
        from schedlab.services.live import live_queue
        from schedlab.services.net import AmqpLink

        while True:
            amqp = None
            try:
                amqp = AmqpLink(self.loaded.brokers, None, Verifier(require_secret(self.loaded)), self._refused)
                await amqp.connect(timeout=5.0)
                await amqp.consume_transient(live_queue(self.loaded.name), self._on_live)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                why = str(e) or type(e).__name__
                if "locked" in why.lower() or "exclusive" in why.lower():
                    why = "another dashboard is reading this cluster's live figures"
                problem = f"no allocation-time figures: {why}"
                if problem != self.live_problem:
                    log.warning("live view: %s (trying again every %g s)", problem, retry)
                self.live_problem = problem
                if amqp is not None:
                    with contextlib.suppress(Exception):
                        await amqp.close()
                await asyncio.sleep(retry)
                continue
            self._amqp = amqp
            if self.live_problem is not None:
                log.info("live view: reading the clients' live figures")
            self.live_problem = None
            return

    def _refused(self, e: Any) -> None:
        self._event(time.time(), "failure", f"dashboard: a live snapshot refused ({e})")

    def _on_live(self, body: bytes) -> None:
        from schedlab.services.live import LIVE_KIND

        try:
            snap = json.loads(body)
            run = int(snap["run"])
            if snap.get("kind") != LIVE_KIND:
                raise ValueError(snap.get("kind"))
        except (ValueError, KeyError, TypeError):
            self.ignored_messages += 1
            if self.ignored_messages == 1:
                log.warning("live view: ignored a message on the live queue that is not a live snapshot (said once)")
            return
        snap["received"] = time.time()
        self.runs[run] = snap

    # -- the state --------------------------------------------------------------------------------
    def _event(self, now: float, kind: str, text: str) -> None:
        self.events.appendleft({"time": now, "kind": kind, "text": text})
        log.info("live view: %s", text)

    def update(self, now: float, statuses: list[dict[str, Any]]) -> dict[str, Any]:
        """The state after one read of every node (``statuses`` as :func:`fetch_statuses` gives them)."""
        dt = None if self.prev_time is None else max(now - self.prev_time, 1e-9)
        nodes: dict[str, list[dict[str, Any]]] = {"gm": [], "lm": [], "worker": []}
        total_rate = 0.0
        # what stopped answering is told before what the others counted meanwhile (a GM's lost runs are the
        # consequence of a worker host's crash that the same read found: the story keeps that order)
        for st in sorted(statuses, key=lambda st: "error" not in st):
            key = (st["role"], int(st["id"]))
            self._diff(now, key, self.prev.get(key), st)
        for st in statuses:
            key = (st["role"], int(st["id"]))
            before = self.prev.get(key)
            up = "error" not in st
            row: dict[str, Any] = {"id": key[1], "up": up, "url": st.get("url"), "error": st.get("error"), "pid": st.get("pid"),
                                   "uptime": st.get("uptime"), "heartbeat_age": st.get("last_heartbeat_age"),
                                   "refused": st.get("refused_total", 0)}  # fmt: skip
            if st["role"] == "gm":
                placed = st.get("requests", 0) - st.get("rejected_requests", 0)
                rate = None
                if up and dt is not None and before is not None and "error" not in before:
                    rate = max(0.0, (placed - (before.get("requests", 0) - before.get("rejected_requests", 0))) / dt)
                    total_rate += rate
                row.update({"waiting": st.get("waiting"), "placements": placed, "placements_per_s": rate,
                            "rejected": st.get("rejected_requests"), "repartition_requests": st.get("repartition_requests"),
                            "lms_suspended": st.get("lms_suspended", [])})  # fmt: skip
            elif st["role"] == "lm":
                row.update({"running": st.get("running"), "launched": st.get("launched"), "partitions": self.partitions,
                            "lent_workers": st.get("lent_workers"), "repartitions": st.get("repartitions"),
                            "inconsistencies": st.get("inconsistencies"),
                            "inconsistencies_per_min": self._per_minute(key[1], now, st.get("inconsistencies")) if up else None,
                            "hosts_down_now": st.get("hosts_down_now", []), "standby_took_over": st.get("standby_took_over")})  # fmt: skip
            else:
                row.update({"workers": st.get("workers"), "running": st.get("running"), "started": st.get("started"), "finished": st.get("finished")})
            nodes[st["role"]].append(row)
            if up:
                self.prev[key] = st
            elif before is not None:
                self.prev[key] = {**before, "error": st["error"]}
            else:
                self.prev[key] = st
        self.prev_time = now
        workers = sum(w["workers"] or 0 for w in nodes["worker"] if w["up"])
        running = sum(w["running"] or 0 for w in nodes["worker"] if w["up"])
        for run, snap in list(self.runs.items()):
            if now - snap["received"] > RUN_STALE_SECONDS:
                del self.runs[run]
        self.latest = {
            "cluster": self.loaded.name,
            "time": now,
            "every": self.every,
            "nodes": nodes,
            "totals": {
                "placements": sum(lm["launched"] or 0 for lm in nodes["lm"] if lm["up"]),
                "placements_per_s": total_rate if dt is not None else None,
                "waiting": sum(g["waiting"] or 0 for g in nodes["gm"] if g["up"]),
                "running": running,
                "workers": workers,
                "utilization": running / workers if workers else None,
                "nodes_up": sum(1 for rows in nodes.values() for r in rows if r["up"]),
                "nodes": sum(len(rows) for rows in nodes.values()),
            },
            "runs": sorted(self.runs.values(), key=lambda s: -s["received"]),
            "live_problem": self.live_problem,
            "events": list(self.events),
        }
        return self.latest

    def _per_minute(self, lm: int, now: float, count: int | None) -> float | None:
        if count is None:
            return None
        marks = self.inconsistency_marks.setdefault(lm, deque())
        marks.append((now, count))
        while len(marks) > 2 and marks[1][0] <= now - 60.0:
            marks.popleft()
        t0, c0 = marks[0]
        span = now - t0
        return (count - c0) * 60.0 / span if span > 0 else 0.0

    def _diff(self, now: float, key: tuple[str, int], before: dict[str, Any] | None, st: dict[str, Any]) -> None:
        role, ident = key
        name = f"{role} {ident}"
        if before is None:
            if "error" in st:
                self._event(now, "failure", f"{name} does not answer: {st['error']}")
            return
        was_up, up = "error" not in before, "error" not in st
        if was_up and not up:
            self._event(now, "failure", f"{name} stopped answering: {st['error']}")
            return
        if not up:
            return
        if not was_up:
            again = "restarted" if st.get("pid") != before.get("pid") else "answers again"
            self._event(now, "recovery", f"{name} {again} (pid {st.get('pid')})")
        elif st.get("pid") != before.get("pid"):
            self._event(now, "recovery", f"{name} restarted between two reads (pid {before.get('pid')} -> {st.get('pid')})")
        for r, counter, kind, what in COUNTER_EVENTS:
            if r == role:
                d = (st.get(counter) or 0) - (before.get(counter) or 0)
                if d > 0 and st.get("pid") == before.get("pid"):
                    self._event(now, kind, f"{name}: {d} {what}")
        if role == "lm" and st.get("standby_took_over") and not before.get("standby_took_over"):
            self._event(now, "recovery", f"{name}: its standby took over")
        d = (st.get("refused_total") or 0) - (before.get("refused_total") or 0)
        if d > 0:
            self._event(now, "failure", f"{name}: {d} input(s) refused (unauthenticated or malformed)")
