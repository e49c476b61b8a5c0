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
an LM is SIGKILLed: with a standby (``lm_standby``, or the LM's
``standby:`` on a host of its own) the standby takes over and a new standby
is started; without, the LM is restarted — either way the new process
rebuilds the LM's state from its worker hosts, :mod:`~.recovery`; the report
adds the rebuild and what it found) and ``broker`` (RabbitMQ
stopped with ``rabbitmqctl stop_app`` and started again: every component
reconnects, publishers hold what they could not send — :mod:`~.net`; only for
a broker on this machine, since that is where ``rabbitmqctl`` acts, or a
testbed's broker), and
``broker-node`` (one member of a RabbitMQ cluster started with ``schedlab
broker up --dir DIR``, given as ``brokers``, or of a testbed's broker of
several nodes, each on its own host — ``cluster init --netns --broker-nodes
3`` — when ``brokers`` is not given: its Erlang VM is SIGKILLed — a
crash, not a clean stop — and after ``restart_after`` s started again; with
``wipe`` its data folder is removed first, so it comes back as a new member
that the others forget, let join and make a replica of every quorum queue
again, :mod:`~.brokercluster`). Its "healthy after" is when the member is
back in the cluster. ``broker_nodes`` narrows which members may be killed (a
benchmark rotating over them gives one per campaign).

On a testbed cluster (:mod:`~.testbed`) the campaign also injects network
faults, drawn with the kills: ``--partition gm-lm`` (both ways), ``--partition-oneway lm>host``,
``--loss 5%``, ``--delay 50ms`` (:mod:`~.testbed.faults`), and on any cluster
``--clock-skew gm0:40`` (a component's wall clock 40 s off, :mod:`~.clock`);
each lasts ``heal_after`` seconds. With faults, the campaign goes through every
fault and kill in turn (a new random order each pass) rather than drawing each
round, so that a short campaign meets each of them. The report gives, per fault, the input the
nodes refused meanwhile (by reason: a skewed clock's stale signatures, say)
and how long after the heal the next task completed.

For every kill the report also says when scheduling resumed: how long after
the kill the first task that *arrived* after it started (arrivals come
every few tenths of a second in a campaign's replay, so this is the pause a
user saw, plus one normal allocation time).
"""

from __future__ import annotations

import asyncio
import bisect
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
class NetFault:
    """A fault of the network or of a clock (see :func:`parse_fault`), injected for ``heal_after`` seconds."""

    kind: str  # partition, oneway, loss, delay, clock-skew
    target: str  # gm-lm, lm>host, 0.05, gm0:40, ...
    at: float = 0.0  # seconds since the replay started
    healed_after: float | None = None
    hosts: list[str] = field(default_factory=list)  # the hosts whose traffic (or clock) it changed
    refused: dict[str, int] = field(default_factory=dict)  # input the nodes refused while it lasted, by reason
    resumed_after: float | None = None  # heal → the next task completion, seconds (None: none after)


@dataclass
class ChaosReport:
    result: Any
    kills: list[Kill]
    lost: int  # tasks that never completed
    duplicated: int  # duplicate starts, finishes and reports seen by the client
    faults: list[NetFault] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.duplicated == 0


def check_roles(roles: list[str], faults: bool = False) -> list[str]:
    for r in roles:
        if r not in KILLABLE:
            raise InputError("--kill", f"unknown role {r!r} (killable: {', '.join(KILLABLE)})")
    if not roles and not faults:
        raise InputError("--kill", "give at least one role (or a network fault)")
    return roles


def parse_fault(kind: str, target: str) -> NetFault:
    """One fault option: ``--partition gm-lm``, ``--partition-oneway lm>host``, ``--loss 5%``, ``--delay 50ms``,
    ``--clock-skew gm0:40`` (a component's clock 40 s ahead; ``gm:40``: a GM drawn each time)."""
    from schedlab.services.testbed.network import parse_loss, parse_time

    opt = {"partition": "--partition", "oneway": "--partition-oneway", "loss": "--loss", "delay": "--delay",
           "clock-skew": "--clock-skew"}[kind]
    try:
        if kind == "loss":
            parse_loss(target, opt)
        elif kind == "delay":
            parse_time(target, opt)
        elif kind == "clock-skew":
            who, sep, sec = target.rpartition(":")
            float(sec)
            if not sep or not who:
                raise ValueError
    except ValueError as e:
        raise InputError(opt, str(e) if str(e) else f"expected TARGET:SECONDS such as gm0:40, got {target!r}") from None
    return NetFault(kind, target)


async def run_chaos(loaded: LoadedCluster, cluster_file: str | os.PathLike, trace: Any, *, roles: list[str], every: float,
                    restart_after: float = 1.0, seed: int = 0, faults: list[NetFault] | None = None, heal_after: float = 5.0,
                    brokers: BrokerCluster | None = None, wipe: bool = False, broker_nodes: list[int] | None = None,
                    **replay_kw: Any) -> ChaosReport:
    """Replay ``trace`` on the running cluster while killing and restarting components and injecting
    ``faults`` (each healed ``heal_after`` s later; see the module)."""
    faults = list(faults or [])
    check_roles(roles, bool(faults))
    if "broker-node" in roles and brokers is None:
        if loaded.spec.testbed is None or len(loaded.spec.testbed.broker_hosts) < 2:
            raise InputError("--kill", "broker-node: give --brokers-dir, the folder of the cluster started with schedlab broker up "
                                       "(or, on a testbed, write it with cluster init --netns --broker-nodes 3)")
        from schedlab.services.testbed.lifecycle import broker_cluster

        brokers = broker_cluster(loaded, supervise.run_dir(cluster_file))  # the testbed's own nodes, one per host
    if wipe and "broker-node" not in roles:
        raise InputError("--wipe", "only with --kill broker-node")
    if not every > 0 or restart_after < 0 or heal_after < 0:
        raise InputError("--every", "must be > 0 (and --restart-after, --heal-after >= 0)")
    if not supervise.running_pids(cluster_file):
        raise InputError(str(cluster_file), "the cluster is not running (schedlab cluster up first)")
    net = _network_faults(loaded, cluster_file) if any(f.kind != "clock-skew" for f in faults) else None
    if net is not None:  # every name checked before the replay starts
        for f in faults:
            if f.kind in ("partition", "oneway"):
                for side in f.target.replace(">", "-").split("-"):
                    net.group(side.strip(), "--partition" if f.kind == "partition" else "--partition-oneway")
    for f in faults:
        if f.kind == "clock-skew":
            _skew_targets(loaded, f.target)
    targets: list[tuple[str, Any]] = [(role, ident) for role, ident, _ep in supervise.components(loaded) if role in roles]
    broker = _broker_control(loaded) if "broker" in roles else None
    if broker is not None:
        targets.append(("broker", 0))
    if brokers is not None and "broker-node" in roles:
        targets += [("broker-node", i) for i in range(len(brokers.nodes)) if broker_nodes is None or i in broker_nodes]
    targets += [("fault", f) for f in faults]
    rng = random.Random(seed)
    injected: list[NetFault] = []
    cycle: list[tuple[str, Any]] = []
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
                if faults:  # every fault and kill in turn, in an order drawn afresh for each pass
                    if not cycle:
                        cycle = rng.sample(targets, len(targets))
                    role, ident = cycle.pop()
                else:
                    role, ident = rng.choice(targets)
                await read_recoveries()
                if role == "fault":
                    injected.append(await _inject(loaded, cluster_file, net, ident, run, heal_after, rng))
                    continue
                k = Kill(role, ident, time.time())
                kills.append(k)
                answered = None
                if role == "broker":
                    assert broker is not None
                    await broker("stop_app")
                    await asyncio.sleep(restart_after)
                    await broker("start_app")
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
        finally:
            _heal_all(loaded, cluster_file, net, faults)
    origin = result.extra.get("origin", t0)
    _attribute(result, kills, origin)
    _resumed(result, injected, origin)
    c = result.summary["counters"]
    duplicated = sum(int(c.get(k, 0)) for k in ("duplicate_starts", "duplicate_finishes", "duplicate_reports"))
    return ChaosReport(result, kills, int(c["tasks_unfinished"]), duplicated, injected)


def _network_faults(loaded: LoadedCluster, cluster_file: str | os.PathLike) -> Any:
    if loaded.spec.testbed is None:
        raise InputError("--partition", "network faults need a testbed cluster (schedlab cluster init --netns): "
                                        "its hosts' links are where they are injected")
    from schedlab.services.testbed.faults import NetworkFaults
    from schedlab.services.testbed.netns import Testbed, require_privileges

    require_privileges()
    return NetworkFaults(Testbed(loaded, supervise.run_dir(cluster_file)))


def _skew_targets(loaded: LoadedCluster, target: str) -> list[tuple[str, int]]:
    """The components ``gm0:40`` / ``gm:40`` / ``h3:40`` names (roles gm, lm, worker — h<i> is worker host i)."""
    who = target.rpartition(":")[0]
    short = {"gm": "gm", "lm": "lm", "worker": "h"}  # role -> testbed host-name prefix (gm0, lm1, h3)
    roles = {"gm": "gm", "lm": "lm", "worker": "worker", "host": "worker"}
    out = [(r, i) for r, i, _ep in supervise.components(loaded) if roles.get(who) == r or who == f"{short[r]}{i}"]
    if not out:
        raise InputError("--clock-skew", f"no component {who!r} (gm0, lm1, h3, or a role: gm, lm, host)")
    return out


async def _inject(loaded: LoadedCluster, cluster_file: str | os.PathLike, net: Any, f: NetFault, run: asyncio.Task,
                  heal_after: float, rng: random.Random) -> NetFault:
    """Inject one fault, hold it ``heal_after`` s (less if the replay ends), heal it; what it changed."""
    from schedlab.services.clock import clock_file, set_skew

    fault = NetFault(f.kind, f.target, time.time())
    before = await _refusals(loaded)
    skewed: tuple[str, int] | None = None
    if f.kind == "partition":
        fault.hosts = net.partition(f.target)
    elif f.kind == "oneway":
        fault.hosts = net.oneway(f.target)
    elif f.kind == "loss":
        net.loss(f.target)
        fault.hosts = [h.name for h in net.tb.hosts]
    elif f.kind == "delay":
        net.delay(f.target)
        fault.hosts = [h.name for h in net.tb.hosts]
    else:
        skewed = rng.choice(_skew_targets(loaded, f.target))
        set_skew(clock_file(cluster_file, *skewed), float(f.target.rpartition(":")[2]))
        fault.hosts = [f"{skewed[0]} {skewed[1]}"]
    await asyncio.wait({run}, timeout=heal_after)
    if skewed is not None:
        set_skew(clock_file(cluster_file, *skewed), 0.0)
    else:
        net.heal()
    fault.healed_after = time.time() - fault.at
    after = await _refusals(loaded)
    fault.refused = {k: after[k] - before.get(k, 0) for k in after if after[k] > before.get(k, 0)}
    return fault


async def _refusals(loaded: LoadedCluster) -> dict[str, int]:
    """Input refused so far over every node, by reason (nodes that do not answer count nothing)."""
    total: dict[str, int] = {}
    for st in await fetch_statuses(loaded):
        for reason, n in (st.get("refused") or {}).items():
            total[reason] = total.get(reason, 0) + int(n)
    return total


def _heal_all(loaded: LoadedCluster, cluster_file: str | os.PathLike, net: Any, faults: list[NetFault]) -> None:
    """Whatever happens to the campaign, no fault outlives it."""
    from schedlab.services.clock import clock_file, set_skew

    if net is not None:
        net.heal()
    if any(f.kind == "clock-skew" for f in faults):
        for role, ident, _ep in supervise.components(loaded):
            set_skew(clock_file(cluster_file, role, ident), 0.0)


def _resumed(result: Any, faults: list[NetFault], origin: float) -> None:
    """Each fault's times on the run's clock, and how long after its heal the next task completed."""
    ends = sorted(float(x) for x in result.tasks["end"].dropna()) if len(result.tasks) else []
    for f in faults:
        f.at -= origin
        healed = f.at + (f.healed_after or 0.0)
        i = bisect.bisect_left(ends, healed)
        f.resumed_after = ends[i] - healed if i < len(ends) else None


async def _kill_lm(loaded: LoadedCluster, cluster_file: str | os.PathLike, ident: int, restart_after: float) -> float | None:
    """SIGKILL the process serving LM ``ident``; back when LM ``ident`` answers again — its standby taking
    over (a new standby is started ``restart_after`` s after the kill; returns when the standby answered,
    seconds after the kill) or, without standbys, a restart (returns None)."""

    urls = loaded.spec.lms[ident].urls  # with a standby elsewhere, either address may hold the active process
    pid = None
    for url in urls:
        pid = await supervise.serving_pid(url)
        if pid is not None:
            break
    if pid is None:
        raise InputError(f"lm {ident}", f"nothing answers at {' or '.join(urls)}")
    os.kill(pid, signal.SIGKILL)
    if not loaded.spec.has_standby(ident):
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
        now = None
        for url in urls:
            now = await supervise.serving_pid(url, timeout=0.5)
            if now is not None and now != pid:
                break
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


def _broker_control(loaded: LoadedCluster) -> Any:
    """``action -> None`` that stops (``stop_app``) or starts (``start_app``) the cluster's broker."""
    if loaded.spec.testbed is not None:  # the testbed's own (first) node, on its host
        from schedlab.services.testbed.lifecycle import broker_cluster

        node = broker_cluster(loaded, supervise.run_dir(loaded.source)).nodes[0]

        async def testbed_broker(action: str) -> None:
            r = await asyncio.to_thread(node.ctl, action, timeout=120)
            if r.returncode != 0:
                lines = (r.stderr or r.stdout).strip().splitlines()
                raise InputError("--kill", f"broker: rabbitmqctl {action} failed: {lines[-1] if lines else f'exit {r.returncode}'}")
        return testbed_broker
    ctl = _local_rabbitmqctl(loaded)
    return lambda action: _rabbitmqctl(ctl, action)


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
