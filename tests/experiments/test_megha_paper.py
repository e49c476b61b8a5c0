"""The Megha paper's Figures 3-9: every verdict computed from the runs' numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from schedlab.cli import main
from schedlab.experiments import megha_paper as mp


def _row(scheduler: str, workers: int, mean: float, p99: float, comm: float, proc: float, fq: float, seed: int = 0, **extra: float) -> dict:
    return {"workload": "google", "data_center": f"{workers}w", "scheduler": scheduler, "workers": workers, "seed": seed,
            "allocation_time.p50": mean / 2, "allocation_time.mean": mean, "allocation_time.p99": p99, "allocation_time.p9999": p99,
            "allocation_time.max": p99 * 2, "jrt_delay.p99": 1.0, "wall_seconds": 1.0,
            "allocation_components.communication.mean": comm, "allocation_components.processing.mean": proc,
            "allocation_components.framework_queuing.mean": fq, "allocation_components.worker_queuing.mean": 0.0,
            "allocation_components.communication.p50": comm, "allocation_components.processing.p50": proc,
            "allocation_components.framework_queuing.p50": fq, "allocation_components.worker_queuing.p50": 0.0, **extra}


def _holds(doc: dict) -> dict[str, str]:
    return {c["claim"]: c["holds"] for c in doc["claims"]}


def test_cluster_size_growth_ratio_and_shares() -> None:
    rows = [_row("megha_10x10", w, m, m * 2, 0.92 * m, 0.02 * m, 0.06 * m) for w, m in ((1000, 0.01), (10000, 0.012), (50000, 0.015))]
    rows += [_row("megha_1x1", 10000, 0.03, 0.06, 0.01, 0.001, 0.019)]
    h = _holds(mp.analyse_cluster_size(pd.DataFrame(rows)))
    assert h["allocation time grows with the data center at 10 GMs x 10 LMs (mean never falls, ends higher)"] == "yes"
    assert h["1 GM x 1 LM far above 10 x 10 at 10,000 workers (mean, >= 2x)"] == "yes"
    assert h["median allocation time in the tens of milliseconds (10 x 10, 50,000 workers)"] == "no"  # 7.5 ms
    assert h["median allocation time in the tens of milliseconds (10 x 10, 10,000 workers)"] == "no"  # 6 ms
    dip = [_row("megha_10x10", w, m, m, m, 0.0, 0.0) for w, m in ((1000, 1.0), (10000, 0.9), (50000, 1.5))]
    assert _holds(mp.analyse_cluster_size(pd.DataFrame(dip)))[
        "allocation time grows with the data center at 10 GMs x 10 LMs (mean never falls, ends higher)"] == "no"


def test_gm_lm_claims_follow_the_grid() -> None:
    rows = []
    for g in (2, 5, 10):
        for lm in (2, 5, 10):
            fq = 1.0 / min(g, lm)
            alloc = 1.0 + fq + (0.5 if g > lm else 0.0)
            rows.append(_row(f"megha_{g}gm_{lm}lm", 30000, alloc, alloc, 1.0, 0.1 / lm, fq))
    h = _holds(mp.analyse_gm_lm(pd.DataFrame(rows)))
    assert h["more GMs cut framework queuing while they do not outnumber the LMs (10 LMs)"] == "yes"
    assert h["with more GMs than LMs allocation time rises (2 LMs)"] == "yes"
    assert h["more LMs lower processing (5 GMs)"] == "yes"


def test_vs_sparrow_two_orders_and_bounds() -> None:
    rows = [_row("megha", 10000, 0.01, 0.02, 0.0095, 0.0001, 0.0004), _row("sparrow", 10000, 1.0, 5.0, 0.001, 0.0, 0.999)]
    rows[1]["allocation_time.p50"] = 0.001
    rows[1]["allocation_time.max"] = 100.0
    h = _holds(mp.analyse_vs_sparrow(pd.DataFrame(rows)))
    assert h["Sparrow's median allocation time below Megha's (google)"] == "yes"
    assert h["about two orders of magnitude at p99 (google; Sparrow / Megha >= 10^1.5)"] == "yes"
    assert h["Megha's allocation time under 1.5 s (google; max over seeds)"] == "yes"
    assert h["Sparrow's tail in tens of seconds (google; max over seeds >= 10 s)"] == "yes"


def test_quick_costs_spec_writes_its_claims(tmp_path: Path) -> None:
    out = tmp_path / "costs"
    assert main(["reproduce", "megha-costs", "--quick", "--out", str(out)]) == 0
    doc = json.loads((out / "analysis" / "claims.json").read_text())
    assert doc["scales"] == [0.0, 1.0]
    assert {c["holds"] for c in doc["claims"]} <= {"yes", "no"}
    assert "## Claims" in (out / "analysis" / "claims.md").read_text()


def test_unfinished_runs_leave_out_their_claims_instead_of_failing(tmp_path: Path) -> None:
    only_megha = pd.DataFrame([_row("megha", 10000, 0.01, 0.02, 0.0095, 0.0001, 0.0004)])
    assert mp.analyse_vs_sparrow(only_megha)["claims"] == []
    one_size = pd.DataFrame([_row("megha_10x10", 1000, 0.01, 0.02, 0.009, 0.0, 0.001)])
    assert mp.analyse_cluster_size(one_size)["claims"] == []
    partial = pd.DataFrame([_row(f"megha_{g}gm_{lm}lm", 30000, 1.0, 1.0, 1.0, 0.1, 0.1) for g, lm in ((2, 2), (2, 5), (5, 2))])
    assert all(c["holds"] in ("yes", "no") for c in mp.analyse_gm_lm(partial)["claims"])
    assert mp._cells(pd.DataFrame()) == []
    assert "not finished" in mp._claims_table([])[0]
