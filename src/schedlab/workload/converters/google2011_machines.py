"""Google cluster-usage trace 2011: the machines at one instant, from ``machine_events`` and ``machine_attributes``.

Schema (Reiss, Wilkes & Hellerstein, "Google cluster-usage traces: format +
schema"): machine_events rows are timestamp (µs), machine ID, event type
(0 ADD, 1 REMOVE, 2 UPDATE), platform ID, CPUs, memory (both normalised to
the largest machine, possibly empty); machine_attributes rows are timestamp,
machine ID, attribute name, attribute value, attribute deleted (0/1).

Interpretation (ours; the simulator's data center is static):

* The data center is the machines' state at one trace time ``at`` (default
  0: the machines the trace starts with, whose events carry timestamp 0):
  every event at or before it is applied in timestamp order (file order
  among equal timestamps) and nothing after it is.
* A machine is in the data center when its last event by then is ADD or
  UPDATE; its capacity is the last CPU and memory it stated (scaled like the
  tasks' requests: by default 64 cores and 16,384 MB for "1.0", the largest
  machine). A machine whose capacity is never stated is kept with an unknown
  capacity; a multi-resource run leaves it out, counted.
* Its attributes are the last value of each, unless that last row deletes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.cluster.machines import Machines
from schedlab.errors import InputError
from schedlab.workload.converters.common import Drops, read_csv_shards
from schedlab.workload.converters.google2011 import resources

MACHINE_EVENTS = [("timestamp", "int"), ("machine", "int"), ("event", "int"), ("platform", "str?"), ("cpus", "float?"), ("memory", "float?")]
MACHINE_ATTRIBUTES = [("timestamp", "int"), ("machine", "int"), ("name", "str"), ("value", "str?"), ("deleted", "int?")]
ADD, REMOVE, UPDATE = 0, 1, 2


def machines_google2011(
    tables: dict[str, list[Path]],
    *,
    at: float = 0.0,
    scale: tuple[float, float] | None,
    skip_bad: bool = False,
    bad_rows: Drops | None = None,
    counts: dict[str, int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Machines:
    """The machines at trace time ``at`` seconds (see the module docstring)."""
    import pandas as pd

    bad_rows = bad_rows if bad_rows is not None else Drops()
    counts = counts if counts is not None else {}
    limit = int(round(at * 1e6))
    ev = _rows(tables.get("machine_events", []), MACHINE_EVENTS, limit, skip_bad, bad_rows, progress, counts, "machine_events")
    bad = (ev["event"] < ADD) | (ev["event"] > UPDATE)
    if bad.any():
        if not skip_bad:
            first = ev[bad].iloc[0]
            raise InputError(f"{first['file']}:{first['line']}", f"unknown machine event type {int(first['event'])}")
        bad_rows.add("rows with an unknown machine event type", int(bad.sum()))
        ev = ev[~bad]
    if not len(ev):
        raise InputError("machine_events", f"no machine events at or before {at:g} s")
    ev = ev.sort_values("timestamp", kind="stable")
    last = ev.groupby("machine", sort=True).tail(1).set_index("machine").sort_index()
    alive = last.index[last["event"].to_numpy() != REMOVE].to_numpy()
    counts["machines_removed_by_then"] = int((last["event"] == REMOVE).sum())
    stated = ev[ev["event"] != REMOVE]
    cap = {}
    for col in ("cpus", "memory"):
        known = stated.dropna(subset=[col]).groupby("machine", sort=True)[col].last()
        cap[col] = known.reindex(alive).to_numpy(dtype=float)
    names, units = resources(scale)
    f = (1.0, 1.0) if scale is None else scale
    capacity = np.column_stack([cap["cpus"] * f[0], cap["memory"] * f[1]])
    counts["machines_without_capacity"] = int(np.isnan(capacity).any(axis=1).sum())

    at_rows = _rows(tables.get("machine_attributes", []), MACHINE_ATTRIBUTES, limit, skip_bad, bad_rows, progress, counts, "machine_attributes")
    attrs: list[dict[str, str]] = [{} for _ in alive]
    if len(at_rows):
        at_rows = at_rows.sort_values("timestamp", kind="stable")
        latest = at_rows.groupby(["machine", "name"], sort=False).tail(1)
        latest = latest[latest["deleted"].fillna(0).to_numpy() == 0]
        pos = pd.Index(alive).get_indexer(latest["machine"].to_numpy())
        keep = pos >= 0
        for i, name, value in zip(pos[keep].tolist(), latest["name"].to_numpy()[keep].tolist(), latest["value"].fillna("").to_numpy()[keep].tolist(), strict=True):
            attrs[i][name] = value
    return Machines(alive.astype(np.int64), names, capacity, attrs, units, source="google2011", at=at)


def _rows(
    paths: Sequence[Path], columns: list[tuple[str, str]], limit: int, skip_bad: bool, bad_rows: Drops,
    progress: Callable[[int], None] | None, counts: dict[str, int], table: str,
) -> Any:  # fmt: skip
    """The table's rows at or before ``limit`` µs (a DataFrame), with where each was read (``file`` and ``line``, for errors)."""
    import pandas as pd

    parts = []
    later = 0
    for b in read_csv_shards(paths, columns, skip_bad=skip_bad, bad_rows=bad_rows, progress=progress, as_arrays=True):
        t = b["timestamp"]
        now = t <= limit
        later += int((~now).sum())
        if now.any():
            idx = np.flatnonzero(now)
            df = pd.DataFrame({n: b[n][idx] for n, _k in columns})
            lines = np.asarray(b.lines)[idx] if b.lines is not None else b.line0 + idx
            df["file"] = pd.Categorical.from_codes(np.zeros(len(idx), np.int8), [str(b.path)])
            df["line"] = lines
            parts.append(df)
    counts[f"{table}_rows_after_the_snapshot"] = later
    if not parts:
        return pd.DataFrame({n: [] for n, _k in columns} | {"file": [], "line": []})
    out = pd.concat(parts, ignore_index=True)
    out["file"] = out["file"].astype("category")
    return out
