"""DynDL's figure points and MILP-gap instances run through the one runner: resumed from a store, identical with or without it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import schedlab.locality.experiments as ex


def _counting(monkeypatch, name: str) -> list[int]:
    """Count the calls of a point function (the runner looks it up by name at call time, in this process with jobs=1)."""
    calls: list[int] = []
    real = getattr(ex, name)

    def wrapped(**kw):
        calls.append(1)
        return real(**kw)

    monkeypatch.setattr(ex, name, wrapped)
    return calls


def _same(a: list[dict], b: list[dict], timings: bool = True) -> bool:
    """Rows equal (NaN equal to NaN); without ``timings``, the wall-clock columns are left out."""
    skip = set() if timings else {"seconds", "phase1_seconds", "phase2_seconds"}
    if len(a) != len(b):
        return False
    for r, s in zip(a, b, strict=True):
        if list(r) != list(s):
            return False
        for k in r:
            if k in skip:
                continue
            x, y = r[k], s[k]
            if not (x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))):
                return False
    return True


def test_a_second_run_with_the_same_store_runs_nothing_and_gives_the_same_rows(tmp_path: Path, monkeypatch) -> None:
    calls = _counting(monkeypatch, "figure_point")
    lines: list[str] = []
    first = ex.run_figure(6, seeds=1, quick=True, store=tmp_path, progress=lines.append)
    assert len(calls) == 3 and sum(" done " in line for line in lines) == 3
    assert len(list((tmp_path / "runs").iterdir())) == 3
    lines.clear()
    second = ex.run_figure(6, seeds=1, quick=True, store=tmp_path, progress=lines.append)
    assert len(calls) == 3  # nothing ran
    assert lines == ["figure 6: 3 of 3 points already in the store, 0 to run"]
    assert _same(first, second)  # timings included: they come from the store


def test_rows_with_a_store_equal_rows_without_one_timeouts_included(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ex, "HTA_TIME_LIMIT", 1e-9)  # HTA times out on its first seed, and is skipped on the second
    kept = ex.run_figure(8, seeds=2, quick=True, store=tmp_path)
    plain = ex.run_figure(8, seeds=2, quick=True)
    assert _same(kept, plain, timings=False)
    hta = [r for r in kept if r["algorithm"] == "hta"]
    assert hta and all(r["status"] == "timeout" and math.isnan(r["makespan"]) and math.isnan(r["remote_tasks"]) for r in hta)
    assert all(isinstance(r["remote_tasks"], int) for r in kept if r["status"] == "ok")
    assert set(kept[0]) >= {"figure", "panel", "x_name", "x", "seed", "algorithm", *ex.GENERATOR, "status", "makespan", "remote_tasks", "seconds"}


def test_a_changed_input_makes_a_new_point(tmp_path: Path, monkeypatch) -> None:
    base = {fp.point.id for fp in ex.figure_points(8, 1, quick=True)}
    assert {fp.point.id for fp in ex.figure_points(8, 2, quick=True)}.isdisjoint(base)  # seeds
    monkeypatch.setattr(ex, "HTA_TIME_LIMIT", 60.0)
    assert {fp.point.id for fp in ex.figure_points(8, 1, quick=True)}.isdisjoint(base)  # HTA's time limit
    monkeypatch.setitem(ex.VARIANTS, "dyndlon-w0", ("dyndlon", {"delay_threshold": 1.0}, "DynDLOn W=1"))
    assert {fp.point.id for fp in ex.figure_points(8, 1, quick=True)}.isdisjoint(base)  # a variant's parameters
    calls = _counting(monkeypatch, "figure_point")
    ex.run_figure(6, seeds=1, quick=True, store=tmp_path)
    ex.run_figure(6, seeds=2, quick=True, store=tmp_path)
    assert len(calls) == 6


def test_figures_share_equal_points() -> None:
    # Figure 5 at beta = 1000 is Figure 7 at theta = 1: one point, run once in a shared store.
    fig5 = {fp.x: fp.point.id for fp in ex.figure_points(5, 1, quick=True)}
    fig7 = {fp.x: fp.point.id for fp in ex.figure_points(7, 1, quick=True)}
    assert fig5[1000.0] == fig7[1.0]
    assert len(set(fig5.values()) | set(fig7.values())) == 5


def test_reproduce_figures_resumes_from_the_store(tmp_path: Path, monkeypatch) -> None:
    calls = _counting(monkeypatch, "figure_point")
    ex.reproduce_figures(tmp_path / "a", (5, 7), quick=True, store=tmp_path / "store")
    assert len(calls) == 5  # the shared point ran once
    lines: list[str] = []
    ex.reproduce_figures(tmp_path / "b", (5, 7), quick=True, store=tmp_path / "store", progress=lines.append)
    assert len(calls) == 5
    assert sum("already in the store" in line for line in lines) == 2 and sum("claims hold" in line for line in lines) == 2
    for f in ("fig5.csv", "fig7.csv", "fig5.json", "fig7.json", "fig5.md", "fig7.md", "summary.md"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_milp_gaps_resume_and_match_a_run_without_store(tmp_path: Path, monkeypatch) -> None:
    calls = _counting(monkeypatch, "gap_point")
    kept = ex.milp_gaps(3, 1, store=tmp_path)
    again = ex.milp_gaps(3, 1, store=tmp_path)
    assert len(calls) == 3
    plain = ex.milp_gaps(3, 1)
    assert kept == again == plain
    ex.milp_gaps(3, 1, time_limit=10.0, store=tmp_path)  # another input: new points
    assert len(calls) == 9


def test_bad_seeds_fail_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ex.InputError, match="--seeds"):
        ex.run_figure(5, seeds=0, store=tmp_path / "s")
    assert not (tmp_path / "s").exists()


def test_dyndlon_within_ten_percent_of_dyndloff_is_a_computed_claim() -> None:
    algs = set(ex.ONLINE) | set(ex.OFFLINE) | set(ex.PAPER_ALGORITHMS) | set(ex.NON_DYNAMIC) | {"dyndlon-w0"}
    made = {100.0: {"dyndlon": 4.4, "dyndloff": 4.0}, 1000.0: {"dyndlon": 16.0, "dyndloff": 12.0}}
    agg = [{"panel": "", "x_name": "beta", "x": x, "algorithm": a, "makespan": made[x].get(a, 20.0), "remote_tasks": 1.0}
           for x in made for a in sorted(algs)]
    got = {c["claim"]: c for c in ex.claims(5, agg) if "within 10%" in c["claim"]}
    assert got["beta=100: DynDLOn's makespan within 10% of DynDLOff's"]["holds"] is True  # +10%, to the last bit
    assert got["beta=1000: DynDLOn's makespan within 10% of DynDLOff's"]["holds"] is False  # +33%
    assert "+33%" in got["beta=1000: DynDLOn's makespan within 10% of DynDLOff's"]["measured"]
