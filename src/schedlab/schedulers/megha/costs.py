"""Megha's processing costs as a profile: per-step medians and spreads, read from a file (``simulate --costs``).

The Megha paper's simulations include processing overheads but give no
figures (Section V); ``MEGHA_PAPER_COSTS`` holds guessed constants. A **cost
profile** says, per step, what a GM or LM spends — ``gm_match`` (per task a GM
matches), ``lm_verify`` (per task an LM validates), ``update_per_worker`` (per
worker entry a GM folds from a state update), ``message`` (per message a GM or
LM handles) — either as a constant in seconds or as a distribution given by
its median and 90th percentile, and optionally the network's one-way delay — a
distribution too: each message's delay is drawn, ``--latency-spread`` — (and a
real cluster's client-to-GM submission delay, which the simulator does not model:
the calibrated twin adds it, :mod:`schedlab.services.twin`).
It is what a measurement of the real services yields (the calibrated-twin
issue's ``schedlab calibrate`` writes one), and what a simulation reads::

    # costs.yaml
    source: measured on a 5 GM x 5 LM loopback cluster
    one_way_delay: 0.0004
    steps:
      gm_match: {p50: 5.0e-6, p90: 9.5e-6, per_input: 1.2e-4}   # an input of n tasks: 1.2e-4 + n x 5.0e-6 (median)
      lm_verify: 1.2e-5
      update_per_worker: {p50: 2.0e-6, p90: 3.1e-6}
      message: {p50: 1.1e-4, p90: 3.0e-4}

Choices where the paper is silent: a distribution is **lognormal** (costs are
positive and right-skewed; two quantiles fix it: median ``p50`` and
``sigma = ln(p90 / p50) / z90``); one draw per step per input handled, scaling
that step's per-item cost for the whole input (an input of 40 tasks is one
matching pass, not 40 independent ones); the draws come from each GM's and
LM's own named stream (``megha:costs:gm0``…), never from the worker-choice
streams, and a seed gives the same run. A constant (``p90 == p50``) makes no draw: a profile
of constants runs exactly as the equivalent ``--param`` values. Steps left out
cost nothing.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from schedlab.errors import InputError

Step = Literal["gm_match", "lm_verify", "update_per_worker", "message"]
STEPS: tuple[Step, ...] = ("gm_match", "lm_verify", "update_per_worker", "message")
PARAM_OF: dict[Step, str] = {"gm_match": "gm_match_cost", "lm_verify": "lm_verify_cost",
                             "update_per_worker": "update_cost_per_worker", "message": "message_cost"}
Z90 = 1.2815515655446004  # the standard normal's 90th percentile


class Quantiles(BaseModel):
    """A positive, right-skewed cost: its median and 90th percentile, in seconds; for a step of items, optionally
    a part per input (``per_input``): an input of n items then costs ``per_input + n x p50`` at the median, the
    whole scaled by one draw (a measured profile's fit, where the cost per item falls as inputs grow)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    p50: float = Field(ge=0)
    p90: float = Field(ge=0)
    per_input: float = Field(0.0, ge=0)
    # a delay's growth per task its message carries (a one-way delay, a submission): a message of n tasks is
    # delayed ``p50 + n x per_task`` at the median
    per_task: float = Field(0.0, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Quantiles:
        if self.p90 < self.p50:
            raise ValueError(f"p90 ({self.p90}) is below p50 ({self.p50})")
        return self

    @property
    def sigma(self) -> float:
        """The lognormal's sigma (0 for a constant)."""
        return math.log(self.p90 / self.p50) / Z90 if self.p50 > 0 and self.p90 > self.p50 else 0.0


class CostProfile(BaseModel):
    """A measured (or assumed) profile of Megha's processing costs and the network's one-way delay."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str = ""
    one_way_delay: float | Quantiles | None = None
    # a real cluster's client-to-GM path through the broker (measured by ``schedlab calibrate``): the simulator has
    # no such hop (its jobs arrive at their GM); the calibrated twin adds it to simulated allocation times
    submission_delay: float | Quantiles | None = None
    steps: dict[Step, float | Quantiles] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _non_negative(self) -> CostProfile:
        for name, v in self.steps.items():
            if isinstance(v, float) and v < 0:
                raise ValueError(f"steps.{name}: a cost is >= 0 seconds, got {v}")
            if name == "message" and isinstance(v, Quantiles) and v.per_input:
                raise ValueError("steps.message: per_input is for steps of items (a message is one input)")
            if isinstance(v, Quantiles) and v.per_task:
                raise ValueError(f"steps.{name}: per_task is for delays (one_way_delay, submission_delay)")
        for delay in ("one_way_delay", "submission_delay"):
            d = getattr(self, delay)
            if isinstance(d, Quantiles) and d.per_input:
                raise ValueError(f"{delay}: per_input is for steps (a delay grows per task: per_task)")
        return self

    def quantiles(self, step: Step) -> Quantiles:
        v = self.steps.get(step, 0.0)
        return v if isinstance(v, Quantiles) else Quantiles(p50=v, p90=v)

    def params(self) -> dict[str, Any]:
        """Megha's parameters for this profile: each step's median as its ``*_cost``, and the spreads."""
        out: dict[str, Any] = {PARAM_OF[s]: self.quantiles(s).p50 for s in STEPS}
        spreads = {s: self.quantiles(s).sigma for s in STEPS if self.quantiles(s).sigma > 0}
        if spreads:
            out["cost_spread"] = spreads
        fixed = {s: self.quantiles(s).per_input for s in STEPS if self.quantiles(s).per_input > 0}
        if fixed:
            out["cost_per_input"] = fixed
        return out

    def submission(self) -> float:
        """The client-to-GM delay a real cluster adds before its GM sees a job (its median; 0 without one)."""
        d = self.submission_delay
        return 0.0 if d is None else d.p50 if isinstance(d, Quantiles) else float(d)

    def latency(self) -> float | None:
        """The one-way delay to simulate (its median), if the profile has one."""
        d = self.one_way_delay
        return None if d is None else d.p50 if isinstance(d, Quantiles) else float(d)

    def latency_spread(self) -> float:
        """The one-way delay's lognormal sigma (0: a constant, or none given)."""
        d = self.one_way_delay
        return d.sigma if isinstance(d, Quantiles) else 0.0

    def latency_per_task(self) -> float:
        """The one-way delay's growth per task a message carries (0: none measured)."""
        d = self.one_way_delay
        return d.per_task if isinstance(d, Quantiles) else 0.0


def load_costs(path: str | Path) -> CostProfile:
    """Read a cost profile; a missing file or a bad field is one :class:`InputError` naming the file and field."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(str(p), "no such cost profile") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(str(p), f"cannot read the cost profile: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise InputError(where, f"not YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(raw, dict):
        raise InputError(str(p), "a cost profile is a mapping with 'steps' (and optionally 'one_way_delay', 'source')")
    try:
        return CostProfile.model_validate(raw)
    except ValidationError as e:
        errors = e.errors()
        # a union's branches each report: for a mapping given, the {p50, p90} branch says what is wrong
        def branch(x: Any) -> bool:
            return any("Quantiles" in str(part) for part in x["loc"])

        err = next((x for x in errors if branch(x) or not isinstance(x.get("input"), dict)), errors[0])
        loc = ".".join(str(x) for x in err["loc"] if not (x in ("float", "[key]") or "Quantiles" in str(x)))
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "literal_error" or (err["type"] == "extra_forbidden" and loc.startswith("steps")):
            msg = f"unknown step (steps are {', '.join(STEPS)})"
        raise InputError(f"{p}: {loc}" if loc else str(p), msg) from None


class CostDraws:
    """A GM's or LM's draws of its per-step cost factors (lognormal with median 1), from its own stream."""

    __slots__ = ("rng", "spread")

    def __init__(self, rng: random.Random, spread: Mapping[Any, float]) -> None:
        self.rng = rng
        self.spread = spread

    def factor(self, step: str) -> float:
        s = self.spread.get(step, 0.0)
        return math.exp(s * self.rng.gauss(0.0, 1.0)) if s > 0 else 1.0
