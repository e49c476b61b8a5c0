"""Computing grids under bursty load: backfilling sites, decentralized site selection, duplication-validation.

Implements Zhang, Mi, Tai & Meleis, "Decentralized Scheduling of Bursty
Workload on Computing Grids" (shared/papers/decentralized-bursty-grid-scheduling.txt):

* :mod:`~schedlab.grid.profile`, :mod:`~schedlab.grid.site` — sites and their
  queues under conservative backfilling (the paper's), EASY or FCFS;
* :mod:`~schedlab.grid.workload`, :mod:`~schedlab.grid.swf` — local and global
  job streams: generated (Poisson or MMPP-2 arrivals) or read from SWF traces;
* :mod:`~schedlab.grid.selection` — the decentralized schedulers Rand, Qlen,
  Util, Est.QT, Act.QT, Hybrid-1 and Hybrid-2 with submission delay and
  duplication-validation;
* :mod:`~schedlab.grid.simulation`, :mod:`~schedlab.grid.metrics` — runs and
  the paper's metrics; :mod:`~schedlab.grid.experiments` — sweeps and the
  paper's figures; :mod:`~schedlab.grid.plots` — the plots.
"""

from __future__ import annotations

from schedlab.grid.metrics import perf_gap, queue_time_buckets
from schedlab.grid.selection import LABELS, SCHEDULERS, choose_sites
from schedlab.grid.simulation import (
    GridConfig,
    GridResult,
    build_workload,
    simulate_grid,
    simulate_with_ideal,
)

__all__ = [
    "LABELS",
    "SCHEDULERS",
    "GridConfig",
    "GridResult",
    "build_workload",
    "choose_sites",
    "perf_gap",
    "queue_time_buckets",
    "simulate_grid",
    "simulate_with_ideal",
]
