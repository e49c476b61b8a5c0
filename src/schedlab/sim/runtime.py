"""The Runtime interface that sans-IO scheduler components talk through, and its simulated form.

A scheduler component (a Megha GM, a Sparrow node monitor, …) never touches a
socket or a clock. It reacts to messages and timers and acts only through a
:class:`Runtime`:

* ``now()`` — the current time in seconds;
* ``send(dst, msg)`` — deliver ``msg`` to the component registered at ``dst``;
* ``call_later(delay, fn, *args)`` — a timer; returns a handle for ``cancel``;
* ``rng(name)`` — a named, seeded random stream (``random.Random``).

:class:`SimRuntime` implements it over the :class:`~schedlab.sim.kernel.Kernel`
with a network model (:class:`NetworkModel`): every message takes a one-way
latency (default 0.5 ms, the convention of the papers' simulators), and a
message type may carry a processing cost at its receiver. A later real runtime
(asyncio and a broker) implements the same four calls, so the same component
classes run as services.

Processing costs model a receiver that handles messages one at a time: a
message whose type has a cost ``c`` arrives after the latency, waits while the
receiver is busy with earlier costed messages, and its handler runs when its
``c`` seconds of processing are over. Types without a cost are handled on
arrival and do not occupy the receiver. Every message sent is counted by type.

The latency may vary (``latency_spread``: a real network's, measured by the
calibrated twin, has a long right tail): each message's is then drawn from a
lognormal with the latency as its median and that sigma, from the run's
``network:latency`` stream. A message never overtakes an earlier one to the
same receiver — its arrival is at least that one's — as in a broker's queue
or on one connection, so a component sees its inputs in the order sent.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from schedlab.defaults import DEFAULT_LATENCY
from schedlab.sim.kernel import Kernel
from schedlab.sim.rng import RngStreams

Address = Hashable
Handler = Callable[[Any], None]



@runtime_checkable
class Runtime(Protocol):
    """What a sans-IO component may use to act on the world."""

    def now(self) -> float: ...

    def send(self, dst: Address, msg: Any) -> None: ...

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Any: ...

    def cancel(self, handle: Any) -> None: ...

    def rng(self, name: str) -> random.Random: ...


class Component:
    """Base of sans-IO components: an address and a table of message handlers.

    Subclasses list their handlers in :meth:`handlers` (message class → bound
    method). Registration with the runtime happens in ``__init__``.
    """

    def __init__(self, address: Address, runtime: Runtime) -> None:
        self.address = address
        self.rt = runtime
        register = getattr(runtime, "register", None)
        if register is not None:
            register(self)

    def handlers(self) -> Mapping[type, Handler]:
        return {}


@dataclass(frozen=True)
class NetworkModel:
    """One-way latency for every message and optional per-message-type processing costs.

    ``processing`` maps a message class name (e.g. ``"LaunchRequest"``) to the
    seconds its receiver spends handling one such message.
    """

    latency: float = DEFAULT_LATENCY
    processing: Mapping[str, float] = field(default_factory=dict)
    latency_spread: float = 0.0  # the lognormal sigma of each message's latency (0: exactly ``latency``)
    # seconds more per task a message carries (its ``tasks_carried()``, where it has one): a real network's messages
    # take longer the more they name (measured by the calibrated twin)
    latency_per_task: float = 0.0

    def __post_init__(self) -> None:
        if not (self.latency >= 0):
            raise ValueError(f"network latency must be >= 0, got {self.latency!r}")
        if not (self.latency_spread >= 0):
            raise ValueError(f"network latency spread must be >= 0, got {self.latency_spread!r}")
        if not (self.latency_per_task >= 0):
            raise ValueError(f"network latency per task must be >= 0, got {self.latency_per_task!r}")
        for name, cost in self.processing.items():
            if not (cost >= 0):
                raise ValueError(f"processing cost of {name} must be >= 0, got {cost!r}")


class SimRuntime:
    """The discrete-event Runtime: kernel + network model + named RNG streams + message counters."""

    def __init__(
        self,
        seed: int = 0,
        network: NetworkModel | None = None,
        kernel: Kernel | None = None,
    ) -> None:
        self.kernel = kernel if kernel is not None else Kernel()
        self.network = network if network is not None else NetworkModel()
        self.streams = RngStreams(seed)
        self._components: dict[Address, Component] = {}
        self._dispatch: dict[Address, dict[type, Handler]] = {}
        self._costs_by_name = dict(self.network.processing)
        self._costs: dict[type, float] = {}
        self._busy_until: dict[Address, float] = defaultdict(float)
        self._counts: dict[type, int] = defaultdict(int)
        self._latency = self.network.latency
        spread = self.network.latency_spread if self.network.latency > 0 else 0.0
        self._spread = spread
        self._per_task = self.network.latency_per_task
        self._varies = bool(spread or self._per_task)  # each message's latency is its own: kept in order per receiver
        if spread:
            self._draw = self.streams.rng("network:latency").lognormvariate
            self._mu = math.log(self.network.latency)
        if self._varies:
            self._last_arrival: dict[Address, float] = defaultdict(float)

    # -- registration ---------------------------------------------------------------------
    def register(self, component: Component) -> None:
        addr = component.address
        if addr in self._components:
            raise ValueError(f"address {addr!r} is already registered")
        self._components[addr] = component
        table = dict(component.handlers())
        self._dispatch[addr] = table
        for cls in table:
            cost = self._costs_by_name.get(cls.__name__)
            if cost:
                self._costs[cls] = cost

    def component(self, address: Address) -> Component:
        return self._components[address]

    # -- the Runtime interface ------------------------------------------------------------
    def now(self) -> float:
        return self.kernel.now

    def send(self, dst: Address, msg: Any) -> None:
        cls = msg.__class__
        self._counts[cls] += 1
        try:
            handler = self._dispatch[dst][cls]
        except KeyError:
            if dst not in self._dispatch:
                raise KeyError(f"no component at address {dst!r}") from None
            raise KeyError(f"component {dst!r} has no handler for {cls.__name__}") from None
        kernel = self.kernel
        at = self._arrival(dst, msg) if self._varies else kernel.now + self._latency
        cost = self._costs.get(cls) if self._costs else None
        if cost is None:
            kernel.post(at, handler, msg)
        else:
            kernel.post(at, self._arrive, dst, handler, msg, cost)

    def _arrival(self, dst: Address, msg: Any) -> float:
        """When ``msg`` sent now reaches ``dst``: its latency (drawn, and longer by the tasks it carries), never before
        an earlier message to ``dst``."""
        carried = getattr(msg, "tasks_carried", None) if self._per_task else None
        if carried is None:
            delay = self._draw(self._mu, self._spread) if self._spread else self._latency
        else:
            base = self._latency + self._per_task * carried()
            delay = (self._draw(math.log(base), self._spread) if self._spread and base > 0 else base)
        at = self.kernel.now + delay
        last = self._last_arrival[dst]
        if at < last:
            at = last
        self._last_arrival[dst] = at
        return at

    def send_each(self, dsts: tuple[Address, ...] | list[Address], msg: Any) -> None:
        """``send(dst, msg)`` to each of ``dsts`` in turn (the same message object to all).

        The deliveries happen at the same instant, one after the other, with nothing
        between them (events are run in scheduling order), so they are one kernel
        entry that runs each handler — still counted as one event per delivery. If a
        handler raises, the run stops there and the later addresses get nothing (separate
        events would have stayed pending; a simulation is not resumed after a handler fails).
        """
        if self._costs or self._varies:
            for dst in dsts:
                self.send(dst, msg)
            return
        cls = msg.__class__
        dispatch = self._dispatch
        handlers = []
        for dst in dsts:
            try:
                handlers.append(dispatch[dst][cls])
            except KeyError:
                self.send(dst, msg)  # raises the precise error
                raise
        self._counts[cls] += len(dsts)
        kernel = self.kernel
        kernel.post(kernel.now + self._latency, self._deliver_each, handlers, msg)

    def _deliver_each(self, handlers: list[Handler], msg: Any) -> None:
        self.kernel.events += len(handlers) - 1  # the kernel counts this entry once
        for handler in handlers:
            handler(msg)

    def _arrive(self, dst: Address, handler: Handler, msg: Any, cost: float) -> None:
        now = self.kernel.now
        busy = self._busy_until[dst]
        start = busy if busy > now else now
        self._busy_until[dst] = start + cost
        self.kernel.post(start + cost, handler, msg)

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Any:
        return self.kernel.call_later(delay, fn, *args)

    def cancel(self, handle: Any) -> None:
        Kernel.cancel(handle)

    def rng(self, name: str) -> random.Random:
        return self.streams.rng(name)

    # -- observation ----------------------------------------------------------------------
    def message_counts(self) -> dict[str, int]:
        """Messages sent so far, by message class name, sorted by name."""
        return {cls.__name__: n for cls, n in sorted(self._counts.items(), key=lambda kv: kv[0].__name__)}

    @property
    def latency(self) -> float:
        return self._latency
