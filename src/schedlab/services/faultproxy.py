"""A fault-injecting TCP proxy on loopback: slow and partitioned links between two services, for tests and benchmarks.

Give an LM a ``gm_url`` in the cluster file pointing at the proxy, and the
GMs reach that LM through it (the LM and its worker hosts do not):

* :meth:`FaultProxy.slow` — every byte waits ``seconds`` in each direction (order kept);
* :meth:`FaultProxy.drop_replies` — requests go through, answers are thrown away
  (the LM acts on a request; the GM never hears back — the case that makes a
  request *in doubt*, :mod:`~.links`);
* :meth:`FaultProxy.partition` — nothing goes through either way; connections
  stay open and silent, as across a real partition;
* :meth:`FaultProxy.heal` — back to normal; connections that lost bytes are
  closed (what they still carried is garbage to HTTP), new ones work.

Only ever pointed at addresses on this machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time


class FaultProxy:
    """Listens on ``listen_port`` (0: any free port, see :attr:`port`) and forwards to ``target``."""

    def __init__(self, target_host: str, target_port: int, listen_port: int = 0, listen_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.listen = (listen_host, listen_port)
        self.delay = 0.0
        self.drop_up = False  # client -> target
        self.drop_down = False  # target -> client
        self.port = listen_port
        self.server: asyncio.AbstractServer | None = None
        self._conns: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter | None]] = set()
        self._tainted: set[asyncio.StreamWriter] = set()
        self.bytes_dropped = 0

    async def start(self) -> FaultProxy:
        self.server = await asyncio.start_server(self._accept, *self.listen)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- faults -------------------------------------------------------------------------------------
    def slow(self, seconds: float) -> None:
        self.delay = max(0.0, seconds)

    def drop_replies(self) -> None:
        self.drop_up, self.drop_down = False, True

    def partition(self) -> None:
        self.drop_up = self.drop_down = True

    def heal(self) -> None:
        self.drop_up = self.drop_down = False
        self.delay = 0.0
        for w in list(self._tainted):
            w.close()
        self._tainted.clear()

    # -- forwarding ---------------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        conn = (writer, up_writer)
        self._conns.add(conn)
        try:
            await asyncio.gather(self._pump(reader, up_writer, writer, up=True), self._pump(up_reader, writer, up_writer, up=False))
        finally:
            self._conns.discard(conn)
            for w in (writer, up_writer):
                self._tainted.discard(w)
                w.close()

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, other: asyncio.StreamWriter, up: bool) -> None:
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                item = await queue.get()
                if item is None:
                    return
                due, data = item
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if self.drop_up if up else self.drop_down:
                    self.bytes_dropped += len(data)
                    self._tainted.update((dst, other))
                    continue
                dst.write(data)
                with contextlib.suppress(ConnectionError):
                    await dst.drain()

        sender = asyncio.get_running_loop().create_task(deliver())
        try:
            while True:
                try:
                    data = await src.read(65536)
                except ConnectionError:
                    break
                if not data:
                    break
                queue.put_nowait((time.monotonic() + self.delay, data))
        finally:
            queue.put_nowait(None)
            with contextlib.suppress(Exception):
                await sender
            with contextlib.suppress(Exception):
                dst.close()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            for a, b in list(self._conns):
                for w in (a, b):
                    if w is not None:
                        w.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2.0)
