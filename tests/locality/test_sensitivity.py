"""The DynDL sensitivity studies: LIST's static reading, and verdicts computed from the numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.locality import sensitivity as sens
from schedlab.locality.algorithms import run_algorithm
from schedlab.locality.instances import generate
from schedlab.sweeps.points import Point


def test_list_without_the_dynamic_cost_piles_remote_tasks_and_loses() -> None:
    inst = generate(tasks=100, servers=50, core_num=40, alpha=0, beta=1000, theta=1.0, replicas=3, seed=0)
    dynamic = run_algorithm("list", inst, 0, None)
    static = run_algorithm("list", inst, 0, {"remote_cost": "static"})
    assert static.makespan > dynamic.makespan
    assert run_algorithm("list", inst, 0, {"remote_cost": "dynamic"}).makespan == dynamic.makespan


def test_list_refuses_an_unknown_reading() -> None:
    inst = generate(tasks=10, servers=4, core_num=2, alpha=0, beta=10, theta=1.0, replicas=2, seed=0)
    with pytest.raises(Exception, match="remote_cost"):
        run_algorithm("list", inst, 0, {"remote_cost": "sometimes"})


def _fig6_result(on: float, delay: float, on_remote: float = 10.0, delay_remote: float = 10.0) -> dict:
    rows = []
    for s in sens._online_series():
        dyn = s["algorithm"] == "dyndlon"
        rows.append({"algorithm": s["series"], "makespan": on if dyn else delay, "remote_tasks": on_remote if dyn else delay_remote})
    return {"rows": rows}


def test_fig6_verdict_needs_the_reduction_and_similar_locality_at_every_alpha() -> None:
    points = [Point(sens.FIGURE_POINT, {"alpha": a}, {"alpha": a}) for a in sens.ALPHAS]
    holds = sens.fig6_analysis(points, [_fig6_result(6.0, 10.0)] * 3)
    assert holds["best_equal_w"]["holds"] and len(holds["holding"]) == len(holds["readings"])
    short = sens.fig6_analysis(points, [_fig6_result(6.0, 10.0), _fig6_result(8.0, 10.0), _fig6_result(6.0, 10.0)])
    assert not short["holding"]
    far = sens.fig6_analysis(points, [_fig6_result(6.0, 10.0, on_remote=5.0)] * 3)
    assert not far["holding"]


def _beta_result(dyndloff: float, others: float) -> dict:
    return {"rows": [{"algorithm": s, "makespan": dyndloff if s == "dyndloff" else others, "remote_tasks": 1.0} for s in sens.OFFLINE_SERIES]}


def test_beta_verdicts_follow_the_papers_two_statements() -> None:
    points = [Point(sens.FIGURE_POINT, {"beta": b}, {"beta": b}) for b in (100, 1000, 10000)]
    good = sens.beta_analysis(points, [_beta_result(9.0, 10.0), _beta_result(9.0, 10.0), _beta_result(6.0, 10.0)])
    assert all(v["both_hold"] for v in good["readings"].values())
    bad = sens.beta_analysis(points, [_beta_result(7.0, 10.0), _beta_result(9.0, 10.0), _beta_result(8.0, 10.0)])
    assert not any(v["small_beta_holds"] or v["large_beta_holds"] for v in bad["readings"].values())


def test_quick_sensitivity_report(tmp_path: Path) -> None:
    out = tmp_path / "loc"
    assert main(["reproduce", "dyndl-sensitivity", "--quick", "--out", str(out), "--results", str(tmp_path / "runs")]) == 0
    doc = json.loads((out / "sensitivity.json").read_text())
    assert len(doc["fig6"]["readings"]) == len(sens.TIMELINES) * len(sens.W_VALUES) ** 2
    assert (out / "sensitivity.png").is_file() and "## Beta" in (out / "sensitivity.md").read_text()
