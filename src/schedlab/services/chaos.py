"""A fault campaign against a live local cluster: replay a trace while killing and restarting components.

``schedlab chaos --cluster FILE --trace T --kill worker --every 5`` replays the
trace on the running cluster (started with ``cluster up``) and, every
``every`` seconds until the replay ends, SIGKILLs one component of the chosen
roles (drawn with ``seed``), waits ``restart_after`` seconds and starts it
again (waiting until it is healthy). It then reports each kill — what, when,
how long the component took to be healthy again — and, from the run's own
records, what the failure cost: the runs lost (ended by the GM's re-queue),
how long after the kill each was re-queued (detection) and started again
(relaunch). The verdict is the invariant of the faults work: every submitted
task completed exactly once from the user's side (none unfinished, no
duplicate start, finish or report); the command exits 1 otherwise.

Roles that can be killed today: ``worker`` (worker hosts: lease, relaunch,
rejoin — :mod:`~.failures`) and ``gm`` (Global Masters: view rebuilt from the
LMs, unfinished jobs back from the durable queue, their tasks resolved by the
LMs' truth — :mod:`~.recovery`; for each GM kill the report adds how long the
restarted GM took to have every LM's state and what became of the jobs it got
back, read from its status before the next kill), ``lm`` (the process serving
an LM is SIGKILLed: with ``lm_standby`` its standby takes over and a new
standby is started; without, the LM is restarted — either way the new process
rebuilds the LM's state from its worker hosts, :mod:`~.recovery`; the report
adds the rebuild and what it found) and ``broker`` (RabbitMQ
stopped with ``rabbitmqctl stop_app`` and started again: every component
reconnects, publishers hold what they could not send — :mod:`~.net`; only for
a broker on this machine, since that is where ``rabbitmqctl`` acts), and
``broker-node`` (one member of a RabbitMQ cluster started with ``schedlab
broker up --dir DIR``, given as ``brokers``: its Erlang VM is SIGKILLed — a
crash, not a clean stop — and after ``restart_after`` s started again; with
``wipe`` its data folder is removed first, so it comes back as a new member
that the others forget, let join and make a replica of every quorum queue
again, :mod:`~.brokercluster`). Its "healthy after" is when the member is
back in the cluster.

For every kill the report also says when scheduling resumed: how long after
the kill the first task that *arrived* after it started (arrivals come
every few tenths of a second in a campaign's replay, so this is the pause a
user saw, plus one normal allocation time).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from schedlab.errors import InputError
from schedlab.services import supervise
from schedlab.services.brokercluster import BrokerCluster
from schedlab.services.client import replay
from schedlab.services.clusterfile import LoadedCluster
from schedlab.services.remote import RemoteCluster, fetch_statuses

KILLABLE = ("worker", "gm", "lm", "broker", "broker-node")
GM_RECOVERY_FIELDS = ("recovered_in", "jobs_resolved", "tasks_found_running", "tasks_found_completed", "tasks_requested_again")
LM_RECOVERY_FIELDS = ("rebuilt_in", "tasks_adopted_from_hosts", "ends_sent_to_verify", "hosts_silent_at_start", "standby_took_over")


@dataclass
class Kill:
    role: str
    id: int
    killed_at: float  # seconds since the replay started (the run's own clock)
    healthy_after: float | None = None  # seconds from the kill until it answered again
    lost_runs: int = 0
    detection: list[float] = field(default_factory=list)  # kill → each lost run re-queued, seconds
    relaunch: list[float] = field(default_factory=list)  # kill → each lost task started again, seconds
    recovery: dict[str, Any] = field(default_factory=dict)  # a GM: its restart's recovery (GM_RECOVERY_FIELDS)
    resumed_after: float | None = None  # kill → the first start of a task that arrived after it, seconds


@dataclass
class ChaosReport:
    result: Any
    kills: list[Kill]
    lost: int  # tasks that never completed
    duplicated: int  # duplicate starts, finishes and reports seen by the client

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.duplicated == 0


def check_roles(roles: list[str]) -> list[str]:
    for r in roles:
        if r not in KILLABLE:
            raise InputError("--kill", f"unknown role {r!r} (killable: {', '.join(KILLABLE)})")
    if not roles:
        raise InputError("--kill", "give at least one role")
    return roles


async def run_chaos(loaded: LoadedCluster, cluster_file: str | os.PathLike, trace: Any, *, roles: list[str], every: float,
                    restart_after: float = 1.0, seed: int = 0, brokers: BrokerCluster | None = None, wipe: bool = False,
                    **replay_kw: Any) -> ChaosReport:
    """Replay ``trace`` on the running cluster while killing and restarting components (see the module)."""
    check_roles(roles)
    if "broker-node" in roles and brokers is None:
        raise InputError("--kill", "broker-node: give --brokers-dir, the folder of the cluster started with schedlab broker up")
    if wipe and "broker-node" not in roles:
        raise InputError("--wipe", "only with --kill broker-node")
    if not every > 0 or restart_after < 0:
        raise InputError("--every", "must be > 0 (and --restart-after >= 0)")
    if not supervise.running_pids(cluster_file):
        raise InputError(str(cluster_file), "the cluster is not running (schedlab cluster up first)")
    targets = [(role, ident) for role, ident, _ep in supervise.components(loaded) if role in roles]
    ctl = _local_rabbitmqctl(loaded) if "broker" in roles else ""
    if ctl:
        targets.append(("broker", 0))
    if brokers is not None and "broker-node" in roles:
        targets += [("broker-node", i) for i in range(len(brokers.nodes))]
    rng = random.Random(seed)
    kills: list[Kill] = []
    unread: list[Kill] = []  # GM kills whose restarted GM's recovery is still to be read

    async def read_recoveries() -> None:
        if not unread:
            return
        statuses = {(st["role"], st["id"]): st for st in await fetch_statuses(loaded)}
        for k in unread:
            st = statuses.get((k.role, k.id), {})
            k.recovery = {f: st.get(f) for f in (GM_RECOVERY_FIELDS if k.role == "gm" else LM_RECOVERY_FIELDS)}
            if k.role == "lm":  # what the GMs did not find at the new LM process, all takeovers so far
                k.recovery["gm_tasks_lost_at_takeovers"] = sum(int(s.get("tasks_lost_at_takeovers", 0)) for (r, _i), s in statuses.items() if r == "gm")
        unread.clear()
    async with RemoteCluster(loaded) as rc:
        run = asyncio.create_task(replay(rc, trace, **replay_kw))
        t0 = time.time()
        try:
            while True:
                done, _ = await asyncio.wait({run}, timeout=every)
                if done:
                    break
                role, ident = rng.choice(targets)
                await read_recoveries()
                k = Kill(role, ident, time.time())
                kills.append(k)
                answered = None
                if role == "broker":
                    await _rabbitmqctl(ctl, "stop_app")
                    await asyncio.sleep(restart_after)
                    await _rabbitmqctl(ctl, "start_app")
                elif role == "broker-node":
                    assert brokers is not None
                    await asyncio.to_thread(brokers.kill, ident)
                    await asyncio.sleep(restart_after)
                    await brokers.restart(ident, wipe=wipe)
                elif role == "lm":
                    answered = await _kill_lm(loaded, cluster_file, ident, restart_after)
                else:
                    supervise.kill(cluster_file, role, ident)
                    await asyncio.sleep(restart_after)
                    await supervise.restart(loaded, cluster_file, role, ident, timeout=60)
                k.healthy_after = time.time() - k.killed_at
                if role == "lm" and answered is not None:  # a standby took over: when it answered, not when its successor started
                    k.healthy_after = answered
                if role in ("gm", "lm"):
                    unread.append(k)
            result = run.result()
            await read_recoveries()
        except BaseException:
            run.cancel()
            raise
    origin = result.extra.get("origin", t0)
    _attribute(result, kills, origin)
    c = result.summary["counters"]
    duplicated = sum(int(c.get(k, 0)) for k in ("duplicate_starts", "duplicate_finishes", "duplicate_reports"))
    return ChaosReport(result, kills, int(c["tasks_unfinished"]), duplicated)


async def _kill_lm(loaded: LoadedCluster, cluster_file: str | os.PathLike, ident: int, restart_after: float) -> float | None:
    """SIGKILL the process serving LM ``ident``; back when LM ``ident`` answers again — its standby taking
    over (a new standby is started ``restart_after`` s after the kill; returns when the standby answered,
    seconds after the kill) or, without standbys, a restart (returns None)."""

    url = loaded.spec.lms[ident].url
    pid = await supervise.serving_pid(url)
    if pid is None:
        raise InputError(f"lm {ident}", f"nothing answers at {url}")
    os.kill(pid, signal.SIGKILL)
    if not loaded.spec.lm_standby:
        await asyncio.sleep(restart_after)
        await supervise.restart(loaded, cluster_file, "lm", ident, timeout=60)
        return None
    t0 = time.monotonic()
    spawned = False
    answered = 0.0  # set again before the loop's only way out (the break): mypy cannot tell
    while True:
        if not spawned and time.monotonic() - t0 >= restart_after:
            supervise.spawn_standby(cluster_file, ident)
            spawned = True
        now = await supervise.serving_pid(url, timeout=0.5)
        if now is not None and now != pid:
            answered = time.monotonic() - t0
            break
        if time.monotonic() - t0 > 60:
            raise InputError(f"lm {ident}", "no standby took over within 60 s")
        await asyncio.sleep(0.05)
    if not spawned:
        await asyncio.sleep(max(0.0, restart_after - (time.monotonic() - t0)))
        supervise.spawn_standby(cluster_file, ident)
    return answered


def _local_rabbitmqctl(loaded: LoadedCluster) -> str:
    """``rabbitmqctl``'s path, if the cluster's broker runs on this machine (else the campaign cannot restart it)."""

    host = urlsplit(loaded.broker).hostname or ""
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise InputError("--kill", f"broker: the cluster's broker is on {host}, and a campaign restarts only a broker on this machine")
    ctl = shutil.which("rabbitmqctl")
    if ctl is None:
        raise InputError("--kill", "broker: rabbitmqctl is not on PATH (it stops and starts the broker)")
    return ctl


async def _rabbitmqctl(ctl: str, action: str) -> None:

    r = await asyncio.to_thread(subprocess.run, [ctl, action], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        lines = (r.stderr or r.stdout).strip().splitlines()
        raise InputError("--kill", f"broker: rabbitmqctl {action} failed: {lines[-1] if lines else f'exit {r.returncode}'}")


def _attribute(result: Any, kills: list[Kill], origin: float) -> None:
    """Each lost run to the latest kill before its end; its detection and relaunch delays from that kill."""
    if not kills:
        return
    t = result.tasks.set_index("task")
    for k in kills:
        k.killed_at -= origin  # on the run's clock
        later = t[t["arrival"] >= k.killed_at]["start"].dropna()
        if len(later):
            k.resumed_after = float(later.min()) - k.killed_at
    for tid, _worker, _start, end in result.extra.get("preempted_runs", []):
        before = [k for k in kills if k.killed_at <= end]
        if not before:
            continue
        k = before[-1]
        k.lost_runs += 1
        k.detection.append(end - k.killed_at)
        start = t.at[tid, "start"]
        if start == start:
            k.relaunch.append(float(start) - k.killed_at)
