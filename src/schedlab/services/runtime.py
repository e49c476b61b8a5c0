"""The asyncio Runtime: the sans-IO components' four calls on a real event loop and a real transport.

The same :class:`~schedlab.sim.runtime.Runtime` interface as the simulator's
:class:`~schedlab.sim.runtime.SimRuntime`, implemented with:

* ``now()`` — the wall clock (``time.time()``, so stamps taken by services on
  different hosts are comparable up to clock synchronisation; see
  :mod:`~.records`);
* ``call_later`` / ``cancel`` — timers on the asyncio loop;
* ``send(dst, msg)`` — a :class:`Transport` delivers the message to the runtime
  hosting ``dst`` (in this process or another), which runs the handler;
* ``rng(name)`` — the simulator's named streams for the same seed, so a
  component draws the same numbers in both runtimes.

Handlers run one at a time on the loop thread, as in the simulator, so the
components need no locks. A handler that raises is a bug or bad input: the
error is logged once per message type and counted (``handler_errors``) and the
service keeps running; the message is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Protocol

from schedlab.sim.rng import RngStreams

log = logging.getLogger("schedlab.services")

Address = Hashable


class Transport(Protocol):
    """Carries messages between runtimes: ``bind`` makes this process the home of an address."""

    def bind(self, address: Address, runtime: AsyncRuntime) -> None: ...

    def send(self, dst: Address, msg: Any) -> None: ...


class AsyncRuntime:
    """The Runtime of one service process (or of a whole embedded cluster)."""

    def __init__(self, transport: Transport, seed: int = 0, clock: Callable[[], float] = time.time,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.transport = transport
        self.streams = RngStreams(seed)
        self.clock = clock
        self.loop = loop if loop is not None else asyncio.get_running_loop()
        self._dispatch: dict[Address, Mapping[type, Callable[[Any], None]]] = {}
        self._components: dict[Address, Any] = {}
        self.sent: dict[str, int] = defaultdict(int)
        self.received: dict[str, int] = defaultdict(int)
        self.handler_errors = 0
        self._logged: set[str] = set()
        self._after: dict[type, list[Callable[[Address, Any], None]]] = defaultdict(list)
        self._before: dict[type, Callable[[Address, Any], Any]] = {}
        self._outgoing: dict[type, Callable[[Address, Any], Any]] = {}

    # -- registration ---------------------------------------------------------------------------
    def register(self, component: Any) -> None:
        addr = component.address
        if addr in self._dispatch:
            raise ValueError(f"address {addr!r} is already registered")
        self._dispatch[addr] = dict(component.handlers())
        self._components[addr] = component
        self.transport.bind(addr, self)

    def component(self, address: Address) -> Any:
        return self._components[address]

    def accepts(self, address: Address, cls: type) -> bool:
        table = self._dispatch.get(address)
        return table is not None and cls in table

    def add_handler(self, address: Address, cls: type, fn: Callable[[Any], None]) -> None:
        """Give a registered component's address a handler the component does not have (a service's own message)."""
        table = dict(self._dispatch[address])
        table[cls] = fn
        self._dispatch[address] = table

    def before_send(self, cls: type, fn: Callable[[Address, Any], Any]) -> None:
        """``fn(dst, msg)`` sees every ``cls`` message sent from here and returns what to send (``None``: nothing now)."""
        self._outgoing[cls] = fn

    def send_now(self, dst: Address, msg: Any) -> None:
        """Send without the :meth:`before_send` screen (a message the screen held back, released)."""
        self.sent[msg.__class__.__name__] += 1
        self.transport.send(dst, msg)

    def before_delivery(self, cls: type, fn: Callable[[Address, Any], Any]) -> None:
        """``fn(dst, msg)`` sees every ``cls`` message first and returns what to deliver (``None``: nothing)."""
        self._before[cls] = fn

    def after_delivery(self, cls: type, fn: Callable[[Address, Any], None]) -> None:
        """Run ``fn(dst, msg)`` after every handler of a ``cls`` message (service bookkeeping, e.g. forgetting tasks)."""
        self._after[cls].append(fn)

    # -- the Runtime interface ------------------------------------------------------------------
    def now(self) -> float:
        return self.clock()

    def send(self, dst: Address, msg: Any) -> None:
        if self._outgoing:
            screen = self._outgoing.get(msg.__class__)
            if screen is not None:
                msg = screen(dst, msg)
                if msg is None:
                    return
        self.sent[msg.__class__.__name__] += 1
        self.transport.send(dst, msg)

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, self._guarded, fn, args)

    def cancel(self, handle: Any) -> None:
        handle.cancel()

    def rng(self, name: str) -> random.Random:
        return self.streams.rng(name)

    # -- delivery -------------------------------------------------------------------------------
    def deliver(self, dst: Address, msg: Any) -> None:
        """Run ``dst``'s handler for ``msg`` now (called by transports on the loop thread)."""
        name = msg.__class__.__name__
        table = self._dispatch.get(dst)
        handler = None if table is None else table.get(msg.__class__)
        if handler is None:
            self._error(name, f"no handler at {dst!r} for {name}")
            return
        self.received[name] += 1
        screen = self._before.get(msg.__class__)
        if screen is not None:
            msg = screen(dst, msg)
            if msg is None:
                return
        self._guarded(handler, (msg,))
        hooks = self._after.get(msg.__class__)
        if hooks:
            for fn in hooks:
                self._guarded(fn, (dst, msg))

    def _guarded(self, fn: Callable[..., Any], args: tuple) -> None:
        try:
            fn(*args)
        except Exception as e:  # a service outlives a bad message or a bug in one handler
            self._error(getattr(fn, "__qualname__", str(fn)), f"{type(e).__name__}: {e}", exc=e)

    def _error(self, key: str, text: str, exc: BaseException | None = None) -> None:
        self.handler_errors += 1
        if key not in self._logged:
            self._logged.add(key)
            log.error("%s", text, exc_info=exc)

    def message_counts(self) -> dict[str, int]:
        return dict(sorted(self.sent.items()))
