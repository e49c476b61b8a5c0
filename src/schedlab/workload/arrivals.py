"""Arrival processes: Poisson and the 2-state Markov-modulated Poisson process (MMPP-2).

An MMPP-2 alternates between two states; in state ``i`` arrivals are Poisson
with rate ``lam[i]`` and the state is left at rate ``r[i]``. As a Markovian
arrival process its matrices are ``D0 = [[-(λ1+r1), r1], [r2, -(λ2+r2)]]`` and
``D1 = diag(λ1, λ2)``, from which (Fischer & Meier-Hellstern, 1993):

* mean rate ``λ̄ = π·λ`` with ``π = (r2, r1)/(r1+r2)``;
* inter-arrival moments ``E[X^k] = k! φ (−D0)^{−k} 1`` with ``φ = π D1 / λ̄``,
  hence the squared coefficient of variation ``SCV = E[X²]/E[X]² − 1``;
* the asymptotic index of dispersion for counts
  ``IDC = 1 + 2 r1 r2 (λ1 − λ2)² / ((r1 + r2)³ λ̄)``.

:func:`fit_mmpp2` finds an MMPP-2 with a target mean inter-arrival time, SCV and
IDC — the three numbers the bursty-grid paper specifies (mean 10 s, SCV 20, IDC
≈ 55 or ≈ 384). Three targets leave one of the four parameters free; we fix it
through ``high_state_fraction`` ``p``, the long-run share of time spent in the
high-rate state 1. Then ``λ1 = λ̄(1 + a)`` and ``λ2 = λ̄(1 − a·p/(1 − p))`` keep
the mean for any ``a ∈ (0, (1 − p)/p]``; the IDC formula fixes the total
switching rate ``r1 + r2 = 2p(1 − p)(λ1 − λ2)² / ((IDC − 1) λ̄)`` (split as
``r1 = (1 − p)(r1 + r2)``, ``r2 = p(r1 + r2)`` so that ``π1 = p``), leaving a
one-dimensional root search on ``a`` for the SCV, which rises monotonically
from 1 to the IDC over that interval (at the upper end ``λ2 = 0``: an
interrupted Poisson process, a renewal process, whose SCV equals its IDC).

The default ``p = 0.5`` spends equal time in both states ("balanced means");
its high state can never be more than twice the mean rate. A small ``p`` makes
short, dense bursts: with mean 10 s, SCV 20, IDC 384 and ``p = 0.02`` the high
state lasts ~48 s at ~4.6 arrivals/s. The SCV and IDC do not pin this down, and
it is what decides whether many arrivals fall within one scheduling delay.
Targets no MMPP-2 of this family can reach (``SCV ≤ 1``, ``IDC ≤ 1``,
``SCV ≥ IDC``) are refused with a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.errors import InputError


def poisson_interarrivals(n: int, mean: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` exponential inter-arrival times with the given mean."""
    if mean <= 0:
        raise InputError("arrivals", f"mean inter-arrival time must be > 0, got {mean}")
    return rng.exponential(mean, size=n)


@dataclass(frozen=True)
class MMPP2:
    """A 2-state MMPP: arrival rates ``lam1``, ``lam2``; leaving rates ``r1`` (1→2), ``r2`` (2→1)."""

    lam1: float
    lam2: float
    r1: float
    r2: float

    def __post_init__(self) -> None:
        if min(self.lam1, self.lam2) < 0 or self.lam1 + self.lam2 <= 0 or self.r1 <= 0 or self.r2 <= 0:
            raise InputError("mmpp", f"invalid MMPP-2 parameters {self}")

    @property
    def pi(self) -> np.ndarray:
        return np.array([self.r2, self.r1]) / (self.r1 + self.r2)

    @property
    def rate(self) -> float:
        return float(self.pi @ np.array([self.lam1, self.lam2]))

    @property
    def mean(self) -> float:
        """Mean inter-arrival time."""
        return 1.0 / self.rate

    def _moments(self) -> tuple[float, float]:
        d0 = np.array([[-(self.lam1 + self.r1), self.r1], [self.r2, -(self.lam2 + self.r2)]])
        d1 = np.diag([self.lam1, self.lam2])
        phi = self.pi @ d1 / self.rate
        inv = np.linalg.inv(-d0)
        one = np.ones(2)
        m1 = float(phi @ inv @ one)
        m2 = float(2.0 * phi @ inv @ inv @ one)
        return m1, m2

    @property
    def scv(self) -> float:
        """Squared coefficient of variation of the inter-arrival times."""
        m1, m2 = self._moments()
        return m2 / (m1 * m1) - 1.0

    @property
    def idc(self) -> float:
        """Asymptotic index of dispersion for counts."""
        s = self.r1 + self.r2
        return 1.0 + 2.0 * self.r1 * self.r2 * (self.lam1 - self.lam2) ** 2 / (s**3 * self.rate)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` consecutive inter-arrival times of a stationary run."""
        lam = (self.lam1, self.lam2)
        leave = (self.r1, self.r2)
        state = 0 if rng.random() < self.pi[0] else 1
        times: list[np.ndarray] = []
        got = 0
        t = 0.0
        # Sojourns in batches: a batch alternates states, so its arrivals are already in order.
        # Size a batch for about n arrivals (a pair of sojourns brings λ1/r1 + λ2/r2 on average):
        # far more would waste time and memory on arrivals that are thrown away.
        per_pair = lam[0] / leave[0] + lam[1] / leave[1]
        batch = 2 * int(1.1 * (n + 1) / max(per_pair, 1e-9)) + 64
        batch = min(batch, 1 << 20)
        while got <= n:
            states = (state + np.arange(batch)) % 2
            tau = rng.exponential(1.0, size=batch) / np.where(states == 0, leave[0], leave[1])
            rates = np.where(states == 0, lam[0], lam[1])
            counts = rng.poisson(rates * tau)
            starts = t + np.concatenate(([0.0], np.cumsum(tau)[:-1]))
            k = int(counts.sum())
            if k:
                offs = rng.random(k) * np.repeat(tau, counts)
                arr = np.repeat(starts, counts) + offs
                arr.sort()
                times.append(arr)
                got += k
            t = float(starts[-1] + tau[-1])
            state = int((state + batch) % 2)
        allt = np.concatenate(times)[: n + 1]
        return np.diff(allt)


def fit_mmpp2(mean: float, scv: float, idc: float, high_state_fraction: float = 0.5) -> MMPP2:
    """An MMPP-2 with the given mean inter-arrival time, SCV and asymptotic IDC (see module doc).

    ``high_state_fraction`` is the long-run share of time in the high-rate state 1.
    """
    if not (mean > 0):
        raise InputError("mmpp.mean", f"must be > 0, got {mean}")
    if not (scv > 1):
        raise InputError("mmpp.scv", f"an MMPP-2 has SCV > 1; got {scv} (use Poisson arrivals for SCV = 1)")
    if not (idc > 1):
        raise InputError("mmpp.idc", f"an MMPP-2 has IDC > 1; got {idc}")
    p = high_state_fraction
    if not (0 < p < 1):
        raise InputError("mmpp.high_state_fraction", f"must be in (0, 1), got {p}")
    if not (scv < idc):
        raise InputError(
            "mmpp", f"an MMPP-2 has SCV < IDC (SCV = IDC is a renewal process); got SCV {scv}, IDC {idc}"
        )
    from scipy.optimize import brentq  # imported here: scipy is slow to import and rarely needed

    lam = 1.0 / mean
    q = 1.0 - p

    def make(a: float) -> MMPP2:
        lam1 = lam * (1.0 + a)
        lam2 = max(0.0, lam * (1.0 - a * p / q))
        switching = 2.0 * p * q * (lam1 - lam2) ** 2 / ((idc - 1.0) * lam)
        return MMPP2(lam1, lam2, switching * q, switching * p)

    def err(a: float) -> float:
        return make(a).scv - scv

    top = q / p
    lo, hi = 1e-6 * top, top * (1.0 - 1e-12)
    if err(lo) > 0 or err(hi) < 0:
        raise InputError(
            "mmpp",
            f"no 2-state MMPP with high-state share {p} has mean {mean}, SCV {scv} and IDC {idc} "
            f"(SCV reachable for this IDC: {make(lo).scv:.3g} .. {make(hi).scv:.3g})",
        )
    a = brentq(err, lo, hi, xtol=1e-14 * top, rtol=1e-12, maxiter=500)
    return make(a)


def index_of_dispersion(interarrivals: np.ndarray, windows: int = 200) -> float:
    """Index of dispersion for counts estimated from a sample: Var(N)/E[N] over ``windows`` equal windows.

    The windows should be much longer than the process's correlation time for
    the estimate to approach the asymptotic IDC.
    """
    t = np.cumsum(np.asarray(interarrivals, dtype=float))
    if len(t) < windows * 2:
        raise ValueError("sample too short for the number of windows")
    edges = np.linspace(0.0, t[-1], windows + 1)
    counts = np.diff(np.searchsorted(t, edges, side="right"))
    m = counts.mean()
    return float(counts.var(ddof=1) / m)


def scv_of(interarrivals: np.ndarray) -> float:
    x = np.asarray(interarrivals, dtype=float)
    return float(x.var(ddof=1) / x.mean() ** 2)
