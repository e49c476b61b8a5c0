"""Starting, watching and stopping a cluster's processes on this machine: ``schedlab cluster up|status|down``.

``up`` checks first what would make the cluster fail — the broker unreachable,
the cluster already running, a port already taken — and says so in one line.
It then starts every component as its own process (``python -m schedlab serve
ROLE --cluster FILE --id N``, in its own session so that closing the terminal
does not stop it), each logging to ``<run dir>/<role>-<id>.log`` with its pid in
``<role>-<id>.pid``, and waits until every one answers ``/v1/health``. If one
dies or the wait times out, it stops the others and shows the end of the
failing log. The run directory is ``<cluster file without suffix>.run/``
beside the cluster file.

A cluster file with a ``testbed`` section puts each component on a host of
its own (a network namespace, :mod:`~.testbed`): ``up`` makes the hosts,
links, relay and the broker's node(s) first and starts each component inside
its namespace (``ip netns exec``); ``down`` removes all of it, the broker's
data with it.

``down`` sends SIGTERM to every process of the run directory (SIGKILL after
a grace period), removes the pid files, and deletes the cluster's queues on
the broker (jobs still waiting in a submission queue are dropped with them).
A component started by hand on this machine (``schedlab serve``, as after a
crash) enters itself in the run directory once it serves (:func:`register`),
so ``down`` stops it like the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from schedlab.errors import InputError
from schedlab.services.clusterfile import LoadedCluster, run_dir
from schedlab.services.lease import lease_queue, tokens_queue
from schedlab.services.ledger import ledger_queue
from schedlab.services.net import AmqpLink, BrokerUnreachable, Directory

HEALTH_TIMEOUT = 60.0
START_WAVE = 24  # processes started at once by cluster up
STOP_GRACE = 5.0


@dataclass
class Proc:
    role: str
    id: int
    url: str
    pid: int
    log: Path


def components(loaded: LoadedCluster) -> list[tuple[str, int, Any]]:
    spec = loaded.spec
    out: list[tuple[str, int, Any]] = [("worker", h.id, h) for _lm, h in spec.hosts()]
    out += [("lm", lm.id, lm) for lm in spec.lms]
    out += [("gm", g.id, g) for g in spec.gms]
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie counts as gone: a child of ours is reaped here; another's (its parent, an init that does not reap,
    # as in some containers, keeps it) is read from /proc
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def running_pids(cluster_file: str | os.PathLike) -> dict[str, int]:
    out = {}
    d = run_dir(cluster_file)
    if d.is_dir():
        for f in sorted(d.glob("*.pid")):
            try:
                pid = int(f.read_text().strip())
            except (OSError, ValueError):
                continue
            if _alive(pid):
                out[f.stem] = pid
    return out


def free_port_range(n: int, host: str = "127.0.0.1") -> int:
    """A first port of ``n`` consecutive ports free on ``host``, outside the kernel's ephemeral range.

    Ports the kernel hands out for outgoing connections (the ephemeral range)
    could be taken by any connection between this check and a service's bind;
    so the range is drawn below it.
    """

    low, high = 32768, 60999
    with contextlib.suppress(OSError, ValueError):
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    top = low - n if low - n > 10000 else 65535 - n
    bottom = 10000 if top == low - n else high + 1
    rng = random.Random()
    for _ in range(500):
        base = rng.randrange(bottom, top)
        if all(_port_free(host, p) for p in range(base, base + n)):
            return base
    raise InputError("ports", f"no {n} consecutive free ports on {host}")


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


async def check_broker(loaded: LoadedCluster, timeout: float = 5.0) -> None:
    link = AmqpLink(loaded.brokers)
    try:
        await link.connect(timeout)
    except BrokerUnreachable as e:
        raise InputError(f"broker {safe_url(e.url)}", e.reason) from None
    await link.close()


async def broker_nodes_up(loaded: LoadedCluster, timeout: float = 1.0) -> list[tuple[str, str, bool]]:
    """Each broker node of the cluster — its name (a testbed's node name, else its address), URL, and whether its
    AMQP listener takes a TCP connection within ``timeout`` (a node whose app or VM is down has none)."""
    names: dict[tuple[str, int], str] = {}
    if loaded.spec.testbed is not None:
        from schedlab.services.testbed.lifecycle import broker_cluster

        names = {(n.host, n.port): n.node for n in broker_cluster(loaded, run_dir(loaded.source)).nodes}

    async def one(url: str) -> tuple[str, str, bool]:
        parts = urlsplit(url)
        host, port = parts.hostname or "localhost", parts.port or 5672
        try:
            _r, w = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, TimeoutError):
            return names.get((host, port), f"{host}:{port}"), url, False
        w.close()
        with contextlib.suppress(OSError):
            await w.wait_closed()
        return names.get((host, port), f"{host}:{port}"), url, True

    return list(await asyncio.gather(*(one(u) for u in loaded.brokers)))


def safe_url(url: str) -> str:
    """The broker URL without its password."""

    parts = urlsplit(url)
    if parts.password:
        netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


async def _healthy(url: str, session: Any) -> bool:
    try:
        async with session.get(url + "/v1/health") as resp:
            return resp.status == 200
    except Exception:
        return False


def tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


async def up(loaded: LoadedCluster, cluster_file: str | os.PathLike, timeout: float = HEALTH_TIMEOUT, embedded: bool = False) -> list[Proc]:
    """Start every component in the background and wait until all are healthy.

    ``embedded``: one process (``serve all``) runs every component, which then
    talk without sockets (:class:`~schedlab.services.net.LocalBus`).
    """

    live = running_pids(cluster_file)
    if live:
        raise InputError(str(cluster_file), f"cluster already running ({len(live)} processes); run `schedlab cluster down {cluster_file}` first")
    comps = components(loaded)
    testbed = loaded.spec.testbed is not None
    if testbed and embedded:
        raise InputError("--embedded", "runs every component in one process: a testbed cluster puts each on a host of its own")
    for role, ident, ep in comps:
        if ep.netns is None and not _port_free(ep.host, ep.port):  # a testbed's hosts are made empty
            raise InputError(str(cluster_file), f"{role} {ident}: port {ep.host}:{ep.port} is already in use")
    if testbed:
        from schedlab.services.testbed import lifecycle

        await lifecycle.start(loaded, run_dir(cluster_file))
    try:
        await check_broker(loaded)
    except BaseException:
        await down(loaded, cluster_file, quiet=True)
        raise
    procs: list[Proc] = []
    # role by role — worker hosts, then LMs (an LM starts by asking its hosts what they run: one not listening yet
    # would be declared down), then GMs — and in waves of START_WAVE processes, each healthy before the next starts
    # (a hundred Python processes importing at once made some give up on the broker: the paper's 126 hosts, 2 cores)
    deadline = time.monotonic() + timeout
    todo = [("all", 0, None)] if embedded else comps
    waves = [[c for c in todo if c[0] == role] for role in dict.fromkeys(c[0] for c in todo)]
    waves = [w[at : at + START_WAVE] for w in waves for at in range(0, len(w), START_WAVE)]
    for members in waves:
        wave: list[Proc] = []
        for role, ident, ep in members:
            pid, log = _spawn(cluster_file, role, ident, netns=None if ep is None else ep.netns)
            if ep is None:  # the one process answers on every component's port
                wave += [Proc(r, i, e.url, pid, log) for r, i, e in comps]
            else:
                wave.append(Proc(role, ident, ep.url, pid, log))
        procs += wave
        await _wait_healthy(loaded, cluster_file, wave, max(1.0, deadline - time.monotonic()))
    if not embedded:
        for lm in loaded.spec.lms:
            if loaded.spec.has_standby(lm.id):
                spawn_standby(cluster_file, lm.id)
    return procs


def _spawn(cluster_file: str | os.PathLike, role: str, ident: int, name: str | None = None, standby: bool = False,
           netns: str | None = None, standby_host: bool = False) -> tuple[int, Path]:
    """Start ``schedlab serve ROLE --id IDENT`` in the background (inside ``netns``, a testbed's host, if given:
    ``ip netns exec`` keeps the pid); its pid file and log in the run folder."""
    d = run_dir(cluster_file)
    d.mkdir(parents=True, exist_ok=True)
    name = name or f"{role}-{ident}"
    log = d / f"{name}.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(log, "ab") as out:
        child = subprocess.Popen(
            [*(["ip", "netns", "exec", netns] if netns else []), sys.executable, "-m", "schedlab", "serve", role, "--cluster", str(cluster_file), "--id", str(ident), *(["--standby"] if standby else []), *(["--standby-host"] if standby_host else [])],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env,
        )
    (d / f"{name}.pid").write_text(f"{child.pid}\n")
    return child.pid, log


def register(cluster_file: str | os.PathLike, role: str, ident: int) -> Path | None:
    """Enter this process (a component started by hand, ``schedlab serve``) in the cluster's run folder as ``up``
    enters its own, so that ``cluster down`` stops it too and ``up`` sees the cluster running. Its slot is
    ``<role>-<id>.pid``, or ``<role>-<id>.<pid>.pid`` while a live process holds that one (a restarted
    component's old process, a standby). Returns the file, None if a pid file names this process already
    (``up`` and ``restart`` write theirs when they spawn it)."""
    me = os.getpid()
    live = running_pids(cluster_file)
    if me in live.values():
        return None
    d = run_dir(cluster_file)
    d.mkdir(parents=True, exist_ok=True)
    name = f"{role}-{ident}" if f"{role}-{ident}" not in live else f"{role}-{ident}.{me}"
    f = d / f"{name}.pid"
    f.write_text(f"{me}\n")
    return f


def unregister(f: Path | None) -> None:
    """Remove what :func:`register` wrote, if it still names this process (``down`` may have removed it)."""
    if f is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if int(f.read_text().strip()) == os.getpid():
            f.unlink()


def spawn_standby(cluster_file: str | os.PathLike, lm: int) -> int:
    """Start a standby for LM ``lm`` (it waits for the active one to die, then takes over); returns its pid.

    An LM has two process slots, ``lm-N`` and ``lm-N-standby``; after a takeover either may hold the active
    one (``/v1/health`` says which pid serves), and a new standby takes the slot of the process that died. With
    a ``standby:`` address (a host of its own) the slot ``lm-N-standby`` runs there and ``lm-N`` on the LM's host.
    """
    d = run_dir(cluster_file)
    live = running_pids(cluster_file)
    name = next((n for n in (f"lm-{lm}-standby", f"lm-{lm}") if n not in live), None)
    if name is None:
        raise InputError(str(cluster_file), f"LM {lm} has an active and a standby process already")
    (d / f"{name}.pid").unlink(missing_ok=True)
    from schedlab.services.clusterfile import load_cluster

    spec = load_cluster(cluster_file).spec.lms[lm]
    elsewhere = spec.standby is not None and name.endswith("-standby")
    netns = spec.standby.netns if elsewhere and spec.standby is not None else spec.netns
    pid, _log = _spawn(cluster_file, "lm", lm, name=name, standby=True, netns=netns, standby_host=elsewhere)
    return pid


async def serving_pid(url: str, timeout: float = 1.0) -> int | None:
    """The pid of the process answering ``url``'s health check (None if nothing answers)."""
    import aiohttp  # aiohttp only for health checks (cluster down goes without)

    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session, session.get(url + "/v1/health") as resp:
            if resp.status == 200:
                return int((await resp.json())["pid"])
    except Exception:
        return None
    return None


def kill(cluster_file: str | os.PathLike, role: str, ident: int, sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` (default: SIGKILL, a crash) to one component's process; returns its pid."""
    f = run_dir(cluster_file) / f"{role}-{ident}.pid"
    try:
        pid = int(f.read_text().strip())
    except (OSError, ValueError):
        raise InputError(str(cluster_file), f"{role} {ident} is not running from this file") from None
    os.kill(pid, sig)
    return pid


async def restart(loaded: LoadedCluster, cluster_file: str | os.PathLike, role: str, ident: int, timeout: float = HEALTH_TIMEOUT) -> Proc:
    """Start one component again (after it died) and wait until it is healthy."""
    ep = {(r, i): e for r, i, e in components(loaded)}.get((role, ident))
    if ep is None:
        raise InputError(str(cluster_file), f"no {role} {ident} in this cluster")
    deadline = time.monotonic() + 5.0
    while ep.netns is None and not _port_free(ep.host, ep.port) and time.monotonic() < deadline:  # the dead process's socket
        await asyncio.sleep(0.05)
    pid, log = _spawn(cluster_file, role, ident, netns=ep.netns)
    proc = Proc(role, ident, ep.url, pid, log)
    await _wait_healthy(loaded, cluster_file, [proc], timeout)
    return proc


async def _wait_healthy(loaded: LoadedCluster, cluster_file: str | os.PathLike, procs: list[Proc], timeout: float) -> None:
    import aiohttp  # aiohttp only for health checks (cluster down goes without)

    deadline = time.monotonic() + timeout
    pending = list(procs)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1.0)) as session:
        while pending:
            for p in list(pending):
                if not _alive(p.pid):
                    await down(loaded, cluster_file, quiet=True)
                    raise InputError(f"{p.role} {p.id}", f"exited during start-up; end of {p.log}:\n{tail(p.log)}")
            ok = await asyncio.gather(*(_healthy(p.url, session) for p in pending))
            pending = [p for p, good in zip(pending, ok, strict=True) if not good]
            if pending and time.monotonic() > deadline:
                await down(loaded, cluster_file, quiet=True)
                names = ", ".join(f"{p.role} {p.id}" for p in pending)
                raise InputError(str(cluster_file), f"not healthy after {timeout:.0f} s: {names} (see {pending[0].log})")
            if pending:
                await asyncio.sleep(0.1)


async def down(loaded: LoadedCluster, cluster_file: str | os.PathLike, quiet: bool = False, delete_queues: bool = True,
               removed: list[str] | None = None) -> list[str]:
    """Stop every process of the cluster's run directory; returns what was stopped.

    A testbed's namespaces and bridge, removed too, are added to ``removed``.
    """
    d = run_dir(cluster_file)
    stopped = []
    pids = {}
    if d.is_dir():
        for f in sorted(d.glob("*.pid")):
            with contextlib.suppress(OSError, ValueError):
                pids[f.stem] = (int(f.read_text().strip()), f)
    for name, (pid, _f) in pids.items():
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            stopped.append(name)
    deadline = time.monotonic() + STOP_GRACE
    while any(_alive(pid) for pid, _f in pids.values()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    for pid, _f in pids.values():
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):  # one started by hand leads no process group of its own
                os.kill(pid, signal.SIGKILL)
    for _pid, f in pids.values():
        f.unlink(missing_ok=True)
    if loaded.spec.testbed is not None:  # its broker's data, and so the cluster's queues, go with it
        from schedlab.services.testbed import lifecycle

        gone = lifecycle.stop(loaded, d)
        if removed is not None:
            removed += gone
        return stopped
    if delete_queues:
        await delete_cluster_queues(loaded)
    return stopped


async def delete_cluster_queues(loaded: LoadedCluster) -> None:
    directory = Directory(loaded)
    names = [directory.queue(("gm", g.id)) for g in loaded.spec.gms]
    names += [directory.queue(("submit", g.id)) for g in loaded.spec.gms]
    names += [directory.queue(("done", g.id)) for g in loaded.spec.gms]  # the GMs' completion logs
    names += [directory.queue(("lm", lm.id)) for lm in loaded.spec.lms]
    names += [tokens_queue(lease_queue(loaded.name, lm.id)) for lm in loaded.spec.lms]  # the LMs' fencing tokens
    link = AmqpLink(loaded.brokers)
    try:
        await link.connect(3.0)
    except BrokerUnreachable:
        return
    try:
        runs_known = True
        if loaded.secret:  # the runs the job ledger names: detached ones' record streams, attached ones' run queues
            from schedlab.services.jobs import ledger_runs
            from schedlab.services.ledger import StreamReadTimeout

            try:
                names += [directory.queue(("run", run)) for run in await ledger_runs(loaded, link.connection)]
            except Exception as e:  # the ledger stays: it is what names those streams for the next down
                # a read out of time, or a broker refusing it — e.g. the node reached has no replica of the stream
                # yet, after a member lost its data rejoined (found by the broker-node chaos test in CI)
                runs_known = False
                reason = e.reason if isinstance(e, StreamReadTimeout) else f"cannot read the job ledger ({str(e).strip() or type(e).__name__})"
                print(f"cluster {loaded.name}: {reason}; the job ledger and the runs' queues it names are kept "
                      "(cluster down again deletes them)", file=sys.stderr)
                with contextlib.suppress(Exception):
                    await link.close()
                link = AmqpLink(loaded.brokers)  # the refused read closed the channel: delete on a fresh link
                try:
                    await link.connect(3.0)
                except BrokerUnreachable:
                    return
        if runs_known:
            names.append(ledger_queue(loaded.name))  # the job ledger (a stream)
        await link.delete_queues(names)
    finally:
        await link.close()
