"""The baselines' reproduction: its runs are points through the one runner and store; its JSON is written, never read."""

from __future__ import annotations

import json

import pytest

from schedlab.experiments import baselines as bl
from schedlab.sweeps.points import Point


def test_every_run_is_a_point_labelled_with_its_report_id_whose_inputs_are_all_of_the_run():
    points = bl._plan({"A", "B", "C"}, ["syn_250"], [1])
    ids = [p.label["run"] for p in points]
    assert len(points) == 20 and len(set(ids)) == 20 and len({p.id for p in points}) == 20
    assert "A|syn_250|pigeonc|none|random|1" in ids and "B|12000|megha-costs|1" in ids and "C|syn_250|eagle|1" in ids
    for p in points:
        assert p.target == "schedlab.experiments.baselines:_execute"
        assert set(p.inputs) == {"scheduler", "trace", "seed", "params", "kw"}
    by_run = {p.label["run"]: p for p in points}
    assert by_run["A|syn_250|pigeonc|none|random|1"].inputs["kw"] == {"config": "reference-pigeon"}
    assert by_run["B|20000|megha-costs|1"].inputs["params"] == dict(bl.MEGHA_PAPER_COSTS)
    assert by_run["B|20000|megha-costs|1"].id != by_run["B|20000|megha|1"].id


@pytest.fixture
def tiny_plan(monkeypatch, tiny_trace):
    """The quick plan (its report ids: the tables read them) on a three-job trace and 50-100 workers: seconds, not minutes."""

    def plan(sections, workloads, seeds) -> list[Point]:
        def small(kw):
            return {**{k: v for k, v in kw.items() if k != "config"}, "workers": kw.get("workers", 10000) // 200}  # B: 100, 60

        return [Point(p.target, {**p.inputs, "trace": str(tiny_trace), "kw": small(p.inputs["kw"])}, p.label) for p in real(sections, workloads, seeds)]

    real = bl._plan
    monkeypatch.setattr(bl, "_plan", plan)


def test_a_second_call_with_the_same_store_runs_nothing_and_writes_the_same_files(tmp_path, tiny_plan, monkeypatch):
    out, store = tmp_path / "out" / "reproduction.json", tmp_path / "store"
    lines: list[str] = []
    bl.reproduce(out, quick=True, jobs=1, store=store, progress=lines.append)
    assert lines[0] == f"20 runs to do (0 already in {store})"
    assert len([x for x in lines if x.startswith("  ") and ": p50 " in x]) == 20  # one line per finished run
    runs = json.loads(out.read_text())["runs"]
    assert [r["id"] for r in runs] == sorted(r["id"] for r in runs) and len(runs) == 20
    assert list(runs[0]) == ["id", "jrt_delay", "allocation_time", "components_p99", "utilization", "unfinished", "jobs_incomplete",
                             "wall", "total"]
    first = out.read_text(), out.with_suffix(".md").read_text()
    assert first[1].startswith("A. PigeonC vs the constraint-aware paper")
    assert first[1].endswith("20 runs; tasks unfinished over all runs: 0\n")

    def boom(**_inputs):
        raise AssertionError("ran again")

    monkeypatch.setattr(bl, "_execute", boom)  # jobs=1 runs points in this process: a run would fail
    again: list[str] = []
    bl.reproduce(out, quick=True, jobs=1, store=store, progress=again.append)
    assert again[0] == f"0 runs to do (20 already in {store})"
    assert not [x for x in again if ": p50 " in x]
    assert (out.read_text(), out.with_suffix(".md").read_text()) == first


def test_the_output_json_is_not_a_cache(tmp_path, tiny_plan):
    out = tmp_path / "reproduction.json"
    stale = {"id": "A|syn_250|megha|none|random|1", "jrt_delay": {"p50": 123.0}}
    out.write_text(json.dumps({"runs": [stale, {**stale, "id": "Z|stray|1"}]}))
    lines: list[str] = []
    bl.reproduce(out, quick=True, jobs=1, store=None, progress=lines.append, sections="A")
    assert lines[0] == "7 runs to do (no store: nothing is kept)"
    runs = {r["id"]: r for r in json.loads(out.read_text())["runs"]}
    assert len(runs) == 7 and "Z|stray|1" not in runs
    assert runs["A|syn_250|megha|none|random|1"]["jrt_delay"]["p50"] != 123.0
