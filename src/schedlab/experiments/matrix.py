"""The run matrix: a validated spec → the list of concrete runs, each identified by a hash of its resolved config.

A run's **resolved config** holds everything that decides its results, with
every default filled in: the scheduler and its validated parameters (all of
them, defaults included, from the scheduler's pydantic model), the workload
(bundled trace name, or a trace file's name and SHA-256, or the generator
settings; the job limit; duration conventions; constraint settings), the data
center (size or config, resource mode, capacity, machine model), the network
and the seed. Its id is the first 16 hex digits of the SHA-256 of that config
as canonical JSON, so a changed setting — or a changed trace file — is a new
run, while renaming a label or moving the spec folder is not.

Labels (scheduler variant, workload and data-center names) and file locations
are kept beside the config, not in it.

Order of the runs: workloads, then data centers, then scheduler variants (spec
order, grid values in order), then seeds.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.cluster.config import BUNDLED_CONFIGS
from schedlab.datafiles import BUNDLED_TRACES, DEFAULT_WORKERS, PAPER_WORKERS
from schedlab.defaults import DEFAULT_CAPACITY
from schedlab.engine import run as simulate_run
from schedlab.errors import InputError
from schedlab.experiments.spec import DataCenterSpec, ExcludeField, LoadedSpec, WorkloadSpec
from schedlab.run_config import RunConfig
from schedlab.schedulers import registry
from schedlab.sim.rng import RngStreams
from schedlab.sweeps.points import RunOutput, canonical_id
from schedlab.workload.synthetic import generate_jobs
from schedlab.workload.trace import TraceConventions, TraceJob, read_trace


@dataclass
class Run:
    """One simulation of the grid: ``config`` decides the results and ``id`` is its hash."""

    id: str
    config: dict[str, Any]
    scheduler: str  # the variant's label
    workload: str
    data_center: str
    seed: int
    trace_path: str | None = None  # where a trace file is read from (not part of the config)
    config_path: str | None = None  # where a data-center config file is read from
    tables: tuple[str, ...] = ("tasks", "jobs", "utilization")

    def describe(self) -> str:
        return f"{self.scheduler} on {self.workload} ({self.data_center}), seed {self.seed}"

    def labels(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scheduler": self.scheduler,
            "scheduler_name": self.config["scheduler"],
            "workload": self.workload,
            "data_center": self.data_center,
            "workers": self.config["data_center"]["workers"],
            "seed": self.seed,
        }

    def paths(self) -> dict[str, str | None]:
        """Where the trace and data-center config files are read from (not part of the config)."""
        return {"trace": self.trace_path, "config": self.config_path}

    def execute(self) -> RunOutput:
        """Simulate the run (what every backend ships to its workers): the summary with ``run_id``, and the tables it keeps."""
        result = simulate_run(self.run_config(), self.jobs())
        tables = {"tasks": result.tasks, "jobs": result.jobs, "utilization": result.utilization, "inconsistencies": result.inconsistencies}
        return RunOutput({"run_id": self.id, **result.summary}, {t: tables[t] for t in self.tables})

    def jobs(self) -> Iterator[TraceJob]:
        """The run's workload as a stream of jobs."""
        return workload_jobs(self.config["workload"], self.trace_path)

    def run_config(self) -> RunConfig:
        """What to simulate: the resolved config as a :class:`RunConfig` (its workload comes from :meth:`jobs`)."""
        c = self.config
        wl, dc, net = c["workload"], c["data_center"], c["network"]
        settings = {
            "scheduler": c["scheduler"],
            "trace": self.workload,
            "workers": dc["workers"] if dc["config"] is None else None,
            "seed": self.seed,
            "config": self.config_path or dc["config"],
            "params": c["params"],
            "constraints": wl["constraints"],
            "resource_mode": dc["resource_mode"],
            "latency": net["latency"],
            "processing_costs": net["processing_costs"],
            "exact_durations": wl["exact_durations"],
        }
        # a setting the run leaves out (None) takes RunConfig's default
        optional = {
            "constraint_seed": wl["constraint_seed"],
            "machine_model": dc["machine_model"],
            "capacity": tuple(dc["capacity"]) if dc["capacity"] else None,
            "requests": wl["requests"],
        }
        return RunConfig.build(**settings, **{k: v for k, v in optional.items() if v is not None})


def config_id(config: dict[str, Any]) -> str:
    """The run id: a hash of the resolved config as canonical JSON."""
    return canonical_id(config)


def workload_jobs(wl: dict[str, Any], trace_path: str | None = None) -> Iterator[TraceJob]:
    """Jobs of a resolved workload config: read from its trace, or generated from its own seed."""

    if wl.get("generate") is not None:

        g = wl["generate"]
        rng = RngStreams(g["seed"]).np_rng("workload")  # the stream `schedlab trace generate` uses
        jobs: Iterator[TraceJob] = generate_jobs(g["jobs"], g["arrivals"], g["tasks_per_job"], g["duration"], rng, g["start"],
                                                    g.get("job_duration_spread"))
    else:
        conv = TraceConventions.exact() if wl["exact_durations"] else TraceConventions()
        jobs = read_trace(trace_path or wl["trace"], conv)
    if wl.get("max_jobs"):
        jobs = itertools.islice(jobs, wl["max_jobs"])
    return jobs


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file(base: Path, name: str) -> Path:
    p = Path(name).expanduser()
    return p if p.is_absolute() else base / p


# -- workloads and data centers --------------------------------------------------------------------
def _workloads(ls: LoadedSpec) -> list[tuple[str, dict[str, Any], str | None]]:
    out: list[tuple[str, dict[str, Any], str | None]] = []
    names: set[str] = set()
    for i, w in enumerate(ls.spec.workloads):
        cfg = _workload_config(ls, i, w)
        path = cfg.pop("_path", None)
        name = w.name or _default_workload_name(w, i)
        if name in names:
            raise ls.error(("workloads", i, "name" if w.name else "trace"), f"two workloads are called {name!r}: give each a distinct 'name'")
        names.add(name)
        out.append((name, cfg, path))
    return out


def _default_workload_name(w: WorkloadSpec, i: int) -> str:
    if w.trace is None:
        base = f"generated{i + 1}"
    elif w.trace in BUNDLED_TRACES:
        base = w.trace
    else:
        base = Path(w.trace).name.removesuffix(".gz").removesuffix(".tr")
    return f"{base}_first{w.max_jobs}" if w.max_jobs else base


def _workload_config(ls: LoadedSpec, i: int, w: WorkloadSpec) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "max_jobs": w.max_jobs,
        "exact_durations": w.exact_durations,
        "constraints": w.constraints,
        "constraint_seed": w.constraint_seed if w.constraints else None,
        "requests": w.requests,
    }
    if w.generate is not None:
        # left out when unset, so that runs resolved before the option existed keep their ids
        cfg["generate"] = w.generate.model_dump(exclude_none=True)
        return cfg
    assert w.trace is not None
    if w.trace in BUNDLED_TRACES:
        cfg["trace"] = w.trace
        return cfg
    p = _file(ls.base_dir, w.trace)
    if not p.is_file():
        raise ls.error(("workloads", i, "trace"), f"no such trace file {str(p)!r} (bundled traces: {', '.join(BUNDLED_TRACES)})")
    cfg["trace"] = None
    cfg["trace_file"] = {"name": p.name, "sha256": _sha256(p)}
    cfg["_path"] = str(p.resolve())
    return cfg


def _data_centers(ls: LoadedSpec) -> list[tuple[str, dict[str, Any], dict[str, tuple[Any, str | None]]]]:
    """(name, config without the file, {scheduler name or '*': file config ref}) per data center."""
    out: list[tuple[str, dict[str, Any], dict[str, tuple[Any, str | None]]]] = []
    names: set[str] = set()
    for j, d in enumerate(ls.spec.data_centers):
        cfg: dict[str, Any] = {
            "workers": d.workers,
            "config": None,
            "resource_mode": d.resource_mode,
            "capacity": list(d.capacity) if d.capacity else (list(DEFAULT_CAPACITY) if d.resource_mode == "multi" else None),
            "machine_model": d.machine_model if d.config is None else None,
        }
        configs: dict[str, tuple[Any, str | None]] = {}
        if isinstance(d.config, dict):
            for sched, c in d.config.items():
                configs[sched] = _config_file(ls, ("data_centers", j, "config", sched), c)
        elif d.config is not None:
            configs["*"] = _config_file(ls, ("data_centers", j, "config"), d.config)
        name = d.name or _default_dc_name(d)
        if name in names:
            raise ls.error(("data_centers", j), f"two data centers are called {name!r}: give each a distinct 'name'")
        names.add(name)
        out.append((name, cfg, configs))
    return out


def _config_file(ls: LoadedSpec, loc: tuple[Any, ...], name: str) -> tuple[Any, str | None]:
    """(what the run config records, the file to read) for a config name or path."""

    if name in BUNDLED_CONFIGS:
        return name, None
    p = _file(ls.base_dir, name)
    if not p.is_file():
        raise ls.error(loc, f"no such config file {str(p)!r} (bundled: {', '.join(BUNDLED_CONFIGS)})")
    return {"name": p.name, "sha256": _sha256(p)}, str(p.resolve())


def _default_dc_name(d: DataCenterSpec) -> str:
    if d.config is not None:
        first = d.config if isinstance(d.config, str) else next(iter(d.config.values()))
        base = Path(first).name.removesuffix(".gz").removesuffix(".json")
    elif d.workers == "paper":
        base = "paper"
    else:
        base = f"{d.workers}w"
    return f"{base}_multi" if d.resource_mode == "multi" else base


# -- schedulers ------------------------------------------------------------------------------------
@dataclass
class Variant:
    label: str
    name: str
    params: dict[str, Any]  # validated, every default filled in
    index: int  # position in spec.schedulers


def scheduler_variants(ls: LoadedSpec) -> list[Variant]:
    """Every scheduler × grid point, validated against the scheduler's own parameter model."""

    out: list[Variant] = []
    seen: dict[str, int] = {}
    for i, s in enumerate(ls.spec.schedulers):
        try:
            cls = registry.get(s.name)
        except InputError as e:
            raise ls.error(("schedulers", i, "name"), e.problem) from None
        keys = list(s.grid)
        for combo in itertools.product(*(s.grid[k] for k in keys)):
            point = dict(zip(keys, combo, strict=True))
            params = {**s.params, **point}
            try:
                model = registry.parse_params(cls, params)
            except InputError as e:
                # registry.parse_params says "param <field>" ("param params" for a whole-model check)
                key = (e.where or "").removeprefix("param ").split(".")[0]
                problem = e.problem
                if key in point:
                    loc: tuple[Any, ...] = ("schedulers", i, "grid", key, s.grid[key].index(point[key]))
                elif key in s.params:
                    loc = ("schedulers", i, "params", key)
                else:
                    loc = ("schedulers", i, "params")
                    if key and key != "params":
                        problem = f"{key}: {problem}"
                raise ls.error(loc, problem) from None
            if s.label is not None:
                try:
                    label = s.label.format(**params)
                except (KeyError, IndexError, ValueError) as e:
                    raise ls.error(("schedulers", i, "label"), f"cannot fill placeholder {e} from this variant's parameters") from None
            else:
                label = "_".join([s.name, *(str(v) for v in combo)])
            if label in seen:
                raise ls.error(
                    ("schedulers", i, "label"),
                    f"two variants are labelled {label!r}: give a 'label' (placeholders such as {{worker_choice}} are filled per grid point)",
                )
            seen[label] = i
            out.append(Variant(label, s.name, model.dump(mode="json"), i))
    return out


def _matches(rule: dict[ExcludeField, str | int], run: Run) -> bool:
    fields = {"workload": run.workload, "data_center": run.data_center, "scheduler": run.scheduler, "seed": run.seed}
    return all(fields[k] == v or str(fields[k]) == str(v) for k, v in rule.items())


def expand(ls: LoadedSpec) -> list[Run]:
    """The runs of a spec, in a fixed order; raises InputError for anything that cannot run."""
    spec = ls.spec
    workloads = _workloads(ls)
    dcs = _data_centers(ls)
    variants = scheduler_variants(ls)
    if spec.baseline is not None and spec.baseline not in {v.label for v in variants}:
        raise ls.error(("baseline",), f"no scheduler variant is labelled {spec.baseline!r} (labels: {', '.join(v.label for v in variants)})")
    network = spec.network.model_dump()
    runs: list[Run] = []
    used = [False] * len(spec.exclude)
    for wname, wcfg, tpath in workloads:
        for j, (dname, dcfg, configs) in enumerate(dcs):
            for v in variants:
                dc = dict(dcfg)
                if dc["workers"] == "paper":
                    dc["workers"] = PAPER_WORKERS.get(wcfg.get("trace") or "", DEFAULT_WORKERS)
                cpath = None
                if configs:
                    if "*" not in configs and v.name not in configs:
                        raise ls.error(("data_centers", j, "config"), f"no config for scheduler {v.name!r}")
                    dc["config"], cpath = configs.get(v.name) or configs["*"]
                    dc["workers"] = None
                for seed in spec.seed_list:
                    config = {
                        "scheduler": v.name,
                        "params": v.params,
                        "workload": wcfg,
                        "data_center": dc,
                        "network": network,
                        "seed": seed,
                    }
                    run = Run(config_id(config), config, v.label, wname, dname, seed, tpath, cpath, tuple(spec.tables))
                    hit = [k for k, rule in enumerate(spec.exclude) if _matches(rule, run)]
                    for k in hit:
                        used[k] = True
                    if not hit:
                        runs.append(run)
    for k, u in enumerate(used):
        if not u:
            raise ls.error(("exclude", k), "matches no run (check the workload, data_center and scheduler names)")
    ids: dict[str, Run] = {}
    for r in runs:
        if r.id in ids:
            o = ids[r.id]
            raise InputError(ls.source, f"{r.describe()} and {o.describe()} are the same run (identical settings)")
        ids[r.id] = r
    if not runs:
        raise InputError(ls.source, "every run is excluded")
    return runs
