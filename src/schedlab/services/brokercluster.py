"""A local RabbitMQ cluster of our own: ``schedlab broker up --nodes 3 --dir DIR`` / ``broker down --dir DIR``.

Each member is a :class:`~.rabbitnode.RabbitNode` (Debian's rabbitmq-server
with its own config, node name, ports and data folder, run as the ``rabbitmq``
user); the machine's own broker (``/etc/rabbitmq``, 127.0.0.1:5672) is never
touched. Choices:

* **Names and ports.** Member *k* (1-based) listens for AMQP on
  ``base_port + k - 1`` (5681, 5682, 5683 by default) and for Erlang
  distribution on ``dist_base + k - 1`` (25681…); its node name is
  ``schedlab<amqp port>@localhost``, unique on the machine as long as its port
  is (the system's ``epmd`` on 4369 is shared by every node here). Every port
  is checked free before anything starts; one taken ends ``up`` in one line.
* **One cookie.** Erlang nodes only talk to nodes with the same cookie, read
  from ``$HOME/.erlang.cookie`` — and a node's ``HOME`` is its folder — so
  ``up`` writes one random cookie (mode 0400, owned by ``rabbitmq``) into
  every member's folder before it starts.
* **On a testbed** (:mod:`~.testbed.lifecycle`) each member runs in its
  host's namespace, named ``rabbit@<its address>`` (its own ``epmd``; the
  distribution between members crosses the bridge like any other link);
  the ports are not checked there, its host being new and empty.
* **Joining.** Every member starts on its own (in parallel: 5-15 s each
  here), then members 2… run ``stop_app``, ``join_cluster <member 1>``,
  ``start_app`` in turn.
* **The state file** ``DIR/broker-cluster.json`` lists the members, so that
  ``down`` (and :func:`load`) find them; ``down`` stops every member (cleanly,
  SIGKILL after a timeout) and removes ``DIR``. Run twice, or on a folder
  with nothing in it, it does nothing and says so. A failed ``up`` stops what
  it started and removes what it wrote.
* **A member back after a crash** (:meth:`BrokerCluster.restart`): with its
  data it rejoins by itself (its Mnesia knows the cluster) and its quorum
  queue replicas catch up from the others. Without its data (``wipe``: a lost
  disk) the cluster first forgets it, the fresh node joins as a new member,
  and ``rabbitmq-queues grow`` makes it a replica of every quorum queue again
  — else each later loss of another member would leave those queues one
  replica from losing their majority. **Streams** (the job ledger) have a
  coordinator, a Raft cluster of one member per node named by its node:
  a fresh node under the old name would count as a member that runs nothing,
  so its old member is removed (``ra:remove_member``) when the node is
  forgotten, and the coordinator's leader adds the fresh node back on its
  periodic resize (10-25 s here), which ``restart`` waits for. Without that,
  the second member to lose its data left the coordinator without a
  majority; the stream then had no leader once its node died, and RabbitMQ
  3.10's boot on a joining node, which reads the node of every queue record,
  failed on it (``function_clause`` in ``amqqueue:qnode(none)``: the tenth
  kill of a 20-kill benchmark, every run). So the fresh node also joins only
  once every queue has a leader.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import string
import time
from dataclasses import dataclass, field
from pathlib import Path

from schedlab.errors import InputError
from schedlab.services.rabbitnode import CTL, QUEUES, RabbitNode

STATE_FILE = "broker-cluster.json"
BASE_PORT = 5681
DIST_BASE = 25681


def port_free(host: str, port: int) -> bool:
    """True if nothing listens on ``host:port`` (nor on every address at that port)."""
    for addr in {host, "0.0.0.0"}:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed connection's TIME_WAIT is no listener
            try:
                s.bind((addr, port))
            except OSError:
                return False
    return True


@dataclass
class BrokerCluster:
    """The members of one local RabbitMQ cluster and its folder."""

    dir: Path
    nodes: list[RabbitNode]
    groups: dict[int, int] = field(default_factory=dict)  # member -> process group of its launcher (see _end_group)

    @property
    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]

    @classmethod
    def plan(cls, dir: Path, count: int = 3, host: str = "127.0.0.1", base_port: int = BASE_PORT,
             dist_base: int = DIST_BASE) -> BrokerCluster:
        if not 1 <= count <= 9:
            raise InputError("--nodes", f"must be 1..9, got {count}")
        nodes = [RabbitNode(f"schedlab{base_port + k}", host, base_port + k, dist_base + k, dir / f"node{k + 1}")
                 for k in range(count)]
        return cls(dir, nodes)

    def save(self) -> None:
        data = {"nodes": [{"name": n.name, "host": n.host, "port": n.port, "dist_port": n.dist_port,
                           "data_dir": str(n.data_dir), "netns": n.netns, "node_host": n.node_host, "group": self.groups.get(k)}
                          for k, n in enumerate(self.nodes)]}
        (self.dir / STATE_FILE).write_text(json.dumps(data, indent=1) + "\n")

    def member(self, index: int) -> RabbitNode:
        """Member ``index`` (0-based), with a clear error for one that does not exist."""
        if not 0 <= index < len(self.nodes):
            raise InputError("broker node", f"no member {index} (the cluster has {len(self.nodes)})")
        return self.nodes[index]

    async def up(self, timeout: float = 120.0) -> None:
        """Start every member and join them into one cluster (see the module); on failure nothing is left."""
        if self.dir.exists() and any(self.dir.iterdir()):
            what = "a broker cluster is already up there (broker down first)" if (self.dir / STATE_FILE).exists() else "is not empty"
            raise InputError(str(self.dir), what)
        # a node in a namespace (a testbed's host, made empty just before) has its address and ports to itself
        taken = [f"{n.host}:{p}" for n in self.nodes if n.netns is None for p in (n.port, n.dist_port) if not port_free(n.host, p)]
        if taken:
            raise InputError("broker up", f"port{'s' if len(taken) > 1 else ''} {', '.join(taken)} already in use "
                                          "(another broker cluster? choose --base-port / --dist-base)")
        shut = [p for p in self.dir.parents if p.exists() and not p.stat().st_mode & stat.S_IXOTH]
        if shut:
            raise InputError(str(self.dir), f"the rabbitmq user cannot reach it: {shut[0]} is closed to others "
                                            f"(mode {stat.S_IMODE(shut[0].stat().st_mode):o}); choose a folder under /tmp or /var/tmp")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.save()
            cookie = "".join(secrets.choice(string.ascii_uppercase) for _ in range(20))
            for n in self.nodes:
                n.prepare()
                _write_cookie(n, cookie)
            for k, n in enumerate(self.nodes):
                self.groups[k] = n.start()
            self.save()
            await asyncio.gather(*(n.wait_ready(timeout) for n in self.nodes))
            for n in self.nodes[1:]:
                await asyncio.to_thread(self._join, n, self.nodes[0])
                await n.wait_ready(timeout)
        except BaseException:
            self.down()
            raise

    def _join(self, node: RabbitNode, seed: RabbitNode) -> None:
        for args in (("stop_app",), ("join_cluster", seed.node), ("start_app",)):
            _ctl_ok(node, *args)

    def down(self) -> None:
        """Stop every member (cleanly, SIGKILL after a timeout) and remove the folder."""
        for k, n in enumerate(self.nodes):
            n.stop(timeout=20.0)
            _end_group(self.groups.get(k), n.data_dir)
        shutil.rmtree(self.dir, ignore_errors=True)

    def kill(self, index: int) -> RabbitNode:
        """SIGKILL member ``index``'s Erlang VM (a crash of its host)."""
        node = self.member(index)
        node.kill()
        return node

    async def restart(self, index: int, wipe: bool = False, timeout: float = 120.0) -> None:
        """Start member ``index`` again after a :meth:`kill`; ``wipe``: without its data (see the module)."""
        node = self.member(index)
        node.kill()
        coordinated = False
        if wipe:
            node.wipe()
            other = next(n for n in self.nodes if n is not node and n.vm_pid() is not None)
            await asyncio.to_thread(_ctl_ok, other, "forget_cluster_node", node.node)
            coordinated = await asyncio.to_thread(_forget_coordinator_member, other, node)
        _end_group(self.groups.get(index), node.data_dir)
        self.groups[index] = node.start()
        self.save()
        await node.wait_ready(timeout)
        if wipe:
            other = next(n for n in self.nodes if n is not node and n.vm_pid() is not None)
            await asyncio.to_thread(_wait_for_leaders, other, timeout)
            await asyncio.to_thread(self._join, node, other)
            await node.wait_ready(timeout)
            await asyncio.to_thread(_queues_grow, node)
            if coordinated:
                await asyncio.to_thread(_wait_for_coordinator, node, timeout)


def _end_group(group: int | None, data_dir: Path) -> None:
    """SIGKILL what is left of a member's launcher group (its process group: the launcher starts it in a session of
    its own) — a node stopped before it wrote its pid file, which :meth:`RabbitNode.stop` cannot find. Only
    processes of that group working in the member's folder are killed (a group number can be reused)."""
    if group is None:
        return
    for _ in range(100):
        mine = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                pgid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[2])
                cwd = os.readlink(proc / "cwd")
            except (OSError, ValueError, IndexError):
                continue
            if pgid == group and cwd.startswith(str(data_dir)):
                mine.append(int(proc.name))
        if not mine:
            return
        for pid in mine:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _write_cookie(node: RabbitNode, cookie: str) -> None:
    user = pwd.getpwnam("rabbitmq")
    path = node.data_dir / ".erlang.cookie"
    path.write_text(cookie)
    os.chown(path, user.pw_uid, user.pw_gid)
    path.chmod(0o400)


def _ctl_ok(node: RabbitNode, *args: str, tool: str = CTL) -> None:
    r = node.ctl(*args, timeout=120.0, tool=tool)
    if r.returncode != 0:
        lines = (r.stderr or r.stdout).strip().splitlines()
        raise InputError(f"rabbitmq node {node.node}", f"{Path(tool).name} {' '.join(args)} failed: {lines[-1] if lines else r.returncode}")


# the queues of the cluster with no leader now (a stream's record holds ``none`` while its leader is elected)
LEADERLESS = "[binary_to_list(element(4, amqqueue:get_name(Q))) || Q <- ets:tab2list(rabbit_queue), amqqueue:get_pid(Q) =:= none]."


def _wait_for_leaders(node: RabbitNode, timeout: float) -> None:
    """Wait until every queue of the cluster ``node`` is in has a leader (see the module); one line if never."""
    deadline = time.monotonic() + timeout
    while True:
        r = node.ctl("eval", LEADERLESS, timeout=60.0)
        out = " ".join(r.stdout.split())
        if r.returncode == 0 and out == "[]":
            return
        if time.monotonic() >= deadline:
            raise InputError(f"rabbitmq node {node.node}", f"queues still without a leader after {timeout:g} s: {out or r.stderr.strip()}")
        time.sleep(0.5)


# RabbitMQ's stream coordinator is a Raft cluster of its own (one member per node, named by its node); these run on a
# live member. FORGET: take a lost node's member out, through any member that runs (Raft redirects to its leader).
COORDINATOR_FORGET = """Lost = {{rabbit_stream_coordinator, '{node}'}},
Servers = [{{rabbit_stream_coordinator, N}} || N <- rabbit_mnesia:cluster_nodes(running)] -- [Lost],
lists:foldl(fun(_, removed) -> removed;
               (S, Acc) -> case catch ra:remove_member(S, Lost) of
                               {{ok, _, _}} -> removed;
                               {{error, not_member}} -> removed;
                               _ -> Acc
                           end end, none, Servers)."""
# MEMBER: does the node run a coordinator member the cluster counts (the leader's periodic resize adds a node back)?
COORDINATOR_MEMBER = """case whereis(rabbit_stream_coordinator) of
    undefined -> false;
    _ -> case catch ra:members({rabbit_stream_coordinator, node()}) of
             {ok, Members, _} -> lists:member({rabbit_stream_coordinator, node()}, Members);
             _ -> false
         end
end."""


def _forget_coordinator_member(live: RabbitNode, lost: RabbitNode) -> bool:
    """Take the lost member out of the stream coordinator's Raft cluster (see the module); False if there is no
    coordinator (no stream was ever declared) or it did not answer."""
    r = live.ctl("eval", COORDINATOR_FORGET.format(node=lost.node), timeout=60.0)
    return r.returncode == 0 and r.stdout.strip() == "removed"


def _wait_for_coordinator(node: RabbitNode, timeout: float) -> None:
    """Wait until ``node`` runs a member of the stream coordinator again; one line if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        r = node.ctl("eval", COORDINATOR_MEMBER, timeout=60.0)
        if r.returncode == 0 and r.stdout.strip() == "true":
            return
        if time.monotonic() >= deadline:
            raise InputError(f"rabbitmq node {node.node}", f"not a member of the stream coordinator again after {timeout:g} s")
        time.sleep(0.5)


def _queues_grow(node: RabbitNode) -> None:
    """Make ``node`` a replica of every quorum queue that lacks one there."""
    _ctl_ok(node, "grow", node.node, "all", tool=QUEUES)


def load(dir: Path) -> BrokerCluster | None:
    """The cluster whose state file is in ``dir`` (None if there is none)."""
    path = dir / STATE_FILE
    try:
        data = json.loads(path.read_text())
        nodes = [RabbitNode(d["name"], d["host"], int(d["port"]), int(d["dist_port"]), Path(d["data_dir"]), d.get("netns"),
                            d.get("node_host", "localhost")) for d in data["nodes"]]
        groups = {k: int(d["group"]) for k, d in enumerate(data["nodes"]) if d.get("group") is not None}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(str(path), f"not a broker cluster's state file: {e}") from None
    return BrokerCluster(dir, nodes, groups)


def down(dir: Path) -> int:
    """``broker down``: stop the cluster in ``dir`` and remove the folder; returns how many members it had (0: none)."""
    cluster = load(dir)
    if cluster is None:
        return 0
    cluster.down()
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(dir)
    return len(cluster.nodes)
