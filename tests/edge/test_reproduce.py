"""The CRED report: Figure 4 with the MILP optimum, the gap table, the regime map and computed claims."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

import schedlab.edge.figures as fig
from schedlab.cli import main
from schedlab.edge import reproduce as rep
from schedlab.edge.compare import run_algorithm
from schedlab.edge.defaults import GENERATE
from schedlab.edge.generate import generate_instance

TINY = {"jobs": 8, "chunks": 16, "chunks_per_job": "uniform:2,6", "popularity": 1.6, "deadlines": [4, 8], "chunks_per_node": 6, "vms_per_node": 2, "seed": 0}


def test_instance_point_adds_the_proven_optimum_between_the_bound_and_every_heuristic() -> None:
    res = fig.instance_point(TINY, ["cred-m", "first-fit", "cred-s"], optimum_time_limit=60.0)
    nodes = {r["algorithm"]: r["active_nodes"] for r in res["rows"]}
    assert res["optimum_status"] == "optimal"
    assert nodes["lower-bound"] <= nodes["optimum"] <= min(nodes[a] for a in ("cred-m", "first-fit", "cred-s"))
    assert res["bounds"]["lower_bound"] == nodes["lower-bound"]
    assert "optimum" not in {r["algorithm"] for r in fig.instance_point(TINY, ["cred-m"])["rows"]}


def test_points_without_an_optimum_keep_their_ids() -> None:
    plain = fig.spread_points(fig.SweepSpec(jobs=8, chunks=16, seeds=1, spreads=(0,)))
    assert "optimum_time_limit" not in plain[0].inputs
    with_opt = fig.spread_points(fig.SweepSpec(jobs=8, chunks=16, seeds=1, spreads=(0,), optimum_time_limit=5.0))
    assert with_opt[0].id != plain[0].id


def test_an_optimum_missing_on_one_instance_hides_the_whole_x() -> None:
    df = pd.DataFrame([
        {"x": 0, "seed": 0, "algorithm": "lower-bound", "active_nodes": 3}, {"x": 0, "seed": 0, "algorithm": "optimum", "active_nodes": 3},
        {"x": 0, "seed": 1, "algorithm": "lower-bound", "active_nodes": 4},
        {"x": 1, "seed": 0, "algorithm": "lower-bound", "active_nodes": 2}, {"x": 1, "seed": 0, "algorithm": "optimum", "active_nodes": 2},
        {"x": 1, "seed": 1, "algorithm": "lower-bound", "active_nodes": 2}, {"x": 1, "seed": 1, "algorithm": "optimum", "active_nodes": 3},
    ])
    table = fig.means(df)
    assert pd.isna(table.loc[0, "optimum"]) and table.loc[1, "optimum"] == 2.5


def test_the_default_instance_tells_the_algorithms_apart() -> None:
    inst = generate_instance(**{k: getattr(GENERATE, k) for k in GENERATE.__dataclass_fields__})
    nodes = {a: run_algorithm(a, inst).verdict.active_nodes for a in ("cred-m", "first-fit", "cred-s-per-deadline")}
    assert nodes["cred-m"] < nodes["first-fit"] < nodes["cred-s-per-deadline"]


def _claims(spread: list[float], mix: list[float], ff_over_cm: float, mean_ratio: float, reuse_le: int) -> dict[str, str]:
    doc = {"spread": {"cred-m": {str(i): v for i, v in enumerate(spread)}}, "mix": {"cred-m": {str(i): v for i, v in enumerate(mix)}}}
    cells = pd.DataFrame([{"deadlines": "30", "popularity": 1.6, "chunks_per_node": 16, "first_fit_over_cred_m": ff_over_cm}])
    gaps = {"solved": 10, "cred-m": {"mean_ratio": mean_ratio, "max_ratio": mean_ratio, "optimal": 5}}
    rows = rep.claims(doc, doc, gaps, cells, {"le": reuse_le, "lt": 0, "instances": 10})
    return {r["source"] + ":" + r["claim"][:20]: r["holds"] for r in rows}


def test_every_verdict_is_computed_from_the_numbers() -> None:
    good = _claims([9, 8, 8], [5, 6, 7], 1 / (1 - 0.5), 1.01, 10)
    bad = _claims([8, 9, 8], [6, 5, 7], 1.2, 1.2, 9)
    assert set(good.values()) == {"yes"}
    assert set(bad.values()) == {"no"}


def test_gap_instances_are_small_and_fixed_by_their_seed() -> None:
    a, b = rep.gap_instance(3), rep.gap_instance(3)
    assert a == b and 6 <= a["jobs"] <= 15 and 2 <= a["chunks_per_node"] <= 6 and 1 <= len(a["deadlines"]) <= 3


def test_quick_report_writes_every_part_and_resumes(tmp_path: Path, capsys) -> None:
    out, store = tmp_path / "edge", tmp_path / "runs"
    assert main(["reproduce", "cred", "--quick", "--out", str(out), "--results", str(store)]) == 0
    for f in ("summary.md", "summary.json", "gaps.csv", "regime.csv", "regime.png", "figure4/spread.png", "figure4-small/figure4.json"):
        assert (out / f).is_file(), f
    small = json.loads((out / "figure4-small" / "figure4.json").read_text())
    assert "optimum" in small["spread"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["gaps"]["solved"] == summary["gaps"]["instances"] == rep.QUICK.gap_instances
    assert {c["holds"] for c in summary["claims"]} <= {"yes", "no"}
    first = (out / "summary.md").read_text()
    assert main(["reproduce", "cred", "--quick", "--out", str(tmp_path / "again"), "--results", str(store)]) == 0
    second = (tmp_path / "again" / "summary.md").read_text()
    # everything but the timings (measured anew) is the same
    cut = lambda text: text.split("## Speed")[0]  # noqa: E731
    assert cut(first) == cut(second)


def test_a_gap_table_with_no_instance_solved_has_no_ratios() -> None:
    points = rep.gap_points(2)
    results = [{"rows": [{"algorithm": "lower-bound", "active_nodes": 2}, *({"algorithm": a, "active_nodes": 3} for a in rep.HEURISTICS)],
                "optimum_status": "time_limit"} for _ in points]
    _df, stats = rep.gap_table(points, results)
    assert stats["solved"] == 0 and stats["cred-m"]["mean_ratio"] is None and stats["cred-m"]["optimal"] == 0
