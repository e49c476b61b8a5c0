"""A RabbitMQ node of our own: Debian's ``rabbitmq-server`` with its own name, ports, config and data folder.

The machine's broker (``/etc/rabbitmq``) listens on loopback only and keeps its
node name; a node started here never touches it. Each node gets:

* a folder (``data_dir``, owned by the ``rabbitmq`` user) holding its config
  file, an empty environment file (so ``/etc/rabbitmq/rabbitmq-env.conf`` and
  its loopback pinning are not read), its Mnesia data, logs, pid file and
  Erlang cookie (``HOME``);
* a node name ``<name>@localhost`` and a distribution port of its own — or,
  on a testbed's host (``node_host``: its address), ``<name>@<address>``: a
  *long* name (``RABBITMQ_USE_LONGNAME``), since nodes in other namespaces
  must reach it by that address (``localhost`` would be their own);
* its AMQP listener on ``host:port``, with ``guest`` allowed from anywhere
  (``loopback_users = none``): the node only ever listens on a testbed's
  private address or on loopback;
* optionally a network namespace (``netns``): the node runs inside it
  (``ip netns exec``), with the namespace's own ``epmd``.

The server runs as the ``rabbitmq`` user (``runuser``), in a session of its
own so that a terminal's Ctrl-C does not reach it; :meth:`stop` asks it to
stop (``rabbitmqctl stop``) and :meth:`kill` SIGKILLs its Erlang VM, as a
crash of its host would.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from schedlab.errors import InputError

SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
CTL = "/usr/lib/rabbitmq/bin/rabbitmqctl"
QUEUES = "/usr/lib/rabbitmq/bin/rabbitmq-queues"
START_TIMEOUT = 90.0  # seconds for a node to accept AMQP connections (about 5-15 s here)


@dataclass
class RabbitNode:
    name: str  # the node name's first part (``<name>@localhost``)
    host: str  # the AMQP listener's address
    port: int
    dist_port: int  # Erlang distribution
    data_dir: Path
    netns: str | None = None
    node_host: str = "localhost"  # the node name's host part: a testbed host's address, for nodes in other namespaces

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).resolve()  # HOME and every RABBITMQ_* path must be absolute
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@{self.host}:{self.port}/"

    @property
    def node(self) -> str:
        return f"{self.name}@{self.node_host}"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "rabbitmq.pid"

    def _prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.netns] if self.netns else []

    def _env(self) -> list[str]:
        d = self.data_dir
        return ["env", "-i", "PATH=/usr/bin:/bin:/usr/sbin:/sbin", f"HOME={d}", "LANG=C.UTF-8",
                f"RABBITMQ_CONF_ENV_FILE={d / 'rabbitmq-env.conf'}", f"RABBITMQ_CONFIG_FILE={d / 'rabbitmq.conf'}",
                f"RABBITMQ_NODENAME={self.node}", f"RABBITMQ_MNESIA_BASE={d / 'mnesia'}", f"RABBITMQ_LOG_BASE={d / 'log'}",
                f"RABBITMQ_ENABLED_PLUGINS_FILE={d / 'enabled_plugins'}", f"RABBITMQ_PID_FILE={self.pid_file}",
                f"RABBITMQ_DIST_PORT={self.dist_port}",
                # an address as the host part is a long name (it has dots); the CLI tools need to know it too
                f"RABBITMQ_USE_LONGNAME={'true' if '.' in self.node_host else 'false'}"]

    def prepare(self) -> None:
        """Write the node's folder (config, empty environment and plugin files), owned by ``rabbitmq``."""
        try:
            user = pwd.getpwnam("rabbitmq")
        except KeyError:
            raise InputError("rabbitmq", "no rabbitmq user: install Debian's rabbitmq-server") from None
        if not Path(SERVER).exists():
            raise InputError("rabbitmq", f"{SERVER} is missing: install Debian's rabbitmq-server")
        d = self.data_dir
        for sub in ("", "mnesia", "log"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        (d / "rabbitmq.conf").write_text(f"listeners.tcp.1 = {self.host}:{self.port}\nloopback_users = none\n"
                                         "log.console = false\nlog.file.level = warning\n")
        (d / "rabbitmq-env.conf").write_text("")
        (d / "enabled_plugins").write_text("[].\n")
        for root, dirs, files in os.walk(d):
            for n in [root, *(os.path.join(root, x) for x in dirs + files)]:
                os.chown(n, user.pw_uid, user.pw_gid)

    def start(self) -> int:
        """Start the node in the background; returns the pid of its launcher (the VM's is in :attr:`pid_file`)."""
        self.prepare()
        self.pid_file.unlink(missing_ok=True)
        log = open(self.data_dir / "server.out", "ab")  # noqa: SIM115 - handed to the child
        with log:
            child = subprocess.Popen([*self._prefix(), "runuser", "-u", "rabbitmq", "--", *self._env(), SERVER],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                     cwd=self.data_dir)
        self._child = child
        return child.pid

    def failure(self) -> str:
        """The reason the server gave for stopping, from the end of its output (short)."""
        lines = (self.data_dir / "server.out").read_text(errors="replace").strip().splitlines()
        why = next((ln for ln in reversed(lines) if "Failed" in ln or "error" in ln.lower()), lines[-1] if lines else "no output")
        return why.strip()[:300]

    def vm_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return pid

    async def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Until the node accepts an AMQP connection (InputError with the end of its log after ``timeout``)."""
        import aio_pika

        from schedlab.services.net import quiet_amqp_logs

        deadline = time.monotonic() + timeout
        while True:
            try:
                with quiet_amqp_logs():  # a refused try is expected here
                    conn = await aio_pika.connect(self.url, timeout=2.0)
            except Exception:
                if self._child is not None and self._child.poll() is not None:
                    raise InputError(f"rabbitmq node {self.node}", f"stopped while starting: {self.failure()} "
                                                                   f"(log: {self.data_dir / 'server.out'})") from None
                if time.monotonic() > deadline:
                    raise InputError(f"rabbitmq node {self.node}", f"not accepting connections at {self.host}:{self.port} after "
                                                                   f"{timeout:.0f} s: {self.failure()}") from None
                await asyncio.sleep(0.5)
                continue
            await conn.close()
            return

    def ctl(self, *args: str, timeout: float = 60.0, tool: str = CTL) -> subprocess.CompletedProcess[str]:
        """``rabbitmqctl`` (or another of its tools, e.g. :data:`QUEUES`) against this node (inside its
        namespace, with its cookie)."""
        return subprocess.run([*self._prefix(), "runuser", "-u", "rabbitmq", "--", *self._env(), tool, "-n", self.node, *args],
                              capture_output=True, text=True, timeout=timeout, cwd=self.data_dir)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the node (cleanly if it answers; SIGKILL after ``timeout``) and its namespace's ``epmd``."""
        pid = self.vm_pid()
        if pid is not None:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                self.ctl("stop", timeout=timeout)
            deadline = time.monotonic() + timeout
            while self.vm_pid() is not None and time.monotonic() < deadline:
                time.sleep(0.1)
        self.kill()

    def kill(self) -> None:
        """SIGKILL the node's Erlang VM (a crash: what it had not written to disk is gone)."""
        pid = self.vm_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10.0
            while self.vm_pid() is not None and time.monotonic() < deadline:
                time.sleep(0.05)

    def wipe(self) -> None:
        """Remove the node's data (a node that lost its disk); the node must be stopped."""
        shutil.rmtree(self.data_dir / "mnesia", ignore_errors=True)
