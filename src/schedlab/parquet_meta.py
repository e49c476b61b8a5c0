"""Parquet files that describe themselves: a versioned JSON document in the file's key-value metadata.

schedlab's columnar traces (``schedlab.trace``) and machines files
(``schedlab.machines``) both carry one, stating at least a ``version`` and the
``resources`` whose per-resource columns (``request_<R>``, ``capacity_<R>``)
the file must have. :func:`open_described` opens such a file and checks all of
that, each problem one :class:`~schedlab.errors.InputError` naming the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from schedlab.errors import InputError


def open_parquet(path: str | os.PathLike, name: str) -> Any:
    """A ``pyarrow.parquet.ParquetFile``, or one clear error."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError) as e:
        raise InputError(name, f"not a readable Parquet file: {e}") from None


def check_described(f: Any, name: str, *, key: bytes, kind: str, version: int, writer: str, columns: Sequence[str], per_resource: str) -> dict[str, Any]:
    """The file's ``key`` metadata, checked: JSON, ``version``, a ``resources`` list, and the ``columns`` plus
    ``per_resource + R`` for each resource present. ``kind`` names the file in messages, ``writer`` the command
    that writes one."""
    raw = (f.metadata.metadata or {}).get(key)
    if raw is None:
        raise InputError(name, f"a Parquet file without schedlab {kind} metadata (write one with `{writer}`)")
    try:
        meta = json.loads(raw)
    except ValueError:
        raise InputError(name, f"the schedlab {kind} metadata is not JSON") from None
    if not isinstance(meta, dict) or meta.get("version") != version:
        got = meta.get("version") if isinstance(meta, dict) else meta
        raise InputError(name, f"{kind} format version {got!r}; this schedlab reads version {version}")
    resources = meta.get("resources")
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        raise InputError(name, f"the {kind} metadata's 'resources' must be a list of names")
    names = set(f.schema_arrow.names)
    missing = [c for c in [*columns, *(per_resource + r for r in resources)] if c not in names]
    if missing:
        raise InputError(name, f"missing column(s) {', '.join(missing)}")
    return meta
