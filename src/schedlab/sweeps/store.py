"""The results store of every domain: one folder per experiment, one sub-folder per run, never half-written.

Layout::

    RESULTS/                      one experiment
      spec.yaml                   the spec as given (its last sweep; data-center specs only)
      experiment.json             name, description, … and every run of the sweep with its labels
      runs/<run id>/
        config.json               what decides the result (its hash is the id) and labels — written first
        tasks.parquet  jobs.parquet  utilization.parquet   (the tables the run keeps, if any)
        summary.json              the result — written last: its presence marks the run finished
      .lock                       held while a sweep writes here

A run is any :class:`~schedlab.sweeps.points.Runnable`: a data-center
spec's engine run (config = the resolved run config, summary = the summary
JSON, with its tables) or a domain's point (config = its target and inputs,
summary = what the function returned).

Every file is written to a temp file in the same folder and renamed
(:mod:`schedlab.metrics.export`), so a reader sees a whole file or none. A run
is **finished** when its ``summary.json``, ``config.json`` (with the right id)
and every requested table are present. A rerun skips finished runs; any other
run folder — a sweep killed while writing it — is deleted and the run redone.
Runs of an earlier version of the spec stay in ``runs/`` but are not listed in
``experiment.json``, so comparisons and reports ignore them.

Only the process driving the sweep writes here (the local pool's and Ray's
workers send results back), so the store works the same for a remote Ray
cluster; an exclusive lock on ``.lock`` stops two sweeps sharing a folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.folderlock import exclusive_folder
from schedlab.metrics.export import atomic_write, write_json, write_run
from schedlab.sweeps.points import Runnable

SUMMARY = "summary.json"
CONFIG = "config.json"
EXPERIMENT = "experiment.json"


class Store:
    """An experiment's results folder."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    # -- paths -------------------------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / run_id

    def exists(self) -> bool:
        return (self.root / EXPERIMENT).is_file()

    # -- writing -----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive use of the folder for one sweep (:mod:`schedlab.folderlock`)."""
        with exclusive_folder(self.root):
            yield

    def write_experiment(self, info: dict[str, Any], runs: Sequence[Runnable], spec_text: str | None = None) -> None:
        if spec_text is not None:

            def w(tmp: str) -> None:
                Path(tmp).write_text(spec_text, encoding="utf-8")

            atomic_write(self.root / "spec.yaml", w)
        write_json(self.root / EXPERIMENT, {**info, "runs": [r.labels() for r in runs]})

    def is_finished(self, run: Runnable) -> bool:
        d = self.run_dir(run.id)
        if not (d / SUMMARY).is_file() or not all((d / f"{t}.parquet").is_file() for t in run.tables):
            return False
        try:
            return json.loads((d / CONFIG).read_text(encoding="utf-8")).get("id") == run.id
        except (OSError, ValueError):
            return False

    def clear(self, run: Runnable) -> bool:
        """Remove what an interrupted attempt left of ``run``; True if there was anything."""
        d = self.run_dir(run.id)
        if d.exists():
            shutil.rmtree(d)
            return True
        return False

    def save(self, run: Runnable, summary: dict[str, Any], tables: dict[str, pd.DataFrame]) -> Path:
        """config.json, then the tables, then summary.json — each atomically; the last marks the run finished."""
        d = self.run_dir(run.id)
        write_json(d / CONFIG, {"id": run.id, "config": run.config, "labels": run.labels(), "paths": run.paths()})
        write_run(d, {t: tables[t] for t in run.tables}, summary, ("parquet",))
        return d

    # -- reading -----------------------------------------------------------------------------------
    def experiment(self) -> dict[str, Any]:
        p = self.root / EXPERIMENT
        if not p.is_file():
            raise InputError(str(self.root), "not a results folder (no experiment.json; run `schedlab sweep SPEC --out DIR` first)")
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except ValueError as e:
            raise InputError(str(p), f"invalid JSON: {e}") from None

    def finished_ids(self) -> set[str]:
        return {r["id"] for r in self.experiment()["runs"] if (self.run_dir(r["id"]) / SUMMARY).is_file()}

    def run_config(self, run_id: str) -> dict[str, Any]:
        """A finished run's config.json: ``id``, ``config`` (resolved), ``labels`` and file ``paths``."""
        return json.loads((self.run_dir(run_id) / CONFIG).read_text(encoding="utf-8"))

    def summary(self, run_id: str) -> dict[str, Any]:
        return json.loads((self.run_dir(run_id) / SUMMARY).read_text(encoding="utf-8"))

    def table(self, run_id: str, name: str, columns: list[str] | None = None) -> pd.DataFrame | None:
        p = self.run_dir(run_id) / f"{name}.parquet"
        return pd.read_parquet(p, columns=columns) if p.is_file() else None
