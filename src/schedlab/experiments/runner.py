"""Data-center sweeps: a spec's matrix of engine runs on the one sweep loop (:mod:`schedlab.sweeps.runner`).

:func:`run_sweep` expands the spec (:mod:`schedlab.experiments.matrix`),
reads every trace its runs will read and builds every distinct run's data center
and scheduler before anything is written, and runs the
runs not yet in the results folder with :func:`schedlab.sweeps.runner.sweep`
(this process, a local process pool or Ray), keeping each run's summary and
tables in the store (:mod:`schedlab.sweeps.store`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from schedlab import __version__
from schedlab.datafiles import BUNDLED_TRACES
from schedlab.engine import check_run
from schedlab.errors import InputError
from schedlab.experiments.matrix import Run, expand
from schedlab.experiments.spec import LoadedSpec, load_spec
from schedlab.sweeps.points import RunOutput
from schedlab.sweeps.runner import SweepProgress, SweepResult, check_backend, sweep


def execute_run(run: Run) -> RunOutput:
    """Simulate one run of a spec's matrix (:meth:`Run.execute`)."""
    return run.execute()



def check_inputs(runs: list[Run]) -> None:
    """Read every trace the runs will read, with the same reader, before anything is written.

    Each distinct (trace, max_jobs, conventions) is read once, up to what the
    runs read; a bundled trace is trusted. A bad line fails here with its
    file:line, not in every run after the store was touched.
    """

    seen: set[tuple] = set()
    for r in runs:
        wl = r.config["workload"]
        if wl.get("generate") is not None:
            continue
        trace = str(r.trace_path or wl["trace"])
        key = (trace, wl.get("max_jobs"), wl.get("exact_durations"))
        if key in seen or trace in BUNDLED_TRACES:
            continue
        seen.add(key)
        if not any(True for _ in r.jobs()):
            raise InputError(trace, "the trace has no jobs: nothing to simulate")


def check_configs(runs: list[Run]) -> None:
    """Build every distinct run's data center and scheduler (:func:`~schedlab.engine.check_run`) before anything is
    written: a scheduler that refuses its data center (20 GMs x 20 LMs on 10 workers, a resource mode it cannot run)
    fails here with one line naming the run, not after the store was made.

    Runs that differ only in their seed or workload build the same topology: one of them is built.
    """
    seen: set[str] = set()
    for r in runs:
        key = json.dumps({k: v for k, v in r.config.items() if k not in ("seed", "workload")}, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        try:
            check_run(r.run_config(), jobs_given=True)
        except InputError as e:
            raise InputError(f"run {r.describe()}", str(e)) from None



def default_out(spec: LoadedSpec) -> Path:
    return Path("results") / spec.spec.name


def experiment_info(ls: LoadedSpec) -> dict[str, Any]:
    s = ls.spec
    return {
        "name": s.name,
        "description": s.description,
        "source": ls.source,
        "baseline": s.baseline,
        "metrics": s.metric_columns(),
        "plots": list(s.plots),
        "schedlab_version": __version__,
    }



def run_sweep(
    spec: str | os.PathLike | LoadedSpec,
    out: str | os.PathLike | None = None,
    *,
    jobs: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: Callable[[SweepProgress], None] | None = None,
) -> SweepResult:
    """Run every run of ``spec`` not yet in the results folder ``out`` (default ``results/<name>``)."""
    check_backend(backend, jobs, address)
    ls = spec if isinstance(spec, LoadedSpec) else load_spec(spec)
    runs = expand(ls)
    check_inputs(runs)  # everything is known valid before the store is touched
    check_configs(runs)
    root = Path(out) if out is not None else default_out(ls)
    return sweep(runs, root, experiment_info(ls), ls.text, jobs=jobs, backend=backend, address=address, progress=progress)
