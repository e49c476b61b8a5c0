"""The in-process transport: the embedded default, a whole cluster in one process with no broker.

A message sent to an address bound in this process is delivered on the next
turn of the event loop (never inside the sender's handler, so handlers are not
re-entered, as in the simulator), optionally after a fixed one-way ``latency``.
Messages are handed over as objects, as in the simulator; ``codec`` (a
``(encode, decode)`` pair) makes every message go through its wire form
instead, to check that the schemas carry everything the components need.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from schedlab.services.runtime import Address, AsyncRuntime


class InProcTransport:
    def __init__(self, latency: float = 0.0, codec: tuple[Callable[[Any], bytes], Callable[[bytes], Any]] | None = None) -> None:
        if not latency >= 0:
            raise ValueError(f"latency must be >= 0, got {latency!r}")
        self.latency = latency
        self.codec = codec
        self.routes: dict[Address, AsyncRuntime] = {}
        self.bytes_sent = 0

    def bind(self, address: Address, runtime: AsyncRuntime) -> None:
        self.routes[address] = runtime

    def send(self, dst: Address, msg: Any) -> None:
        rt = self.routes.get(dst)
        if rt is None:
            raise KeyError(f"no component at address {dst!r}")
        if self.codec is not None:
            data = self.codec[0](msg)
            self.bytes_sent += len(data)
            msg = self.codec[1](data)
        loop: asyncio.AbstractEventLoop = rt.loop
        if self.latency:
            loop.call_later(self.latency, rt.deliver, dst, msg)
        else:
            loop.call_soon(rt.deliver, dst, msg)
