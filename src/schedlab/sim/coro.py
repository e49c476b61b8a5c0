"""Coroutines on the discrete-event kernel: ``async def`` code that runs in simulated time.

A service's start-up and recovery are sequences — ask every LM, wait for the
answers or a timeout, then consume the queues — written as ``async def``
functions that await only what their runtime gives them: a sleep, an event
with a timeout, a future. Under asyncio those are asyncio's own; here they are
:class:`SimFuture`\\ s resolved by kernel events, and a :class:`SimTask` steps
the coroutine (``coro.send``) each time what it awaits is done. The same code
then runs for real and in a deterministic simulation, where every step is a
kernel event in (time, scheduling) order.

Choices:

* A coroutine resumes in a new kernel event at the instant its future is
  resolved — never inside the stack of whoever resolved it, as asyncio
  schedules a task's wake-up with ``call_soon``.
* Only :class:`SimFuture` may be awaited at the bottom of a chain (anything
  else is a bug: ``RuntimeError``), so simulated code cannot reach asyncio.
* Cancelling a task closes its coroutine (``GeneratorExit`` inside it): a
  crashed simulated process stops where it is, with no ``finally`` clause
  allowed to await.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from typing import Any

from schedlab.sim.kernel import Kernel

_PENDING = object()


class SimFuture:
    """A result that is not there yet; awaitable from a coroutine run by :class:`SimTask`."""

    __slots__ = ("_result", "_exc", "_callbacks")

    def __init__(self) -> None:
        self._result: Any = _PENDING
        self._exc: BaseException | None = None
        self._callbacks: list[Callable[[SimFuture], None]] = []

    def done(self) -> bool:
        return self._result is not _PENDING or self._exc is not None

    def result(self) -> Any:
        if self._exc is not None:
            raise self._exc
        if self._result is _PENDING:
            raise RuntimeError("the future is not done")
        return self._result

    def set_result(self, value: Any) -> None:
        if self.done():
            raise RuntimeError("the future is done already")
        self._result = value
        self._fire()

    def set_exception(self, exc: BaseException) -> None:
        if self.done():
            raise RuntimeError("the future is done already")
        self._exc = exc
        self._fire()

    def resolve(self, value: Any) -> None:
        """``set_result`` unless already done (a timeout racing an answer)."""
        if not self.done():
            self.set_result(value)

    def add_done_callback(self, fn: Callable[[SimFuture], None]) -> None:
        if self.done():
            fn(self)
        else:
            self._callbacks.append(fn)

    def _fire(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self)

    def __await__(self) -> Generator[SimFuture, None, Any]:
        if not self.done():
            yield self
        return self.result()


class SimTask:
    """One coroutine stepped by kernel events; ``on_error(exc)`` hears of an exception that ends it. ``hold()``, if
    given, says for how many more seconds a wake-up must wait (a frozen process's coroutine runs late)."""

    __slots__ = ("kernel", "coro", "on_error", "finished", "cancelled", "name", "hold")

    def __init__(self, kernel: Kernel, coro: Coroutine[Any, Any, Any], on_error: Callable[[BaseException], None] | None = None,
                 name: str = "", hold: Callable[[], float] | None = None) -> None:
        self.kernel = kernel
        self.coro = coro
        self.on_error = on_error
        self.hold = hold
        self.finished = SimFuture()
        self.cancelled = False
        self.name = name
        kernel.post(kernel.now, self._step, None, None)

    def _step(self, value: Any, exc: BaseException | None) -> None:
        if self.cancelled:
            return
        try:
            waited = self.coro.send(value) if exc is None else self.coro.throw(exc)
        except StopIteration as stop:
            self.finished.set_result(stop.value)
            return
        except BaseException as e:  # the coroutine failed: reported, and the task is over
            self.finished.set_exception(e)
            if self.on_error is not None:
                self.on_error(e)
            return
        if self._cancelled_meanwhile():  # cancelled during this step (by itself)
            self.coro.close()
            return
        if not isinstance(waited, SimFuture):
            self.coro.close()
            err = RuntimeError(f"a simulated coroutine awaited {waited!r}: only the runtime's futures, sleeps and events")
            self.finished.set_exception(err)
            if self.on_error is not None:
                self.on_error(err)
            return
        waited.add_done_callback(self._wake)

    def _cancelled_meanwhile(self) -> bool:
        return self.cancelled

    def _wake(self, fut: SimFuture) -> None:
        self.kernel.post(self.kernel.now, self._resume, fut)

    def _resume(self, fut: SimFuture) -> None:
        if self.hold is not None:
            left = self.hold()
            if left > 0:
                self.kernel.call_later(left, self._resume, fut)
                return
        if fut._exc is not None:
            self._step(None, fut._exc)
        else:
            self._step(fut._result, None)

    def cancel(self) -> None:
        """Stop the coroutine where it waits (it never runs again); from inside itself, once it next waits."""
        if not self.cancelled and not self.finished.done():
            self.cancelled = True
            if getattr(self.coro, "cr_running", False):  # cancelled by its own step (a process that crashes itself): closed when it yields
                return
            self.coro.close()

    def done(self) -> bool:
        return self.cancelled or self.finished.done()


class SimEvent:
    """asyncio.Event's shape: ``set``, ``clear``, ``is_set``; waited on with :func:`wait_event`."""

    __slots__ = ("_flag", "_waiters")

    def __init__(self) -> None:
        self._flag = False
        self._waiters: list[SimFuture] = []

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        if self._flag:
            return
        self._flag = True
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            w.resolve(True)

    def clear(self) -> None:
        self._flag = False


def sleep(kernel: Kernel, delay: float) -> SimFuture:
    fut = SimFuture()
    kernel.call_later(max(0.0, delay), fut.resolve, None)
    return fut


async def wait_event(kernel: Kernel, event: SimEvent, timeout: float | None) -> bool:
    """True once ``event`` is set, False if ``timeout`` seconds pass first."""
    if event.is_set():
        return True
    fut = SimFuture()
    event._waiters.append(fut)
    timer = None if timeout is None else kernel.call_later(max(0.0, timeout), fut.resolve, False)
    try:
        return bool(await fut)
    finally:
        if timer is not None:
            Kernel.cancel(timer)
        if fut in event._waiters:
            event._waiters.remove(fut)
