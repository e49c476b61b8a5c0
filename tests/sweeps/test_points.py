"""Points: any domain's runs through the one runner and store — ids cover every input, resume runs nothing twice."""

from __future__ import annotations

import json

import pytest

from schedlab.errors import InputError
from schedlab.sweeps.points import Point, canonical_id
from schedlab.sweeps.runner import run_points
from schedlab.sweeps.store import Store

TARGET = "tests.sweeps.helpers:square_point"


def points(calls, xs=(1, 2, 3), **extra) -> list[Point]:
    return [Point(TARGET, {"x": x, "calls": str(calls), **extra}, {"x": x}) for x in xs]


def count(calls) -> int:
    return len(list(calls.iterdir()))


def test_the_id_is_a_hash_of_the_target_and_every_input_not_the_label(tmp_path):
    p = Point(TARGET, {"x": 1, "calls": "c"}, {"x": 1})
    assert p.id == canonical_id({"target": TARGET, "inputs": {"calls": "c", "x": 1}})
    assert p.id == Point(TARGET, {"calls": "c", "x": 1}, {"shown": "other"}).id  # key order and labels do not matter
    assert p.id != Point(TARGET, {"x": 1, "calls": "c", "fail": False}).id  # an input given is an input
    assert p.id != Point(TARGET, {"x": 2, "calls": "c"}).id
    assert p.id != Point("tests.sweeps.helpers:other", {"x": 1, "calls": "c"}).id


def test_results_come_back_in_order_as_json_gives_them_and_the_same_with_or_without_a_store(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    pts = points(calls, xs=(3, 1, 2))
    kept = run_points(pts, tmp_path / "store", name="t")
    plain = run_points(pts, None, name="t")
    assert kept == plain == [{"x": x, "square": x * x, "missing": None, "pair": [x, -x]} for x in (3, 1, 2)]
    store = Store(tmp_path / "store")
    info = store.experiment()
    assert info["kind"] == "points" and [r["x"] for r in info["runs"]] == [3, 1, 2]
    config = store.run_config(pts[0].id)
    assert config["config"] == {"target": TARGET, "inputs": {"x": 3, "calls": str(calls)}} and config["labels"]["x"] == 3


def test_a_second_sweep_runs_nothing_and_a_new_input_runs_only_what_is_new(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    store = tmp_path / "store"
    first = run_points(points(calls), store, name="t")
    assert count(calls) == 3
    states = []
    assert run_points(points(calls), store, name="t", progress=states.append) == first
    assert count(calls) == 3 and states[-1].skipped == 3 and states[-1].todo == 0
    run_points(points(calls, xs=(1, 2, 3, 4)), store, name="t")
    assert count(calls) == 4


def test_duplicate_points_run_once(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    pts = points(calls, xs=(1, 1, 2))
    assert [r["x"] for r in run_points(pts, None, name="t")] == [1, 1, 2]
    assert count(calls) == 2


def test_the_process_pool_gives_the_serial_results(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    pts = points(calls, xs=(1, 2, 3, 4))
    assert run_points(pts, tmp_path / "pool", name="t", jobs=2) == run_points(pts, None, name="t", jobs=1)


def test_a_failing_point_is_one_line_naming_it_and_the_others_stay_stored(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    store = tmp_path / "store"
    pts = [*points(calls, xs=(1, 2)), Point(TARGET, {"x": 9, "calls": str(calls), "fail": True}, {"x": 9})]
    with pytest.raises(InputError) as e:
        run_points(pts, store, name="t")
    assert str(e.value).startswith("x 9: ValueError: point 9 fails")
    assert count(calls) == 3
    run_points(pts[:2], store, name="t")
    assert count(calls) == 3  # the two that finished were kept
    assert json.loads((store / "runs" / pts[0].id / "summary.json").read_text())["square"] == 1


def test_two_sweeps_cannot_share_a_store(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    with Store(tmp_path / "store").lock(), pytest.raises(InputError, match="another sweep is writing"):
        run_points(points(calls), tmp_path / "store", name="t")
