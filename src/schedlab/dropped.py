"""Why a run dropped tasks as unsatisfiable, told in one line (``simulate`` and ``submit`` print it).

A task that no worker of the data center could ever run is dropped from its
job before submission, and a job left empty is never submitted — the papers'
simulators do the same (see :mod:`schedlab.engine`). The summary has only the
total (``tasks_dropped_unsatisfiable``: its schema is shared with recorded
runs); :class:`DropReasons` keeps the split, per task, by the first reason met:

* ``constraints`` — its constraint set is met by no worker (synthesised with
  the papers' statistics, or the trace's own);
* ``request`` — its resource request is larger than every worker's capacity.

Choices: silence when nothing was dropped; otherwise one line on stderr with
how many of how many, each reason, and the option of the command that changes
it (the caller names its own options: ``simulate`` and ``submit`` differ).
"""

from __future__ import annotations

from dataclasses import dataclass, field

REASONS = ("constraints", "request")


@dataclass
class DropReasons:
    """Tasks dropped as unsatisfiable, by reason, and jobs left empty."""

    tasks: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    empty_jobs: int = 0

    def add(self, reason: str, n: int = 1) -> None:
        self.tasks[reason] += n

    @property
    def total(self) -> int:
        return sum(self.tasks.values())


def drop_line(drops: DropReasons, trace_tasks: int, fixes: dict[str, str]) -> str | None:
    """One line saying what was dropped and why, with ``fixes[reason]`` (what changes it); None if nothing was."""
    if not drops.total:
        return None
    why = {
        "constraints": "their constraints are met by no worker",
        "request": "their request is larger than every worker",
    }
    parts = [f"{n} because {why[r]}" + (f" ({fixes[r]})" if r in fixes else "") for r, n in drops.tasks.items() if n]
    empty = f", {drops.empty_jobs} job(s) left empty" if drops.empty_jobs else ""
    return f"dropped {drops.total} of {trace_tasks} tasks as unsatisfiable{empty}: " + "; ".join(parts)
