"""A service process's runtime in simulated time: the services' own code under the discrete-event kernel.

:class:`SimServiceRuntime` is :class:`~.runtime.ServiceRuntime` — the same
dispatch, screens and hooks as a real process — with the kernel's clock,
timers and coroutines (:mod:`schedlab.sim.coro`). Several of them share one
kernel, one per simulated process, and reach each other through an in-memory
network and broker (:mod:`~.memnet`). What differs from a real process:

* ``now()`` is the kernel's time plus the process's clock offset
  (``skew``, for faults of clock synchronisation) plus ``EPOCH``: service code
  treats a time of 0 as "never" (a request's unknown first send time, say).
* :meth:`halt` is a crash: no timer, coroutine or delivery of this runtime runs
  again; whatever the process held in memory is gone with the object.
* :meth:`pause` freezes the process (a long GC, CPU starvation, SIGSTOP): until
  then no timer, coroutine or delivery of it runs; each runs at the end, in
  its order, late. Its memory and connections stay.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from schedlab.services.runtime import ServiceRuntime, Transport
from schedlab.sim.coro import SimEvent, SimFuture, SimTask, sleep, wait_event
from schedlab.sim.kernel import Kernel

EPOCH = 1000.0  # simulated wall clocks start here, not at 0


class SimTimer:
    """A kernel timer with asyncio's ``cancel()``."""

    __slots__ = ("ev",)

    def __init__(self, ev: list) -> None:
        self.ev = ev

    def cancel(self) -> None:
        self.ev[0] = None


class SimServiceRuntime(ServiceRuntime):
    """One simulated process's runtime on a shared kernel."""

    def __init__(self, transport: Transport, kernel: Kernel, seed: int = 0, skew: float = 0.0, name: str = "") -> None:
        self.kernel = kernel
        self.skew = skew
        self.alive = True
        self.name = name
        self.paused_until = 0.0  # kernel time: until then nothing of this process runs (see pause)
        self._tasks: list[SimTask] = []
        super().__init__(transport, seed)

    def now(self) -> float:
        return self.kernel.now + EPOCH + self.skew

    def paused_for(self) -> float:
        """Seconds until the process runs again (0: it runs)."""
        return self.paused_until - self.kernel.now if self.paused_until > self.kernel.now else 0.0

    def pause(self, duration: float) -> None:
        """Freeze the process for ``duration`` seconds (see the module)."""
        self.paused_until = max(self.paused_until, self.kernel.now + duration)

    def _fire(self, fn: Callable[..., Any], args: tuple) -> None:
        if self.alive:
            left = self.paused_for()
            if left > 0:
                self.kernel.call_later(left, self._fire, fn, args)
                return
            self.guarded(fn, *args)

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> SimTimer:
        return SimTimer(self.kernel.call_later(delay if delay > 0 else 0.0, self._fire, fn, args))

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> SimTimer:
        return SimTimer(self.kernel.call_later(0.0, self._fire, fn, args))

    def cancel(self, handle: Any) -> None:
        handle.cancel()

    def sleep(self, delay: float) -> SimFuture:
        return sleep(self.kernel, delay)  # the sleeping coroutine's wake-up waits out a pause (SimTask's hold)

    def event(self) -> SimEvent:
        return SimEvent()

    async def wait(self, event: Any, timeout: float | None) -> bool:
        return await wait_event(self.kernel, event, timeout)

    def future(self) -> SimFuture:
        return SimFuture()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "") -> SimTask:
        task = SimTask(self.kernel, coro, lambda e: self.coroutine_failed(name, e), name, hold=self.paused_for)
        self._tasks.append(task)
        if len(self._tasks) > 64:
            self._tasks = [t for t in self._tasks if not t.done()]
        if not self.alive:
            task.cancel()
        return task

    def deliver(self, dst: Any, msg: Any) -> None:
        if self.alive:
            left = self.paused_for()
            if left > 0:
                self.kernel.call_later(left, self.deliver, dst, msg)
                return
            super().deliver(dst, msg)

    def halt(self) -> None:
        """The process is gone: nothing of it runs again."""
        self.alive = False
        for t in self._tasks:
            t.cancel()
        self._tasks.clear()
