"""Sweeps of any domain: what a run is (:mod:`~schedlab.sweeps.points`), the one runner (:mod:`~schedlab.sweeps.runner`: this process, a process pool or Ray) and the one results store (:mod:`~schedlab.sweeps.store`: resumable, one lock).

It sits low in the floors (it imports only the leaves and :mod:`schedlab.metrics`)
so that every domain — the data-center engine's specs
(:mod:`schedlab.experiments`), the grid, DynDL and CRED reproductions — runs
its sweeps the same way.
"""

from __future__ import annotations

from schedlab.lazy import lazy_exports

_EXPORTS = {
    "Point": "points",
    "Runnable": "points",
    "RunOutput": "points",
    "canonical_id": "points",
    "run_points": "runner",
    "sweep": "runner",
    "map_runs": "runner",
    "SweepProgress": "runner",
    "SweepResult": "runner",
    "Store": "store",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
