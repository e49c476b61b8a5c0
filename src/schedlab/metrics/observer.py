"""What scheduler components report about tasks, as an interface each runtime implements.

Scheduler components attribute allocation-time phases (Megha paper, Section
III) and report the completions they learn through an :class:`Observer`, never
through the simulator's :class:`~schedlab.metrics.recorder.Recorder` itself:

* ``mark(tid, now, component)`` — from the task's previous mark until ``now``
  it was in ``component`` (one of :data:`~schedlab.metrics.recorder.COMPONENTS`);
  ``mark_each(entries, now, component)`` the same for the task id first in
  each entry (a request's ``(tid, p, pos)`` items);
* ``tasks_reported(group, now)`` / ``task_reported(tid, now)`` — the scheduler
  learned that these ``(tid, worker)`` tasks finished (what JRT is measured by);
* ``inconsistency(gm, now, k)`` — an LM rejected ``k`` of GM ``gm``'s requests
  (the inconsistencies-over-time series; a real deployment's LMs count them in
  their status instead).

In a simulation the run's Recorder is the observer. A real deployment gives
each service an observer that stamps the same events with the wall clock and
ships them to whoever assembles the run's records
(:mod:`schedlab.services.records`), so a real run's summary has the same
schema as a simulated one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol


class Observer(Protocol):
    def mark(self, tid: int, now: float, component: int) -> None: ...

    def mark_each(self, entries: Iterable[Sequence[int]], now: float, component: int) -> None: ...

    def tasks_reported(self, group: list[tuple[int, int]], now: float) -> object: ...  # any return is ignored

    def task_reported(self, tid: int, now: float) -> bool: ...

    def inconsistency(self, gm: int, now: float, k: int = 1) -> None: ...
