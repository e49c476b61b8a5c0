"""Experiment specs: a YAML file, validated by pydantic, whose errors name the file, line and field.

An experiment crosses **workloads** × **data centers** × **scheduler variants**
× **seeds**; every combination is one run (:mod:`schedlab.experiments.matrix`).
A minimal spec::

    name: megha-vs-centralized
    workloads:
      - trace: syn_250            # bundled name or a trace file (relative to the spec)
        max_jobs: 50              # the first 50 jobs only
      - name: bursty
        generate: {jobs: 200, arrivals: "mmpp:1,20,55", tasks_per_job: "geom:20", duration: "exp:5"}
    data_centers:
      - workers: 1000
      - config: reference         # the papers' 10,000 workers (Megha layout)
    schedulers:
      - name: megha
        label: "megha_{worker_choice}"
        grid: {worker_choice: [random, min-constraints]}
      - name: centralized
    seeds: [0, 1, 2]              # or a count: 3 means [0, 1, 2]
    baseline: megha_random
    metrics: [jrt_delay.p50, jrt_delay.p99, utilization.mean]
    plots: [jrt_delay_cdf, utilization_cdf]

Choices made here:

* A generated workload is drawn from its own ``seed`` (default 0), not the run
  seed, so every scheduler and seed sees the same jobs — as with a trace. The
  run seed varies the generated data center and the schedulers' choices (the
  constraint-aware paper's "distinct configurations for each of the three runs").
* ``workers: paper`` (the default data center) is the size each bundled trace
  is studied with in the papers (10,000; 20,000 for Google).
* Scheduler labels may hold ``{param}`` placeholders filled per grid point;
  without a label a variant is called ``name_value1_value2…``.
* ``exclude`` drops combinations, as a CI matrix does: each entry lists
  ``workload``, ``data_center``, ``scheduler`` (label) and/or ``seed`` values
  that must all match.
* A data center's ``config`` may be one file per scheduler name, e.g.
  ``{megha: reference, pigeonc: reference-pigeon}``: the same workers in each
  scheduler's own layout, compared as one data center.
* ``quick`` holds top-level replacements used by ``schedlab reproduce --quick``.

Every problem is an :class:`~schedlab.errors.InputError` such as
``exp.yaml:12: schedulers[1].params.heartbeat: Input should be greater than 0``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from schedlab.errors import InputError
from schedlab.run_config import RunConfig, check_costs
from schedlab.workload.distributions import Dist
from schedlab.workload.requests import RequestModel
from schedlab.workload.synthetic import ArrivalSpec

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

PLOTS = (
    "jrt_delay_cdf",
    "allocation_cdf",
    "allocation_percentiles",
    "allocation_components",
    "allocation_by_size",
    "utilization_cdf",
    "utilization_normalized",
    "constraint_load",
    "fairness_counters",
    "inconsistencies_over_time",
)
TABLES = ("tasks", "jobs", "utilization", "inconsistencies")
DEFAULT_TABLES = ("tasks", "jobs", "utilization")  # inconsistencies (per second and GM) only when asked
ExcludeField = Literal["workload", "data_center", "scheduler", "seed"]  # what an ``exclude`` rule can match
DEFAULT_METRICS = ("jrt_delay.p50", "jrt_delay.p99", "allocation_time.p50", "allocation_time.p99", "utilization.mean")

_DISTRIBUTIONS = ("jrt_delay", "jrt_delay_short", "jrt_delay_long", "jrt", "ideal_jrt", "allocation_time")
_STATS = ("count", "mean", "p50", "p90", "p99", "p999", "p9999", "max")
_COMPONENTS = ("framework_queuing", "processing", "worker_queuing", "communication")
_SCALARS = ("jobs", "tasks", "workers", "events", "sim_time", "wall_seconds")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$")


def expand_metric(metric: str) -> list[str]:
    """The summary columns a metric name stands for (a bare family means its p50 and p99, or its mean)."""
    parts = metric.split(".")
    head = parts[0]
    if head in _DISTRIBUTIONS:
        if len(parts) == 1:
            return [f"{head}.p50", f"{head}.p99"]
        if len(parts) == 2 and parts[1] in _STATS:
            return [metric]
    elif head == "allocation_components":
        if len(parts) == 2 and parts[1] in _COMPONENTS:
            return [f"{metric}.p50"]
        if len(parts) == 3 and parts[1] in _COMPONENTS and parts[2] in _STATS:
            return [metric]
    elif head == "utilization":
        if len(parts) == 1:
            return ["utilization.mean"]
        if len(parts) == 2 and parts[1] in ("mean", "p50", "p99"):
            return [metric]
    elif head in ("counters", "messages"):
        if len(parts) == 2 and parts[1]:
            return [metric]
    elif head in _SCALARS and len(parts) == 1:
        return [metric]
    raise ValueError(
        f"unknown metric {metric!r} (use {'|'.join(_DISTRIBUTIONS)}[.STAT], allocation_components.COMPONENT[.STAT], "
        f"utilization[.mean|p50|p99], counters.NAME, messages.TYPE or {', '.join(_SCALARS)}; STAT is one of {', '.join(_STATS)})"
    )


class SpecModel(BaseModel):
    """Base of every spec section (here and in domain_sweep): unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


# Shared by every spec (data center here, the other domains in :mod:`schedlab.experiments.domain_sweep`).
def check_name(v: str) -> str:
    if not _NAME.match(v):
        raise ValueError("use letters, digits and _ . + = - (it names the results folder)")
    return v


def check_seeds_shape(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int | list):
        raise ValueError(f"give a list of seeds or a count, not {v!r}")
    return v


def seed_list(v: list[int] | int) -> list[int]:
    """A seed count n as 0..n-1, or the list given, checked."""
    if isinstance(v, int):
        if v < 1:
            raise ValueError("a seed count must be >= 1")
        return list(range(v))
    if not v:
        raise ValueError("give at least one seed")
    if any(s < 0 for s in v):
        raise ValueError("seeds must be >= 0")
    if len(set(v)) != len(v):
        raise ValueError("seeds repeat")
    return v


SpecName = Annotated[str, AfterValidator(check_name)]
Seeds = Annotated[list[int] | int, BeforeValidator(check_seeds_shape), AfterValidator(seed_list)]


class GeneratorSpec(SpecModel):
    """Synthetic jobs (:func:`schedlab.workload.synthetic.generate_jobs`)."""

    jobs: int = Field(ge=1)
    arrivals: str = "poisson:1"
    tasks_per_job: str = "geom:10"
    duration: str = "exp:1"
    seed: int = Field(0, ge=0)
    start: float = Field(0.0, ge=0)
    job_duration_spread: float | None = Field(None, ge=0, lt=1)  # one duration per job (generate_jobs)

    @model_validator(mode="after")
    def _parse(self) -> GeneratorSpec:

        for name, parse in (
            ("arrivals", lambda s: ArrivalSpec.parse(s, "arrivals")),
            ("tasks_per_job", lambda s: Dist.parse(s, "tasks_per_job", integer=True)),
            ("duration", lambda s: Dist.parse(s, "duration")),
        ):
            try:
                parse(getattr(self, name))
            except InputError as e:
                raise ValueError(f"{name}: {e.problem}") from None
        return self


class WorkloadSpec(SpecModel):
    """A trace (bundled name or file) or generated jobs, and how tasks get constraints and requests."""

    name: str | None = None
    trace: str | None = None
    generate: GeneratorSpec | None = None
    max_jobs: int | None = Field(None, ge=1, description="keep only the first N jobs")
    exact_durations: bool = Field(RunConfig.default("exact_durations"), description=RunConfig.describe("exact_durations"))
    constraints: bool = Field(RunConfig.default("constraints"), description=RunConfig.describe("constraints"))
    constraint_seed: int = Field(RunConfig.default("constraint_seed"), ge=0, description=RunConfig.describe("constraint_seed"))
    requests: str | None = Field(None, description=f"{RunConfig.describe('requests')} (default {RunConfig.default('requests')})")
    paper_trace: Literal["google_19", "alibaba", "cloudera"] | None = Field(
        None, description="the Megha paper sample this workload stands in for: `reproduce --paper-traces DIR` runs DIR/NAME.parquet instead"
    )

    @model_validator(mode="after")
    def _one_source(self) -> WorkloadSpec:
        if (self.trace is None) == (self.generate is None):
            raise ValueError("give exactly one of 'trace' and 'generate'")
        if self.requests is not None:

            try:
                RequestModel.parse(self.requests, 2)  # multi-resource workers have cores and memory_mb
            except InputError as e:
                raise ValueError(f"requests: {e.problem}") from None
        return self


class DataCenterSpec(SpecModel):
    """``workers`` generated workers (or ``paper``: the trace's paper size), or a ``config`` file."""

    name: str | None = None
    workers: int | Literal["paper"] | None = Field(None, description="number of workers, or 'paper'")
    config: str | dict[str, str] | None = Field(
        None, description="config file, 'reference' / 'reference-pigeon', or one per scheduler name (the same workers in each one's layout)"
    )
    resource_mode: Literal["slots", "multi"] = Field(RunConfig.default("resource_mode"), description=RunConfig.describe("resource_mode"))
    capacity: list[float] | None = Field(None, description=f"{RunConfig.describe('capacity')} (default {list(RunConfig.default('capacity'))})")
    machine_model: Literal["independent", "reference"] = Field(RunConfig.default("machine_model"), description=RunConfig.describe("machine_model"))

    @field_validator("workers")
    @classmethod
    def _positive(cls, v: Any) -> Any:
        if isinstance(v, int) and v < 1:
            raise ValueError("must be >= 1")
        return v

    @model_validator(mode="after")
    def _check(self) -> DataCenterSpec:
        if self.workers is not None and self.config is not None:
            raise ValueError("give 'workers' or 'config', not both")
        if self.workers is None and self.config is None:
            self.workers = "paper"
        if self.capacity is not None:
            if self.resource_mode != "multi":
                raise ValueError("'capacity' needs resource_mode: multi")
            if len(self.capacity) != 2 or min(self.capacity) <= 0:
                raise ValueError("capacity is [cores, memory_mb], both > 0")
        return self


class SchedulerSpec(SpecModel):
    """A scheduler with fixed ``params`` and a ``grid`` of parameter values to cross."""

    name: str
    label: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)

    @field_validator("grid")
    @classmethod
    def _non_empty(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for k, values in v.items():
            if not values:
                raise ValueError(f"grid {k!r} has no values")
        return v

    @model_validator(mode="after")
    def _disjoint(self) -> SchedulerSpec:
        both = sorted(set(self.params) & set(self.grid))
        if both:
            raise ValueError(f"{', '.join(both)} given in both 'params' and 'grid'")
        return self


class NetworkSpec(SpecModel):
    latency: float = Field(RunConfig.default("latency"), ge=0, description=RunConfig.describe("latency"))
    processing_costs: dict[str, float] = Field(default_factory=dict, description=RunConfig.describe("processing_costs"))

    @field_validator("processing_costs")
    @classmethod
    def _non_negative(cls, v: dict[str, float]) -> dict[str, float]:
        return check_costs(v)


class ExperimentSpec(SpecModel):
    """A whole experiment; see the module docstring for the YAML form."""

    name: SpecName
    description: str = ""
    workloads: list[WorkloadSpec] = Field(min_length=1)
    data_centers: list[DataCenterSpec] = Field(default_factory=lambda: [DataCenterSpec()])
    schedulers: list[SchedulerSpec] = Field(min_length=1)
    seeds: Seeds = Field([0], description="seed list, or a count n meaning 0..n-1")
    network: NetworkSpec = Field(default_factory=NetworkSpec)
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS))
    plots: list[Literal[PLOTS]] = Field(default_factory=lambda: list(PLOTS))  # type: ignore[valid-type]
    baseline: str | None = Field(None, description="scheduler label the comparisons divide by")
    tables: list[Literal[TABLES]] = Field(default_factory=lambda: list(DEFAULT_TABLES))  # type: ignore[valid-type]
    exclude: list[dict[ExcludeField, str | int]] = Field(default_factory=list)
    quick: dict[str, Any] | None = None


    @field_validator("metrics")
    @classmethod
    def _metrics(cls, v: list[str]) -> list[str]:
        for m in v:
            expand_metric(m)
        return v

    @property
    def seed_list(self) -> list[int]:
        return list(self.seeds)  # type: ignore[arg-type]

    def metric_columns(self) -> list[str]:
        cols: list[str] = []
        for m in self.metrics:
            cols += [c for c in expand_metric(m) if c not in cols]
        return cols


# -- loading ------------------------------------------------------------------------------------
class LoadedSpec:
    """A validated spec with where it came from (for relative paths and error locations)."""

    def __init__(self, spec: ExperimentSpec, source: str, base_dir: Path, text: str, node: Any) -> None:
        self.spec = spec
        self.source = source
        self.base_dir = base_dir
        self.text = text
        self.node = node

    def error(self, loc: tuple[Any, ...], problem: str) -> InputError:
        """An InputError at ``loc`` (a pydantic-style path), with the YAML line when it can be found."""
        return spec_error(self.source, self.node, loc, problem)


# libyaml's safe loader where PyYAML was built with it: 30x faster (a 10,000-worker cluster file: 28 s -> 1 s)
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _compose_and_construct(text: str) -> tuple[Any, Any]:
    """The node tree and the data of one YAML document, parsed once (the data is built from the nodes: a
    10,000-worker cluster file parsed twice spent half its time doing it again)."""
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        return node, (None if node is None else loader.construct_document(node))
    finally:
        loader.dispose()


def parse_yaml_mapping(text: str, source: str, what: str) -> tuple[Any, dict]:
    """``(node tree, data)`` of a YAML document that must be a mapping; ``what`` says what it should be."""
    try:
        try:
            node, data = _compose_and_construct(text)
        except yaml.YAMLError:  # said as PyYAML's own parser says it (its marks point where the text goes wrong)
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise InputError(where, f"invalid YAML: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(data, dict):
        raise InputError(source, what)
    return node, data


def spec_error(source: str, node: Any, loc: tuple[Any, ...], problem: str) -> InputError:
    """``source:line: dotted.path: problem`` for a location in the spec's YAML node tree."""
    path, line = locate(node, loc)
    where = f"{source}:{line}" if line else source
    return InputError(where, f"{path}: {problem}" if path else problem)


def locate(node: Any, loc: tuple[Any, ...]) -> tuple[str, int | None]:
    """``(dotted path, 1-based line)`` of a pydantic error location inside a composed YAML node tree."""
    path = ""
    line = node.start_mark.line + 1 if node is not None else None
    for i, part in enumerate(loc):
        found = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            found = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
            if found is None and i == len(loc) - 1:  # a missing field: name it, point at its parent
                path = f"{path}.{part}" if path else part
                continue
            if found is not None:
                path = f"{path}.{part}" if path else part
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            found = node.value[part]
            path = f"{path}[{part}]"
        if found is not None:
            node = found
            line = node.start_mark.line + 1
        # anything else (a union member's tag such as 'list[int]') is not part of the document
    return path, line


def error_message(err: ErrorDetails) -> str:
    msg = str(err["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    return msg


def parse_spec(text: str, source: str = "<spec>", base_dir: str | os.PathLike | None = None, *, quick: bool = False) -> LoadedSpec:
    """Validate a spec given as YAML text; ``quick`` applies its ``quick`` replacements first."""
    node, data = parse_yaml_mapping(text, source, "an experiment spec is a YAML mapping (name, workloads, schedulers, …)")
    if quick:
        q = data.get("quick")
        if not isinstance(q, dict):
            raise InputError(source, "this spec has no 'quick' section")
        data = {**data, **q}
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        if quick and loc and loc[0] in (data.get("quick") or {}):
            loc = ("quick", *loc)
        raise spec_error(source, node, loc, error_message(err)) from None
    return LoadedSpec(spec, source, Path(base_dir or "."), text, node)


def load_spec(path: str | os.PathLike, *, quick: bool = False) -> LoadedSpec:
    """Read and validate a spec file; relative trace and config paths are taken from its folder."""
    return parse_spec(read_spec(path), str(path), Path(path).parent, quick=quick)


def read_spec(path: str | os.PathLike) -> str:
    """A spec file's text; a missing or unreadable file is one line naming it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "no such spec file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(str(path), f"cannot read spec: {e}") from None
