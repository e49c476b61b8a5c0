"""Sensitivity studies for the DynDL claims that do not reproduce at the paper's stated settings.

Two studies, each a set of :class:`~schedlab.sweeps.points.Point` of
:func:`schedlab.locality.experiments.figure_point` (so they share the ``dyndl``
results store and resume), written to ``sensitivity.md`` / ``.json`` / ``.png``
by :func:`reproduce` (``schedlab reproduce dyndl-sensitivity``):

* **Figure 6 readings.** The paper says DynDLOn's makespan is "30 % smaller
  than DELAY's" with similar data locality on skewed loads (Section 6.1.2) but
  gives neither algorithm's W for its simulations, nor how an online run's
  clock charges the dynamic remote cost. The study runs DynDLOn and DELAY at
  every W in :data:`W_VALUES` under both clocks (``timeline=running``: finished
  remote tasks keep their time; ``model``: the cost model applied so far) at
  α = 10, 20, 40 (β = 100, |T| = 100, |S| = 50, 40 cores, θ = 1), and lists
  every reading — equal W for both (DynDLOn "rolls back to" DELAY's W), or any
  pair of Ws — under which the claim holds at every α.
* **β and the offline algorithms.** The paper says DynDLOff's makespan is "at
  most 20 % lower than other offline algorithms'" at β = 100 and 1000, and "at
  least 30 % lower" at β = 10,000. The study runs the offline algorithms (and
  LTFPA, which the paper groups with them) over β = 100 … 30,000 at the other
  Figure 5 settings, with LIST both as the paper describes it (predicting the
  dynamic remote cost) and without the dynamic cost, and LTFPA with two
  stealing thresholds, and checks both statements for every reading.

Every verdict is computed from the runs. ``quick=True`` shrinks the instances
and seeds for tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.atomic import all_or_nothing
from schedlab.locality.experiments import FIGURE_POINT, REPLICAS, STORE_NAME
from schedlab.metrics.export import atomic_write, pipe_table, write_json
from schedlab.sweeps.points import Point
from schedlab.sweeps.runner import run_points

__all__ = ["fig6_analysis", "beta_analysis", "reproduce"]

W_VALUES = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0)
TIMELINES = ("running", "model")
ALPHAS = (10, 20, 40)
BETAS = (100, 300, 1000, 3000, 10000, 30000)
SEEDS = 10
PAPER_FIG6_REDUCTION = 0.30  # "DynDLOn's makespan was 30% smaller than DELAY's"
SIMILAR_LOCALITY = 0.25  # "similar data locality": remote tasks within 25 % of DELAY's (our threshold)
SMALL_BETA_MAX = 0.20  # "at most 20% lower than other offline algorithms'" (beta = 100, 1000)
LARGE_BETA_MIN = 0.30  # "at least 30% lower" (beta = 10,000)
BASE = {"tasks": 100, "servers": 50, "core_num": 40, "alpha": 0, "beta": 100, "theta": 1.0, "replicas": REPLICAS}
QUICK_BASE = {"tasks": 30, "servers": 10, "core_num": 4, "alpha": 0, "beta": 100, "theta": 1.0, "replicas": REPLICAS}

# The offline readings of the beta study: series name -> (algorithm, params, what it is).
OFFLINE_SERIES: dict[str, tuple[str, dict[str, Any] | None, str]] = {
    "dyndloff": ("dyndloff", None, "DynDLOff"),
    "list": ("list", None, "LIST, dynamic remote cost (the paper's text)"),
    "list-static": ("list", {"remote_cost": "static"}, "LIST, static remote cost g(1)"),
    "ltfpa": ("ltfpa", None, "LTFPA, steals at once (threshold 0)"),
    "ltfpa-t3": ("ltfpa", {"threshold": 3}, "LTFPA, steals from queues over 3 tasks"),
    "hta": ("hta", {"time_limit": 120.0}, "HTA"),
    "bar": ("bar", None, "BAR"),
}
# Readings of "the other offline algorithms": one LIST and one LTFPA each, with HTA and BAR.
OFFLINE_READINGS = {f"{lst} + {lt}": (lst, lt, "hta", "bar") for lst, lt in itertools.product(("list", "list-static"), ("ltfpa", "ltfpa-t3"))}

Say = Callable[[str], None]


def _online_series() -> list[dict[str, Any]]:
    return [
        {"series": f"{algo}|{tl}|{w:g}", "algorithm": algo, "params": {"delay_threshold": w, "timeline": tl}}
        for algo in ("dyndlon", "delay")
        for tl in TIMELINES
        for w in W_VALUES
    ]


def fig6_points(quick: bool = False) -> list[Point]:
    base = QUICK_BASE if quick else BASE
    seeds = 2 if quick else SEEDS
    return [
        Point(FIGURE_POINT, {"instance": {**base, "alpha": a, "beta": 100}, "seeds": seeds, "series": _online_series()}, {"study": "fig6", "alpha": a})
        for a in ALPHAS
    ]


def beta_points(quick: bool = False) -> list[Point]:
    base = QUICK_BASE if quick else BASE
    seeds = 2 if quick else SEEDS
    series = [{"series": name, "algorithm": algo, "params": params} for name, (algo, params, _) in OFFLINE_SERIES.items()]
    betas = (100, 10000) if quick else BETAS
    return [Point(FIGURE_POINT, {"instance": {**base, "beta": b}, "seeds": seeds, "series": series}, {"study": "beta", "beta": b}) for b in betas]


def _means(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per series: mean makespan and remote tasks over the seeds (a timed-out run makes the mean NaN)."""
    out: dict[str, dict[str, list[float]]] = {}
    for r in result["rows"]:
        m = out.setdefault(r["algorithm"], {"makespan": [], "remote_tasks": []})
        m["makespan"].append(np.nan if r["makespan"] is None else r["makespan"])
        m["remote_tasks"].append(np.nan if r["remote_tasks"] is None else r["remote_tasks"])
    return {k: {"makespan": float(np.mean(v["makespan"])), "remote_tasks": float(np.mean(v["remote_tasks"]))} for k, v in out.items()}


def _reduction(ours: float, other: float) -> float:
    return 1.0 - ours / other


def fig6_analysis(points: list[Point], results: list[dict[str, Any]]) -> dict[str, Any]:
    """For every reading (timeline, DynDLOn's W, DELAY's W): the reduction vs DELAY and the locality ratio at each alpha."""
    by_alpha = {p.label["alpha"]: _means(r) for p, r in zip(points, results, strict=True)}
    readings: list[dict[str, Any]] = []
    for tl, w_on, w_delay in itertools.product(TIMELINES, W_VALUES, W_VALUES):
        cells: dict[int, dict[str, float]] = {}
        for a, m in by_alpha.items():
            on, de = m[f"dyndlon|{tl}|{w_on:g}"], m[f"delay|{tl}|{w_delay:g}"]
            locality = on["remote_tasks"] / de["remote_tasks"] if de["remote_tasks"] else (1.0 if on["remote_tasks"] == 0 else np.inf)
            cells[a] = {"reduction": _reduction(on["makespan"], de["makespan"]), "locality_ratio": float(locality)}
        holds = all(c["reduction"] >= PAPER_FIG6_REDUCTION and abs(c["locality_ratio"] - 1) <= SIMILAR_LOCALITY for c in cells.values())
        readings.append({"timeline": tl, "w_dyndlon": w_on, "w_delay": w_delay, "alphas": cells, "holds": holds})
    equal = [r for r in readings if r["w_dyndlon"] == r["w_delay"]]
    best_equal = max(equal, key=lambda r: min(c["reduction"] for c in r["alphas"].values()))
    return {"means": {str(a): m for a, m in by_alpha.items()}, "readings": readings,
            "holding": [r for r in readings if r["holds"]], "holding_equal_w": [r for r in equal if r["holds"]], "best_equal_w": best_equal}


def beta_analysis(points: list[Point], results: list[dict[str, Any]]) -> dict[str, Any]:
    """DynDLOff's reduction against every other offline series at every beta, and both statements per reading."""
    by_beta = {p.label["beta"]: _means(r) for p, r in zip(points, results, strict=True)}
    reductions = {str(b): {s: _reduction(m["dyndloff"]["makespan"], m[s]["makespan"]) for s in OFFLINE_SERIES if s != "dyndloff"} for b, m in by_beta.items()}
    verdicts = {}
    for name, others in OFFLINE_READINGS.items():
        small = [reductions[str(b)][o] for b in by_beta if b <= 1000 for o in others]
        large = [reductions[str(b)][o] for b in by_beta if b == 10000 for o in others]
        verdicts[name] = {
            "small_beta_max": max(small),
            "small_beta_holds": max(small) <= SMALL_BETA_MAX,
            "large_beta_min": min(large) if large else None,
            "large_beta_holds": bool(large) and min(large) >= LARGE_BETA_MIN,
        }
        verdicts[name]["both_hold"] = verdicts[name]["small_beta_holds"] and verdicts[name]["large_beta_holds"]
    return {"means": {str(b): m for b, m in by_beta.items()}, "reductions": reductions, "readings": verdicts}


def _pct(x: float) -> str:
    return f"{x:+.0%}" if np.isfinite(x) else "-"


def markdown(fig6: dict[str, Any], beta: dict[str, Any], seeds: int) -> str:
    def yes(v: bool) -> str:
        return "yes" if v else "no"

    def cells(r: dict[str, Any]) -> list[str]:
        return [f"{_pct(r['alphas'][a]['reduction'])} ({r['alphas'][a]['locality_ratio']:.2f})" for a in ALPHAS]

    equal = [r for r in fig6["readings"] if r["w_dyndlon"] == r["w_delay"]]
    lines = ["# DynDL sensitivity studies", "",
             "Written by `schedlab reproduce dyndl-sensitivity`; every number and verdict is computed from the runs "
             f"(mean of {seeds} generated instances per point). The README explains them.", "",
             "## Figure 6: DynDLOn against DELAY, by W and by the online clock", "",
             f"Reduction of DynDLOn's makespan against DELAY's at the **same W** (the paper: 30 % smaller, similar locality; "
             f"`holds` needs >= {PAPER_FIG6_REDUCTION:.0%} and remote tasks within {SIMILAR_LOCALITY:.0%} of DELAY's at every alpha).", "",
             pipe_table(["clock", "W", *(f"alpha={a}: reduction (remote ratio)" for a in ALPHAS), "holds"],
                        ([r["timeline"], f"{r['w_dyndlon']:g}", *cells(r), yes(r["holds"])] for r in equal))]
    hold = fig6["holding"]
    lines += ["", f"Readings with **different W** for the two algorithms under which the claim holds at every alpha: {len(hold)} of {len(fig6['readings'])}."]
    if hold:
        lines += ["", pipe_table(["clock", "DynDLOn W", "DELAY W", *(f"alpha={a}" for a in ALPHAS)],
                                 ([r["timeline"], f"{r['w_dyndlon']:g}", f"{r['w_delay']:g}", *cells(r)] for r in hold))]
    means = fig6["means"]
    lines += ["", "Mean makespan (remote tasks) per series:", "",
              pipe_table(["series", *(f"alpha={a}" for a in ALPHAS)],
                         ([s.replace("|", " "), *(f"{means[str(a)][s]['makespan']:.2f} ({means[str(a)][s]['remote_tasks']:.1f})" for a in ALPHAS)]
                          for s in means[str(ALPHAS[0])]))]
    betas = list(beta["reductions"])
    others = [(s, what) for s, (_, _, what) in OFFLINE_SERIES.items() if s != "dyndloff"]
    lines += ["", "## Beta: DynDLOff against the other offline algorithms", "",
              "DynDLOff's makespan reduction against each reading of each algorithm (the paper: at most 20 % at beta = 100 and 1000, "
              "at least 30 % at beta = 10,000).", "",
              pipe_table(["algorithm", *(f"beta={b}" for b in betas)], ([what, *(_pct(beta["reductions"][b][s]) for b in betas)] for s, what in others))]
    lines += ["", "Mean makespan (remote tasks):", "",
              pipe_table(["algorithm", *(f"beta={b}" for b in betas)],
                         ([what, *(f"{beta['means'][b][s]['makespan']:.2f} ({beta['means'][b][s]['remote_tasks']:.1f})" for b in betas)]
                          for s, (_, _, what) in OFFLINE_SERIES.items()))]
    lines += ["", "Both statements, for each reading of \"the other offline algorithms\" (with HTA and BAR):", "",
              pipe_table(["reading", "largest reduction at beta <= 1000", "<= 20 %?", "smallest at beta = 10,000", ">= 30 %?", "both"],
                         ([name, f"{v['small_beta_max']:.0%}", yes(v["small_beta_holds"]),
                           "-" if v["large_beta_min"] is None else f"{v['large_beta_min']:.0%}", yes(v["large_beta_holds"]), yes(v["both_hold"])]
                          for name, v in beta["readings"].items()))]
    return "\n".join(lines) + "\n"


def plot(fig6: dict[str, Any], beta: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for tl, style in zip(TIMELINES, ("-", "--"), strict=True):
        for a in ALPHAS:
            ys = [next(r for r in fig6["readings"] if r["timeline"] == tl and r["w_dyndlon"] == w and r["w_delay"] == w)["alphas"][a]["reduction"] for w in W_VALUES]
            ax1.plot(W_VALUES, [100 * y for y in ys], style, marker="o", label=f"alpha={a}, clock={tl}")
    ax1.axhline(100 * PAPER_FIG6_REDUCTION, color="black", linestyle=":", label="paper: 30 %")
    ax1.set_xlabel("W (both algorithms)")
    ax1.set_ylabel("DynDLOn below DELAY (%)")
    ax1.set_title("Figure 6: DynDLOn vs DELAY at equal W", fontsize="medium")
    ax1.legend(fontsize="x-small")
    ax1.grid(alpha=0.3)
    betas = [int(b) for b in beta["reductions"]]
    for s, (_, _, what) in OFFLINE_SERIES.items():
        if s != "dyndloff":
            ax2.plot(betas, [100 * beta["reductions"][str(b)][s] for b in betas], marker="o", label=what)
    ax2.axhline(100 * SMALL_BETA_MAX, color="black", linestyle=":", label="paper: <= 20 % (beta <= 1000)")
    ax2.axhline(100 * LARGE_BETA_MIN, color="black", linestyle="--", label="paper: >= 30 % (beta = 10,000)")
    ax2.set_xscale("log")
    ax2.set_xlabel("beta (initial-load range)")
    ax2.set_ylabel("DynDLOff below the algorithm (%)")
    ax2.set_title("DynDLOff vs the other offline algorithms", fontsize="medium")
    ax2.legend(fontsize="x-small")
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)


def reproduce(out: str | Path, *, quick: bool = False, store: str | Path | None = None, jobs: int | None = 1, progress: Say | None = None) -> Path:
    """Run both studies into ``out`` (a folder: ``sensitivity.md``, ``.json``, ``.png``) and return the Markdown file."""
    say = progress or (lambda _line: None)
    out = Path(out)
    f6, bp = fig6_points(quick), beta_points(quick)
    say(f"Figure 6 readings: {len(f6)} points x {len(_online_series())} series; beta: {len(bp)} points …")
    results = run_points([*f6, *bp], store, name=STORE_NAME, description="DynDL (Jin et al. 2018) sensitivity studies", jobs=jobs)
    fig6 = fig6_analysis(f6, results[: len(f6)])
    beta = beta_analysis(bp, results[len(f6):])
    seeds = 2 if quick else SEEDS
    path = out / "sensitivity.md"
    with all_or_nothing():  # the three files land together, or none does
        write_json(out / "sensitivity.json", {"seeds": seeds, "fig6": fig6, "beta": beta})
        plot(fig6, beta, out / "sensitivity.png")
        atomic_write(path, lambda tmp: Path(tmp).write_text(markdown(fig6, beta, seeds), encoding="utf-8"))
    return path
