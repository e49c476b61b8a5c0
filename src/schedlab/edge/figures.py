"""The report's Figure 4: active nodes against the spread between two deadlines, and against the mix of the two deadline classes.

Figure 4 of the report has two panels: a line chart of "the effect of the
time difference between d1 and d2 on the total number of nodes" and a bar chart
of "the effect of the ratio of d1- to d2-type jobs". The report gives neither
its instances nor its numbers, so the sweeps here use generated instances
(:mod:`schedlab.edge.generate`) with the parameters recorded next to the plot:

* ``spread``: deadline classes {d1, d1 + Δ} with half of the jobs in each, for
  each Δ in ``spreads`` (Δ = 0 is a single class);
* ``mix``: classes {d1, d2} with a fraction φ of the jobs due at d1, for each φ
  in ``fractions`` (φ = 0 or 1 is a single class).

Each point is the mean over ``seeds`` instances (the same seeds at every x, so
the chunk sets are the same and only deadlines change) of every algorithm's
active nodes, plus the lower bound and, when ``optimum_time_limit`` is set, the
MILP optimum (:mod:`schedlab.edge.milp`; drawn only at the x where it was proven
on every instance within the limit — on small instances). Every schedule is
verified; an infeasible one fails the sweep.

The default instances sit in the regime where CRED's grouping pays (skewed
chunk popularity, storage and slots both binding: ``reports/edge``'s regime
map); elsewhere first-fit is as good, which the report shows separately. Data are written as CSV (one row per instance and
algorithm) and JSON (means), the plots as PNG (matplotlib, Agg backend).

Each (sweep, x, seed) is one :class:`~schedlab.sweeps.points.Point`
calling :func:`instance_point` with every generator parameter, the seed and
the algorithms as inputs; the points run through the one runner
(:func:`schedlab.sweeps.runner.run_points`: this process, a process pool
or Ray, ``jobs`` at once) into an optional results store, so a rerun resumes
and runs only the points not yet stored. Equal instances share a point: the
spread sweep at Δ = 0 is the mix sweep at φ = 1.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.edge.bounds import lower_bounds
from schedlab.edge.compare import run_algorithm
from schedlab.edge.defaults import FIGURE_ALGORITHMS, SweepSpec
from schedlab.edge.generate import generate_instance
from schedlab.edge.milp import HARD_MAX_VARIABLES, solve_milp
from schedlab.edge.verify import verify
from schedlab.errors import InputError, InvariantError

__all__ = ["FIGURE_ALGORITHMS", "SweepSpec", "figure4", "instance_point", "means", "mix_points", "run_sweeps", "spread_points"]
from schedlab.sweeps.points import Point
from schedlab.sweeps.runner import run_points

INSTANCE_POINT = "schedlab.edge.figures:instance_point"
STORE_NAME = "cred"  # the name recorded in the results store's experiment.json


def instance_point(instance: dict[str, Any], algorithms: list[str], optimum_time_limit: float | None = None) -> dict[str, Any]:
    """One instance of a sweep (``generate_instance(**instance)``): its lower bound and every algorithm's active nodes.

    Returns ``{"rows": [{"algorithm", "active_nodes"}, ...], "bounds": {...}}``,
    the lower bound first and the three bounds of :func:`~schedlab.edge.bounds.lower_bounds`
    apart; every schedule is verified, and an infeasible one raises
    :class:`~schedlab.errors.InvariantError`. With ``optimum_time_limit`` the
    MILP runs too (CRED-M's count caps its nodes): a proven optimum is the row
    ``optimum``, and ``optimum_status`` says how the solve ended (``optimal``,
    ``time_limit``, ``too_large``).
    """
    inst = generate_instance(**instance)
    bounds = lower_bounds(inst)
    rows: list[dict[str, Any]] = [{"algorithm": "lower-bound", "active_nodes": bounds["lower_bound"]}]
    nodes: dict[str, int] = {}
    for name in algorithms:
        run = run_algorithm(name, inst)
        if not run.feasible:
            raise InvariantError(f"{name} produced an infeasible schedule: {run.verdict.summary()}")
        nodes[name] = run.verdict.active_nodes
        rows.append({"algorithm": name, "active_nodes": run.verdict.active_nodes})
    out: dict[str, Any] = {"rows": rows, "bounds": bounds, "tasks": int(inst.num_tasks)}
    if optimum_time_limit is not None:
        upper = nodes.get("cred-m")
        res = solve_milp(inst, upper=upper, time_limit=optimum_time_limit, max_variables=HARD_MAX_VARIABLES)
        out["optimum_status"] = res.status
        if res.status == "optimal":
            if res.solution is None or not verify(inst, res.solution).ok:
                raise InvariantError("the MILP's optimal schedule does not verify")
            rows.append({"algorithm": "optimum", "active_nodes": res.optimum})
    return out


def _point(spec: SweepSpec, deadlines: list[int], mix: list[float], seed: int, x: float, sweep: str) -> Point:
    instance = {
        "jobs": spec.jobs,
        "chunks": spec.chunks,
        "chunks_per_job": spec.chunks_per_job,
        "popularity": spec.popularity,
        "deadlines": deadlines,
        "mix": mix,
        "chunks_per_node": spec.chunks_per_node,
        "vms_per_node": spec.vms_per_node,
        "seed": seed,
    }
    inputs: dict[str, Any] = {"instance": instance, "algorithms": list(spec.algorithms)}
    if spec.optimum_time_limit is not None:  # absent otherwise, so points without an optimum keep their ids
        inputs["optimum_time_limit"] = spec.optimum_time_limit
    return Point(INSTANCE_POINT, inputs, {"sweep": sweep, "x": x, "seed": seed})


def spread_points(spec: SweepSpec) -> list[Point]:
    """The spread sweep: deadlines {d1, d1 + Δ}, half of the jobs each (Δ = 0: one class), for each Δ and seed."""
    points = []
    for delta in spec.spreads:
        deadlines = [spec.d1] if delta == 0 else [spec.d1, spec.d1 + delta]
        mix = [1.0] if delta == 0 else [1.0, 1.0]
        for seed in range(spec.seeds):
            points.append(_point(spec, deadlines, mix, seed, delta, "spread"))
    return points


def mix_points(spec: SweepSpec) -> list[Point]:
    """The mix sweep: deadlines {d1, d2} with a share φ of the jobs due at d1 (φ = 0 or 1: one class), for each φ and seed."""
    points = []
    for frac in spec.fractions:
        if frac in (0.0, 1.0):
            deadlines, mix = [spec.d1 if frac == 1.0 else spec.d2], [1.0]
        else:
            deadlines, mix = [spec.d1, spec.d2], [frac, 1.0 - frac]
        for seed in range(spec.seeds):
            points.append(_point(spec, deadlines, mix, seed, frac, "mix"))
    return points


_BROKEN = "scheduler invariant broken: "  # how the runner reports an InvariantError of a point


def run_sweeps(
    sweeps: dict[str, list[Point]],
    store: str | os.PathLike | None = None,
    jobs: int | None = 1,
    backend: str = "local",
    address: str | None = None,
) -> dict[str, pd.DataFrame]:
    """Each sweep's rows (``sweep``, ``x``, ``seed``, ``algorithm``, ``active_nodes``); all points run in one go into ``store``.

    An infeasible schedule is an algorithm's bug: it stops the sweep with
    :class:`~schedlab.errors.InvariantError` naming the point (what finished is kept).
    """
    points = [p for ps in sweeps.values() for p in ps]
    for ps in sweeps.values():  # bad generator options fail here, with their option's name, before anything runs
        if ps:
            generate_instance(**ps[0].inputs["instance"])
    try:
        results = run_points(points, store, name=STORE_NAME, description="CRED Figure 4 instances", jobs=jobs, backend=backend, address=address)
    except InputError as e:
        if e.problem.startswith(_BROKEN):
            raise InvariantError(f"{e.where}: {e.problem.removeprefix(_BROKEN)}") from None
        raise
    out = {}
    done = iter(results)
    for sweep, ps in sweeps.items():
        rows: list[dict[str, Any]] = []
        for p in ps:
            rows += [{"sweep": sweep, "x": p.label["x"], "seed": p.label["seed"], **r} for r in next(done)["rows"]]
        out[sweep] = pd.DataFrame(rows)
    return out


def spread_sweep(spec: SweepSpec, store: str | os.PathLike | None = None, jobs: int | None = 1, backend: str = "local", address: str | None = None) -> pd.DataFrame:
    """The spread sweep's rows (one per instance and algorithm, the lower bound included)."""
    return run_sweeps({"spread": spread_points(spec)}, store, jobs, backend, address)["spread"]


def mix_sweep(spec: SweepSpec, store: str | os.PathLike | None = None, jobs: int | None = 1, backend: str = "local", address: str | None = None) -> pd.DataFrame:
    """The mix sweep's rows (one per instance and algorithm, the lower bound included)."""
    return run_sweeps({"mix": mix_points(spec)}, store, jobs, backend, address)["mix"]


def means(df: pd.DataFrame) -> pd.DataFrame:
    """Mean active nodes per x (rows) and algorithm (columns); the optimum only where every instance at x has it."""
    table = df.pivot_table(index="x", columns="algorithm", values="active_nodes", aggfunc="mean")
    if "optimum" in table.columns:
        counts = df.pivot_table(index="x", columns="algorithm", values="active_nodes", aggfunc="count")
        table.loc[counts["optimum"].reindex(table.index).fillna(0) < counts["lower-bound"], "optimum"] = float("nan")
    return table


_REFERENCE_STYLE: dict[str, dict[str, Any]] = {
    "lower-bound": {"linestyle": "--", "color": "black"},
    "optimum": {"linestyle": ":", "color": "black", "marker": "x"},
}


def _series(table: pd.DataFrame, spec: SweepSpec) -> list[str]:
    """What a plot draws: the algorithms, the lower bound, and the optimum where it was proven."""
    has_optimum = "optimum" in table.columns and bool(table["optimum"].notna().any())
    return [*spec.algorithms, "lower-bound", *(["optimum"] if has_optimum else [])]


def _plot_spread(table: pd.DataFrame, spec: SweepSpec, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from schedlab.metrics.export import atomic_write

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name in _series(table, spec):
        style: dict[str, Any] = _REFERENCE_STYLE.get(name, {"marker": "o"})
        ax.plot(table.index, table[name], label=name, **style)
    ax.set_xlabel(f"d2 − d1 (time slots; d1 = {spec.d1}, half of the jobs each)")
    ax.set_ylabel(f"active nodes (mean of {spec.seeds} instances)")
    ax.set_title("Active nodes vs spread between deadlines")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)


def _plot_mix(table: pd.DataFrame, spec: SweepSpec, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from schedlab.metrics.export import atomic_write

    names = _series(table, spec)
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    x = np.arange(len(table.index))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        ax.bar(x + (k - (len(names) - 1) / 2) * width, table[name], width, label=name, color={"lower-bound": "0.3", "optimum": "0.6"}.get(name))
    ax.set_xticks(x, [f"{f:.0%}" for f in table.index])
    ax.set_xlabel(f"share of jobs due at d1 = {spec.d1} (the rest at d2 = {spec.d2})")
    ax.set_ylabel(f"active nodes (mean of {spec.seeds} instances)")
    ax.set_title("Active nodes vs mix of deadline classes")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)


def _json_means(table: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """Means by algorithm and x; an optimum not proven at every instance of an x is null."""
    return {name: {str(x): (None if pd.isna(v) else float(v)) for x, v in col.items()} for name, col in table.items()}


def figure4(
    spec: SweepSpec,
    out_dir: str | Path,
    store: str | os.PathLike | None = None,
    jobs: int | None = 1,
    backend: str = "local",
    address: str | None = None,
) -> dict[str, Any]:
    """Run both sweeps; write ``spread.{csv,png}``, ``mix.{csv,png}`` and ``figure4.json`` into ``out_dir``.

    The instances run ``jobs`` at once on ``backend`` (:mod:`schedlab.sweeps.runner`)
    into the results store ``store`` (None keeps nothing); a rerun runs only what it does not hold.
    """
    from schedlab.metrics.export import write_json, write_table

    spec.check()
    out = Path(out_dir)
    sweeps = run_sweeps({"spread": spread_points(spec), "mix": mix_points(spec)}, store, jobs, backend, address)
    spread, mix = sweeps["spread"], sweeps["mix"]
    spread_means, mix_means = means(spread), means(mix)
    # Data first, plots next, the JSON summary last: its presence marks a complete set.
    write_table(out / "spread.csv", spread, "csv")
    write_table(out / "mix.csv", mix, "csv")
    _plot_spread(spread_means, spec, out / "spread.png")
    _plot_mix(mix_means, spec, out / "mix.png")
    summary = {
        "spec": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(spec).items()},
        "spread": _json_means(spread_means),
        "mix": _json_means(mix_means),
        "files": ["spread.csv", "spread.png", "mix.csv", "mix.png"],
    }
    write_json(out / "figure4.json", summary)
    return summary
