"""The machines of a production trace at one instant, from its machine tables (``trace machines``).

The simulator's data center is static, so every format is read the same way
(our interpretation; the schemas leave it open): the data center is the
machines' state at one trace time ``at`` (default 0: the machines the trace
starts with, whose events carry timestamp 0). Every event at or before it is
applied in timestamp order (file order among equal timestamps), nothing
after it. A machine is in the data center when its last event by then is an
ADD or an UPDATE; its capacity is the last CPU and memory it stated, scaled
like the tasks' requests (by default 64 cores and 16,384 MB for "1.0", the
largest machine); a machine whose capacity is never stated is kept with an
unknown capacity (a multi-resource run leaves it out, counted). Its
attributes are the last value of each, unless that last row deletes it.

Formats:

* **google2011** (Reiss, Wilkes & Hellerstein, "Google cluster-usage traces:
  format + schema"): ``machine_events`` CSV rows are timestamp (µs), machine
  ID, event type (0 ADD, 1 REMOVE, 2 UPDATE), platform ID, CPUs, memory (both
  normalised, possibly empty); ``machine_attributes`` rows are timestamp,
  machine ID, name, value, deleted (0/1).
* **google2019** (Wilkes, "Google cluster-usage traces v3"): the same two
  tables as JSON lines (BigQuery's export, INT64 as strings or numbers):
  ``machine_events`` {time, machine_id, type (1 ADD, 2 REMOVE, 3 UPDATE, by
  number or name), capacity {cpus, memory}, …}; ``machine_attributes``
  {time, machine_id, name, value, deleted}.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.cluster.machines import Machines
from schedlab.errors import InputError
from schedlab.workload.converters.common import Drops, enum_codes, read_csv_shards, read_json_shards
from schedlab.workload.converters.google2011 import DEFAULT_SCALE, resources


@dataclass
class MachineRows:
    """A format's machine rows for :func:`snapshot`: events (timestamp, machine, event as 0 ADD / 1 REMOVE /
    2 UPDATE, cpus, memory, file, line) and attributes (timestamp, machine, name, value, deleted); with
    ``factors`` and ``units`` when its capacities are not normalised to the largest machine."""

    events: Any
    attributes: Any
    factors: dict[bool, tuple[float, float]] | None = None  # scaled? -> (cpus, memory) factors
    units: dict[bool, dict[str, str]] | None = None


MACHINE_EVENTS_2011 = [("timestamp", "int"), ("machine", "int"), ("event", "int"), ("platform", "str?"), ("cpus", "float?"), ("memory", "float?")]
MACHINE_ATTRIBUTES_2011 = [("timestamp", "int"), ("machine", "int"), ("name", "str"), ("value", "str?"), ("deleted", "int?")]
ADD, REMOVE, UPDATE = 0, 1, 2


def rows_google2011(
    tables: dict[str, list[Path]], limit: int, skip_bad: bool, bad_rows: Drops, progress: Callable[[int], None] | None, counts: dict[str, int]
) -> MachineRows:
    """Google 2011's machine event and attribute rows at or before ``limit`` µs, for :func:`snapshot`."""
    ev = _csv_rows(tables.get("machine_events", []), MACHINE_EVENTS_2011, limit, skip_bad, bad_rows, progress, counts, "machine_events")
    attrs = _csv_rows(tables.get("machine_attributes", []), MACHINE_ATTRIBUTES_2011, limit, skip_bad, bad_rows, progress, counts, "machine_attributes")
    return MachineRows(ev, attrs)


def snapshot(rows: MachineRows, *, at: float, scale: tuple[float, float] | None, skip_bad: bool, bad_rows: Drops, counts: dict[str, int], source: str) -> Machines:
    """The machines from a format's rows (:class:`MachineRows`) at or before ``at``."""
    import pandas as pd

    ev, attr_rows = rows.events, rows.attributes
    bad = (ev["event"] < ADD) | (ev["event"] > UPDATE)
    if bad.any():
        if not skip_bad:
            first = ev[bad].iloc[0]
            raise InputError(f"{first['file']}:{first['line']}", f"unknown machine event type {first['shown']}")
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
    if rows.factors is not None and rows.units is not None:
        f, units = rows.factors[scale is not None], rows.units[scale is not None]
    capacity = np.column_stack([cap["cpus"] * f[0], cap["memory"] * f[1]])
    counts["machines_without_capacity"] = int(np.isnan(capacity).any(axis=1).sum())
    attrs: list[dict[str, str]] = [{} for _ in alive]
    if len(attr_rows):
        attr_rows = attr_rows.sort_values("timestamp", kind="stable")
        latest = attr_rows.groupby(["machine", "name"], sort=False).tail(1)
        latest = latest[latest["deleted"].fillna(0).to_numpy() == 0]
        pos = pd.Index(alive).get_indexer(latest["machine"].to_numpy())
        keep = pos >= 0
        for i, name, value in zip(pos[keep].tolist(), latest["name"].to_numpy()[keep].tolist(), latest["value"].fillna("").to_numpy()[keep].tolist(), strict=True):
            attrs[i][name] = value
    return Machines(alive.astype(np.int64), names, capacity, attrs, units, source=source, at=at)


def _csv_rows(
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
        return pd.DataFrame({n: [] for n, _k in columns} | {"file": [], "line": [], "shown": []})
    out = pd.concat(parts, ignore_index=True)
    out["file"] = out["file"].astype("category")
    if "event" in out:
        out["shown"] = out["event"].astype(str)
    return out


# -- Google 2019 ------------------------------------------------------------------------------------
EVENT_NAMES_2019 = ("EVENT_TYPE_UNKNOWN", "ADD", "REMOVE", "UPDATE")  # 2019's numbering; 2011's is this minus one


def rows_google2019(
    tables: dict[str, list[Path]], limit: int, skip_bad: bool, bad_rows: Drops, progress: Callable[[int], None] | None, counts: dict[str, int]
) -> MachineRows:
    """Google 2019's machine event (types mapped onto 2011's) and attribute rows at or before ``limit`` µs."""
    import pandas as pd
    import pyarrow as pa

    ev_schema = pa.schema([("time", pa.int64()), ("machine_id", pa.int64()), ("type", pa.string()), ("capacity", pa.struct([("cpus", pa.float64()), ("memory", pa.float64())]))])
    at_schema = pa.schema([("time", pa.int64()), ("machine_id", pa.int64()), ("name", pa.string()), ("value", pa.string()), ("deleted", pa.bool_())])
    ev_parts: list[Any] = []
    at_parts: list[Any] = []
    later = {"machine_events": 0, "machine_attributes": 0}
    for table, schema, parts in (("machine_events", ev_schema, ev_parts), ("machine_attributes", at_schema, at_parts)):
        for b in read_json_shards(tables.get(table, []), schema, skip_bad=skip_bad, bad_rows=bad_rows, progress=progress):
            t, mid = b["time"], b["machine_id"]
            missing = t.is_null().to_numpy(zero_copy_only=False) | mid.is_null().to_numpy(zero_copy_only=False)
            event = None
            unknown = np.zeros(len(missing), dtype=bool)
            if table == "machine_events":
                codes, null = enum_codes(b["type"], EVENT_NAMES_2019)
                event = np.where(null, -1, codes) - 1  # onto 2011's 0 ADD, 1 REMOVE, 2 UPDATE
                unknown = ~missing & ((event < ADD) | (event > UPDATE))
            if missing.any() or unknown.any():  # the first bad row of the block, in file order
                i = int(np.argmax(missing | unknown))
                if not skip_bad:
                    what = "a machine row needs its time and machine_id" if missing[i] else f"unknown machine event type {b['type'][i].as_py()}"
                    raise InputError(b.where(i), what)
                bad_rows.add("machine rows without a time or machine_id", int(missing.sum()))
                bad_rows.add("rows with an unknown machine event type", int(unknown.sum()))
                missing |= unknown
            tt = t.fill_null(-1).to_numpy(zero_copy_only=False)
            now = ~missing & (tt <= limit)
            later[table] += int((~missing & ~now).sum())
            idx = np.flatnonzero(now)
            if not len(idx):
                continue
            df = pd.DataFrame({"timestamp": tt[idx], "machine": mid.fill_null(-1).to_numpy(zero_copy_only=False)[idx]})
            if event is not None:
                df["event"] = event[idx]
                df["shown"] = ""
                cap = b["capacity"]
                no_cap = cap.is_null().to_numpy(zero_copy_only=False)
                for k in ("cpus", "memory"):
                    v = cap.field(k)
                    df[k] = np.where(no_cap | v.is_null().to_numpy(zero_copy_only=False), np.nan, v.fill_null(0).to_numpy(zero_copy_only=False))[idx]
            else:
                df["name"] = np.asarray(b["name"].to_pylist(), dtype=object)[idx]
                df["value"] = np.asarray(b["value"].to_pylist(), dtype=object)[idx]
                df["deleted"] = np.asarray(b["deleted"].fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int64)[idx]
            lines = np.asarray(b.lines)[idx] if b.lines is not None else b.line0 + idx
            df["file"] = str(b.path)
            df["line"] = lines
            parts.append(df)
    for table, n in later.items():
        counts[f"{table}_rows_after_the_snapshot"] = n
    cols_ev = ["timestamp", "machine", "event", "shown", "cpus", "memory", "file", "line"]
    cols_at = ["timestamp", "machine", "name", "value", "deleted", "file", "line"]
    ev = pd.concat(ev_parts, ignore_index=True) if ev_parts else pd.DataFrame({c: [] for c in cols_ev})
    attrs = pd.concat(at_parts, ignore_index=True) if at_parts else pd.DataFrame({c: [] for c in cols_at})
    if len(attrs):
        attrs = attrs[attrs["name"].notna()]
    return MachineRows(ev, attrs)


# -- Alibaba 2018 -----------------------------------------------------------------------------------
MACHINE_META = [("machine", "str"), ("timestamp", "int"), ("failure_domain_1", "str?"), ("failure_domain_2", "str?"),
                ("cpu_num", "float?"), ("mem_size", "float?"), ("status", "str?")]  # fmt: skip


def rows_alibaba2018(
    tables: dict[str, list[Path]], limit: int, skip_bad: bool, bad_rows: Drops, progress: Callable[[int], None] | None, counts: dict[str, int]
) -> MachineRows:
    """Alibaba 2018's ``machine_meta`` rows at or before ``limit`` µs: one row per machine and change (machine
    ID ``m_<n>``, time in seconds, two failure domains, cpu_num cores, mem_size normalised to [0, 100], a
    status). Each row restates the machine, so each is an UPDATE: a machine with a row by then is in the
    data center (the schema names no status that removes one), and its failure domains and status are its
    attributes. Capacities: cpu_num cores as stated (the converter's requests are absolute cores too) and
    mem_size / 100 of the default worker's 16,384 MB; normalised, cpu_num / 96 and mem_size / 100."""
    import pandas as pd

    from schedlab.workload.converters.alibaba2018 import MACHINE_CORES

    parts = []
    later = 0
    for b in read_csv_shards(tables.get("machine_meta", []), MACHINE_META, skip_bad=skip_bad, bad_rows=bad_rows, progress=progress, as_arrays=True):
        names = b["machine"]
        ok = np.fromiter((isinstance(m, str) and m.startswith("m_") and m[2:].isdigit() and m[2:].isascii() for m in names), bool, len(names))
        bad = ~ok | (b["timestamp"] < 0)
        if bad.any():
            i = int(np.argmax(bad))
            if not skip_bad:
                what = f"machine ID {names[i]!r} is not m_<number>" if not ok[i] else f"negative time {b['timestamp'][i]}"
                raise InputError(b.where(i), what)
            bad_rows.add("machine_meta rows with a malformed machine ID or time", int(bad.sum()))
        t = b["timestamp"] * 1_000_000
        now = ~bad & (t <= limit)
        later += int((~bad & ~now).sum())
        idx = np.flatnonzero(now)
        if not len(idx):
            continue
        lines = np.asarray(b.lines)[idx] if b.lines is not None else b.line0 + idx
        ids = np.asarray([int(m[2:]) for m in names[idx]], dtype=np.int64)
        parts.append(pd.DataFrame({"timestamp": t[idx], "machine": ids, "event": UPDATE, "shown": "", "cpus": b["cpu_num"][idx], "memory": b["mem_size"][idx],
                                   "fd1": b["failure_domain_1"][idx], "fd2": b["failure_domain_2"][idx], "status": b["status"][idx], "file": str(b.path), "line": lines}))  # fmt: skip
    counts["machine_meta_rows_after_the_snapshot"] = later
    cols = ["timestamp", "machine", "event", "shown", "cpus", "memory", "fd1", "fd2", "status", "file", "line"]
    ev = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({c: [] for c in cols})
    attrs = pd.concat(
        [pd.DataFrame({"timestamp": ev["timestamp"], "machine": ev["machine"], "name": name, "value": ev[col], "deleted": ev[col].isna().astype(np.int64)})
         for name, col in (("failure_domain_1", "fd1"), ("failure_domain_2", "fd2"), ("status", "status"))],
        ignore_index=True,
    )  # fmt: skip
    factors = {True: (1.0, DEFAULT_SCALE[1] / 100.0), False: (1.0 / MACHINE_CORES, 1.0 / 100.0)}
    units = {
        True: {"cores": "cores (as machine_meta states them)", "memory_mb": f"MB ({DEFAULT_SCALE[1]:g} = the largest machine)"},
        False: {"cpus": f"fraction of a {MACHINE_CORES:g}-core machine", "memory": "fraction of the largest machine's memory"},
    }
    return MachineRows(ev, attrs, factors, units)
