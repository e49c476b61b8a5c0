"""The testbed's delay relay: every TCP connection between two hosts, held for the link's one-way delay.

This kernel has no ``netem``, so delay and jitter are added in user space.
Each host's namespace redirects its new TCP connections to other hosts to
this relay's port on its loopback (:mod:`.netns`); the relay — one process
for the whole testbed, in the machine's own namespace — listens in every
host's namespace (a socket belongs to the namespace it was created in:
``setns`` around ``socket()``), reads where each connection was going
(``SO_ORIGINAL_DST``), connects there from a socket made in the sender's
namespace (so the receiver sees the sender's address, and the sender's
loss and partition rules apply to it), marked ``0x5e1`` so that it is not
redirected again, and copies both ways.

Each chunk read from one side is written to the other once the link's delay
(plus a draw of its jitter: a normal deviate with that standard deviation,
the sum kept at 0 or more) has passed, never before the chunk read before it
— TCP's order is kept, so jitter delays bursts rather than reordering them.
A direction whose queue holds over 4 MB stops reading until it drains
(backpressure to the sender). A connection that cannot be made within 10 s
(a partition drops its SYN) is closed, as a refused one would be.

Delays may change while the testbed runs: ``schedlab chaos --delay`` writes
``network.json`` in the run folder (``{"delay": {"gm0>lm1": 0.05, ...}}``,
one direction each, added to the link's own) and the relay reads it twice a
second. CPU: one Python coroutine pair per connection; the relay's own use is
in the testbed report (``reports/services/``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import json
import os
import random
import signal
import socket
import struct
import sys
from pathlib import Path

from schedlab.services.testbed.network import Network

CLONE_NEWNET = 0x40000000
SO_ORIGINAL_DST = 80
SO_MARK = 36
MAX_QUEUED = 4 << 20
CONNECT_TIMEOUT = 10.0
READY_FILE = "relay.ready"
OVERRIDES_FILE = "network.json"

_libc = ctypes.CDLL(None, use_errno=True)


def setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class Relay:
    def __init__(self, run_dir: Path) -> None:
        state = json.loads((run_dir / "testbed.json").read_text())
        self.run_dir = run_dir
        self.port = int(state["relay_port"])
        self.mark = int(state["relay_mark"])
        self.hosts = state["hosts"]
        self.by_address = {h["address"]: h["name"] for h in self.hosts}
        self.network = Network(state["network"])
        self.extra: dict[str, float] = {}
        self.rng = random.Random(0)
        self.root = os.open("/proc/self/ns/net", os.O_RDONLY)
        self.ns_fd = {h["name"]: os.open(f"/var/run/netns/{h['netns']}", os.O_RDONLY) for h in self.hosts}
        self.connections = 0
        self._mtime: float | None = None
        self._cache: dict[tuple[str, str], tuple[float, float]] = {}

    def socket_in(self, host: str) -> socket.socket:
        """A TCP socket of ``host``'s namespace."""
        setns(self.ns_fd[host])
        try:
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            setns(self.root)

    def delay(self, src: str, dst: str) -> float:
        d, j = self._cache.get((src, dst)) or self._props(src, dst)
        return max(0.0, d + self.rng.gauss(0.0, j)) if j > 0 else d

    def _props(self, src: str, dst: str) -> tuple[float, float]:
        p = self.network.link(src, dst)
        v = (p.delay + self.extra.get(f"{src}>{dst}", 0.0), p.jitter)
        self._cache[(src, dst)] = v
        return v

    async def watch_overrides(self) -> None:
        path = self.run_dir / OVERRIDES_FILE
        while True:
            try:
                mtime: float | None = path.stat().st_mtime
            except OSError:
                mtime = None
            if mtime != self._mtime:
                self._mtime = mtime
                extra: dict[str, float] = {}
                if mtime is not None:
                    with contextlib.suppress(OSError, ValueError):
                        extra = {str(k): float(v) for k, v in json.loads(path.read_text()).get("delay", {}).items()}
                self.extra = extra
                self._cache.clear()
            await asyncio.sleep(0.5)

    async def start(self) -> list[asyncio.Server]:
        servers = []
        for h in self.hosts:
            s = self.socket_in(h["name"])
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", self.port))
            s.listen(1024)
            s.setblocking(False)
            servers.append(await asyncio.start_server(functools.partial(self.accept, h["name"]), sock=s))
        return servers

    async def accept(self, src: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        try:
            raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
        except OSError:
            writer.close()
            return
        port = struct.unpack_from("!H", raw, 2)[0]
        ip = socket.inet_ntoa(raw[4:8])
        dst = self.by_address.get(ip)
        if dst is None:
            writer.close()
            return
        out = self.socket_in(src)
        out.setsockopt(socket.SOL_SOCKET, SO_MARK, self.mark)
        out.setblocking(False)
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(out, (ip, port)), CONNECT_TIMEOUT)
            up_reader, up_writer = await asyncio.open_connection(sock=out)
        except (TimeoutError, OSError):
            out.close()
            writer.close()
            return
        self.connections += 1
        try:
            await asyncio.gather(self.pump(reader, up_writer, src, dst), self.pump(up_reader, writer, dst, src))
        finally:
            for w in (writer, up_writer):
                w.close()

    async def pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, src: str, dst: str) -> None:
        """Copy ``src`` → ``dst``, each chunk held for the link's delay, in order."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()
        queued = 0
        drained = asyncio.Event()

        async def deliver() -> None:
            try:
                await _deliver()
            finally:
                drained.set()  # a reader waiting for room must not wait for a writer that is gone

        async def _deliver() -> None:
            nonlocal queued
            while True:
                at, data = await queue.get()
                wait = at - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if data is None:
                    with contextlib.suppress(OSError):
                        if writer.can_write_eof():
                            writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
                queued -= len(data)
                if queued <= MAX_QUEUED:
                    drained.set()

        task = asyncio.ensure_future(deliver())
        last = 0.0
        try:
            while not task.done():
                data = await reader.read(1 << 16)
                if not data:
                    break
                last = max(loop.time() + self.delay(src, dst), last)
                queued += len(data)
                queue.put_nowait((last, data))
                if queued > MAX_QUEUED:
                    drained.clear()
                    await drained.wait()
        except OSError:
            pass
        finally:
            queue.put_nowait((last, None))
            with contextlib.suppress(OSError, ConnectionError):
                await task


async def amain(run_dir: Path) -> None:
    relay = Relay(run_dir)
    servers = await relay.start()
    watcher = asyncio.ensure_future(relay.watch_overrides())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    (run_dir / READY_FILE).write_text(f"{os.getpid()}\n")
    try:
        await stop.wait()
    finally:
        (run_dir / READY_FILE).unlink(missing_ok=True)
        watcher.cancel()
        for s in servers:
            s.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m schedlab.services.testbed.relay RUN_DIR", file=sys.stderr)
        return 2
    asyncio.run(amain(Path(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
