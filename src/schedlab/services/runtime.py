"""The runtime of a service process: the sans-IO components' calls, and the services' own, on a clock.

Megha's GM and LM classes act only through the four calls of
:class:`~schedlab.sim.runtime.Runtime` (``now``, ``send``, ``call_later``,
``rng``). The services around them — recovery, links, leases, failure
detection — need a little more: handlers of their own on a component's address,
screens before sending and delivering, and ``async def`` sequences (a GM's start
waits for every LM's answer, or a timeout). :class:`ServiceRuntime` is all of
that, written once:

* **dispatch** (here): a table of handlers per address, screens
  (``before_send``, ``before_delivery``), bookkeeping hooks
  (``after_delivery``), and ``guarded`` — a handler that raises is a bug or bad
  input: the error is logged once per handler and counted (``handler_errors``)
  and the service keeps running;
* **a clock and timers**, and what coroutines may await (``sleep``, ``event``
  with :meth:`wait`, ``future``, ``spawn``) — asyncio's in
  :class:`AsyncRuntime`, the discrete-event kernel's in
  :class:`~schedlab.services.simruntime.SimServiceRuntime`, so the same service
  code runs for real and under deterministic simulation with injected faults
  (:mod:`schedlab.services.dst`).

``now()`` is the process's wall clock (``time.time()`` for real), so stamps
taken by services on different hosts are comparable up to clock
synchronisation (see :mod:`~.records`). ``rng(name)`` gives the simulator's
named streams for the same seed, so a component draws the same numbers in
every runtime.

Handlers run one at a time (the loop thread, or the kernel), as in the
simulator, so the components need no locks.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import defaultdict
from collections.abc import Callable, Coroutine, Hashable, Mapping
from typing import Any, Protocol

from schedlab.services.stepcosts import StepCosts
from schedlab.sim.rng import RngStreams

log = logging.getLogger("schedlab.services")

Address = Hashable


class Transport(Protocol):
    """Carries messages between runtimes: ``bind`` makes this process the home of an address."""

    def bind(self, address: Address, runtime: ServiceRuntime) -> None: ...

    def send(self, dst: Address, msg: Any) -> None: ...


class ServiceRuntime:
    """Dispatch of one service process (or of a whole embedded cluster); clock and timers in subclasses."""

    def __init__(self, transport: Transport, seed: int = 0) -> None:
        self.transport = transport
        self.streams = RngStreams(seed)
        self._dispatch: dict[Address, Mapping[type, Callable[[Any], None]]] = {}
        self._components: dict[Address, Any] = {}
        self.sent: dict[str, int] = defaultdict(int)
        self.received: dict[str, int] = defaultdict(int)
        self.handler_errors = 0
        self._logged: set[str] = set()
        self._after: dict[type, list[Callable[[Address, Any], None]]] = defaultdict(list)
        self._before: dict[type, Callable[[Address, Any], Any]] = {}
        self._outgoing: dict[type, Callable[[Address, Any], Any]] = {}
        # the steps of Megha's processing measured here (:mod:`~.stepcosts`): only a runtime with a wall clock
        # measures (``step_clock`` set); the simulation's never reads one
        self.steps: StepCosts | None = None
        self.step_clock: Callable[[], float] | None = None
        self._timed: dict[type, tuple[str, Callable[[Any], int]]] = {}
        # where steps are measured, also when the input being handled reached this process (:meth:`handling_since`)
        self.input_at = 0.0  # 0: no input is being handled
        self._received = 0.0  # a transport's stamp of the next input's arrival (:meth:`handle_received`)
        attach = getattr(transport, "attach", None)
        if attach is not None:
            attach(self)

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

    def time_step(self, cls: type, step: str, items: Callable[[Any], int]) -> None:
        """Where this runtime measures steps: the handling of every ``cls`` message delivered here is one input of
        ``step``, of ``items(msg)`` items."""
        self._timed[cls] = (step, items)

    def timed(self, step: str, items: int, fn: Callable[..., Any], *args: Any) -> None:
        """``guarded(fn, *args)``, measured as one input of ``step`` of ``items`` items where this runtime measures."""
        clock = self.step_clock
        if clock is None or self.steps is None:
            self.guarded(fn, *args)
            return
        outer = self.begin_input()
        t0 = clock()
        self.guarded(fn, *args)
        self.steps.observe(step, clock() - t0, items)
        self.input_at = outer

    # -- when an input's handling began (a real process: Megha's processing marks) ------------------
    def handle_received(self, ago: float, fn: Callable[..., Any], *args: Any) -> Any:
        """A transport: ``fn(*args)`` delivers an input that reached this process ``ago`` seconds ago (when it was
        read, before its authentication and decoding took their time); its handling began then."""
        self._received = self.now() - ago
        try:
            return fn(*args)
        finally:
            self._received = 0.0  # not delivered (refused, held for order): no later input's arrival

    def begin_input(self) -> float:
        """The handling of an input begins (at its arrival, if its transport stamped it); returns the time of the
        input handled around it (0: none), for the caller to restore when this one is done."""
        outer, received = self.input_at, self._received
        self._received = 0.0
        self.input_at = received if received else self.now()
        return outer

    def handling_since(self) -> float:
        """When the input being handled reached this process (now, outside any input: a coroutine's step). A GM or
        LM marks its framework queuing until then and its processing from then, as the simulator does when it
        charges processing costs (``MeghaShared.handling_since``)."""
        return self.input_at or self.now()

    def before_send(self, cls: type, fn: Callable[[Address, Any], Any]) -> None:
        """``fn(dst, msg)`` sees every ``cls`` message sent from here and returns what to send (``None``: nothing now).
        Several screens of one class run in the order they were registered, each on what the one before returned."""
        first = self._outgoing.get(cls)
        if first is None:
            self._outgoing[cls] = fn
            return

        def both(dst: Address, msg: Any) -> Any:
            msg = first(dst, msg)
            return None if msg is None else fn(dst, msg)

        self._outgoing[cls] = both

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
    def send(self, dst: Address, msg: Any) -> None:
        if self._outgoing:
            screen = self._outgoing.get(msg.__class__)
            if screen is not None:
                msg = screen(dst, msg)
                if msg is None:
                    return
        self.sent[msg.__class__.__name__] += 1
        self.transport.send(dst, msg)

    def rng(self, name: str) -> random.Random:
        return self.streams.rng(name)

    def now(self) -> float:
        raise NotImplementedError

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` after ``delay`` seconds, guarded (see :meth:`guarded`); returns a handle for :meth:`cancel`."""
        raise NotImplementedError

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` at this instant, after the current handler (never inside it), guarded."""
        raise NotImplementedError

    def cancel(self, handle: Any) -> None:
        raise NotImplementedError

    # -- what coroutines await ----------------------------------------------------------------
    def sleep(self, delay: float) -> Any:
        raise NotImplementedError

    def event(self) -> Any:
        """An event (``set``, ``clear``, ``is_set``) to :meth:`wait` on."""
        raise NotImplementedError

    async def wait(self, event: Any, timeout: float | None) -> bool:
        """True once ``event`` is set, False if ``timeout`` seconds pass first."""
        raise NotImplementedError

    def future(self) -> Any:
        """A future (``set_result``, ``done``) to await."""
        raise NotImplementedError

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "") -> Any:
        """Run a coroutine beside the handlers; an exception that ends it is logged and counted."""
        raise NotImplementedError

    # -- delivery -------------------------------------------------------------------------------
    def deliver(self, dst: Address, msg: Any) -> None:
        """Run ``dst``'s handler for ``msg`` now (called by transports)."""
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
        if self.step_clock is None:
            self.guarded(handler, msg)
        else:
            timed = self._timed.get(msg.__class__)
            if timed is None:
                outer = self.begin_input()
                self.guarded(handler, msg)
                self.input_at = outer
            else:
                self.timed(timed[0], timed[1](msg), handler, msg)
        hooks = self._after.get(msg.__class__)
        if hooks:
            for fn in hooks:
                self.guarded(fn, dst, msg)

    def guarded(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)``; an exception is logged once per function and counted — a service outlives a bad
        message or a bug in one handler."""
        try:
            fn(*args)
        except Exception as e:
            self._error(getattr(fn, "__qualname__", str(fn)), f"{type(e).__name__}: {e}", exc=e)

    def coroutine_failed(self, name: str, exc: BaseException) -> None:
        """A spawned coroutine ended with an exception: counted and logged like a handler's."""
        self._error(f"coroutine {name}", f"{type(exc).__name__}: {exc}", exc=exc)

    def _error(self, key: str, text: str, exc: BaseException | None = None) -> None:
        self.handler_errors += 1
        if key not in self._logged:
            self._logged.add(key)
            log.error("%s", text, exc_info=exc)

    def message_counts(self) -> dict[str, int]:
        return dict(sorted(self.sent.items()))


class AsyncRuntime(ServiceRuntime):
    """The runtime of a real process: asyncio's loop, timers and the wall clock."""

    def __init__(self, transport: Transport, seed: int = 0, clock: Callable[[], float] = time.time,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.clock = clock
        self.loop = loop if loop is not None else asyncio.get_running_loop()
        self._tasks: set[asyncio.Task] = set()
        super().__init__(transport, seed)
        self.steps = StepCosts()
        self.step_clock = time.perf_counter

    def now(self) -> float:
        return self.clock()

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, self._fire, fn, args)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> asyncio.Handle:
        return self.loop.call_soon(self._fire, fn, args)

    def _fire(self, fn: Callable[..., Any], args: tuple) -> None:
        # a timer's handling begins when it fires
        self.input_at = self.clock()
        self.guarded(fn, *args)
        self.input_at = 0.0

    def cancel(self, handle: Any) -> None:
        handle.cancel()

    def sleep(self, delay: float) -> Any:
        return asyncio.sleep(delay)

    def event(self) -> asyncio.Event:
        return asyncio.Event()

    async def wait(self, event: Any, timeout: float | None) -> bool:
        if event.is_set():
            return True
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def future(self) -> asyncio.Future:
        return self.loop.create_future()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "") -> asyncio.Task:
        task = self.loop.create_task(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                self.coroutine_failed(name or t.get_name(), t.exception())  # type: ignore[arg-type]

        task.add_done_callback(done)
        return task

    def stop_tasks(self) -> None:
        """Cancel every coroutine spawned here that still runs."""
        for t in list(self._tasks):
            t.cancel()

