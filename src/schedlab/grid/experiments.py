"""Sweeps over schedulers, duplications, delays and seeds, with the ideal run alongside (Figures 2–6).

A sweep takes a base :class:`~schedlab.grid.simulation.GridConfig` and the
values to vary; every run of one (arrivals, seed) pair shares the same workload
(it is a function of the seed), and the ideal — Act.QT, zero delay, no
duplication — is run once per pair so that each row carries its ``perf_gap``
(Eq. 1). Runs go to a local process pool (``workers``) and each finished run is
appended to ``results.csv`` in the output folder (rewritten atomically), so an
interrupted sweep resumes where it stopped: rows already present are not rerun.

Row columns (one name per concept, as in the summary JSON): ``arrivals``,
``scheduler``, ``duplications``, ``delay``, ``seed``, ``mean_queue_time``,
``<10s``, ``10-100s``, ``>=100s`` (queue-time bucket shares), ``perf_gap``,
``ideal_mean_queue_time``, ``utilization``, ``local_mean_queue_time``,
``invalidations``, ``simulation_seconds``, plus the configuration fields that
were not varied, so a results file says what it measured.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.grid.metrics import BUCKET_NAMES, perf_gap
from schedlab.grid.simulation import GridConfig, simulate_grid

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


def _run(config: GridConfig, scheduler: str | None) -> dict[str, Any]:
    return _row(config, simulate_grid(config).summary, scheduler)


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


def _key(row: dict[str, Any]) -> tuple:
    return (str(row["arrivals"]), str(row["scheduler"]), int(row["duplications"]), float(row["delay"]), int(row["seed"]))


def _key_of(config: GridConfig, scheduler: str | None) -> tuple:
    return (config.arrivals, scheduler or config.scheduler, config.duplications, float(config.delay), config.seed)


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
    workers: int = 1,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Run (or resume) a sweep; returns all rows with perf gaps. Writes ``results.csv`` as it goes."""
    from schedlab.metrics.export import write_table

    runs = list(runs)
    path = Path(out_dir) / "results.csv" if out_dir is not None else None
    rows: list[dict[str, Any]] = []
    if path is not None and path.is_file():
        try:
            rows = pd.read_csv(path).to_dict("records")
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            raise InputError(str(path), f"cannot resume from this results file: {str(e).splitlines()[0]}") from None
    done = {_key(r) for r in rows}
    todo = [(c, s) for c, s in runs if _key_of(c, s) not in done]
    total = len(todo)

    def record(row: dict[str, Any]) -> None:
        rows.append(row)
        if path is not None:
            write_table(path, pd.DataFrame(rows), "csv")
        if progress is not None:
            progress(len(rows) - (len(runs) - total), total, row)

    if workers <= 1 or total <= 1:
        for config, sch in todo:
            record(_run(config, sch))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_run, c, s) for c, s in todo]
            for fut in as_completed(futures):
                record(fut.result())
    df = pd.DataFrame(rows)
    if not df.empty:
        order = {_key_of(c, s): i for i, (c, s) in enumerate(runs)}
        df["_order"] = [order.get(_key(r), len(order)) for r in df.to_dict("records")]
        df = df.sort_values("_order", kind="stable").drop(columns="_order").reset_index(drop=True)
    df = with_gaps(df)
    if path is not None:
        write_table(path, df, "csv")
    return df


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
