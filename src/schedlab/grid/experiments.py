"""Sweeps over schedulers, duplications, delays and seeds, with the ideal run alongside (Figures 2–6).

A sweep takes a base :class:`~schedlab.grid.simulation.GridConfig` and the
values to vary; every run of one (arrivals, seed) pair shares the same workload
(it is a function of the seed), and the ideal — Act.QT, zero delay, no
duplication — is run once per pair so that each row carries its ``perf_gap``
(Eq. 1). Each run is a :class:`~schedlab.sweeps.points.Point` of the one
sweep runner (:func:`schedlab.sweeps.runner.run_points`: this process, a
local process pool or Ray) and is kept in the one results store
(:mod:`schedlab.sweeps.store`, with its lock), so an interrupted sweep
resumes where it stopped and any sweep needing a run another sweep made (in
the same store) reuses it. A run's id is a hash of every input: the whole
configuration (workload sizes, sites, policy… not only the varied values), its
label, and the SHA-256 of any SWF file it reads.

Each sweep's rows also go to ``results.csv`` in its output folder (rewritten
atomically), one row per run in plan order. Columns (one name per concept, as
in the summary JSON): ``run_id`` (the store's id), ``arrivals``, ``scheduler``,
``duplications``, ``delay``, ``seed``, ``mean_queue_time``, ``<10s``,
``10-100s``, ``>=100s`` (queue-time bucket shares), ``utilization``,
``local_mean_queue_time``, ``invalidations``, ``simulation_seconds``, the
configuration fields that were not varied (so a results file says what it
measured), then ``ideal_mean_queue_time`` and ``perf_gap``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.grid.metrics import BUCKET_NAMES, perf_gap
from schedlab.grid.simulation import GridConfig, simulate_grid
from schedlab.metrics.export import write_table
from schedlab.sweeps.points import Point, null_to_nan
from schedlab.sweeps.runner import SweepProgress, run_points

KEY = ("arrivals", "scheduler", "duplications", "delay", "seed")
IDEAL = "ideal"  # the `scheduler` value of the ideal's row


def _row(config: GridConfig, summary: dict[str, Any], scheduler: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "arrivals": config.arrivals,
        "scheduler": scheduler or config.scheduler,
        "duplications": config.duplications,
        "delay": config.delay,
        "seed": config.seed,
        "mean_queue_time": summary["mean_queue_time"],
    }
    row.update(summary["queue_time_buckets"])
    row.update(
        {
            "utilization": summary["utilization"]["mean"],
            "local_mean_queue_time": summary["local_queue_time"]["mean"],
            "invalidations": summary["counters"]["invalidations"],
            "simulation_seconds": summary["simulation_seconds"],
        }
    )
    for k, v in config.as_dict().items():
        if k not in row and k not in ("local_swf",):
            row[k] = v
    return row


def simulate_point(config: dict[str, Any], label: str, swf_sha256: dict[str, str]) -> dict[str, Any]:
    """One run of a sweep (the function of its :class:`Point`): the row of :func:`_row`.

    ``swf_sha256`` is not used here: it is in the inputs so that the point's id
    changes when an SWF file it reads does.
    """
    cfg = GridConfig(**config)
    return _row(cfg, simulate_grid(cfg).summary, label)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    return h.hexdigest()


def point(config: GridConfig, scheduler: str | None = None) -> Point:
    """The :class:`Point` of one run; ``scheduler`` is the row's label (default the config's scheduler)."""
    label = scheduler or config.scheduler
    files = [*config.local_swf, *([config.global_swf] if config.global_swf else [])]
    inputs = {"config": config.as_dict(), "label": label, "swf_sha256": {f: _sha256(f) for f in files}}
    shown = {"arrivals": config.arrivals, "scheduler": label, "duplications": config.duplications, "delay": config.delay, "seed": config.seed}
    return Point("schedlab.grid.experiments:simulate_point", inputs, shown)


def plan(
    base: GridConfig,
    *,
    arrivals: Sequence[str],
    schedulers: Sequence[str],
    duplications: Sequence[int],
    delays: Sequence[float],
    seeds: Sequence[int],
) -> list[tuple[GridConfig, str | None]]:
    """The runs of a sweep: the ideal of each (arrivals, seed) first, then every combination."""
    runs: list[tuple[GridConfig, str | None]] = []
    for arr in arrivals:
        for seed in seeds:
            runs.append((replace(base, arrivals=arr, seed=seed).ideal(), IDEAL))
    for arr in arrivals:
        for seed in seeds:
            for sch in schedulers:
                for dup in duplications:
                    for delay in delays:
                        runs.append((replace(base, arrivals=arr, seed=seed, scheduler=sch, duplications=dup, delay=delay), None))
    return runs


def run_id(config: GridConfig, scheduler: str | None = None) -> str:
    """The resume key of a run: its point's id (every input that changes its result)."""
    return point(config, scheduler).id


def with_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``perf_gap`` and ``ideal_mean_queue_time`` from each (arrivals, seed)'s ideal row."""
    if df.empty:
        return df
    ideal = df[df["scheduler"] == IDEAL].set_index(["arrivals", "seed"])["mean_queue_time"]
    out = df.copy()
    im = [ideal.get((a, s), float("nan")) for a, s in zip(out["arrivals"], out["seed"], strict=True)]
    out["ideal_mean_queue_time"] = im
    out["perf_gap"] = [perf_gap(m, i) for m, i in zip(out["mean_queue_time"], im, strict=True)]
    return out


def run_sweep(
    runs: Iterable[tuple[GridConfig, str | None]],
    out_dir: str | os.PathLike | None = None,
    *,
    store: str | os.PathLike | None = None,
    jobs: int = 1,
    backend: str = "local",
    address: str | None = None,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Run (or resume) a sweep in the store ``store``; returns its rows with perf gaps, and writes them to ``out_dir/results.csv``.

    ``store=None`` keeps nothing (every run runs). ``progress`` gets
    ``(finished, to do, row)`` after each run this call executes.
    """
    points = [point(c, s) for c, s in runs]

    def on_point(state: SweepProgress) -> None:
        if progress is not None and state.last_summary is not None:
            progress(state.done, state.todo, _restore(state.last_summary))

    rows = run_points(
        points, store, name="grid", description="grid runs: schedulers × duplications × delays × seeds, with the ideal",
        jobs=jobs, backend=backend, address=address, progress=on_point if progress is not None else None,
    )
    df = with_gaps(pd.DataFrame([{"run_id": p.id, **_restore(r)} for p, r in zip(points, rows, strict=True)]))
    if out_dir is not None:
        write_table(Path(out_dir) / "results.csv", df, "csv")
    return df


def _restore(row: dict[str, Any]) -> dict[str, Any]:
    """A row as :func:`simulate_point` made it: the store writes NaN as null."""
    return null_to_nan(row, _NAN_FIELDS)


_NAN_FIELDS = frozenset({"mean_queue_time", *BUCKET_NAMES, "utilization", "local_mean_queue_time"})


def parse_int_list(spec: str, field: str) -> list[int]:
    """``"0-7"``, ``"0,1,2"`` or ``"0-3,7"`` → integers."""
    out: list[int] = []
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            if sep:
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError
                out.extend(range(a, b + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise InputError(field, f"expected integers like 0-7 or 0,1,2, got {spec!r}") from None
    if not out:
        raise InputError(field, "no values given")
    return out


def parse_float_list(spec: str, field: str) -> list[float]:
    try:
        out = [float(x) for x in str(spec).split(",") if x.strip()]
    except ValueError:
        raise InputError(field, f"expected numbers like 0,1, got {spec!r}") from None
    if not out:
        raise InputError(field, "no values given")
    return out


def bucket_columns() -> tuple[str, ...]:
    return BUCKET_NAMES
