"""Finding 4's checks are computed from the runs: ratios, seed counts and every "holds?" cell."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from schedlab.cli import main
from schedlab.experiments.worker_choice import analyse, markdown


def _runs(workload: str, label: str, p99s: list[float], incons: list[float]) -> list[dict]:
    return [{"workload": workload, "scheduler": label, "seed": s, "jrt_delay.mean": p / 10, "jrt_delay.p90": p / 2,
             "jrt_delay.p99": p, "counters.inconsistencies": i, "counters.repartitions": 2 * i}
            for s, (p, i) in enumerate(zip(p99s, incons, strict=True))]


def test_checks_follow_the_numbers():
    rows = (
        # the highest load: Random 0.75x in the paper-faithful profile, 1.5x in the authors'
        _runs("yahoo-like", "megha_none_random", [60, 90], [5, 7]) + _runs("yahoo-like", "megha_none_min-constraints", [100, 100], [9, 9])
        + _runs("yahoo-like", "megha_authors_random", [150, 150], [9, 9]) + _runs("yahoo-like", "megha_authors_min-constraints", [100, 100], [5, 5])
        + _runs("yahoo-like", "centralized_random", [30, 30], [0, 0]) + _runs("yahoo-like", "centralized_min-constraints", [10, 10], [0, 0])
        # another workload: 20 % apart but less than 1 s apart counts as level; 3 s against 5 s does not
        + _runs("syn_250", "megha_none_random", [0.6, 0.6], [1, 1]) + _runs("syn_250", "megha_none_min-constraints", [0.5, 0.5], [1, 1])
        + _runs("syn_250", "megha_authors_random", [3, 3], [1, 1]) + _runs("syn_250", "megha_authors_min-constraints", [5, 5], [2, 2])
    )
    s = analyse(pd.DataFrame(rows))
    by = {(r["workload"], r["family"]): r for r in s["rows"]}
    none = by["yahoo-like", "megha_none"]
    assert none["jrt_delay.p99"] == {"random": 75, "min-constraints": 100, "ratio": 0.75}
    assert none["random_p99_lower_in"] == 2 and none["seeds"] == 2
    assert none["checks"] == {"random_better_under_highest_load": True, "fewer_inconsistencies_with_random": True}
    assert by["yahoo-like", "megha_authors"]["checks"] == {"random_better_under_highest_load": False, "fewer_inconsistencies_with_random": False}
    assert by["yahoo-like", "centralized"]["jrt_delay.p99"]["ratio"] == 3 and by["yahoo-like", "centralized"]["checks"] == {}
    assert by["syn_250", "megha_none"]["checks"]["level"] is True
    assert by["syn_250", "megha_authors"]["checks"] == {"level": False, "fewer_inconsistencies_with_random": True}
    assert [r["verdict"] for r in s["rows"]] == ["random better", "random worse", "random worse", "level", "random better"]
    md = markdown(s)
    assert "| yahoo-like | Megha, paper-faithful | 7.5 / 10 (0.75) |" in md and "Random better: yes" in md and "level: **no**" in md


def test_quick_reproduction_writes_the_analysis(tmp_path, capsys):
    out = tmp_path / "wc"
    assert main(["reproduce", "megha-worker-choice", "--quick", "--out", str(out), "--jobs", "1"]) == 0
    assert "6 run(s) done" in capsys.readouterr().err
    s = json.loads((out / "analysis" / "summary.json").read_text())
    assert [(r["workload"], r["family"]) for r in s["rows"]] == [
        ("yahoo-like", "megha_none"), ("yahoo-like", "megha_authors"), ("yahoo-like", "centralized")]
    for r in s["rows"]:
        assert r["seeds"] == 1 and r["jrt_delay.p99"]["ratio"] == pytest.approx(r["jrt_delay.p99"]["random"] / r["jrt_delay.p99"]["min-constraints"])
    assert (out / "analysis" / "summary.md").read_text().startswith("# Random vs Minimum Constraints")


def test_one_departure_at_a_time_names_the_step_that_changes_the_verdict():
    rows = (
        _runs("google", "paper_random", [200, 200], [1, 1]) + _runs("google", "paper_min-constraints", [100, 100], [1, 1])
        + _runs("google", "authors_random", [100, 100], [1, 1]) + _runs("google", "authors_min-constraints", [100, 100], [1, 1])
        + _runs("google", "only_event_lists_random", [100, 100], [1, 1]) + _runs("google", "only_event_lists_min-constraints", [100, 100], [1, 1])
        + _runs("google", "only_batching_random", [210, 210], [1, 1]) + _runs("google", "only_batching_min-constraints", [100, 100], [1, 1])
        + _runs("google", "without_event_lists_random", [300, 300], [1, 1]) + _runs("google", "without_event_lists_min-constraints", [100, 100], [1, 1])
    )
    by = {r["family"]: r for r in analyse(pd.DataFrame(rows))["rows"]}
    assert (by["paper"]["verdict"], by["authors"]["verdict"]) == ("random worse", "level")
    assert by["only_event_lists"]["flips"] and not by["only_batching"]["flips"] and by["without_event_lists"]["flips"]
    assert by["only_batching"]["against"] == "paper" and by["without_event_lists"]["against"] == "authors"
    assert "random worse (**changed** from authors)" in markdown(analyse(pd.DataFrame(rows)))
