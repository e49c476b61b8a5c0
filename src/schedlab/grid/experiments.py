"""Sweeps over schedulers, duplications, delays and seeds, with the ideal run alongside (Figures 2–6).

A sweep takes a base :class:`~schedlab.grid.simulation.GridConfig` and the
values to vary; every run of one (arrivals, seed) pair shares the same workload
(it is a function of the seed), and the ideal — Act.QT, zero delay, no
duplication — is run once per pair so that each row carries its ``perf_gap``
(Eq. 1). Runs go to a local process pool (``workers``) and each finished run is
appended to ``results.csv`` in the output folder (rewritten atomically), so an
interrupted sweep resumes where it stopped: rows already present are not rerun.
A row is known by its ``run_id``, a hash of every input of the run (the whole
configuration: workload sizes, sites, policy… not only the varied values), so
rerunning with other options into an old folder runs what is new; one sweep
at a time writes a folder (:mod:`schedlab.folderlock`).

Row columns (one name per concept, as in the summary JSON): ``run_id``, ``arrivals``,
``scheduler``, ``duplications``, ``delay``, ``seed``, ``mean_queue_time``,
``<10s``, ``10-100s``, ``>=100s`` (queue-time bucket shares), ``perf_gap``,
``ideal_mean_queue_time``, ``utilization``, ``local_mean_queue_time``,
``invalidations``, ``simulation_seconds``, plus the configuration fields that
were not varied, so a results file says what it measured.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.folderlock import exclusive_folder
from schedlab.grid.metrics import BUCKET_NAMES, perf_gap
from schedlab.grid.simulation import GridConfig, simulate_grid
from schedlab.metrics.export import write_table

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


def _run(config: GridConfig, scheduler: str | None, rid: str = "") -> dict[str, Any]:
    return {"run_id": rid or run_id(config, scheduler), **_row(config, simulate_grid(config).summary, scheduler)}


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


def run_id(config: GridConfig, scheduler: str | None) -> str:
    """The resume key of a run: a hash of every input that changes its result (the whole config and the label)."""
    d = config.as_dict()
    d["scheduler_label"] = scheduler or config.scheduler
    text = json.dumps(d, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
    """Run (or resume) a sweep; returns this sweep's rows with perf gaps. Writes ``results.csv`` as it goes.

    A row is this sweep's when its ``run_id`` (:func:`run_id`: every input of
    the run) is one of the sweep's; rows of other sweeps in the same folder stay
    in the file, untouched and unshown. One sweep at a time writes a folder.
    """
    if out_dir is None:
        return _sweep(list(runs), None, workers, progress)
    with exclusive_folder(out_dir):
        return _sweep(list(runs), Path(out_dir) / "results.csv", workers, progress)


def _norm(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v) or v == "":
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int | float):
        return format(float(v), ".12g")
    if isinstance(v, list | tuple):
        return ",".join(_norm(x) for x in v)
    return str(v)


def _adopt_legacy_rows(rows: list[dict[str, Any]], runs: list[tuple[GridConfig, str | None]], ids: list[str]) -> None:
    """Give rows written before ``run_id`` existed the id of the planned run they match in every field.

    Such rows carry every configuration field but ``local_swf`` (see
    :func:`_row`), so a row matches a run when all those fields agree; a run
    with ``local_swf`` files never matches (the row cannot say which files).
    """
    legacy = [r for r in rows if not isinstance(r.get("run_id"), str)]
    if not legacy:
        return
    index: dict[tuple, str] = {}
    for (config, sch), rid in zip(runs, ids, strict=True):
        d = config.as_dict()
        if d.get("local_swf"):
            continue
        fields = sorted(k for k in d if k not in ("local_swf", "scheduler"))
        index[(sch or config.scheduler, *[(k, _norm(d[k])) for k in fields])] = rid
    for r in legacy:
        fields = sorted(k for k in r if k in _CONFIG_FIELDS)
        key = (r.get("scheduler"), *[(k, _norm(r[k])) for k in fields])
        rid = index.get(key)
        if rid is not None:
            r["run_id"] = rid


_CONFIG_FIELDS = frozenset(f for f in GridConfig().as_dict() if f not in ("local_swf", "scheduler"))


def _sweep(runs: list[tuple[GridConfig, str | None]], path: Path | None, workers: int,
           progress: Callable[[int, int, dict[str, Any]], None] | None) -> pd.DataFrame:

    ids = [run_id(c, s) for c, s in runs]
    rows: list[dict[str, Any]] = []
    if path is not None and path.is_file():
        try:
            rows = pd.read_csv(path).to_dict("records")
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            raise InputError(str(path), f"cannot resume from this results file: {str(e).splitlines()[0]}") from None
    _adopt_legacy_rows(rows, runs, ids)
    done = {r.get("run_id") for r in rows}
    todo = [(c, s, i) for (c, s), i in zip(runs, ids, strict=True) if i not in done]
    total = len(todo)
    finished = 0

    def record(row: dict[str, Any]) -> None:
        nonlocal finished
        rows.append(row)
        finished += 1
        if path is not None:
            write_table(path, pd.DataFrame(rows), "csv")
        if progress is not None:
            progress(finished, total, row)

    if workers <= 1 or total <= 1:
        for config, sch, rid in todo:
            record(_run(config, sch, rid))
    else:
        with ProcessPoolExecutor(max_workers=min(workers, total)) as pool:
            futures = [pool.submit(_run, c, s, i) for c, s, i in todo]
            for fut in as_completed(futures):
                record(fut.result())
    order = {rid: k for k, rid in enumerate(ids)}
    mine = [r for r in rows if r.get("run_id") in order]
    others = [r for r in rows if r.get("run_id") not in order]
    df = pd.DataFrame(mine)
    if not df.empty:
        df["_order"] = [order[r] for r in df["run_id"]]
        df = df.sort_values("_order", kind="stable").drop(columns="_order").reset_index(drop=True)
    df = with_gaps(df)
    if path is not None:
        write_table(path, pd.concat([pd.DataFrame(others), df], ignore_index=True) if others else df, "csv")
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
