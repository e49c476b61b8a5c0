"""The CRED report (``reports/edge``, ``schedlab reproduce cred``): Figure 4, optimality gaps, the regime map, speed.

The report (a CS 528 course project, "Placement and Scheduling Data Intensive
Jobs in Edge-Cloud System") gives its Figure 4 as
two plots without instances or numbers, and cites the CRED paper (Xu et al.,
TPDS 2017) for the claims that CRED cuts first-fit's active servers "by up to
47 %" and is "near-optimal". Neither text gives an instance generator or the
first-fit it compares against, so what is measured here is stated with its
setup, and every "holds?" below is computed from the runs:

* ``figure4/`` — the two sweeps of Figure 4 (:mod:`schedlab.edge.figures`) on
  instances of 400 jobs and 1,000 chunks in the regime where CRED pays;
* ``figure4-small/`` — the same sweeps at a size the MILP solves (15 jobs, 40
  chunks), with the proven optimum drawn where every instance was solved;
* ``gaps`` — every heuristic against the MILP optimum on random small instances
  (sizes, deadline classes, B and S drawn per instance: :func:`gap_instance`);
* ``regime`` — the map of where CRED's grouping pays: first-fit's and CRED-M's
  active nodes over chunk-popularity skew × storage per node B (S = 4), with one
  and with three deadline classes, beside the lower bound and the balance
  between the storage bound and the slot bound;
* ``speed`` — wall time of every heuristic (and of verifying its schedule) at
  1,000 jobs and 10,000 chunks, measured in this process;
* ``summary.md`` — the tables and the claims.

Every instance is a :class:`~schedlab.sweeps.points.Point` of
:func:`schedlab.edge.figures.instance_point` run into the ``cred`` results
store, so a rerun runs only what is missing; the timings of ``speed`` are
measured anew each time (they are the only numbers that move between runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.atomic import all_or_nothing
from schedlab.edge.compare import HEURISTICS, run_algorithm
from schedlab.edge.defaults import SweepSpec
from schedlab.edge.figures import INSTANCE_POINT, STORE_NAME, figure4
from schedlab.edge.generate import generate_instance
from schedlab.errors import InvariantError
from schedlab.metrics.export import atomic_write, pipe_table, write_json, write_table
from schedlab.sweeps.points import Point
from schedlab.sweeps.runner import run_points

Say = Callable[[str], None]

#: Figure 4 at a size the MILP proves within the limit (about a second per instance here).
SMALL_FIGURE = SweepSpec(jobs=15, chunks=40, chunks_per_job="uniform:2,6", chunks_per_node=6, vms_per_node=2, d1=4, d2=8,
                         spreads=(0, 1, 2, 4, 8, 12), optimum_time_limit=60.0)
MILP_TIME_LIMIT = 60.0
#: "near-optimal" read as CRED-M's mean ratio to the proven optimum at most this (our threshold; the paper gives none).
NEAR_OPTIMAL_RATIO = 1.05
PAPER_FIRST_FIT_REDUCTION = 0.47  # the CRED paper's abstract: "reducing ... active servers by up to 47 percent"


@dataclass(frozen=True)
class RegimeSpec:
    """The regime map: popularity × B at fixed S, for each deadline setting, ``seeds`` instances per cell."""

    jobs: int = 400
    chunks: int = 1000
    chunks_per_job: str = "uniform:5,15"
    vms_per_node: int = 4
    popularities: tuple[float, ...] = (0.0, 0.8, 1.2, 1.6, 2.0)
    chunks_per_node: tuple[int, ...] = (8, 16, 32, 64, 128)
    deadlines: tuple[str, ...] = ("30", "10,20,30")
    seeds: int = 3


@dataclass(frozen=True)
class ReportSpec:
    """Everything the report runs; :data:`QUICK` is the seconds-long check of the whole path."""

    figure: SweepSpec = SweepSpec()
    small_figure: SweepSpec = SMALL_FIGURE
    gap_instances: int = 100
    regime: RegimeSpec = RegimeSpec()
    speed_jobs: int = 1000
    speed_chunks: int = 10000
    speed_repeat: int = 3


QUICK = ReportSpec(
    figure=SweepSpec(jobs=20, chunks=40, seeds=1, spreads=(0, 5), fractions=(0.0, 0.5, 1.0)),
    small_figure=replace(SMALL_FIGURE, jobs=8, chunks=16, seeds=1, spreads=(0, 4), fractions=(0.0, 0.5, 1.0)),
    gap_instances=4,
    regime=RegimeSpec(jobs=40, chunks=100, popularities=(0.0, 1.6), chunks_per_node=(8, 32), seeds=1),
    speed_jobs=100,
    speed_chunks=1000,
    speed_repeat=1,
)


def gap_instance(seed: int) -> dict[str, Any]:
    """The generator options of the ``seed``-th small instance of the gap table (6–15 jobs, 8–20 chunks,
    1–3 deadline classes in 2..10, B in 2..6, S in 1..4, popularity 1.0)."""
    r = np.random.default_rng(1000 + seed)
    classes = int(r.integers(1, 4))
    deadlines = sorted(int(d) for d in r.choice(np.arange(2, 11), classes, replace=False))
    return {
        "jobs": int(r.integers(6, 16)),
        "chunks": int(r.integers(8, 21)),
        "chunks_per_job": "uniform:2,8",
        "popularity": 1.0,
        "deadlines": deadlines,
        "chunks_per_node": int(r.integers(2, 7)),
        "vms_per_node": int(r.integers(1, 5)),
        "seed": seed,
    }


def gap_points(count: int) -> list[Point]:
    return [
        Point(INSTANCE_POINT, {"instance": gap_instance(seed), "algorithms": list(HEURISTICS), "optimum_time_limit": MILP_TIME_LIMIT}, {"part": "gaps", "seed": seed})
        for seed in range(count)
    ]


def regime_points(spec: RegimeSpec) -> list[Point]:
    points = []
    for deadlines in spec.deadlines:
        for pop in spec.popularities:
            for B in spec.chunks_per_node:
                for seed in range(spec.seeds):
                    instance = {"jobs": spec.jobs, "chunks": spec.chunks, "chunks_per_job": spec.chunks_per_job, "popularity": pop,
                                "deadlines": deadlines, "chunks_per_node": B, "vms_per_node": spec.vms_per_node, "seed": seed}
                    label = {"part": "regime", "deadlines": deadlines, "popularity": pop, "chunks_per_node": B, "seed": seed}
                    points.append(Point(INSTANCE_POINT, {"instance": instance, "algorithms": ["cred-m", "first-fit", "cred-s-per-deadline"]}, label))
    return points


def _nodes(result: dict[str, Any]) -> dict[str, int]:
    return {r["algorithm"]: r["active_nodes"] for r in result["rows"]}


def gap_table(points: list[Point], results: list[dict[str, Any]]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per instance the heuristics' nodes and the optimum; per heuristic the distribution of its gap to the optimum."""
    rows = []
    for p, res in zip(points, results, strict=True):
        n = _nodes(res)
        rows.append({"seed": p.label["seed"], **p.inputs["instance"], "deadlines": ",".join(map(str, p.inputs["instance"]["deadlines"])),
                     "status": res["optimum_status"], **n})
    df = pd.DataFrame(rows)
    solved = df[df["status"] == "optimal"]
    if "optimum" not in solved:  # no instance solved within the limit
        solved = solved.assign(optimum=pd.Series(dtype=float))
    stats: dict[str, Any] = {"instances": len(df), "solved": len(solved),
                             "lower_bound_tight": int((solved["lower-bound"] == solved["optimum"]).sum())}
    for name in HEURISTICS:
        extra = solved[name] - solved["optimum"]
        ratio = solved[name] / solved["optimum"]
        stats[name] = {
            "optimal": int((extra == 0).sum()),
            "extra_nodes": {str(k): int(v) for k, v in extra.value_counts().sort_index().items()},
            "mean_ratio": float(ratio.mean()) if len(solved) else None,
            "max_ratio": float(ratio.max()) if len(solved) else None,
        }
    return df, stats


def regime_table(points: list[Point], results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per cell (deadlines, popularity, B): mean nodes of each algorithm and of the bounds over the seeds."""
    rows = []
    for p, res in zip(points, results, strict=True):
        lab = p.label
        rows.append({"deadlines": lab["deadlines"], "popularity": lab["popularity"], "chunks_per_node": lab["chunks_per_node"], "seed": lab["seed"],
                     **_nodes(res), "slots_bound": res["bounds"]["slots"], "storage_bound": res["bounds"]["storage"]})
    df = pd.DataFrame(rows)
    cells = df.groupby(["deadlines", "popularity", "chunks_per_node"], sort=False).mean(numeric_only=True).drop(columns="seed").reset_index()
    cells["first_fit_over_cred_m"] = cells["first-fit"] / cells["cred-m"]
    cells["cred_m_over_bound"] = cells["cred-m"] / cells["lower-bound"]
    cells["first_fit_over_bound"] = cells["first-fit"] / cells["lower-bound"]
    cells["storage_over_slots"] = cells["storage_bound"] / cells["slots_bound"]  # > 1: storage binds; < 1: slots bind
    return cells


def _plot_regime(cells: pd.DataFrame, spec: RegimeSpec, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    settings = list(spec.deadlines)
    fig, axes = plt.subplots(1, len(settings), figsize=(5.2 * len(settings), 4.2), squeeze=False)
    norm = TwoSlopeNorm(vmin=0.7, vcenter=1.0, vmax=1.4)
    im = None
    for ax, deadlines in zip(axes[0], settings, strict=True):
        sub = cells[cells["deadlines"] == deadlines]
        grid = sub.pivot(index="popularity", columns="chunks_per_node", values="first_fit_over_cred_m").reindex(index=list(spec.popularities), columns=list(spec.chunks_per_node))
        balance = sub.groupby("chunks_per_node")["storage_over_slots"].mean().reindex(list(spec.chunks_per_node))
        im = ax.imshow(grid.to_numpy(), cmap="RdBu", norm=norm, origin="lower", aspect="auto")
        for (i, j), v in np.ndenumerate(grid.to_numpy()):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(grid.columns)), [f"{b}\n({r:.1f})" for b, r in zip(grid.columns, balance, strict=True)])
        ax.set_yticks(range(len(grid.index)), [f"{p:g}" for p in grid.index])
        ax.set_xlabel("B, chunks per node\n(storage bound ÷ slot bound)")
        ax.set_ylabel("chunk popularity skew (Zipf exponent)")
        ax.set_title(f"deadlines {deadlines}: first-fit ÷ CRED-M nodes", fontsize="medium")
    assert im is not None
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="> 1: CRED-M needs fewer nodes")
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight"))
    plt.close(fig)


def speed(jobs: int, chunks: int, repeat: int) -> dict[str, Any]:
    """Best-of-``repeat`` seconds of each heuristic and of verifying its schedule, on one instance of ``jobs`` × ``chunks``."""
    params: dict[str, Any] = {"jobs": jobs, "chunks": chunks, "chunks_per_job": "uniform:10,50", "popularity": 0.8, "deadlines": "20,40,60",
              "chunks_per_node": 64, "vms_per_node": 8, "seed": 1}
    inst = generate_instance(**params)
    out: dict[str, Any] = {"instance": params, "tasks": int(inst.num_tasks), "algorithms": {}}
    for name in HEURISTICS:
        runs = [run_algorithm(name, inst) for _ in range(repeat)]
        if not all(r.feasible for r in runs):
            raise InvariantError(f"{name} produced an infeasible schedule on the speed instance")
        out["algorithms"][name] = {"active_nodes": runs[0].verdict.active_nodes, "seconds": round(min(r.seconds for r in runs), 4),
                                   "verify_seconds": round(min(r.verify_seconds for r in runs), 4)}
    return out


def _monotone(values: list[float], rising: bool) -> bool:
    steps = np.diff(values)
    return bool((steps >= -1e-9).all() if rising else (steps <= 1e-9).all())


def claims(fig: dict[str, Any], small: dict[str, Any], gaps: dict[str, Any], cells: pd.DataFrame, reuse: dict[str, int]) -> list[dict[str, str]]:
    """The report's and the CRED paper's claims, each with what was measured and a computed verdict."""
    spread = list(fig["spread"]["cred-m"].values())
    mix = list(fig["mix"]["cred-m"].values())
    best = cells.loc[cells["first_fit_over_cred_m"].idxmax()]
    reduction = 1 - 1 / float(best["first_fit_over_cred_m"])
    cm = gaps["cred-m"]
    near = cm["mean_ratio"] is not None and cm["mean_ratio"] <= NEAR_OPTIMAL_RATIO
    return [
        {"claim": "reusing active nodes (CRED-M) needs fewer nodes than CRED-S deadline by deadline", "source": "report, Section 4 and Figure 3",
         "measured": f"CRED-M <= CRED-S per deadline on {reuse['le']} of {reuse['instances']} multi-deadline instances (fewer on {reuse['lt']})",
         "holds": "yes" if reuse["le"] == reuse["instances"] else "no"},
        {"claim": "fewer active nodes as d2 - d1 grows (Figure 4, line chart; the shape is our reading, the report gives no numbers)", "source": "report, Figure 4",
         "measured": "CRED-M means " + " → ".join(f"{v:.1f}" for v in spread), "holds": "yes" if _monotone(spread, rising=False) else "no"},
        {"claim": "more active nodes as the share of d1-type jobs grows (Figure 4, bar chart; our reading)", "source": "report, Figure 4",
         "measured": "CRED-M means " + " → ".join(f"{v:.1f}" for v in mix), "holds": "yes" if _monotone(mix, rising=True) else "no"},
        {"claim": "CRED reduces first-fit's active servers by up to 47 %", "source": "CRED paper, abstract",
         "measured": f"at most {reduction:.0%} over the regime map (deadlines {best['deadlines']}, popularity {best['popularity']:g}, B = {int(best['chunks_per_node'])})",
         "holds": "yes" if reduction >= PAPER_FIRST_FIT_REDUCTION else "no"},
        {"claim": f"CRED is near-optimal (read as: mean ratio to the MILP optimum <= {NEAR_OPTIMAL_RATIO})", "source": "CRED paper, abstract",
         "measured": "no instance solved" if cm["mean_ratio"] is None else
         f"CRED-M mean ratio {cm['mean_ratio']:.3f}, max {cm['max_ratio']:.3f}, optimal on {cm['optimal']} of {gaps['solved']}",
         "holds": "yes" if near else "no"},
    ]


def _reuse_counts(frames: list[pd.DataFrame]) -> dict[str, int]:
    """CRED-M against CRED-S per deadline on every instance with several deadline classes."""
    le = lt = n = 0
    for df in frames:
        wide = df.pivot_table(index=[c for c in df.columns if c not in ("algorithm", "active_nodes")], columns="algorithm", values="active_nodes")
        if "cred-s-per-deadline" not in wide:
            continue
        wide = wide.dropna(subset=["cred-m", "cred-s-per-deadline"])
        le += int((wide["cred-m"] <= wide["cred-s-per-deadline"]).sum())
        lt += int((wide["cred-m"] < wide["cred-s-per-deadline"]).sum())
        n += len(wide)
    return {"le": le, "lt": lt, "instances": n}


def _md_table(df: pd.DataFrame) -> str:
    return pipe_table(df.columns, df.itertuples(index=False))


def _summary_md(spec: ReportSpec, fig: dict[str, Any], small: dict[str, Any], gaps: dict[str, Any], cells: pd.DataFrame,
                speed_doc: dict[str, Any], claim_rows: list[dict[str, str]]) -> str:
    def fig_table(doc: dict[str, Any], sweep: str) -> str:
        names = list(doc[sweep])
        xs = list(doc[sweep][names[0]])
        rows = [[x, *("-" if doc[sweep][n][x] is None else f"{doc[sweep][n][x]:.1f}" for n in names)] for x in xs]
        return _md_table(pd.DataFrame(rows, columns=["x", *names]))

    lines = ["# CRED: computed summary", "",
             "Written by `schedlab reproduce cred` from the runs; every number and every \"holds?\" below is computed. "
             "The narrative is in README.md.", "", "## Claims", "",
             _md_table(pd.DataFrame(claim_rows)[["claim", "source", "measured", "holds"]]), ""]
    f, s = spec.figure, spec.small_figure
    lines += [f"## Figure 4 ({f.jobs} jobs, {f.chunks} chunks, {f.chunks_per_job} chunks per job, popularity {f.popularity:g}, "
              f"B = {f.chunks_per_node}, S = {f.vms_per_node}; mean of {f.seeds} instances)", "",
              f"Spread (x = d2 − d1, d1 = {f.d1}, half of the jobs each):", "", fig_table(fig, "spread"), "",
              f"Mix (x = share of jobs due at d1 = {f.d1}, the rest at d2 = {f.d2}):", "", fig_table(fig, "mix"), ""]
    lines += [f"## Figure 4 at a size the MILP solves ({s.jobs} jobs, {s.chunks} chunks, B = {s.chunks_per_node}, S = {s.vms_per_node}, "
              f"d1 = {s.d1}; optimum shown where proven on every instance within {s.optimum_time_limit:g} s)", "",
              "Spread:", "", fig_table(small, "spread"), "", f"Mix (d2 = {s.d2}):", "", fig_table(small, "mix"), ""]
    rows = []
    for name in HEURISTICS:
        g = gaps[name]
        extra = ", ".join(f"+{k}: {v}" for k, v in g["extra_nodes"].items())
        ratios = ("-", "-") if g["mean_ratio"] is None else (f"{g['mean_ratio']:.3f}", f"{g['max_ratio']:.3f}")
        rows.append([name, f"{g['optimal']}/{gaps['solved']}", *ratios, extra])
    lines += [f"## Optimality gaps ({gaps['solved']} of {gaps['instances']} random small instances solved to optimality; "
              f"the lower bound equals the optimum on {gaps['lower_bound_tight']})", "",
              _md_table(pd.DataFrame(rows, columns=["algorithm", "optimal", "mean ratio", "max ratio", "nodes above the optimum: instances"])), ""]
    r = spec.regime
    lines += [f"## Regime map ({r.jobs} jobs, {r.chunks} chunks, {r.chunks_per_job} chunks per job, S = {r.vms_per_node}; mean of {r.seeds} instances per cell)", "",
              "`ff/cm` is first-fit's nodes over CRED-M's (> 1: CRED-M needs fewer); `cm/LB` and `ff/LB` are each over the lower bound; "
              "`storage/slots` is the storage bound over the slot bound (> 1: storage binds).", ""]
    for deadlines in r.deadlines:
        sub = cells[cells["deadlines"] == deadlines]
        header = ["popularity", *[f"B={b}" for b in r.chunks_per_node]]
        rows = []
        for pop in r.popularities:
            line = [f"{pop:g}"]
            for b in r.chunks_per_node:
                c = sub[(sub["popularity"] == pop) & (sub["chunks_per_node"] == b)].iloc[0]
                line.append(f"{c['first_fit_over_cred_m']:.2f} ({c['cred_m_over_bound']:.2f} / {c['first_fit_over_bound']:.2f})")
            rows.append(line)
        balance = sub.groupby("chunks_per_node", sort=False)["storage_over_slots"].mean()
        rows.append(["storage/slots", *[f"{balance[b]:.2f}" for b in r.chunks_per_node]])
        lines += [f"Deadlines {deadlines} — ff/cm (cm/LB / ff/LB):", "", _md_table(pd.DataFrame(rows, columns=header)), ""]
    sp = speed_doc
    rows = [[n, v["active_nodes"], f"{v['seconds']:.3f}", f"{v['verify_seconds']:.3f}"] for n, v in sp["algorithms"].items()]
    inst = sp["instance"]
    lines += [f"## Speed ({inst['jobs']} jobs, {inst['chunks']} chunks, {sp['tasks']} tasks, deadlines {inst['deadlines']}, "
              f"B = {inst['chunks_per_node']}, S = {inst['vms_per_node']}; best of {spec.speed_repeat}, measured on the machine that wrote this)", "",
              _md_table(pd.DataFrame(rows, columns=["algorithm", "active nodes", "seconds", "verify seconds"])), ""]
    return "\n".join(lines)


def reproduce(out: str | Path, *, quick: bool = False, store: str | Path | None = None, jobs: int | None = 2, backend: str = "local",
              address: str | None = None, progress: Say | None = None) -> Path:
    """Run every part into ``out`` (default ``reports/edge``) and return its ``summary.md``."""
    say = progress or (lambda _line: None)
    spec = QUICK if quick else ReportSpec()
    out = Path(out)
    kw: dict[str, Any] = {"store": store, "jobs": jobs, "backend": backend, "address": address}
    say("Figure 4 …")
    fig = figure4(spec.figure, out / "figure4", **kw)
    say("Figure 4 with the MILP optimum (small instances) …")
    small = figure4(spec.small_figure, out / "figure4-small", **kw)
    say(f"optimality gaps on {spec.gap_instances} small instances …")
    gp = gap_points(spec.gap_instances)
    gap_results = run_points(gp, store, name=STORE_NAME, description="CRED instances", jobs=jobs, backend=backend, address=address)
    gap_df, gaps = gap_table(gp, gap_results)
    say("regime map …")
    rp = regime_points(spec.regime)
    regime_results = run_points(rp, store, name=STORE_NAME, description="CRED instances", jobs=jobs, backend=backend, address=address)
    cells = regime_table(rp, regime_results)
    say(f"speed at {spec.speed_jobs} jobs, {spec.speed_chunks} chunks …")
    speed_doc = speed(spec.speed_jobs, spec.speed_chunks, spec.speed_repeat)
    # the Figure 4 instances with two deadline classes: spread x > 0, mix 0 < x < 1
    frames = [pd.read_csv(out / d / "spread.csv").query("x != 0") for d in ("figure4", "figure4-small")]
    frames += [pd.read_csv(out / d / "mix.csv").query("x != 0 and x != 1") for d in ("figure4", "figure4-small")]
    regime_long = pd.DataFrame([{"deadlines": p.label["deadlines"], "popularity": p.label["popularity"], "chunks_per_node": p.label["chunks_per_node"],
                                 "seed": p.label["seed"], **r} for p, res in zip(rp, regime_results, strict=True) for r in res["rows"]])
    reuse = _reuse_counts([*frames, regime_long[regime_long["deadlines"].str.contains(",")]])
    claim_rows = claims(fig, small, gaps, cells, reuse)
    with all_or_nothing():  # the report's files land together, or none does
        write_table(out / "gaps.csv", gap_df, "csv")
        write_table(out / "regime.csv", cells.round(4), "csv")
        _plot_regime(cells, spec.regime, out / "regime.png")
        write_json(out / "summary.json", {
            "spec": {"figure": asdict(spec.figure), "small_figure": asdict(spec.small_figure), "gap_instances": spec.gap_instances, "regime": asdict(spec.regime)},
            "gaps": gaps, "reuse": reuse, "claims": claim_rows, "speed": speed_doc,
        })
        path = out / "summary.md"
        atomic_write(path, lambda tmp: Path(tmp).write_text(_summary_md(spec, fig, small, gaps, cells, speed_doc, claim_rows), encoding="utf-8"))
    return path
