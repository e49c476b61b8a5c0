"""What a running GM or LM spends on each step of Megha's processing — the measured side of the calibrated twin.

The simulator charges processing by step (:mod:`schedlab.schedulers.megha.costs`):
``gm_match`` per task a GM matches, ``lm_verify`` per task an LM validates,
``update_per_worker`` per worker entry a GM folds from a state update, and
``message`` per message a GM or LM handles. A service node measures the same
steps on the real code, with the process's CPU-time-free monotonic clock
(``time.perf_counter``), at the points where the simulator charges them:

* ``gm_match`` — a GM filing a job from its queue and matching its tasks (the
  requests it sends are queued, not waited for), per task of the job; and a GM
  re-matching the tasks of a rejection, per task;
* ``lm_verify`` — an LM handling a launch request (validation, the launch
  batches queued), per task in it;
* ``update_per_worker`` — a GM folding a state update, per worker entry it
  carries (a snapshot: every worker of its partitions; a delta: those changed);
* ``message`` — a GM or LM decoding and checking a message it receives (an HTTP
  request's authentication and decoding, a broker message's decoding), per
  message.

Every node (worker hosts too) also measures each HTTP message's **transit**:
from the moment its sender signed it (the signature's time, the sender's
clock) to its arrival in the receiver's handler — the sender's HTTP client,
the network and the receiver's HTTP server; on one machine both clocks are
one, across machines their offset is in it. It is what the simulator's
one-way delay stands for. A GM also measures each job's **submission**: from
its client's signature, through the broker, to the GM's handler (the broker's
confirm and delivery, the GM's consumer and its queue while busy) — a path the
simulator lacks, which the calibrated twin adds to its jobs.

Each observation is one input: its duration divided by its items (the
simulator draws one factor per step per input, scaling the per-item cost).
The steps of items also keep the sums of a least-squares fit of an input's
duration against its items (``fit``: inputs, Σn, Σn², Σt, Σnt, Σt²; merged by
adding): a part per input and one per item (:func:`affine`), since an input
has work that does not grow with its items (finding the job, the batch's
messages) and the cost per item falls as inputs grow — 122 µs per task for
single-task jobs, 7 µs for jobs of 50, measured.
Observations go into a log-spaced histogram per step (40 buckets a decade from
10 ns to 10 s: quantiles to within 6 %), which a node reports in its status
(``step_costs``) and which merge by adding counts — ``schedlab calibrate``
takes the difference of every node's histograms over its workload. Only a real
process measures (its runtime has a wall clock); the deterministic simulation
does not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

STEPS = ("gm_match", "lm_verify", "update_per_worker", "message")
FITTED = ("gm_match", "lm_verify", "update_per_worker")  # steps of items: a part per input and one per item (affine)
TRANSIT = "transit"  # not a step: a message's way from its sender's signature to its receiver (every node)
SUBMISSION = "submission"  # not a step: a job's way from its client's signature through the broker to its GM's handler
SIZED = (TRANSIT, SUBMISSION)  # ways of messages: their delay also fitted against the tasks each carries (affine)
PER_DECADE = 40
LOWEST = 1e-8  # seconds: the first bucket's lower edge
BUCKETS = 9 * PER_DECADE  # up to 10 s


def bucket_of(seconds: float) -> int:
    """The histogram bucket of a duration (clamped to the first and last)."""
    if seconds <= LOWEST:
        return 0
    return min(BUCKETS - 1, int(math.log10(seconds / LOWEST) * PER_DECADE))


def bucket_value(k: int) -> float:
    """A bucket's representative duration: its geometric middle."""
    return LOWEST * 10 ** ((k + 0.5) / PER_DECADE)


class StepCosts:
    """A node's histograms of per-item step costs (see the module)."""

    __slots__ = ("counts", "sums", "fits")

    def __init__(self) -> None:
        self.counts: dict[str, dict[int, int]] = {s: {} for s in (*STEPS, TRANSIT, SUBMISSION)}
        self.sums: dict[str, float] = dict.fromkeys((*STEPS, TRANSIT, SUBMISSION), 0.0)
        self.fits: dict[str, list[float]] = {s: [0.0] * 6 for s in (*FITTED, *SIZED)}  # inputs, Σn, Σn², Σt, Σnt, Σt²

    def observe(self, step: str, seconds: float, items: int = 1, carried: int | None = None) -> None:
        """One input of ``items`` items took ``seconds`` (a message's way: ``carried``, the tasks it carried, is what
        its fit is against; its histogram is per message)."""
        if items <= 0:
            return
        per = seconds / items
        hist = self.counts[step]
        k = bucket_of(per)
        hist[k] = hist.get(k, 0) + 1
        self.sums[step] += per
        fit = self.fits.get(step)
        if fit is not None:
            x = items if carried is None else carried
            fit[0] += 1
            fit[1] += x
            fit[2] += x * x
            fit[3] += seconds
            fit[4] += x * seconds
            fit[5] += seconds * seconds

    def status(self) -> dict[str, Any]:
        """The histograms as JSON: ``{step: {"n": inputs, "sum": seconds, "buckets": {bucket: count}}}``."""
        out: dict[str, Any] = {s: {"n": sum(h.values()), "sum": self.sums[s], "buckets": {str(k): v for k, v in sorted(h.items())}}
                               for s, h in self.counts.items() if h}
        for s, fit in self.fits.items():
            if s in out:
                out[s]["fit"] = list(fit)
        return out


def merge_fits(statuses: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Several nodes' ``step_costs`` fits added up: ``{step: [inputs, Σn, Σn², Σt, Σnt, Σt²]}``."""
    out: dict[str, list[float]] = {}
    for st in statuses:
        for step, h in st.items():
            fit = h.get("fit")
            if fit is not None:
                acc = out.setdefault(step, [0.0] * 6)
                for k, v in enumerate(fit[:6]):
                    acc[k] += float(v)
    return out


def affine(fit: list[float], min_inputs: int = 20) -> tuple[float, float, float] | None:
    """The least-squares fit of an input's seconds against its items: ``(per_input, per_item, sigma)`` — sigma the
    lognormal spread of an input's cost around the fit (from the residuals' coefficient of variation) — or None
    when it cannot be fitted (fewer than ``min_inputs`` inputs, all of one size, or a part that would be negative)."""
    n, sx, sxx, sy, sxy, syy = fit
    if n < min_inputs:
        return None
    var = n * sxx - sx * sx
    if var <= 1e-9 * n * sxx:
        return None
    b = (n * sxy - sx * sy) / var
    a = (sy - b * sx) / n
    if a < 0 or b <= 0:
        return None
    ssr = max(0.0, syy - 2 * a * sy - 2 * b * sxy + a * a * n + 2 * a * b * sx + b * b * sxx)
    mean = sy / n
    cv = math.sqrt(ssr / n) / mean if mean > 0 else 0.0
    return a, b, math.sqrt(math.log1p(cv * cv))


def merge(statuses: Iterable[Mapping[str, Any]]) -> dict[str, dict[int, int]]:
    """Several nodes' ``step_costs`` added up: ``{step: {bucket: count}}``."""
    out: dict[str, dict[int, int]] = {}
    for st in statuses:
        for step, h in st.items():
            acc = out.setdefault(step, {})
            for k, v in h.get("buckets", {}).items():
                acc[int(k)] = acc.get(int(k), 0) + int(v)
    return out


def subtract(after: Mapping[str, Mapping[int, int]], before: Mapping[str, Mapping[int, int]]) -> dict[str, dict[int, int]]:
    """What was observed between two merged snapshots of the same nodes."""
    out: dict[str, dict[int, int]] = {}
    for step, h in after.items():
        b = before.get(step, {})
        diff = {k: v - b.get(k, 0) for k, v in h.items() if v - b.get(k, 0) > 0}
        if diff:
            out[step] = diff
    return out


def quantile(hist: Mapping[int, int], q: float) -> float:
    """The ``q`` quantile of a histogram (its bucket's middle); 0 for an empty one."""
    total = sum(hist.values())
    if total == 0:
        return 0.0
    rank = q * total
    seen = 0
    for k in sorted(hist):
        seen += hist[k]
        if seen >= rank:
            return bucket_value(k)
    return bucket_value(max(hist))
