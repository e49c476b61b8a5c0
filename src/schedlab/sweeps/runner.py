"""The one sweep loop of every domain: runnables executed in this process, on a local process pool, or on Ray.

:func:`sweep` takes the store's lock (:mod:`schedlab.sweeps.store`), skips
the runnables (:mod:`schedlab.sweeps.points`) the store already holds, clears
what interrupted attempts left, and hands the rest to a backend that maps
``runnable.execute()`` over them:

* ``local`` — ``jobs == 1`` runs in this process; more uses a
  :class:`concurrent.futures.ProcessPoolExecutor` (``spawn`` start method, so
  workers share nothing with the driver but the runnable they are sent), at
  most one process per runnable and at most four per CPU;
* ``ray`` — the same call as a Ray remote task (``ray.init(address)``:
  ``None`` starts a local Ray instance with ``jobs`` CPUs, ``"auto"`` or
  ``ray://…`` joins a cluster). At most ``jobs`` runs are in flight
  (default: the cluster's CPUs). Ray is an optional extra
  (``pip install 'schedlab[ray]'``); on a multi-machine cluster every node
  needs schedlab installed and any trace or config *file* at the same path
  (bundled traces and generated workloads need nothing).

Front doors: :func:`run_points` runs a list of
:class:`~schedlab.sweeps.points.Point` — the grid's simulations, DynDL's and
CRED's figure points, the Megha and baseline reproductions, the points of a
domain spec — and returns their results in order;
:func:`schedlab.experiments.runner.run_sweep` runs a data-center spec (its
matrix of engine runs, with their tables).

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

import json
import multiprocessing
import os
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from schedlab import __version__
from schedlab.errors import InputError, InvariantError
from schedlab.metrics.export import json_ready
from schedlab.sweeps.points import Point, Runnable, RunOutput
from schedlab.sweeps.store import Store

BACKENDS = ("local", "ray")



def safe_execute(item: Runnable) -> tuple[RunOutput | None, str | None]:
    """``item.execute()``, with any failure turned into one message (exceptions need not unpickle)."""
    try:
        return item.execute(), None
    except InputError as e:
        return None, str(e)
    except InvariantError as e:
        return None, f"scheduler invariant broken: {e}"
    except Exception as e:  # a bug: keep the traceback for the report
        return None, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"


R = TypeVar("R", bound=Runnable)
Outcome = tuple[R, RunOutput | None, str | None]


# -- backends ----------------------------------------------------------------------------------------
def _serial(runs: list[R]) -> Iterator[Outcome[R]]:
    for r in runs:
        yield (r, *safe_execute(r))


def _pool(runs: list[R], jobs: int) -> Iterator[Outcome[R]]:
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


def _ray(runs: list[R], jobs: int | None, address: str | None) -> Iterator[Outcome[R]]:
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
        inflight: dict[Any, R] = {}
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



def map_runs(runs: list[R], backend: str = "local", jobs: int | None = None, address: str | None = None) -> Iterator[Outcome[R]]:
    """``(runnable, output, error)`` for each runnable, in completion order, on the chosen backend."""
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
    last: Runnable | None = None
    last_error: str | None = None
    last_summary: dict[str, Any] | None = None  # the last run's result (None if it failed)

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
    runs: list[Any]  # the runnables of the sweep, in order
    skipped: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    redone: list[str] = field(default_factory=list)  # interrupted runs whose leftovers were cleared
    failed: dict[str, str] = field(default_factory=dict)  # id -> message
    seconds: float = 0.0




def sweep(
    items: list[R],
    root: str | os.PathLike,
    info: dict[str, Any],
    spec_text: str | None = None,
    *,
    jobs: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: Callable[[SweepProgress], None] | None = None,
) -> SweepResult:
    """Run every runnable of ``items`` not yet finished in the store at ``root``; the one sweep loop of every domain.

    Holds the store's lock throughout, lists ``items`` in ``experiment.json``
    (with ``info``), skips finished ones, clears what interrupted attempts
    left, and saves each result as it comes (only this process writes).
    """
    check_backend(backend, jobs, address)
    store = Store(root)
    t0 = time.perf_counter()
    with store.lock():
        for stray in store.root.glob(".*.tmp"):
            stray.unlink(missing_ok=True)
        store.write_experiment(info, items, spec_text)
        res = SweepResult(store.root, items)
        todo: list[R] = []
        for r in items:
            if store.is_finished(r):
                res.skipped.append(r.id)
            else:
                if store.clear(r):
                    res.redone.append(r.id)
                todo.append(r)
        state = SweepProgress(len(items), len(res.skipped), len(todo))
        if progress is not None:
            progress(state)
        if todo:
            for item, output in _drive(todo, state, t0, res.failed, backend, jobs, address, progress):
                store.save(item, output.summary, output.tables)
                res.ran.append(item.id)
    res.seconds = time.perf_counter() - t0
    return res


def _drive(
    todo: list[R],
    state: SweepProgress,
    t0: float,
    failed: dict[str, str],
    backend: str,
    jobs: int | None,
    address: str | None,
    progress: Callable[[SweepProgress], None] | None,
) -> Iterator[tuple[R, RunOutput]]:
    """Map ``todo`` on the backend, keeping ``state`` and ``failed`` up to date; yield each success
    (the caller keeps it) before the progress callback hears of it."""
    for item, output, error in map_runs(todo, backend, jobs, address):
        if output is not None:
            yield item, output
            state.done += 1
        else:
            failed[item.id] = error or "failed"
            state.failed += 1
        state.elapsed = time.perf_counter() - t0
        state.last, state.last_error = item, error
        state.last_summary = output.summary if output is not None else None
        if progress is not None:
            progress(state)


def run_points(
    points: list[Point],
    root: str | os.PathLike | None,
    *,
    name: str,
    description: str = "",
    jobs: int | None = 1,
    backend: str = "local",
    address: str | None = None,
    progress: Callable[[SweepProgress], None] | None = None,
) -> list[dict[str, Any]]:
    """Every point's result, in the order of ``points``: run (or resumed) in the store at ``root``.

    ``root=None`` keeps nothing (each call runs every point); the results are
    the same either way, as JSON gives them back (NaN as None — see
    :func:`~schedlab.sweeps.points.null_to_nan` — and tuples as lists). A
    point that fails stops the sweep with its message once the others are done
    — what finished stays stored, so a rerun does only the rest. Duplicate
    points (same id) run once.
    """
    unique = list({p.id: p for p in points}.values())
    if root is None:
        check_backend(backend, jobs, address)
        results: dict[str, dict[str, Any]] = {}
        failed: dict[str, str] = {}
        state = SweepProgress(len(unique), 0, len(unique))
        if progress is not None:
            progress(state)
        for item, output in _drive(unique, state, time.perf_counter(), failed, backend, jobs, address, progress):
            results[item.id] = json.loads(json.dumps(json_ready(output.summary)))  # as the store would give it back
        _raise_failures(unique, failed)
        return [results[p.id] for p in points]
    info = {"name": name, "description": description, "kind": "points", "schedlab_version": __version__}
    res = sweep(unique, root, info, jobs=jobs, backend=backend, address=address, progress=progress)
    _raise_failures(unique, res.failed)
    store = Store(root)
    return [store.summary(p.id) for p in points]


def _raise_failures(points: list[Point], failed: dict[str, str]) -> None:
    if failed:
        by_id = {p.id: p for p in points}
        rid, msg = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise InputError(by_id[rid].describe(), f"{msg.splitlines()[0]}{more}")


def describe_failures(result: SweepResult) -> Iterable[str]:
    by_id = {r.id: r for r in result.runs}
    for rid, msg in result.failed.items():
        yield f"run {rid} ({by_id[rid].describe()}): {msg.splitlines()[0]}"
