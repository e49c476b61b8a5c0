"""Serial processing with costs, for sans-IO components that take time to handle their inputs.

A component that models its own processing time (a Megha GM or LM, say)
routes every input through a :class:`Processor`: the handler runs at once if
the component is idle, declares its cost with :meth:`Processor.charge` as it
works, and sends its messages with :meth:`Processor.send`. Those messages
leave when the processing is over, the component stays busy until then, and
inputs that arrive meanwhile wait in FIFO order — so queueing at a busy
component (framework queuing) emerges instead of being assumed.

Decisions are taken on the state at the start of the processing; the cost only
delays their effects. With zero cost everything happens at once and the
processor adds only a function call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from schedlab.sim.runtime import Address, Runtime


class Processor:
    """One-at-a-time processing of a component's inputs."""

    __slots__ = ("rt", "busy_until", "backlog", "cost", "outbox", "before_send", "busy_time")

    def __init__(self, runtime: Runtime, before_send: Callable[[Address, Any], None] | None = None) -> None:
        self.rt = runtime
        self.busy_until = float("-inf")
        self.backlog: deque[tuple[Callable[..., Any], tuple]] = deque()
        self.cost = 0.0
        self.outbox: list[tuple[Address, Any]] | None = None
        self.before_send = before_send
        self.busy_time = 0.0

    def handle(self, fn: Callable[..., Any], *args: Any) -> None:
        """Process ``fn(*args)`` now if idle, else after the inputs already waiting."""
        if self.backlog or self.rt.now() < self.busy_until:
            self.backlog.append((fn, args))
            return
        self._run(fn, args)

    def charge(self, seconds: float) -> None:
        """Add processing time to the input being handled."""
        self.cost += seconds

    def send(self, dst: Address, msg: Any) -> None:
        """Send when the current processing ends (at once outside a handler)."""
        if self.outbox is None:
            if self.before_send is not None:
                self.before_send(dst, msg)
            self.rt.send(dst, msg)
        else:
            self.outbox.append((dst, msg))

    def _run(self, fn: Callable[..., Any], args: tuple) -> None:
        self.cost = 0.0
        self.outbox = []
        fn(*args)
        cost, out = self.cost, self.outbox
        self.outbox = None
        self.cost = 0.0
        if cost > 0:
            self.busy_time += cost
            self.busy_until = self.rt.now() + cost
            self.rt.call_later(cost, self._done, out)
        else:
            self._flush(out)

    def _flush(self, out: list[tuple[Address, Any]]) -> None:
        send, hook = self.rt.send, self.before_send
        for dst, msg in out:
            if hook is not None:
                hook(dst, msg)
            send(dst, msg)

    def _done(self, out: list[tuple[Address, Any]]) -> None:
        self._flush(out)
        while self.backlog and self.rt.now() >= self.busy_until:
            fn, args = self.backlog.popleft()
            self._run(fn, args)
