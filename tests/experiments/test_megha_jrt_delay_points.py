"""Megha's JRT-delay reproduction: its runs are points through the one runner and store, so a rerun runs nothing."""

from __future__ import annotations

import json

import pytest

from schedlab.experiments import megha_jrt_delay as mj
from schedlab.sweeps.points import Point


def test_every_run_is_a_point_whose_inputs_are_all_of_the_run():
    points = mj._plan(quick=True)
    assert len(points) == 4 and len({p.id for p in points}) == 4
    for p in points:
        assert p.target == "schedlab.experiments.megha_jrt_delay:_one"
        assert set(p.inputs) == {"scheduler", "trace", "seed", "params", "kw"}
        assert p.inputs["params"] == {"worker_choice": p.label["worker_choice"], "compat": p.label["compat"]}
        assert p.inputs["kw"] == {"config": "reference"}
    full = mj._plan(quick=False)
    assert len(full) == 48 and len({p.id for p in full}) == 48
    assert {p.inputs["kw"].get("workers") for p in full if p.inputs["trace"] == "google"} == {20000}


@pytest.fixture
def tiny_plan(monkeypatch, tiny_trace):
    """The quick plan's labels (the table reads them) on a three-job trace and 50 workers: seconds, not minutes."""

    def plan(quick: bool) -> list[Point]:
        return [Point(p.target, {**p.inputs, "trace": str(tiny_trace), "kw": {"workers": 50}}, p.label) for p in real(quick)]

    real = mj._plan
    monkeypatch.setattr(mj, "_plan", plan)


def test_a_second_call_with_the_same_store_runs_nothing_and_writes_the_same_files(tmp_path, tiny_plan, monkeypatch):
    out, store = tmp_path / "out" / "reproduction.json", tmp_path / "store"
    lines: list[str] = []
    mj.reproduce(out, quick=True, jobs=1, store=store, progress=lines.append)
    assert lines[0] == f"4 runs to do (0 already in {store})"
    doc = json.loads(out.read_text())
    assert [(r["trace"], r["compat"], r["worker_choice"], r["seed"]) for r in doc["runs"]] == [
        ("syn_250", c, w, 1) for c in ("none", "authors") for w in ("random", "min-constraints")
    ]
    assert list(doc["runs"][0]) == ["trace", "compat", "worker_choice", "seed", "jrt_delay", "utilization_mean", "inconsistencies",
                                    "repartitions", "tasks_unfinished", "wall_seconds"]
    assert list(doc) == ["runs", "paper_median", "authors_syn_250"]
    first = out.read_text(), out.with_suffix(".md").read_text()
    assert first[1].startswith("| trace | profile |") and first[1].count("| syn_250 |") == 4

    def boom(**_inputs):
        raise AssertionError("ran again")

    monkeypatch.setattr(mj, "_one", boom)  # jobs=1 runs points in this process: a run would fail
    again: list[str] = []
    mj.reproduce(out, quick=True, jobs=1, store=store, progress=again.append)
    assert again[0] == f"0 runs to do (4 already in {store})"
    assert (out.read_text(), out.with_suffix(".md").read_text()) == first


def test_without_a_store_the_runs_give_the_same_figures(tmp_path, tiny_plan):
    kept, plain = tmp_path / "kept.json", tmp_path / "plain.json"
    mj.reproduce(kept, quick=True, jobs=1, store=tmp_path / "store")
    mj.reproduce(plain, quick=True, jobs=1, store=None)
    assert not (tmp_path / "plain").exists()

    def figures(path):
        return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in json.loads(path.read_text())["runs"]]

    assert figures(kept) == figures(plain)
