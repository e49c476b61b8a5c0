"""One description of a data-center run: :class:`RunConfig`.

A run is a workload through a scheduler on a data center, with a seed. Every
way to ask for one speaks this model: ``schedlab simulate`` builds it from its
options, :func:`schedlab.simulate` from its keyword arguments, an experiment
spec from its workload × data center × scheduler × network entries, and the
summary's ``config`` block is written from it. So a setting and its default
live here once (declared from :mod:`schedlab.run_fields`, where the CLI reads
them without pydantic); the CLI's help text is the fields' descriptions.

What a scheduler itself takes is not here: ``params`` is validated against
the scheduler's own pydantic ``Params`` (:mod:`schedlab.schedulers.registry`),
which also gives the CLI one flag per parameter.

Choices where the papers are silent are documented on the fields: the
constraint seed is the papers' (42), the latency the papers' simulators' ND
(0.5 ms one way), multi-resource workers have the Megha paper's 64 cores and
16 GB (Section V-B).
"""

from __future__ import annotations

import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from schedlab import run_fields
from schedlab.defaults import MACHINE_MODELS
from schedlab.errors import InputError
from schedlab.run_fields import option_name
from schedlab.workload.trace import TraceConventions

ResourceMode = Literal["slots", "multi"]
RESOURCE_MODES: tuple[str, ...] = typing.get_args(ResourceMode)


def run_field(name: str) -> Any:
    """The pydantic field of a setting, from its default and help in :mod:`schedlab.run_fields`."""
    value, text = run_fields.FIELDS[name]
    if isinstance(value, dict):
        return Field(default_factory=dict, description=text)
    return Field(value, description=text)


class RunConfig(BaseModel):
    """Everything that decides a simulated run's results, with the papers' defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scheduler: str = run_field("scheduler")
    trace: str = run_field("trace")
    workers: int | None = run_field("workers")
    seed: int = run_field("seed")
    config: str | None = run_field("config")
    data_center_from: str | None = run_field("data_center_from")
    params: dict[str, Any] = run_field("params")
    constraints: bool = run_field("constraints")
    constraint_seed: int = run_field("constraint_seed")
    machine_model: str = run_field("machine_model")
    resource_mode: ResourceMode = run_field("resource_mode")
    capacity: tuple[float, ...] = run_field("capacity")
    requests: str = run_field("requests")
    latency: float = run_field("latency")
    latency_spread: float = run_field("latency_spread")
    latency_per_task: float = run_field("latency_per_task")
    processing_costs: dict[str, float] = run_field("processing_costs")
    exact_durations: bool = run_field("exact_durations")

    @field_validator("seed", "constraint_seed", mode="before")
    @classmethod
    def _seed(cls, v: Any) -> Any:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"must be a non-negative integer, got {v!r}")
        return v

    @field_validator("workers")
    @classmethod
    def _workers(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"must be >= 1, got {v}")
        return v

    @field_validator("latency", "latency_spread", "latency_per_task")
    @classmethod
    def _latency(cls, v: float) -> float:
        if not v >= 0:
            raise ValueError(f"must be >= 0, got {v}")
        return v

    @field_validator("processing_costs")
    @classmethod
    def _costs(cls, v: dict[str, float]) -> dict[str, float]:
        return check_costs(v)

    @field_validator("machine_model")
    @classmethod
    def _machine_model(cls, v: str) -> str:
        if v not in MACHINE_MODELS:
            raise ValueError(f"unknown model {v!r} (choose from {', '.join(MACHINE_MODELS)})")
        return v

    @classmethod
    def build(cls, **settings: Any) -> RunConfig:
        """A validated config; the first problem becomes one :class:`InputError` naming the option (``--latency``)."""
        try:
            return cls(**settings)
        except ValidationError as e:
            raise input_error(e) from None

    @classmethod
    def default(cls, name: str) -> Any:
        """A field's default (for options that show it)."""
        return run_fields.default(name)

    @classmethod
    def describe(cls, name: str) -> str:
        return run_fields.describe(name)

    def conventions(self) -> TraceConventions:
        """How trace values become simulated ones (the papers' simulators', unless ``exact_durations``)."""
        return TraceConventions.exact() if self.exact_durations else TraceConventions()

    def summary_block(self, params: dict[str, Any], data_center: str, resources: tuple[str, ...], multi: bool) -> dict[str, Any]:
        """The summary's ``config`` block: what the run resolved to (the scheduler's params with every default)."""
        conv = self.conventions()
        return {
            "params": params,
            "data_center": data_center,
            "resource_mode": "multi" if multi else "slots",
            "resources": list(resources),
            "constraints": self.constraints,
            "constraint_seed": self.constraint_seed if self.constraints else None,
            "machine_model": self.machine_model if self.config is None and self.data_center_from is None else None,
            "latency": self.latency,
            # only when set: a summary of a run with constant latency stays as it was before the field existed
            **({"latency_spread": self.latency_spread} if self.latency_spread else {}),
            **({"latency_per_task": self.latency_per_task} if self.latency_per_task else {}),
            "processing_costs": dict(self.processing_costs),
            "truncate_durations": conv.truncate_durations,
            "dephase": conv.dephase,
            "requests": self.requests if multi else None,
        }


def check_costs(costs: dict[str, float]) -> dict[str, float]:
    """Processing costs per message type must be >= 0 (a pydantic validator's body: ValueError on a bad one)."""
    for k, x in costs.items():
        if not x >= 0:
            raise ValueError(f"cost of {k!r} must be >= 0, got {x}")
    return costs


def input_error(e: ValidationError) -> InputError:
    """The first problem of a RunConfig validation, as ``--option: problem``."""
    err = e.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else "config"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = f"unknown run setting (the settings: {', '.join(RunConfig.model_fields)})"
    return InputError(option_name(field), msg)
