"""Fakes for driving scheduler components one message at a time (no kernel, no SimRuntime).

:class:`FakeRuntime` is the Runtime protocol (``now``, ``send``, ``call_later``,
``cancel``, ``rng``) plus ``register`` and nothing else; :class:`FakeObserver`
records what components report (the Observer interface); :class:`FakePool` is
the LocalWorkers interface; :func:`deliver` hands a component one message.
Used by ``tests/schedulers/test_components.py`` and ``tests/schedulers/megha/``.
"""

from __future__ import annotations

import random


class FakeRuntime:
    """The Runtime protocol and ``register``, nothing else: a settable clock, a sent list, a timer list."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t
        self.sent: list[tuple[object, object]] = []
        self.timers: list[list] = []  # [due, seq, fn, args, cancelled]
        self.components: dict[object, object] = {}
        self._seq = 0

    def register(self, component) -> None:
        assert component.address not in self.components, f"{component.address!r} registered twice"
        self.components[component.address] = component

    def now(self) -> float:
        return self.t

    def send(self, dst, msg) -> None:
        self.sent.append((dst, msg))

    def call_later(self, delay, fn, *args):
        self._seq += 1
        handle = [self.t + delay, self._seq, fn, args, False]
        self.timers.append(handle)
        return handle

    def cancel(self, handle) -> None:
        handle[4] = True

    def rng(self, name: str) -> random.Random:
        return random.Random(f"fake:{name}")  # str seeds are hashed with SHA-512: deterministic

    # -- test helpers --
    def fire_next(self) -> None:
        """Advance the clock to the earliest live timer and run it."""
        live = [h for h in self.timers if not h[4]]
        assert live, "no timer to fire"
        h = min(live, key=lambda x: (x[0], x[1]))
        self.timers.remove(h)
        self.t = h[0]
        h[2](*h[3])

    def take(self) -> list[tuple[object, object]]:
        """The messages sent since the last take."""
        out, self.sent = self.sent, []
        return out


class FakeObserver:
    """Records what components report (the Observer interface)."""

    def __init__(self) -> None:
        self.marks: list[tuple[int, float, int]] = []
        self.groups_reported: list[tuple[list[tuple[int, int]], float]] = []
        self.tasks_reported_one: list[tuple[int, float]] = []
        self.inconsistencies: list[tuple[int, float, int]] = []

    def mark(self, tid: int, now: float, component: int) -> None:
        self.marks.append((tid, now, component))

    def mark_each(self, entries, now: float, component: int) -> None:
        for entry in entries:
            self.mark(entry[0], now, component)

    def tasks_reported(self, group, now: float) -> None:
        self.groups_reported.append((list(group), now))

    def task_reported(self, tid: int, now: float) -> bool:
        self.tasks_reported_one.append((tid, now))
        return True

    def inconsistency(self, gm: int, now: float, k: int = 1) -> None:
        self.inconsistencies.append((gm, now, k))


class FakePool:
    """The LocalWorkers interface: records starts; the test calls the finish callbacks itself."""

    def __init__(self) -> None:
        self.started: list[tuple[list[tuple[int, int]], object, int]] = []
        self.preempted: list[tuple[int, int]] = []
        self.running: set[int] = set()

    def start_many(self, placements, on_finish, component) -> None:
        self.started.append((list(placements), on_finish, component))
        self.running.update(t for t, _w in placements)

    def preempt(self, tid: int, worker: int) -> None:
        self.preempted.append((tid, worker))
        self.running.discard(tid)

    def is_running(self, tid: int) -> bool:
        return tid in self.running


def deliver(component, msg) -> None:
    component.handlers()[type(msg)](msg)
