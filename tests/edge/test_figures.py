"""CRED's Figure 4 instances run through the one runner: resumed from a store, identical with or without it, serial or pooled."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import schedlab.edge.figures as fig
from schedlab.errors import InvariantError

SMALL = fig.SweepSpec(jobs=20, chunks=40, seeds=2, spreads=(0, 5), fractions=(0.0, 0.5, 1.0), algorithms=("cred-m", "first-fit"))
FILES = ("spread.csv", "mix.csv", "figure4.json")


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = fig.instance_point

    def wrapped(**kw):
        calls.append(1)
        return real(**kw)

    monkeypatch.setattr(fig, "instance_point", wrapped)
    return calls


def _files(d: Path) -> dict[str, bytes]:
    return {f: (d / f).read_bytes() for f in FILES}


def test_a_second_run_with_the_same_store_runs_nothing(tmp_path: Path, monkeypatch) -> None:
    calls = _counting(monkeypatch)
    first = fig.figure4(SMALL, tmp_path / "a", store=tmp_path / "store")
    # 2 spreads + 3 fractions, 2 seeds each; spread 0 and fraction 1 are the same instance
    assert len(calls) == 8 and len(list((tmp_path / "store" / "runs").iterdir())) == 8
    second = fig.figure4(SMALL, tmp_path / "b", store=tmp_path / "store")
    assert len(calls) == 8
    assert first == second and _files(tmp_path / "a") == _files(tmp_path / "b")


def test_results_with_a_store_equal_results_without_one(tmp_path: Path) -> None:
    fig.figure4(SMALL, tmp_path / "kept", store=tmp_path / "store")
    fig.figure4(SMALL, tmp_path / "plain")
    assert _files(tmp_path / "kept") == _files(tmp_path / "plain")
    spread = fig.spread_sweep(SMALL)
    assert list(spread.columns) == ["sweep", "x", "seed", "algorithm", "active_nodes"]
    assert len(spread) == 2 * 2 * 3 and str(spread["x"].dtype).startswith("int")


def test_a_process_pool_gives_the_same_files(tmp_path: Path) -> None:
    fig.figure4(SMALL, tmp_path / "serial")
    fig.figure4(SMALL, tmp_path / "pool", jobs=2)
    assert _files(tmp_path / "serial") == _files(tmp_path / "pool")


def test_a_changed_input_makes_a_new_point(tmp_path: Path, monkeypatch) -> None:
    ids = {p.id for p in fig.spread_points(SMALL)}
    for change in ({"chunks_per_node": 24}, {"popularity": 0.5}, {"chunks_per_job": "uniform:2,8"}, {"algorithms": ("cred-m",)}, {"jobs": 21}):
        other = fig.SweepSpec(**{**SMALL.__dict__, **change})
        assert {p.id for p in fig.spread_points(other)}.isdisjoint(ids), change
    calls = _counting(monkeypatch)
    fig.figure4(SMALL, tmp_path / "a", store=tmp_path / "store")
    fig.figure4(fig.SweepSpec(**{**SMALL.__dict__, "d1": 11}), tmp_path / "b", store=tmp_path / "store")
    assert len(calls) == 8 + 6  # every instance with d1 in it is new; fraction 0 (all jobs due at d2) is not


def test_an_infeasible_schedule_is_an_invariant_error(tmp_path: Path, monkeypatch) -> None:
    broken = SimpleNamespace(feasible=False, verdict=SimpleNamespace(summary=lambda: "2 violations"))
    monkeypatch.setattr(fig, "run_algorithm", lambda name, inst: broken)
    with pytest.raises(InvariantError, match=r"^sweep \w+, x [0-9.]+, seed 0: cred-m produced an infeasible schedule: 2 violations"):
        fig.figure4(SMALL, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_bad_generator_options_fail_before_any_point_runs(tmp_path: Path, monkeypatch) -> None:
    calls = _counting(monkeypatch)
    with pytest.raises(fig.InputError, match="^--jobs: must be"):
        fig.figure4(fig.SweepSpec(**{**SMALL.__dict__, "jobs": 0}), tmp_path / "out", store=tmp_path / "store")
    assert not calls and not (tmp_path / "store").exists()
