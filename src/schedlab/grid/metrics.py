"""The paper's metrics: global-job queue time, its composition, and the performance gap of Eq. (1).

* ``queue_time`` of a global job: execution start − arrival at its scheduler
  (remote submission delay, wait in the winning site's queue and the
  duplication-invalidation penalty included). ``mean_queue_time`` is the
  paper's "performance" of a scheduler (Table I, Figures 2–6).
* ``queue_time_buckets``: the shares of global jobs queued ``<10s``,
  ``10-100s`` and ``>=100s`` (Table I's "≥ 100 s" column; Figure 4).
* ``perf_gap`` (Eq. 1): ``100 % × (mean − ideal mean) / ideal mean``, the ideal
  being Act.QT with zero delay and no duplication on the same workload.
* ``utilization``: processor-seconds used over processors × the simulated
  time (first arrival at t=0 to the last completion), per site and overall.
"""

from __future__ import annotations

import math

import numpy as np

BUCKETS: tuple[tuple[str, float, float], ...] = (
    ("<10s", 0.0, 10.0),
    ("10-100s", 10.0, 100.0),
    (">=100s", 100.0, math.inf),
)
BUCKET_NAMES = tuple(b[0] for b in BUCKETS)


def queue_time_buckets(queue_times: np.ndarray) -> dict[str, float]:
    """Shares (0..1) of the queue times in each of the paper's ranges."""
    q = np.asarray(queue_times, dtype=float)
    n = len(q)
    if n == 0:
        return {name: math.nan for name in BUCKET_NAMES}
    return {name: float(np.count_nonzero((q >= lo) & (q < hi))) / n for name, lo, hi in BUCKETS}


def perf_gap(mean_queue_time: float, ideal_mean_queue_time: float) -> float:
    """Eq. (1): the performance gap to the ideal, in percent."""
    if not ideal_mean_queue_time > 0:
        return math.nan
    return 100.0 * (mean_queue_time - ideal_mean_queue_time) / ideal_mean_queue_time
