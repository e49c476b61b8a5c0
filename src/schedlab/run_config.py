"""One description of a data-center run: :class:`RunConfig`.

A run is a workload through a scheduler on a data center, with a seed. Every
way to ask for one speaks this model: ``schedlab simulate`` builds it from its
options, :func:`schedlab.simulate` from its keyword arguments, an experiment
spec from its workload × data center × scheduler × network entries, and the
summary's ``config`` block is written from it. So a setting and its default
live here once; the CLI's help text is the fields' descriptions.

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

from schedlab.defaults import (
    DEFAULT_CAPACITY,
    DEFAULT_LATENCY,
    DEFAULT_REQUESTS,
    MACHINE_MODELS,
    PAPER_CONSTRAINT_SEED,
)
from schedlab.errors import InputError
from schedlab.workload.trace import TraceConventions

ResourceMode = Literal["slots", "multi"]
RESOURCE_MODES: tuple[str, ...] = typing.get_args(ResourceMode)


class RunConfig(BaseModel):
    """Everything that decides a simulated run's results, with the papers' defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scheduler: str = Field("ideal", description="Scheduler name (see `schedlab schedulers`).")
    trace: str = Field(
        "google",
        description="google, syn_250, syn_500, syn_1000, or a trace file (a label when the jobs are given as a stream).",
    )
    workers: int | None = Field(None, description="Data-center size (default: the paper's size for a bundled trace, else 10000).")
    seed: int = Field(0, description="Run seed: generated data center and schedulers' random choices.")
    config: str | None = Field(None, description="Data-center config file (*_config_*.json) or 'reference' / 'reference-pigeon'.")
    data_center_from: str | None = Field(
        None,
        description="Machines file (`schedlab trace machines`): the trace's own machines as the workers, with their capacities; "
        "the trace's own constraints are matched against their attributes.",
    )
    params: dict[str, Any] = Field(default_factory=dict, description="The scheduler's own parameters (its Params model).")
    constraints: bool = Field(True, description="Placement constraints (Sharma et al.) on tasks and workers.")
    constraint_seed: int = Field(PAPER_CONSTRAINT_SEED, description=f"Seed of the task-constraint draws ({PAPER_CONSTRAINT_SEED} = the papers').")
    machine_model: str = Field("independent", description=f"Generated machine constraints: {' or '.join(MACHINE_MODELS)}.")
    resource_mode: ResourceMode = Field(
        "slots", description="slots (one task per worker) or multi (64 cores, 16 GB per worker)."
    )
    capacity: tuple[float, ...] = Field(DEFAULT_CAPACITY, description="Multi mode: each worker's cores and memory (MB).")
    requests: str = Field(DEFAULT_REQUESTS, description="Task resource requests in multi mode, e.g. fixed:1,256.")
    latency: float = Field(DEFAULT_LATENCY, description="One-way network latency per message, seconds.")
    processing_costs: dict[str, float] = Field(default_factory=dict, description="Processing cost at the receiver per message type, seconds.")
    exact_durations: bool = Field(False, description="Keep fractional durations and equal arrival times (no truncation or dephasing).")

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

    @field_validator("latency")
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
        f = cls.model_fields[name]
        return f.get_default(call_default_factory=True)

    @classmethod
    def describe(cls, name: str) -> str:
        return cls.model_fields[name].description or ""

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


def option_name(field: str) -> str:
    """The CLI option of a field: ``constraint_seed`` -> ``--constraint-seed``."""
    return "--" + field.replace("_", "-")


def input_error(e: ValidationError) -> InputError:
    """The first problem of a RunConfig validation, as ``--option: problem``."""
    err = e.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else "config"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = f"unknown run setting (the settings: {', '.join(RunConfig.model_fields)})"
    return InputError(option_name(field), msg)
