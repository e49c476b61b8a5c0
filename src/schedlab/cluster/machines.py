"""A data center read from a production trace: machines with their capacities and attributes, and the
trace's own placement constraints matched against them as constraint bits.

The papers' data centers carry Sharma et al.'s 21 synthetic machine
constraints; a production trace instead states machine *attributes*
(Google 2011's ``machine_attributes``: name → value per machine) and task
*constraints* over them (attribute, operator, value). Here both meet the
simulator's bitset matching unchanged: every distinct constraint of the trace
becomes one constraint bit (:class:`ConstraintCatalog`, sorted so the bit
numbering depends only on the set of constraints), a machine's mask has bit
``c`` set when it satisfies constraint ``c``, and a task's mask is the OR of
its constraints' bits. A task can run on a worker exactly when the task's
mask is a subset of the worker's, which is what every scheduler already tests.
The count of constraint bits is the trace's, not 21.

Satisfaction (:func:`satisfied`; the Google 2011 schema's semantics, where
a machine without an attribute is read as having it with an empty value):

* ``=`` / ``!=``: the machine's value is / is not the constraint's, compared
  as strings (a machine without the attribute satisfies every ``!=``);
* ``<``, ``>``, ``<=``, ``>=``: both values read as numbers; a machine without
  the attribute, or a value that is not a number, does not satisfy it;
* ``present`` / ``absent``: the machine has / has not the attribute.

The machines file (written by ``schedlab trace machines``) is Parquet, one row
per machine: ``machine`` (the trace's ID), ``capacity_<R>`` per resource (its
units in the metadata; null when the trace does not say), and ``attributes``
as a list of (name, value). File metadata ``schedlab.machines`` holds the
version, resources, units, source and the trace time of the snapshot.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.parquet_meta import check_described, open_parquet

MACHINES_VERSION = 1
META_KEY = b"schedlab.machines"
OPERATORS = ("=", "!=", "<", ">", "<=", ">=", "present", "absent")
Predicate = tuple[str, str, str]  # (attribute, operator, value); value "" for present/absent


@dataclass
class Machines:
    """Machines of a trace at one instant: IDs, capacities (NaN = not stated) and attributes."""

    ids: np.ndarray
    resources: tuple[str, ...]
    capacity: np.ndarray  # (n, len(resources)) float64
    attributes: list[dict[str, str]]
    units: dict[str, str] | None = None
    source: str = ""
    at: float | None = None  # trace seconds of the snapshot
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.ids)


# -- the machines file ---------------------------------------------------------------------------
def write_machines(path: str | os.PathLike, m: Machines) -> None:
    """Write ``m`` atomically (the file appears only whole)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from schedlab.atomic import atomic_write

    pair = pa.struct([("name", pa.string()), ("value", pa.string())])
    cols: dict[str, Any] = {"machine": pa.array(m.ids, pa.int64())}
    for k, r in enumerate(m.resources):
        v = m.capacity[:, k]
        cols[f"capacity_{r}"] = pa.array(np.nan_to_num(v), pa.float64(), mask=np.isnan(v))
    cols["attributes"] = pa.array([[{"name": k, "value": v} for k, v in sorted(a.items())] for a in m.attributes], pa.list_(pair))
    meta = {"version": MACHINES_VERSION, "resources": list(m.resources), "units": m.units, "source": m.source, "at": m.at, "machines": m.n, **m.extra}
    table = pa.table(cols).replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def read_machines(path: str | os.PathLike) -> Machines:
    """The machines file at ``path``, checked: every problem names the file (and row)."""
    name = str(path)
    f = open_parquet(path, name)
    need = ["machine", "attributes"]
    meta = check_described(f, name, key=META_KEY, kind="machines", version=MACHINES_VERSION, writer="schedlab trace machines", columns=need, per_resource="capacity_")
    resources = meta["resources"]
    need += [f"capacity_{r}" for r in resources]
    t = f.read(columns=need)
    if t.num_rows == 0:
        raise InputError(name, "no machines")
    ids_col = t.column("machine")
    if ids_col.null_count:
        raise InputError(f"{name}:row {ids_col.to_numpy(zero_copy_only=False).tolist().index(None) + 1}", "a machine without an ID")
    ids = ids_col.to_numpy()
    cap = np.column_stack([t.column(f"capacity_{r}").to_numpy(zero_copy_only=False).astype(float) for r in resources]) if resources else np.zeros((len(ids), 0))
    bad = ~np.isnan(cap) & ~(cap > 0)
    if bad.any():
        i, k = (int(x[0]) for x in np.nonzero(bad))
        raise InputError(f"{name}:row {i + 1}", f"capacity_{resources[k]} must be > 0, got {cap[i, k]:g}")
    attrs: list[dict[str, str]] = []
    for row, items in enumerate(t.column("attributes").to_pylist(), start=1):
        a: dict[str, str] = {}
        for it in items or ():
            if not it or not it.get("name") or it.get("value") is None:
                raise InputError(f"{name}:row {row}", "an attribute needs a name and a value")
            a[it["name"]] = it["value"]
        attrs.append(a)
    units = meta.get("units")
    at = meta.get("at")
    return Machines(ids, tuple(resources), cap, attrs, units if isinstance(units, dict) else None, str(meta.get("source", "")), at if isinstance(at, int | float) else None)


# -- constraints as bits -------------------------------------------------------------------------
def _number(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def satisfied(attributes: dict[str, str], predicate: Predicate) -> bool:
    """Whether a machine with ``attributes`` satisfies ``predicate`` (see the module docstring)."""
    name, op, value = predicate
    have = attributes.get(name)
    if op == "present":
        return have is not None
    if op == "absent":
        return have is None
    if op == "=":
        return (have if have is not None else "") == value
    if op == "!=":
        return (have if have is not None else "") != value
    if have is None:
        return False
    a, b = _number(have), _number(value)
    if a is None or b is None:
        return False
    if op == "<":
        return a < b
    if op == ">":
        return a > b
    if op == "<=":
        return a <= b
    if op == ">=":
        return a >= b
    raise InputError("constraint", f"operator {op!r} is not one of {', '.join(OPERATORS)}")


class ConstraintCatalog:
    """The distinct constraints of a trace, numbered: constraint ``c`` is bit ``c`` of every mask."""

    def __init__(self, predicates: Iterable[Predicate]) -> None:
        self.predicates: list[Predicate] = sorted(set(predicates))
        for p in self.predicates:
            if p[1] not in OPERATORS:
                raise InputError("constraint", f"operator {p[1]!r} is not one of {', '.join(OPERATORS)}")
        self.bit = {p: c for c, p in enumerate(self.predicates)}
        self._masks: dict[tuple[Predicate, ...], int] = {(): 0}

    def __len__(self) -> int:
        return len(self.predicates)

    def mask(self, constraints: Sequence[Predicate] | None) -> int:
        """A task's mask: the OR of its constraints' bits."""
        key = tuple(constraints) if constraints else ()
        m = self._masks.get(key)
        if m is None:
            m = 0
            for p in key:
                c = self.bit.get(p)
                if c is None:
                    raise InputError("constraints", f"constraint {' '.join(p).strip()!r} is not in the data center's catalog of the trace's constraints")
                m |= 1 << c
            self._masks[key] = m
        return m

    def machine_masks(self, attributes: Sequence[dict[str, str]]) -> list[int]:
        """Each machine's mask: bit ``c`` set when it satisfies constraint ``c``."""
        n = len(attributes)
        if not self.predicates:
            return [0] * n
        sat = np.zeros((n, len(self.predicates)), dtype=bool)
        by_attr: dict[str, list[int]] = {}
        for c, p in enumerate(self.predicates):
            by_attr.setdefault(p[0], []).append(c)
        for name, cs in by_attr.items():
            values = [a.get(name) for a in attributes]
            # one evaluation per distinct value of the attribute, not per machine
            distinct: dict[str | None, np.ndarray] = {}
            for v in values:
                if v not in distinct:
                    stand_in = {} if v is None else {name: v}
                    distinct[v] = np.array([satisfied(stand_in, self.predicates[c]) for c in cs])
            sat[:, cs] = np.stack([distinct[v] for v in values])
        packed = np.packbits(sat, axis=1, bitorder="little")
        return [int.from_bytes(row.tobytes(), "little") for row in packed]


def trace_constraints(path: str | os.PathLike) -> set[Predicate]:
    """Every distinct constraint of a columnar trace, read a row group at a time from its constraints column."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    if "constraints" not in f.schema_arrow.names:
        return set()
    out: set[Predicate] = set()
    for g in range(f.num_row_groups):
        col = f.read_row_group(g, columns=["constraints"]).column(0)
        flat = pc.list_flatten(col)
        if len(flat) == 0:
            continue
        parts = [flat.combine_chunks().field(k) if hasattr(flat, "combine_chunks") else flat.field(k) for k in ("attribute", "operator", "value")]
        attr, op, val = (p.to_pylist() for p in parts)
        out.update(zip(attr, op, ("" if v is None else v for v in val), strict=True))
    return out


def cluster_from_machines(m: Machines, catalog: ConstraintCatalog | None, resource_mode: str, *, source: str, workers: int | None = None) -> Any:
    """The :class:`~schedlab.cluster.model.Cluster` of machines ``m``: constraint masks from ``catalog`` (none:
    no machine constraints), capacities from the file in multi-resource mode (machines without one left out,
    counted in ``extra``), one slot per machine in slot mode."""
    from schedlab.cluster.model import Cluster

    masks = catalog.machine_masks(m.attributes) if catalog is not None else [0] * m.n
    extra: dict[str, Any] = {"machines_file": source, "constraint_bits": len(catalog) if catalog is not None else 0}
    if resource_mode == "slots":
        cl = Cluster(masks, None, ("slots",), None, f"machines:{source}", extra)
    else:
        if not m.resources:
            raise InputError(source, "the machines file states no capacities: a multi-resource run needs them")
        known = ~np.isnan(m.capacity).any(axis=1)
        extra["machines_without_capacity"] = int((~known).sum())
        if not known.any():
            raise InputError(source, "no machine states its capacity: a multi-resource run needs them")
        keep = np.flatnonzero(known).tolist()
        cl = Cluster([masks[i] for i in keep], m.capacity[known], m.resources, None, f"machines:{source}", extra)
    if workers is not None and workers != cl.n:
        raise InputError("--workers", f"{workers} workers requested but the machines file {source} gives {cl.n}")
    return cl
