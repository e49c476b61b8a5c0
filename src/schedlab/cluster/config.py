"""Loader for the papers' data-center configs (``*_config_*.json``): exact machine constraints.

Two layouts, both from the authors' simulators (docs/authors-simulators.md#config-files):

* **Megha** — ``{"LMs": {"1": {"partitions": {"1": [21 bit strings], …}}, …}}``:
  LM ``i``'s partition ``j`` is GM ``j``'s internal partition there. Each bit
  string is ``"0b…"`` with one bit per worker of the partition, left to right,
  and there is one string per constraint (21).
* **Pigeon** — ``{"num_distributors", "num_masters", "FQW", "cutoff", "reserve",
  "workers": {"1": [21 bit strings], …}}``: one entry per master's group.

Global worker ids follow the file order: LM1-P1, LM1-P2, …, LM5-P5 for Megha and
group 1, 2, … for Pigeon — so the two reference files describe the same 10,000
workers in the same order. The bundled copies are available as ``reference``
(Megha layout) and ``reference-pigeon``.

Every structural problem is an :class:`~schedlab.errors.InputError` naming the
file and the JSON path of the offending field.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

from schedlab.cluster.bitsets import NUM_CONSTRAINTS
from schedlab.cluster.model import Cluster, Topology
from schedlab.datafiles import REFERENCE_CONFIGS, data_path
from schedlab.errors import InputError

BUNDLED_CONFIGS = {"reference": REFERENCE_CONFIGS["megha"], "reference-pigeon": REFERENCE_CONFIGS["pigeon"]}


def resolve_config_path(spec: str | os.PathLike[str]) -> Path:
    """A path, or one of the bundled names ``reference`` / ``reference-pigeon``."""
    if isinstance(spec, str) and spec in BUNDLED_CONFIGS:
        return data_path(BUNDLED_CONFIGS[spec])
    p = Path(spec)
    if not p.exists():
        raise InputError(str(spec), f"config file not found (bundled names: {', '.join(BUNDLED_CONFIGS)})")
    return p


def _read_json(path: Path) -> Any:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as f:
                text = f.read()
        else:
            text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise InputError(str(path), f"cannot read config: {e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}", f"invalid JSON: {e.msg} (column {e.colno})") from None


def _parse_vectors(vectors: Any, where: str) -> list[int]:
    """21 bit strings → per-worker machine masks (bit i of the string, left to right = worker i)."""
    if not isinstance(vectors, list) or len(vectors) != NUM_CONSTRAINTS:
        got = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
        raise InputError(where, f"expected a list of {NUM_CONSTRAINTS} constraint bit strings, got {got}")
    size = None
    masks: list[int] = []
    for c, s in enumerate(vectors):
        if not isinstance(s, str) or not s.startswith("0b") or len(s) < 3 or not set(s[2:]) <= {"0", "1"}:
            raise InputError(f"{where}[{c}]", "not a bit string of the form '0b0101…'")
        bits = s[2:]
        if size is None:
            size = len(bits)
            masks = [0] * size
        elif len(bits) != size:
            raise InputError(f"{where}[{c}]", f"has {len(bits)} bits but constraint 0 has {size}")
        cbit = 1 << c
        for i, ch in enumerate(bits):
            if ch == "1":
                masks[i] |= cbit
    return masks


def _numbered(obj: Any, where: str) -> list[Any]:
    """A JSON object keyed "1".."k" → its values in numeric order."""
    if not isinstance(obj, dict) or not obj:
        raise InputError(where, "expected a non-empty object keyed \"1\", \"2\", …")
    try:
        keys = sorted(obj, key=int)
    except ValueError:
        raise InputError(where, f"keys must be integers, got {sorted(obj)[:3]}") from None
    if [int(k) for k in keys] != list(range(1, len(keys) + 1)):
        raise InputError(where, f"keys must be 1..{len(keys)}, got {keys[:5]}…")
    return [obj[k] for k in keys]


def load_config(spec: str | os.PathLike[str]) -> Cluster:
    """Load a Megha or Pigeon config into a slot-mode :class:`Cluster` with its topology."""
    path = resolve_config_path(spec)
    data = _read_json(path)
    name = str(spec) if isinstance(spec, str) and spec in BUNDLED_CONFIGS else str(path)
    if not isinstance(data, dict):
        raise InputError(name, "config must be a JSON object")
    if "LMs" in data:
        return _load_megha(data, name)
    if "workers" in data:
        return _load_pigeon(data, name)
    raise InputError(name, "unknown config layout: expected a top-level 'LMs' (Megha) or 'workers' (Pigeon) field")


def _load_megha(data: dict, name: str) -> Cluster:
    lms = _numbered(data["LMs"], f"{name}: LMs")
    masks: list[int] = []
    partitions: list[tuple[tuple[int, ...], ...]] = []
    num_parts = None
    for i, lm in enumerate(lms, start=1):
        where = f"{name}: LMs.{i}"
        if not isinstance(lm, dict) or "partitions" not in lm:
            raise InputError(where, "missing field 'partitions'")
        parts = _numbered(lm["partitions"], f"{where}.partitions")
        if num_parts is None:
            num_parts = len(parts)
        elif len(parts) != num_parts:
            raise InputError(f"{where}.partitions", f"has {len(parts)} partitions but LM 1 has {num_parts} (one per GM)")
        lm_parts = []
        for j, vectors in enumerate(parts, start=1):
            pm = _parse_vectors(vectors, f"{where}.partitions.{j}")
            lm_parts.append(tuple(range(len(masks), len(masks) + len(pm))))
            masks.extend(pm)
        partitions.append(tuple(lm_parts))
    topo = Topology(tuple(partitions))
    return Cluster(masks, None, ("slots",), topo, source=name, extra={"layout": "megha", "lms": len(lms), "gms": num_parts})


def _load_pigeon(data: dict, name: str) -> Cluster:
    groups = _numbered(data["workers"], f"{name}: workers")
    masks: list[int] = []
    parts = []
    for k, vectors in enumerate(groups, start=1):
        gm = _parse_vectors(vectors, f"{name}: workers.{k}")
        parts.append((tuple(range(len(masks), len(masks) + len(gm))),))
        masks.extend(gm)
    extra: dict[str, Any] = {"layout": "pigeon", "masters": len(groups)}
    for key, typ in (("num_distributors", int), ("num_masters", int), ("num_workers", int), ("FQW", int), ("cutoff", (int, float)), ("reserve", (int, float))):
        if key in data:
            v = data[key]
            if isinstance(v, bool) or not isinstance(v, typ) or v < 0:
                raise InputError(f"{name}: {key}", f"must be a non-negative number, got {v!r}")
            extra[key] = v
    if "num_masters" in extra and extra["num_masters"] != len(groups):
        raise InputError(f"{name}: num_masters", f"is {extra['num_masters']} but 'workers' has {len(groups)} groups")
    if "num_workers" in extra and extra["num_workers"] != len(masks):
        raise InputError(f"{name}: num_workers", f"is {extra['num_workers']} but the groups hold {len(masks)} workers")
    return Cluster(masks, None, ("slots",), Topology(tuple(parts)), source=name, extra=extra)
