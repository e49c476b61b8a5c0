"""Specs of the other domains — grids, DynDL data locality, CRED edge — in the data-center spec's format, on the same runner and store.

A spec with ``domain: grid``, ``locality`` or ``edge`` crosses **instance
settings** × **scheduler variants** × **seeds**; each combination is one
:class:`~schedlab.sweeps.points.Point`, run by the one sweep runner
(:func:`~schedlab.sweeps.runner.sweep`: this process, a process pool or
Ray) into the one results store (resumable, one lock). A minimal spec::

    name: grid-duplication
    domain: grid                      # grid | locality | edge (no domain: a data-center spec)
    instance: {local_jobs: 2000, global_jobs: 2000}   # fixed settings of the domain's generator
    vary: {arrivals: [strong, weak]}  # settings crossed (each a list)
    schedulers:                       # as in data-center specs: name, label, params, grid
      - name: hybrid1
        label: "hybrid1+{duplications}"
        grid: {duplications: [0, 1, 2]}
      - name: rand
    seeds: 2                          # or a list
    metrics: [mean_queue_time, perf_gap]

What a point measures, per domain:

* ``grid`` (:mod:`schedlab.grid`) — ``instance``/``vary`` are
  :class:`~schedlab.grid.simulation.GridConfig` fields (not the scheduler's own:
  duplications, delay, penalty, query_interval and tie_break are its
  ``params``); each (settings, seed) also runs the paper's ideal, so every row
  has ``perf_gap`` (Eq. 1). Metrics: ``mean_queue_time``, ``perf_gap``, the
  queue-time shares ``<10s``, ``10-100s``, ``>=100s``, ``utilization``,
  ``local_mean_queue_time``, ``invalidations``.
* ``locality`` (:mod:`schedlab.locality`) — settings of the DynDL paper's
  generator (tasks, servers, core_num, alpha, beta, theta, replicas); each
  point generates its instance from its seed and runs one algorithm.
  Metrics: ``makespan``, ``remote_tasks``, ``seconds`` (``timeout`` rows have
  none, as in Figure 8).
* ``edge`` (:mod:`schedlab.edge`) — settings of the CRED instance generator
  (jobs, chunks, chunks_per_job, popularity, deadlines, mix, nodes,
  chunks_per_node, vms_per_node). Metrics: ``active_nodes``, ``lower_bound``,
  ``feasible`` (every schedule is verified).

Every setting and parameter is checked before anything runs (one line naming
the spec's file, line and field). The sweep writes ``results.csv`` (one row
per point: labels, settings, seed, metrics), ``summary.csv`` (mean over seeds
per scheduler and setting) and ``report.md`` with one table per metric and,
when one setting varies, one plot per metric (``<metric>.png``) into the
results folder. ``schedlab compare`` and ``schedlab report`` read such a folder
as they read a data-center one: each metric per varied setting and scheduler,
mean ± std over seeds, × ratio to a baseline label (the ideal for grids,
unless ``--baseline``); the report again, into another folder if asked.
"""

from __future__ import annotations

import inspect
import itertools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from schedlab import __version__
from schedlab.algorithms import AlgorithmRegistry
from schedlab.errors import InputError
from schedlab.experiments.spec import (
    SchedulerSpec,
    Seeds,
    SpecModel,
    SpecName,
    error_message,
    parse_yaml_mapping,
    read_spec,
    spec_error,
)
from schedlab.metrics.export import atomic_write, write_table
from schedlab.sweeps.points import Point, null_to_nan
from schedlab.sweeps.runner import SweepProgress, SweepResult, sweep
from schedlab.sweeps.store import Store

DOMAINS = ("grid", "locality", "edge")


class DomainSpec(SpecModel):
    """A sweep of the grid, locality or edge domain; see the module docstring for the YAML form."""

    name: SpecName
    domain: Literal["grid", "locality", "edge"]
    description: str = ""
    instance: dict[str, Any] = Field(default_factory=dict, description="fixed settings of the domain's generator")
    vary: dict[str, list[Any]] = Field(default_factory=dict, description="settings crossed, each a list of values")
    schedulers: list[SchedulerSpec] = Field(min_length=1)
    seeds: Seeds = Field([0], description="seed list, or a count n meaning 0..n-1")
    metrics: list[str] | None = Field(None, description="metrics of the report (default: the domain's)")
    quick: dict[str, Any] | None = None

    @field_validator("vary")
    @classmethod
    def _non_empty(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for k, values in v.items():
            if not values:
                raise ValueError(f"vary {k!r} has no values")
        return v

    @model_validator(mode="after")
    def _disjoint(self) -> DomainSpec:
        both = sorted(set(self.instance) & set(self.vary))
        if both:
            raise ValueError(f"{', '.join(both)} given in both 'instance' and 'vary'")
        return self


# -- what a point of each domain runs ------------------------------------------------------------------------
def locality_point(instance: dict[str, Any], scheduler: str, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """Generate a DynDL instance from ``seed`` and run one algorithm on it."""
    from schedlab.locality.algorithms import run_algorithm
    from schedlab.locality.baselines import Timeout
    from schedlab.locality.instances import generate

    inst = generate(**instance, seed=seed)
    try:
        r = run_algorithm(scheduler, inst, seed, params)
    except Timeout:
        return {"status": "timeout", "makespan": math.nan, "remote_tasks": math.nan, "seconds": math.nan}
    return {"status": "ok", "makespan": r.makespan, "remote_tasks": r.remote_tasks, "seconds": r.seconds}


def edge_point(instance: dict[str, Any], scheduler: str, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """Generate a CRED instance from ``seed``, run one algorithm and verify its schedule."""
    from schedlab.edge.bounds import lower_bound
    from schedlab.edge.compare import run_algorithm
    from schedlab.edge.generate import generate_instance

    inst = generate_instance(**instance, seed=seed)
    run = run_algorithm(scheduler, inst, seed=seed, params=params)
    return {"active_nodes": run.verdict.active_nodes, "lower_bound": lower_bound(inst), "feasible": run.feasible, "seconds": run.seconds}


@dataclass(frozen=True)
class _Domain:
    registry: Callable[[], AlgorithmRegistry]
    check: Callable[[dict[str, Any]], None]  # raises InputError(field, problem) for bad settings
    metrics: tuple[str, ...]  # every metric a row has
    default_metrics: tuple[str, ...]
    target: str = ""  # "module:function" of a point (grid builds its own points)


def _grid_registry() -> AlgorithmRegistry:
    from schedlab.grid.simulation import SCHEDULERS

    return SCHEDULERS


def _locality_registry() -> AlgorithmRegistry:
    from schedlab.locality.algorithms import ALGORITHMS

    return ALGORITHMS


def _edge_registry() -> AlgorithmRegistry:
    from schedlab.edge.compare import ALGORITHMS

    return ALGORITHMS


_SCHEDULER_FIELDS = ("scheduler", "seed", "duplications", "delay", "penalty", "query_interval", "tie_break")


def _check_grid(settings: dict[str, Any]) -> None:
    from dataclasses import fields

    from schedlab.grid.simulation import GridConfig

    allowed = [f.name for f in fields(GridConfig) if f.name not in _SCHEDULER_FIELDS]
    for k in settings:
        if k in _SCHEDULER_FIELDS:
            raise InputError(k, "is set by the schedulers' params and the seeds, not here")
        if k not in allowed:
            raise InputError(k, f"unknown setting (choose from {', '.join(allowed)})")
    GridConfig(**settings)


def _check_generator(fn: Callable[..., Any]) -> Callable[[dict[str, Any]], None]:
    def check(settings: dict[str, Any]) -> None:
        allowed = [p for p in inspect.signature(fn).parameters if p not in ("seed", "name")]
        for k in settings:
            if k not in allowed:
                raise InputError(k, f"unknown setting (choose from {', '.join(allowed)})")
        fn(**settings, seed=0)

    return check


def _check_locality(settings: dict[str, Any]) -> None:
    from schedlab.locality.instances import generate

    _check_generator(generate)(settings)


def _check_edge(settings: dict[str, Any]) -> None:
    from schedlab.edge.generate import generate_instance

    _check_generator(generate_instance)(settings)


_GRID_METRICS = ("mean_queue_time", "perf_gap", "<10s", "10-100s", ">=100s", "utilization", "local_mean_queue_time", "invalidations")
_DOMAINS: dict[str, _Domain] = {
    "grid": _Domain(_grid_registry, _check_grid, _GRID_METRICS, ("mean_queue_time", "perf_gap")),
    "locality": _Domain(
        _locality_registry, _check_locality, ("makespan", "remote_tasks", "seconds"), ("makespan", "remote_tasks"),
        "schedlab.experiments.domain_sweep:locality_point",
    ),
    "edge": _Domain(
        _edge_registry, _check_edge, ("active_nodes", "lower_bound", "seconds"), ("active_nodes", "lower_bound"),
        "schedlab.experiments.domain_sweep:edge_point",
    ),
}


# -- loading and expanding -------------------------------------------------------------------------------------
@dataclass
class LoadedDomainSpec:
    spec: DomainSpec
    source: str
    text: str
    node: Any

    def error(self, loc: tuple[Any, ...], problem: str) -> InputError:
        return spec_error(self.source, self.node, loc, problem)

    @property
    def metrics(self) -> list[str]:
        return list(self.spec.metrics or _DOMAINS[self.spec.domain].default_metrics)


def is_domain_spec(path: str | os.PathLike) -> bool:
    """Does the YAML file at ``path`` name a ``domain`` (else it is a data-center spec)? Unreadable files: no."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        _, data = parse_yaml_mapping(text, str(path), "")
    except (OSError, UnicodeDecodeError, InputError):
        return False
    return "domain" in data


def parse_domain_spec(text: str, source: str = "<spec>", *, quick: bool = False) -> LoadedDomainSpec:
    """Validate a domain spec given as YAML text (``quick`` applies its ``quick`` replacements)."""
    node, data = parse_yaml_mapping(text, source, "a spec is a YAML mapping (name, domain, schedulers, …)")
    if quick:
        q = data.get("quick")
        if not isinstance(q, dict):
            raise InputError(source, "this spec has no 'quick' section")
        data = {**data, **q}
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise spec_error(source, node, tuple(err["loc"]), error_message(err)) from None
    ls = LoadedDomainSpec(spec, source, text, node)
    known = _DOMAINS[spec.domain].metrics
    for i, m in enumerate(ls.metrics):
        if m not in known:
            raise ls.error(("metrics", i), f"unknown metric {m!r} for domain {spec.domain} (choose from {', '.join(known)})")
    return ls


def load_domain_spec(path: str | os.PathLike, *, quick: bool = False) -> LoadedDomainSpec:
    return parse_domain_spec(read_spec(path), str(path), quick=quick)


@dataclass(frozen=True)
class _Variant:
    label: str
    name: str
    params: dict[str, Any]


def _variants(ls: LoadedDomainSpec, registry: AlgorithmRegistry) -> list[_Variant]:
    out: list[_Variant] = []
    seen: set[str] = set()
    for i, s in enumerate(ls.spec.schedulers):
        if s.name not in registry:
            raise ls.error(("schedulers", i, "name"), f"unknown {ls.spec.domain} scheduler {s.name!r} (choose from {', '.join(registry.names())})")
        keys = list(s.grid)
        for combo in itertools.product(*(s.grid[k] for k in keys)):
            chosen = dict(zip(keys, combo, strict=True))
            params = {**s.params, **chosen}
            try:
                model = registry.parse_params(s.name, params)
            except InputError as e:
                key = (e.where or "").removeprefix("param ")
                loc: tuple[Any, ...] = (
                    ("schedulers", i, "grid", key, s.grid[key].index(chosen[key])) if key in chosen
                    else ("schedulers", i, "params", key) if key in s.params else ("schedulers", i, "params")
                )
                raise ls.error(loc, e.problem if key in chosen or key in s.params else f"{key}: {e.problem}") from None
            try:
                label = s.label.format(**params) if s.label is not None else "_".join([s.name, *(str(v) for v in combo)])
            except (KeyError, IndexError, ValueError) as e:
                raise ls.error(("schedulers", i, "label"), f"cannot fill placeholder {e} from this variant's parameters") from None
            if label in seen:
                raise ls.error(("schedulers", i, "label"), f"two variants are labelled {label!r}: give a 'label' with {{placeholders}}")
            seen.add(label)
            out.append(_Variant(label, s.name, model.model_dump(mode="json")))
    return out


def _settings(ls: LoadedDomainSpec) -> list[dict[str, Any]]:
    """Every combination of the varied settings over the fixed ones, each checked by the domain."""
    spec = ls.spec
    keys = list(spec.vary)
    out = []
    for combo in itertools.product(*(spec.vary[k] for k in keys)):
        chosen = dict(zip(keys, combo, strict=True))
        settings = {**spec.instance, **chosen}
        try:
            _DOMAINS[spec.domain].check(settings)
        except InputError as e:
            field = (e.where or "").removeprefix("--").replace("-", "_")
            if field in chosen:
                loc: tuple[Any, ...] = ("vary", field, spec.vary[field].index(chosen[field]))
            elif field in spec.instance:
                loc = ("instance", field)
            else:
                loc = ("instance",)
            raise ls.error(loc, e.problem if field in settings else f"{e.where}: {e.problem}") from None
        out.append(settings)
    return out


def expand(ls: LoadedDomainSpec) -> list[Point]:
    """The spec's points in order: settings × variants × seeds (grids: each (settings, seed)'s ideal first)."""
    spec = ls.spec
    domain = _DOMAINS[spec.domain]
    variants = _variants(ls, domain.registry())
    points: list[Point] = []
    for settings in _settings(ls):
        shown = {k: _shown(settings[k]) for k in spec.vary}
        for seed in spec.seeds:  # type: ignore[union-attr]
            if spec.domain == "grid":
                from schedlab.grid.experiments import IDEAL, point
                from schedlab.grid.simulation import GridConfig

                base = GridConfig(**settings, seed=seed)
                points.append(_labelled(point(base.ideal(), IDEAL), IDEAL, shown, seed))
                for v in variants:
                    points.append(_labelled(point(replace(base, scheduler=v.name, **v.params), v.label), v.label, shown, seed))
            else:
                for v in variants:
                    inputs = {"instance": settings, "scheduler": v.name, "params": v.params, "seed": seed}
                    points.append(Point(domain.target, inputs, {"scheduler": v.label, **shown, "seed": seed}))
    return points


def _shown(v: Any) -> Any:
    """A setting as a table column holds it: lists as comma-separated text."""
    return ",".join(map(str, v)) if isinstance(v, list | tuple) else v


def _labelled(p: Point, label: str, shown: dict[str, Any], seed: int) -> Point:
    return Point(p.target, p.inputs, {"scheduler": label, **shown, "seed": seed})


# -- running and reporting ----------------------------------------------------------------------------------
def run_domain_sweep(
    spec: str | os.PathLike | LoadedDomainSpec,
    out: str | os.PathLike | None = None,
    *,
    jobs: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: Callable[[SweepProgress], None] | None = None,
) -> SweepResult:
    """Run every point of a domain spec not yet in ``out`` (default ``results/<name>``), then write its tables and report."""
    ls = spec if isinstance(spec, LoadedDomainSpec) else load_domain_spec(spec)
    points = expand(ls)  # everything is checked before the store is touched
    root = Path(out) if out is not None else Path("results") / ls.spec.name
    info = {
        "name": ls.spec.name,
        "description": ls.spec.description,
        "domain": ls.spec.domain,
        "source": ls.source,
        "metrics": ls.metrics,
        "kind": "points",
        "schedlab_version": __version__,
    }
    result = sweep(points, root, info, ls.text, jobs=jobs, backend=backend, address=address, progress=progress)
    write_domain_report(ls, points, root)
    return result


def domain_rows(ls: LoadedDomainSpec, points: list[Point], root: Path) -> Any:
    """One row per finished point (labels, settings, seed, every metric; grids with ``perf_gap``), in the spec's order."""
    import pandas as pd

    store = Store(root)
    rows = []
    for p in points:
        if (store.run_dir(p.id) / "summary.json").is_file():
            rows.append({"run_id": p.id, **p.label, **null_to_nan(store.summary(p.id))})
    df = pd.DataFrame(rows)
    if ls.spec.domain == "grid" and not df.empty:
        from schedlab.grid.experiments import with_gaps

        df = with_gaps(df)
    return df


def load_domain(root: str | os.PathLike) -> tuple[LoadedDomainSpec, list[Point]]:
    """The spec a domain sweep kept in its results folder, and its points."""
    spec_file = Path(root) / "spec.yaml"
    if not spec_file.is_file():
        raise InputError(str(root), "not the results folder of a domain spec (no spec.yaml; run `schedlab sweep SPEC --out DIR` first)")
    ls = load_domain_spec(spec_file)
    return ls, expand(ls)


def is_domain_results(root: str | os.PathLike) -> bool:
    """Is ``root`` the results folder of a domain spec (its experiment.json names a domain)?"""
    try:
        return "domain" in Store(root).experiment()
    except InputError:
        return False


def write_domain_report(ls: LoadedDomainSpec, points: list[Point], root: Path, out: Path | None = None) -> Path:
    """``results.csv``, ``summary.csv``, ``report.md`` and one plot per metric (one varied setting) from the finished
    points in the store ``root``, into ``out`` (default ``root``); returns the path of ``report.md``."""
    df = domain_rows(ls, points, root)
    root = Path(out) if out is not None else root
    write_table(root / "results.csv", df, "csv")
    keys = ["scheduler", *ls.spec.vary]
    metrics = [m for m in ls.metrics if m in df.columns]
    table = df.groupby(keys, sort=False)[metrics].mean().reset_index() if metrics else df
    write_table(root / "summary.csv", table, "csv")
    seeds = ", ".join(map(str, ls.spec.seeds))  # type: ignore[arg-type]
    lines = [f"# {ls.spec.name}", ""]
    if ls.spec.description.strip():
        lines += [ls.spec.description.strip(), ""]
    lines += [f"Domain {ls.spec.domain}; {len(df)} of {len(points)} runs finished; seeds {seeds} (means over seeds).", ""]
    for m in metrics:
        lines += [f"## {m}", ""]
        if len(ls.spec.vary) == 1:
            x = next(iter(ls.spec.vary))
            lines += [f"![{m}]({_plot(table, x, m, root)})", ""]
        piv = table.pivot_table(index="scheduler", columns=list(ls.spec.vary) or None, values=m, sort=False) if ls.spec.vary else table.set_index("scheduler")[[m]]
        cols = [" ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in piv.columns]
        lines += ["| scheduler | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
        for label, row in piv.iterrows():
            lines.append(f"| {label} | " + " | ".join(f"{v:.4g}" for v in row.values) + " |")
        lines.append("")
    text = "\n".join(lines) + "\n"
    path = root / "report.md"
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    return path


def _plot(table: Any, x: str, metric: str, root: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, g in table.groupby("scheduler", sort=False):
        ax.plot([str(v) for v in g[x]], g[metric], marker="o", label=str(label))
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.legend(fontsize="small")
    fig.tight_layout()
    name = f"{metric.replace('/', '_').replace('<', 'lt').replace('>=', 'ge')}.png"
    atomic_write(root / name, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)
    return name
