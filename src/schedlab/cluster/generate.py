"""Generated data centers: any number of workers with machine constraints drawn from frequencies.

Two models:

* ``independent`` (default) — worker ``w`` satisfies constraint ``c`` with
  probability ``percent_of_workers_satisfying_each_constraint[c] / 100``
  (``sharma_constraints.json``), independently per constraint. This is the plain
  way to build a data center from the same constraint frequencies when no
  config exists — as for the constraint-aware paper's 20,000-worker Google runs
  (Section 5), since the published config has 10,000 workers. It keeps every
  marginal frequency but not the correlations between constraints that the
  reference data center has.
* ``reference`` — each worker's whole constraint set is drawn uniformly from the
  10,000 workers of the bundled reference config, which keeps the joint
  distribution (and hence how many workers fit a multi-constraint task).

Both draw from the numpy stream ``machines`` of the run's seed.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from schedlab.cluster.bitsets import NUM_CONSTRAINTS
from schedlab.cluster.config import load_config
from schedlab.datafiles import sharma_constraints
from schedlab.defaults import MACHINE_MODELS
from schedlab.errors import InputError


def machine_constraint_percent() -> list[float]:
    return list(sharma_constraints()["machine_constraints"]["percent_of_workers_satisfying_each_constraint"])


@cache
def _reference_masks() -> tuple[int, ...]:

    return tuple(load_config("reference").machine_masks)


def generate_machine_masks(n: int, rng: np.random.Generator, model: str = "independent") -> list[int]:
    """``n`` machine-constraint masks under ``model`` (see module docstring)."""
    if n < 1:
        raise InputError("workers", f"must be >= 1, got {n}")
    if model == "independent":
        p = np.asarray(machine_constraint_percent(), dtype=float) / 100.0
        draws = rng.random((n, NUM_CONSTRAINTS)) < p
        weights = (1 << np.arange(NUM_CONSTRAINTS, dtype=np.int64))
        return [int(v) for v in draws.astype(np.int64) @ weights]
    if model == "reference":
        ref = _reference_masks()
        idx = rng.integers(0, len(ref), size=n)
        return [ref[i] for i in idx]
    raise InputError("machine_model", f"unknown model {model!r} (choose from {', '.join(MACHINE_MODELS)})")
