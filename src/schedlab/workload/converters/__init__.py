"""Converters from the public production traces' raw tables to schedlab's columnar trace.

Each raw format lives in its own module, registered in :data:`FORMATS` with
the tables it reads, and exposes ``convert(job: RawJob) -> RawTrace``: Arrow
tables in the columnar trace's schema, in arrival order, which
:mod:`schedlab.workload.convert` writes. The raw traces come as shards, one
folder per table (Google 2011's ``task_events/part-00000-of-00500.csv.gz``) or
files named after their table (Google 2019's
``instance_events-000000000000.json.gz``, Alibaba's ``batch_task.csv``): an
input is the trace's root folder, a table's folder, or shard files.
:func:`gather_tables` sorts the inputs into tables.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.workload.converters.common import Drops
from schedlab.workload.trace import TraceJob

CSV = (".csv", ".csv.gz")
JSON = (".json", ".json.gz", ".jsonl", ".jsonl.gz")
TSV = (".tsv", ".tsv.gz", ".txt", ".txt.gz")


@dataclass(frozen=True)
class RawFormat:
    """A raw trace format: its module, the tables it reads (and needs), its shards' suffixes, its options."""

    name: str
    module: str
    tables: tuple[str, ...]
    needed: tuple[str, ...]
    suffixes: tuple[str, ...] = CSV
    options: Mapping[str, float] = field(default_factory=dict)  # format-specific options -> defaults
    describe: str = ""
    machines: str | None = None  # "module:function" reading its machine tables' rows, if it has machine tables
    machine_tables: tuple[str, ...] = ()  # the tables that function needs
    single_file: bool = False  # the trace is one file of any name (its one table), not shards named after tables
    restartable: bool = False  # its converter keeps checkpoints in a work folder (RawJob.work_dir)


FORMATS: dict[str, RawFormat] = {
    f.name: f
    for f in (
        RawFormat("google2011", "schedlab.workload.converters.google2011",
                  ("task_events", "task_constraints", "machine_events", "machine_attributes"), ("task_events",),
                  describe="Google clusterdata-2011-2 (task_events, task_constraints; machine_events, machine_attributes CSV shards)",
                  machines="schedlab.workload.converters.machines:rows_google2011", machine_tables=("machine_events",), restartable=True),
        RawFormat("swim", "schedlab.workload.converters.swim", ("workload",), ("workload",), TSV, single_file=True,
                  options={"block_mb": 128.0, "reduce_mb": 1024.0, "map_mb_per_s": 10.0, "reduce_mb_per_s": 10.0, "task_overhead_s": 1.0},
                  describe="SWIM MapReduce workload (Facebook/Cloudera; one tab-separated file, one job per line)"),
        RawFormat("google2019", "schedlab.workload.converters.google2019",
                  ("collection_events", "instance_events", "machine_events", "machine_attributes"), ("collection_events", "instance_events"),
                  suffixes=JSON, describe="Google ClusterData 2019 (collection_events, instance_events; machine_events, machine_attributes "
                  "JSON-lines shards as BigQuery exports them)",
                  machines="schedlab.workload.converters.machines:rows_google2019", machine_tables=("machine_events",), restartable=True),
        RawFormat("alibaba2018", "schedlab.workload.converters.alibaba2018", ("batch_task", "batch_instance", "machine_meta"), ("batch_task", "batch_instance"),
                  options={"machine_cores": 96.0},
                  describe="Alibaba cluster-trace-v2018 batch workload (batch_task, batch_instance; machine_meta CSV shards)",
                  machines="schedlab.workload.converters.machines:rows_alibaba2018", machine_tables=("machine_meta",), restartable=True),
    )
}  # fmt: skip


@dataclass
class RawJob:
    """What a raw converter is given: the shards of each table, and where to count what it reads and drops."""

    tables: dict[str, list[Path]]
    skip_bad: bool = False
    scale_requests: bool = True  # normalised requests scaled to the default worker
    drops: Drops = field(default_factory=Drops)  # tasks left out, by reason
    bad_rows: Drops = field(default_factory=Drops)  # with skip_bad: rows skipped, by problem
    counts: dict[str, int] = field(default_factory=dict)  # anything else worth reporting
    progress: Callable[[int], None] | None = None  # told of every block of input rows read
    options: dict[str, float] = field(default_factory=dict)  # the format's options (defaults filled in)
    spill_dir: str | os.PathLike | None = None  # where to spill sorted runs (default: the system's temp folder)
    work_dir: str | os.PathLike | None = None  # keep spills and checkpoints here: a rerun resumes (see .checkpoint)
    checkpoint_every_s: float = 60.0  # at most one checkpoint this often (each writes the converter's whole state)


@dataclass
class RawTrace:
    """A converter's output: request columns with their units, and the tasks in arrival order, as Arrow
    tables in the columnar schema (large traces) or as jobs (small ones)."""

    resources: tuple[str, ...]
    request_units: dict[str, str] | None
    tables: Iterator[Any] | None = None
    jobs: Iterator[TraceJob] | None = None


def raw_format(name: str) -> RawFormat:
    return FORMATS[name]


def machine_rows(fmt: RawFormat) -> Callable[..., Any]:
    """The format's function reading its machine tables' rows (an error if it has none)."""
    if fmt.machines is None:
        with_machines = ", ".join(f.name for f in FORMATS.values() if f.machines) or "none"
        raise InputError("--format", f"the {fmt.name} format has no machine tables schedlab reads (formats with them: {with_machines})")
    module, _, func = fmt.machines.partition(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(module), func)
    return fn


def run_converter(fmt: RawFormat, job: RawJob) -> RawTrace:
    """The format's module's ``convert(job)``."""
    module = importlib.import_module(fmt.module)
    result: RawTrace = module.convert(job)
    return result


def format_options(fmt: RawFormat, given: Mapping[str, float]) -> dict[str, float]:
    """The format's options with ``given`` values over the defaults; an unknown name is an error naming it."""
    for k in given:
        if k not in fmt.options:
            known = ", ".join(sorted(fmt.options)) or "none"
            raise InputError(f"--format-option {k}", f"not an option of the {fmt.name} format (its options: {known})")
    return {**fmt.options, **given}


def gather_tables(fmt: str | RawFormat, inputs: Sequence[str | os.PathLike], needed: Sequence[str] | None = None) -> dict[str, list[Path]]:
    """The shards of each table the format reads, from root folders, table folders or shard files (sorted by name).

    A shard belongs to a table when it lies in a folder named after the table, or when its own name is the
    table's (``batch_task.csv``) or starts with it and a dash (``instance_events-000000000001.json.gz``).
    ``needed`` (default: the format's) are the tables that must have shards."""
    f = FORMATS[fmt] if isinstance(fmt, str) else fmt
    tables = f.tables
    if f.single_file:
        if len(inputs) != 1 or not Path(inputs[0]).is_file():
            raise InputError("INPUT", f"a {f.name} trace is one file, got {', '.join(map(str, inputs)) or 'none'}")
        return {tables[0]: [Path(inputs[0])]}
    found: dict[str, list[Path]] = {t: [] for t in tables}
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            if p.name in found:
                found[p.name].extend(_shards(p, f.suffixes))
                continue
            hits = 0
            for sub in (p / t for t in tables):
                if sub.is_dir():
                    found[sub.name].extend(_shards(sub, f.suffixes))
                    hits += 1
            for q in _shards(p, f.suffixes):
                t = _table_of(q.name, tables, f.suffixes)
                if t is not None:
                    found[t].append(q)
                    hits += 1
            if not hits:
                raise InputError(str(p), f"no {f.name} tables ({', '.join(tables)}) in this folder")
        elif p.is_file():
            t = p.parent.name if p.parent.name in found else _table_of(p.name, tables, f.suffixes)
            if t is None:
                raise InputError(
                    str(p), f"cannot tell which {f.name} table this is: name it after its table or put it in a folder named after it ({', '.join(tables)})"
                )
            found[t].append(p)
        else:
            raise InputError(str(p), "no such file or folder")
    for t in f.needed if needed is None else needed:
        if not found[t]:
            raise InputError(t, f"no {t} shards among the inputs")
    return {t: sorted(set(ps), key=lambda q: (str(q.parent), q.name)) for t, ps in found.items()}


def _strip(name: str, suffixes: Sequence[str]) -> str | None:
    for s in sorted(suffixes, key=len, reverse=True):
        if name.endswith(s):
            return name[: -len(s)]
    return None


def _table_of(name: str, tables: Sequence[str], suffixes: Sequence[str]) -> str | None:
    stem = _strip(name, suffixes)
    if stem is None:
        return None
    for t in tables:
        if stem == t or re.fullmatch(re.escape(t) + r"-[\w.-]+", stem):
            return t
    return None


def _shards(folder: Path, suffixes: Sequence[str]) -> list[Path]:
    return [q for q in folder.iterdir() if q.is_file() and _strip(q.name, suffixes) is not None]
