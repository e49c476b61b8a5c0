"""A data-center experiment's results as one table: one row per finished run, its labels and summary figures."""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd

from schedlab.sweeps.store import SUMMARY, Store


def _flatten(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, f"{key}."))
        elif isinstance(v, int | float) and not isinstance(v, bool) or v is None:
            out[key] = v
    return out


def load_results(root: str | os.PathLike) -> pd.DataFrame:
    """One row per finished run of the experiment: its labels and every numeric summary field, flattened.

    Columns: ``id, scheduler`` (label), ``scheduler_name, workload, data_center,
    workers, seed``, then ``jrt_delay.p50``, ``allocation_components.processing.mean``,
    ``utilization.mean``, ``counters.preemptions``, … (``config.*`` is left out).
    ``df.attrs`` holds the experiment info and how many runs are not finished.
    """
    store = Store(root)
    info = store.experiment()
    rows = []
    missing = 0
    for r in info["runs"]:
        p = store.run_dir(r["id"]) / SUMMARY
        if not p.is_file():
            missing += 1
            continue
        s = json.loads(p.read_text(encoding="utf-8"))
        s.pop("config", None)
        flat = {k: v for k, v in _flatten(s).items() if k != "seed"}  # workers: the size actually simulated
        rows.append({**r, **flat})
    df = pd.DataFrame(rows)
    df.attrs["experiment"] = {k: v for k, v in info.items() if k != "runs"}
    df.attrs["unfinished"] = missing
    df.attrs["total"] = len(info["runs"])
    return df
