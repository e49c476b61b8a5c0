"""Sweeps: a spec's runs executed in this process, on a local process pool, or on Ray — one code path.

:func:`run_sweep` expands the spec, skips the runs the store already holds,
clears what interrupted attempts left, and hands the rest to a backend that
maps one function, :func:`execute_run`, over them:

* ``local`` — ``jobs == 1`` runs in this process; more uses a
  :class:`concurrent.futures.ProcessPoolExecutor` (``spawn`` start method, so
  workers share nothing with the driver but the run they are sent);
* ``ray`` — the same function as a Ray remote task (``ray.init(address)``:
  ``None`` starts a local Ray instance with ``jobs`` CPUs, ``"auto"`` or
  ``ray://…`` joins a cluster). At most ``jobs`` runs are in flight
  (default: the cluster's CPUs). Ray is an optional extra
  (``pip install 'schedlab[ray]'``); on a multi-machine cluster every node
  needs schedlab installed and any trace or config *file* at the same path
  (bundled traces and generated workloads need nothing).

Workers return the summary and tables; only the driver writes the store, so a
sweep's results never depend on where its runs ran, and the store needs no
shared file system. A run that fails (a bad trace line, a scheduler bug) is
reported with its id and the sweep goes on; nothing of it is stored, so a rerun
tries it again.

Progress (runs done of total, failures, ETA = elapsed / done × remaining,
which accounts for the parallelism actually achieved) goes to a callback; the
CLI draws it on stderr.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab import __version__
from schedlab.datafiles import BUNDLED_TRACES
from schedlab.engine import run as simulate_run
from schedlab.errors import InputError, InvariantError
from schedlab.experiments.matrix import Run, expand
from schedlab.experiments.spec import LoadedSpec, load_spec
from schedlab.experiments.store import Store

BACKENDS = ("local", "ray")


@dataclass
class RunOutput:
    """What a worker sends back: the summary (with ``run_id``) and the tables the spec keeps."""

    summary: dict[str, Any]
    tables: dict[str, pd.DataFrame]


def execute_run(run: Run) -> RunOutput:
    """Simulate one run of the grid (the function every backend ships to its workers)."""

    result = simulate_run(run.run_config(), run.jobs())
    summary = {"run_id": run.id, **result.summary}
    tables = {"tasks": result.tasks, "jobs": result.jobs, "utilization": result.utilization}
    return RunOutput(summary, {t: tables[t] for t in run.tables})


def safe_execute(run: Run) -> tuple[RunOutput | None, str | None]:
    """:func:`execute_run`, with any failure turned into one message (exceptions need not unpickle)."""
    try:
        return execute_run(run), None
    except InputError as e:
        return None, str(e)
    except InvariantError as e:
        return None, f"scheduler invariant broken: {e}"
    except Exception as e:  # a bug: keep the traceback for the report
        return None, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"


Outcome = tuple[Run, RunOutput | None, str | None]


# -- backends ----------------------------------------------------------------------------------------
def _serial(runs: list[Run]) -> Iterator[Outcome]:
    for r in runs:
        yield (r, *safe_execute(r))


def _pool(runs: list[Run], jobs: int) -> Iterator[Outcome]:

    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
        futures = {ex.submit(safe_execute, r): r for r in runs}
        order = {r.id: k for k, r in enumerate(runs)}
        try:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in sorted(done, key=lambda f: order[futures[f].id]):
                    exc = f.exception()
                    if exc is not None:  # the worker died (e.g. out of memory)
                        yield futures[f], None, f"worker process failed: {exc}"
                    else:
                        yield (futures[f], *f.result())
        except BaseException:
            ex.shutdown(wait=False, cancel_futures=True)
            raise


def _ray(runs: list[Run], jobs: int | None, address: str | None) -> Iterator[Outcome]:
    try:
        import ray  # an optional extra
    except ImportError:
        raise InputError("--backend ray", "Ray is not installed (pip install 'schedlab[ray]')") from None
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"address": address, "include_dashboard": False, "log_to_driver": False}
        if address is None:
            kwargs["num_cpus"] = jobs or os.cpu_count() or 1  # local workers inherit this environment
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise InputError("--address", f"cannot start or join Ray: {e}") from None
        started = True
    try:
        limit = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote = ray.remote(num_cpus=1, max_retries=0)(safe_execute)
        queue = list(runs)
        inflight: dict[Any, Run] = {}
        try:
            while queue or inflight:
                while queue and len(inflight) < limit:
                    r = queue.pop(0)
                    inflight[remote.remote(r)] = r
                ready, _ = ray.wait(list(inflight), num_returns=1)
                for ref in ready:
                    r = inflight.pop(ref)
                    try:
                        yield (r, *ray.get(ref))
                    except ray.exceptions.RayError as e:  # the worker died
                        yield r, None, f"Ray worker failed: {e}"
        except BaseException:
            for ref in inflight:
                ray.cancel(ref, force=True)
            raise
    finally:
        if started:
            ray.shutdown()


def check_backend(backend: str = "local", jobs: int | None = None, address: str | None = None) -> None:
    """Refuse bad backend options (before anything is written)."""
    if backend not in BACKENDS:
        raise InputError("--backend", f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
    if jobs is not None and jobs < 1:
        raise InputError("--jobs", f"must be >= 1, got {jobs}")
    if backend != "ray":
        if address is not None:
            raise InputError("--address", "only used with --backend ray")
        cpus = os.cpu_count() or 1
        if jobs is not None and jobs > 4 * cpus:  # more processes than that only contend for the same cores
            raise InputError("--jobs", f"{jobs} processes on a machine with {cpus} CPUs: at most {4 * cpus} are of any use")


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


def map_runs(runs: list[Run], backend: str = "local", jobs: int | None = None, address: str | None = None) -> Iterator[Outcome]:
    """``(run, output, error)`` for each run, in completion order, on the chosen backend."""
    check_backend(backend, jobs, address)
    if backend == "ray":
        return _ray(runs, jobs, address)
    n = min(jobs or os.cpu_count() or 1, len(runs))
    return _serial(runs) if n <= 1 else _pool(runs, n)


# -- sweeps ------------------------------------------------------------------------------------------
@dataclass
class SweepProgress:
    """The state of a sweep after each run (what the progress display shows)."""

    total: int  # runs in the spec
    skipped: int  # finished before this sweep
    todo: int  # runs this sweep executes
    done: int = 0  # of ``todo``, finished (stored) so far
    failed: int = 0
    elapsed: float = 0.0
    last: Run | None = None
    last_error: str | None = None

    @property
    def finished(self) -> int:
        return self.skipped + self.done

    @property
    def eta(self) -> float | None:
        k = self.done + self.failed
        if k == 0:
            return None
        return self.elapsed / k * (self.todo - k)


@dataclass
class SweepResult:
    root: Path
    runs: list[Run]
    skipped: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    redone: list[str] = field(default_factory=list)  # interrupted runs whose leftovers were cleared
    failed: dict[str, str] = field(default_factory=dict)  # id -> message
    seconds: float = 0.0


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
        "schedlab_version": _version(),
    }


def _version() -> str:

    return __version__


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
    root = Path(out) if out is not None else default_out(ls)
    store = Store(root)
    t0 = time.perf_counter()
    with store.lock():
        for stray in root.glob(".*.tmp"):
            stray.unlink(missing_ok=True)
        store.write_experiment(experiment_info(ls), runs, ls.text)
        res = SweepResult(root, runs)
        todo: list[Run] = []
        for r in runs:
            if store.is_finished(r):
                res.skipped.append(r.id)
            else:
                if store.clear(r):
                    res.redone.append(r.id)
                todo.append(r)
        state = SweepProgress(len(runs), len(res.skipped), len(todo))
        if progress is not None:
            progress(state)
        if todo:
            for run, output, error in map_runs(todo, backend, jobs, address):
                if output is not None:
                    store.save(run, output.summary, output.tables)
                    res.ran.append(run.id)
                    state.done += 1
                else:
                    res.failed[run.id] = error or "failed"
                    state.failed += 1
                state.elapsed = time.perf_counter() - t0
                state.last, state.last_error = run, error
                if progress is not None:
                    progress(state)
    res.seconds = time.perf_counter() - t0
    return res


def describe_failures(result: SweepResult) -> Iterable[str]:
    by_id = {r.id: r for r in result.runs}
    for rid, msg in result.failed.items():
        yield f"run {rid} ({by_id[rid].describe()}): {msg.splitlines()[0]}"
