"""``schedlab locality``: commands work, and every bad input ends in one line ``error: <where>: <what>`` with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.locality.algorithms import PAPER_ALGORITHMS


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["locality", *argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_compare_json_gives_makespan_remote_tasks_seconds_per_algorithm(capsys) -> None:
    rc, out, _ = run(capsys, "compare", "table2", "--algorithms", "all,milp", "--json")
    assert rc == 0
    doc = json.loads(out)
    assert list(doc["algorithms"]) == [*PAPER_ALGORITHMS, "milp"]
    for entry in doc["algorithms"].values():
        assert set(entry) == {"makespan", "remote_tasks", "seconds"}
    assert doc["algorithms"]["dyndloff"]["makespan"] == 3.0
    assert doc["algorithms"]["milp"]["makespan"] == pytest.approx(3.0)


def test_compare_table2_says_how_the_papers_hadoop_row_comes_out(capsys) -> None:
    rc, out, _ = run(capsys, "compare", "table2", "--algorithms", "hadoop")
    assert rc == 0 and "remote_pick=first" in " ".join(out.split()) and "3.5" in out
    rc, out, _ = run(capsys, "solve", "table2", "-a", "hadoop", "-p", "remote_pick=first", "--json")
    assert rc == 0 and json.loads(out)["makespan"] == 3.5


def test_compare_on_a_generated_instance_is_deterministic(capsys) -> None:
    args = ("compare", "--tasks", "20", "--servers", "5", "--cores", "3", "--beta", "50", "--seed", "4", "--json")
    rc1, out1, _ = run(capsys, *args)
    rc2, out2, _ = run(capsys, *args)
    assert rc1 == rc2 == 0
    a, b = json.loads(out1), json.loads(out2)
    for name in PAPER_ALGORITHMS:
        assert a["algorithms"][name]["makespan"] == b["algorithms"][name]["makespan"]
        assert a["algorithms"][name]["remote_tasks"] == b["algorithms"][name]["remote_tasks"]


def test_solve_writes_the_assignment(tmp_path: Path, capsys) -> None:
    out_file = tmp_path / "res.json"
    rc, out, _ = run(capsys, "solve", "table2", "-a", "hadoop", "-p", "remote_pick=first", "--out", str(out_file))
    assert rc == 0 and "3.5" in out
    doc = json.loads(out_file.read_text())
    assert doc["makespan"] == doc["evaluated_makespan"] == 3.5
    assert [row["core"] for row in doc["assignment"]] == ["s2.p1", "s1.p2", "s1.p1", "s2.p1", "s2.p2"]


def test_generate_then_solve(tmp_path: Path, capsys) -> None:
    inst = tmp_path / "inst.json"
    rc, _, _ = run(capsys, "generate", "--out", str(inst), "--tasks", "15", "--servers", "4", "--cores", "2", "--seed", "1")
    assert rc == 0
    rc, out, _ = run(capsys, "solve", str(inst), "--json")
    assert rc == 0 and json.loads(out)["algorithm"] == "dyndloff"


def test_sweep_quick_writes_csv_json_png_md(tmp_path: Path, capsys) -> None:
    rc, _, err = run(capsys, "sweep", "--figure", "5", "--quick", "--out", str(tmp_path))
    assert rc == 0, err
    for ext in ("csv", "json", "png", "md"):
        assert (tmp_path / f"fig5.{ext}").stat().st_size > 0
    summary = json.loads((tmp_path / "fig5.json").read_text())
    assert set(PAPER_ALGORITHMS) <= {p["algorithm"] for p in summary["points"]}
    assert summary["claims"]
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temp files


def test_sweep_keeps_its_points_in_results_and_resumes(tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    rc, _, err = run(capsys, "sweep", "--figure", "7", "--quick", "--out", str(tmp_path / "a"), "--results", str(store))
    assert rc == 0, err
    assert err.count(" done (") == 3 and (store / "experiment.json").is_file() and len(list((store / "runs").iterdir())) == 3
    rc, _, err = run(capsys, "sweep", "--figure", "7", "--quick", "--out", str(tmp_path / "b"), "--results", str(store))
    assert rc == 0, err
    assert " done (" not in err and "3 of 3 points already in the store" in err
    assert (tmp_path / "a" / "fig7.csv").read_text() == (tmp_path / "b" / "fig7.csv").read_text()


def test_gap_with_results_resumes(tmp_path: Path, capsys) -> None:
    args = ("gap", "--instances", "2", "--json", "--results", str(tmp_path / "store"))
    rc, out1, _ = run(capsys, *args)
    rc2, out2, _ = run(capsys, *args)
    assert rc == rc2 == 0 and out1 == out2 and len(list((tmp_path / "store" / "runs").iterdir())) == 2


def test_sweep_quick_figure_9(tmp_path: Path, capsys) -> None:
    rc, _, err = run(capsys, "sweep", "--figure", "9", "--quick", "--out", str(tmp_path))
    assert rc == 0, err
    summary = json.loads((tmp_path / "fig9.json").read_text())
    assert {p["panel"] for p in summary["points"]} == {"a", "b", "c", "d"}


def test_gap_json(capsys) -> None:
    rc, out, _ = run(capsys, "gap", "--instances", "3", "--json")
    assert rc == 0
    gaps = json.loads(out)["gaps"]
    assert all(g["mean_gap_percent"] >= -1e-6 for g in gaps.values())


def _write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


BAD_INPUTS = [
    (lambda d: ["solve", _write(d, "m.json", '{"servers": [\n')], "m.json:2: malformed JSON"),
    (lambda d: ["solve", _write(d, "n.json", '{"servers": [{"initial_loads": [1, -2]}], "tasks": [{"replicas": ["s1"]}]}')], "n.json: servers[0].initial_loads[1]: must be a finite number >= 0"),
    (lambda d: ["solve", _write(d, "o.json", '{"servers": [{"cores": 2}]}')], "o.json: tasks: missing"),
    (lambda d: ["solve", _write(d, "p.json", '{"tasks": [{"replicas": [0]}]}')], "p.json: servers: missing"),
    (lambda d: ["compare", _write(d, "q.json", '{"servers": [{"cores": -1}], "tasks": [{"replicas": [0]}]}')], "q.json: servers[0].cores: must be an integer >= 1"),
    (lambda d: ["solve", str(d / "absent.json")], "absent.json: no such file"),
    (lambda d: ["solve", "table2", "-a", "nope"], "--algorithm: unknown algorithm 'nope'"),
    (lambda d: ["compare", "table2", "--algorithms", "dyndloff,nope"], "--algorithms: unknown algorithm 'nope'"),
    (lambda d: ["solve", "table2", "-a", "delay", "-p", "delay_threshold=-1"], "param delay_threshold: Input should be greater than or equal to 0, got -1"),
    (lambda d: ["solve", "table2", "-a", "delay", "-p", "bogus=1"], "param bogus: unknown parameter for locality algorithm 'delay' (its parameters: delay_threshold, remote_pick, timeline)"),
    (lambda d: ["solve", "table2", "-a", "delay", "-p", "novalue"], "--param: expected KEY=VALUE"),
    (lambda d: ["solve", "table2", "-a", "hadoop", "-p", "remote_pick=worst"], "param remote_pick: Input should be 'random' or 'first', got 'worst'"),
    (lambda d: ["compare", "--tasks", "0"], "--tasks: must be an integer >= 1"),
    (lambda d: ["compare", "--beta", "-5"], "--beta: must be a finite number >= 0"),
    (lambda d: ["compare", "--servers", "2", "--replicas", "3"], "--replicas: 3 distinct replica servers"),
    (lambda d: ["compare", "--seed", "-1"], "--seed: must be >= 0"),
    (lambda d: ["sweep", "--figure", "4", "--out", str(d / "x")], "--figure: unknown figure 4"),
    (lambda d: ["sweep", "--figure", "five", "--out", str(d / "x")], "--figure: expected 5, 6, 7, 8, 9 or all"),
    (lambda d: ["sweep", "--figure", "5", "--seeds", "0", "--out", str(d / "x")], "--seeds: must be an integer >= 1"),
    (lambda d: ["gap", "--instances", "0"], "--instances: must be an integer >= 1"),
    (lambda d: ["solve", "table2", "-a", "milp", "-p", "time_limit=0"], "param time_limit: Input should be greater than 0"),
    (lambda d: ["solve", "table2", "-a", "ltfpa", "-p", "threshold=1.5"], "param threshold: Input should be a valid integer, got 1.5"),
    (lambda d: ["solve", "table2", "-a", "ltfpa", "-p", "routing=random"], "param routing: Input should be 'load' or 'queue'"),
    (lambda d: ["solve", "table2", "-a", "dyndlon", "-p", "timeline=wall"], "param timeline: Input should be 'running' or 'model'"),
    (lambda d: ["solve", "table2", "-a", "milp", "-p", "fewest_remote=1"], "param fewest_remote: Input should be a valid boolean, got 1"),
    (lambda d: ["solve", "table2", "-a", "bar", "-p", "x=1"], "param x: unknown parameter for locality algorithm 'bar' (its parameters: none)"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_code_2(tmp_path: Path, capsys, argv, message) -> None:
    rc, out, err = run(capsys, *argv(tmp_path))
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and message in lines[0], lines[0]
    assert "Traceback" not in err and out == ""
    assert not (tmp_path / "x").exists()  # nothing written for a rejected sweep
