"""The default generated CRED instance and the default Figure 4 sweep, in one light module.

The CLI reads its option defaults here without loading numpy, pandas or scipy.
Both sit in the regime where CRED's grouping pays — skewed chunk popularity
(Zipf exponent 1.6), chunks of 5–15 tasks, and a node whose storage (B = 16
chunks) and slots (S = 4 VMs × the deadline) bind together — so the algorithms
differ: on the default instance CRED-M needs 18 nodes, first-fit 19, CRED-S per
deadline 27, and the lower bound is 17. ``reports/edge`` maps the regimes, with
those where first-fit is as good (uniform popularity; storage or slots binding
alone).
"""

from __future__ import annotations

from dataclasses import dataclass

from schedlab.errors import InputError

FIGURE_ALGORITHMS = ("cred-m", "first-fit", "cred-s-per-deadline", "cred-s")


@dataclass(frozen=True)
class InstanceDefaults:
    """``schedlab edge generate``'s defaults (the options of :func:`~schedlab.edge.generate.generate_instance`)."""

    jobs: int = 100
    chunks: int = 250
    chunks_per_job: str = "uniform:5,15"
    popularity: float = 1.6
    deadlines: str = "10,20,30"
    chunks_per_node: int = 16
    vms_per_node: int = 4


GENERATE = InstanceDefaults()


@dataclass(frozen=True)
class SweepSpec:
    """Figure 4's two sweeps (:mod:`schedlab.edge.figures`): the instances' generator options, the x values, seeds and algorithms."""

    jobs: int = 400
    chunks: int = 1000
    chunks_per_job: str = "uniform:5,15"
    popularity: float = 1.6
    chunks_per_node: int = 16
    vms_per_node: int = 4
    d1: int = 10
    d2: int = 20
    spreads: tuple[int, ...] = (0, 2, 5, 10, 15, 20, 30, 40)
    fractions: tuple[float, ...] = (0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0)
    seeds: int = 5
    algorithms: tuple[str, ...] = FIGURE_ALGORITHMS
    optimum_time_limit: float | None = None  # seconds for each instance's MILP optimum; None: no optimum

    def check(self) -> None:
        if self.seeds < 1:
            raise InputError("--seeds", f"must be >= 1, got {self.seeds}")
        if self.d1 < 1 or self.d2 <= self.d1:
            raise InputError("--d2", f"need 1 <= d1 < d2, got d1={self.d1}, d2={self.d2}")
        if any(s < 0 for s in self.spreads):
            raise InputError("--spreads", f"spreads must be >= 0, got {list(self.spreads)}")
        if any(not 0.0 <= f <= 1.0 for f in self.fractions):
            raise InputError("--fractions", f"fractions must be in [0, 1], got {list(self.fractions)}")
        if self.optimum_time_limit is not None and not self.optimum_time_limit > 0:
            raise InputError("--optimum-time-limit", f"must be > 0, got {self.optimum_time_limit}")
