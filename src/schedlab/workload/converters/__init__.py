"""Converters from the public production traces' raw tables to schedlab's columnar trace.

Each format lives in its own module and yields :class:`~schedlab.workload.trace.TraceJob`
records in arrival order, which :mod:`schedlab.workload.convert` writes. The
raw traces come as folders of shards, one folder per table (Google's
``task_events/part-00000-of-00500.csv.gz``, …): an input is the trace's root
folder, a table's folder, or shard files inside a folder named after their
table. :func:`gather_tables` sorts the inputs into tables.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from schedlab.errors import InputError

# format -> (tables it reads, tables it needs)
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "google2011": (("task_events", "task_constraints"), ("task_events",)),
}


def gather_tables(fmt: str, inputs: Sequence[str | os.PathLike]) -> dict[str, list[Path]]:
    """The shards of each table ``fmt`` reads, from root folders, table folders or shard files (sorted by name)."""
    tables, needed = TABLES[fmt]
    found: dict[str, list[Path]] = {t: [] for t in tables}
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            if p.name in found:
                found[p.name].extend(_shards(p))
                continue
            subs = [p / t for t in tables if (p / t).is_dir()]
            if not subs:
                raise InputError(str(p), f"no {fmt} table folders ({', '.join(tables)}) in this folder")
            for sub in subs:
                found[sub.name].extend(_shards(sub))
        elif p.is_file():
            if p.parent.name not in found:
                raise InputError(str(p), f"cannot tell which {fmt} table this is: put it in a folder named after its table ({', '.join(tables)})")
            found[p.parent.name].append(p)
        else:
            raise InputError(str(p), "no such file or folder")
    for t in needed:
        if not found[t]:
            raise InputError(t, f"no {t} shards among the inputs")
    return {t: sorted(set(ps), key=lambda q: (str(q.parent), q.name)) for t, ps in found.items()}


def _shards(folder: Path) -> list[Path]:
    return [q for q in folder.iterdir() if q.is_file() and (q.name.endswith(".csv") or q.name.endswith(".csv.gz"))]
