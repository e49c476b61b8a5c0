"""Computing grids under bursty load: backfilling sites, decentralized site selection, duplication-validation.

Implements Zhang, Mi, Tai & Meleis, "Decentralized Scheduling of Bursty
Workload on Computing Grids":

* :mod:`~schedlab.grid.profile`, :mod:`~schedlab.grid.site` — sites and their
  queues under conservative backfilling (the paper's), EASY or FCFS;
* :mod:`~schedlab.grid.workload`, :mod:`~schedlab.workload.swf` — local and global
  job streams: generated (Poisson or MMPP-2 arrivals) or read from SWF traces;
* :mod:`~schedlab.grid.selection` — the decentralized schedulers Rand, Qlen,
  Util, Est.QT, Act.QT, Hybrid-1 and Hybrid-2 with submission delay and
  duplication-validation;
* :mod:`~schedlab.grid.simulation`, :mod:`~schedlab.grid.metrics` — runs and
  the paper's metrics; :mod:`~schedlab.grid.experiments` — sweeps and the
  paper's figures; :mod:`~schedlab.grid.plots` — the plots.
"""

from __future__ import annotations

from schedlab.lazy import lazy_exports

# Loaded on first use, so that ``schedlab --help`` and the other subcommands do
# not pay for pandas through this package.
_WHERE = {
    "LABELS": "selection",
    "SCHEDULERS": "simulation",
    "RANKINGS": "selection",
    "choose_sites": "selection",
    "perf_gap": "metrics",
    "queue_time_buckets": "metrics",
    "GridConfig": "simulation",
    "GridResult": "simulation",
    "build_workload": "simulation",
    "simulate_grid": "simulation",
    "simulate_with_ideal": "simulation",
}

__all__, __getattr__ = lazy_exports(__name__, _WHERE)
