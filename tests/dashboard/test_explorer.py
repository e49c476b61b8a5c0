"""The explorer's data: runs read from stores and summaries, exact series, ratios, and every bad input as a problem."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.dashboard.explorer import CDF_POINTS, Catalog, _cdf_points
from schedlab.errors import InputError
from schedlab.experiments.compare import compare


def test_store_runs_are_labelled_as_the_store_labels_them(store: Path) -> None:
    cat = Catalog([store])
    assert cat.problems == []
    rows = [r.row() for r in cat.runs.values()]
    assert sorted(r["label"] for r in rows) == ["centralized", "megha", "sparrow"]
    exp = json.loads((store / "experiment.json").read_text())
    assert {r.id.split("/", 1)[1] for r in cat.runs.values()} == {r["id"] for r in exp["runs"]}
    for r in rows:
        assert r["tables"] == ["jobs", "tasks", "utilization"]
        assert r["workload"] == "gen" and r["data_center"] == "30w" and r["seed"] == 0


def test_cdf_is_the_jobs_delays_exactly(store: Path) -> None:
    cat = Catalog([store])
    run = next(iter(cat.runs.values()))
    got = cat.cdf([run.id], "jrt_delay")["points"]
    delays = np.sort(pd.read_parquet(run.folder / "jobs.parquet")["jrt_delay"].dropna().to_numpy())
    assert [p["value"] for p in got] == delays.tolist()  # fewer values than CDF_POINTS: every one
    assert [p["p"] for p in got] == [(k + 1) / len(delays) for k in range(len(delays))]


def test_cdf_points_of_a_large_run_keep_both_ends_and_are_exact_order_statistics() -> None:
    rng = np.random.default_rng(1)
    v = rng.exponential(size=100_003)
    pts = _cdf_points(v)
    s = np.sort(v)
    assert len(pts) == CDF_POINTS
    assert pts[0] == (s[0], 1 / len(v)) and pts[-1] == (s[-1], 1.0)
    for value, p in pts:
        k = round(p * len(v)) - 1
        assert s[k] == value


def test_percentile_ratios_match_compare(store: Path) -> None:
    cat = Catalog([store])
    by_label = {r.label: r.id for r in cat.runs.values()}
    t = cat.percentiles(list(by_label.values()), "jrt_delay", by_label["centralized"])
    table = compare(store, ["jrt_delay.p50", "jrt_delay.p99"], baseline="centralized")
    for row in t["rows"]:
        label = row["label"].split(" · ")[0]
        for k in ("p50", "p99"):
            ref = table[(table["scheduler"] == label) & (table["metric"] == f"jrt_delay.{k}")]
            assert row[k] == pytest.approx(float(ref["mean"].iloc[0]))
            if label != "centralized":
                assert row[f"{k}_ratio"] == pytest.approx(float(ref["ratio"].iloc[0]))
        if label == "centralized":
            assert row["p50_ratio"] == 1.0


def test_utilization_timeline_is_averaged_down_to_its_budget(store: Path, tmp_path: Path) -> None:
    cat = Catalog([store])
    run = next(iter(cat.runs.values()))
    pts = cat.utilization([run.id])["points"]
    u = pd.read_parquet(run.folder / "utilization.parquet")
    assert len(pts) == min(len(u), 600)
    assert np.mean([p["utilization"] for p in pts]) == pytest.approx(u[u.columns[1]].mean(), rel=0.05)


def test_a_summary_file_and_a_simulate_out_folder(store: Path, tmp_path: Path) -> None:
    run_dir = next((store / "runs").iterdir())
    one = tmp_path / "one"
    shutil.copytree(run_dir, one)
    cat = Catalog([], [one / "summary.json", one])
    assert len(cat.runs) == 2 and cat.problems == []
    assert len({r.id for r in cat.runs.values()}) == 2  # the same folder twice: told apart
    rid = next(iter(cat.runs))
    assert cat.cdf([rid], "allocation_time")["points"]


def test_every_bad_input_is_one_problem_and_the_rest_loads(store: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    other = tmp_path / "other" / "summary.json"
    other.parent.mkdir()
    other.write_text(json.dumps({"scheduler": "x", "trace": "t", "workers": 3, "seed": 0, "tasks": 1, "delay": {"median": 1}}))
    broken_store = tmp_path / "broken"
    broken_store.mkdir()
    (broken_store / "experiment.json").write_text(json.dumps({"name": "x"}))
    cat = Catalog([store, plain, tmp_path / "absent", broken_store], [bad_json, other, tmp_path / "nofile.json"])
    assert len(cat.runs) == 3
    said = {Path(p.where).name: p.what for p in cat.problems}
    assert said["plain"].startswith("not a results store")
    assert said["absent"] == "no such folder"
    assert said["experiment.json"].startswith("not a results store's experiment file")
    assert said["bad.json"].startswith("invalid JSON")
    assert said["summary.json"] == "not a run summary of this schedlab version (missing jrt_delay.p50, allocation_time.p50, utilization.mean)"
    assert said["nofile.json"] == "no such file"


def test_unknown_runs_and_metrics_are_input_errors(store: Path) -> None:
    cat = Catalog([store])
    rid = next(iter(cat.runs))
    with pytest.raises(InputError, match="no run 'nope'"):
        cat.cdf(["nope"], "jrt_delay")
    with pytest.raises(InputError, match="unknown metric 'speed'"):
        cat.cdf([rid], "speed")
    with pytest.raises(InputError, match="no percentiles for 'utilization'"):
        cat.percentiles([rid], "utilization", None)


def test_ratios_only_against_a_baseline_on_the_same_workload_and_data_center(store: Path, tmp_path: Path) -> None:
    run_dir = next((store / "runs").iterdir())
    moved = tmp_path / "elsewhere"
    shutil.copytree(run_dir, moved)
    s = json.loads((moved / "summary.json").read_text())
    s["trace"] = "another"
    (moved / "summary.json").write_text(json.dumps(s))
    cat = Catalog([store], [moved])
    base = next(r.id for r in cat.runs.values() if r.source == str(store))
    t = cat.percentiles(list(cat.runs), "jrt_delay", base)
    ratios = {row["run"]: row["p50_ratio"] for row in t["rows"]}
    assert ratios["elsewhere"] is None and ratios[base] == 1.0


def test_constraint_load_is_the_reports(store: Path, tmp_path: Path) -> None:
    from schedlab.experiments.report import constraint_load_of

    cat = Catalog([store])
    run = next(iter(cat.runs.values()))
    got = cat.constraint_load(run.id)
    rc = json.loads((run.folder / "config.json").read_text())
    rep = constraint_load_of(rc, run.workload)
    assert got["rows"] == rep["per_constraint_load"] and got["load"] == rep["load"] and got["what"] == "gen on 30w"
    assert len(got["rows"]) > 0
    alone = tmp_path / "alone"
    shutil.copytree(run.folder, alone)
    (alone / "config.json").unlink()
    cat = Catalog([], [alone])
    assert "results store" in cat.constraint_load("alone")["note"]
