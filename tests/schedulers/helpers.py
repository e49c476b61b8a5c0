"""Fakes for driving scheduler components one message at a time (no kernel, no SimRuntime).

:class:`FakeRuntime` (:mod:`schedlab.testing`'s) is the Runtime protocol plus
``register`` and nothing else; :class:`FakeObserver`
records what components report (the Observer interface); :class:`FakePool` is
the LocalWorkers interface; :func:`deliver` hands a component one message.
Used by ``tests/schedulers/test_components.py`` and ``tests/schedulers/megha/``.
"""

from __future__ import annotations

from schedlab.testing import FakeRuntime  # noqa: F401  (re-exported: the tests import it from here)


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
