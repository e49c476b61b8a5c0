"""`schedlab edge …`: happy paths, JSON output, and every bad-input path ending in one line and exit code 2."""

from __future__ import annotations

import json

import pytest

from schedlab.cli import main
from tests.edge.helpers import figure2_instance

GOOD_INSTANCE = {"nodes": 10, "chunks_per_node": 4, "vms_per_node": 2, "jobs": [{"deadline": 2, "chunks": [0, 1]}, {"deadline": 4, "chunks": [1, 2]}]}


def run(capsys, *args):
    rc = main(list(map(str, args)))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_line_error(rc, err, *needles):
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture
def inst_file(tmp_path):
    p = tmp_path / "inst.json"
    figure2_instance().save(p)
    return p


# -- happy paths ----------------------------------------------------------------------------------
def test_generate_solve_verify(tmp_path, capsys):
    inst = tmp_path / "g.json"
    rc, _, err = run(capsys, "edge", "generate", "-o", inst, "--jobs", 20, "--chunks", 30, "--deadlines", "3,6", "-B", 4, "-S", 2, "--seed", 1)
    assert rc == 0 and "wrote 20 jobs, 30 chunks" in err
    data = json.loads(inst.read_text())
    assert data["format"] == "schedlab-edge-instance" and len(data["jobs"]) == 20
    sol = tmp_path / "s.json"
    rc, out, _ = run(capsys, "edge", "solve", inst, "-o", sol)
    assert rc == 0 and "cred-m:" in out and "feasible" in out
    rc, out, _ = run(capsys, "edge", "verify", inst, sol)
    assert rc == 0 and out.startswith("ok:")
    rc, out, _ = run(capsys, "edge", "solve", inst, "-a", "first-fit", "--json")
    row = json.loads(out)
    assert rc == 0 and row["feasible"] is True and row["active_nodes"] >= row["lower_bound"]


def test_compare_json_has_the_promised_fields(inst_file, capsys):
    rc, out, _ = run(capsys, "edge", "compare", inst_file, "--json")
    assert rc == 0
    res = json.loads(out)
    for name in ("cred-m", "cred-s", "cred-s-per-deadline", "first-fit"):
        row = res["algorithms"][name]
        assert {"active_nodes", "feasible", "seconds"} <= set(row)
    assert res["lower_bound"] == 3 and res["optimum"] == 3
    rc, out, _ = run(capsys, "edge", "compare", inst_file, "--json", "--optimum", "never", "--algorithms", "cred-m,milp")
    res = json.loads(out)
    assert res["optimum"] is None and res["algorithms"]["milp"]["active_nodes"] == 3


def test_compare_skips_the_optimum_on_large_instances(tmp_path, capsys):
    inst = tmp_path / "big.json"
    run(capsys, "edge", "generate", "-o", inst, "--jobs", 200, "--chunks", 800)
    rc, out, _ = run(capsys, "edge", "compare", inst, "--json", "--max-variables", 100)
    res = json.loads(out)
    assert rc == 0 and res["optimum"] is None and res["optimum_status"] == "too_large"


def test_compare_table(inst_file, capsys):
    rc, out, _ = run(capsys, "edge", "compare", inst_file)
    assert rc == 0 and "cred-m" in out and "lower bound" in out and "optimum (MILP)" in out


def test_solve_needing_more_than_n_nodes_exits_1(tmp_path, capsys):
    p = tmp_path / "tight.json"
    p.write_text(json.dumps({**GOOD_INSTANCE, "nodes": 1, "jobs": [{"deadline": 1, "chunks": [0, 1, 2]}]}))
    rc, out, err = run(capsys, "edge", "solve", p, "--json")
    assert rc == 1 and json.loads(out)["feasible"] is False and "node_out_of_range" in err


def test_verify_rejects_a_broken_solution(inst_file, tmp_path, capsys):
    sol = tmp_path / "s.json"
    run(capsys, "edge", "solve", inst_file, "-o", sol)
    data = json.loads(sol.read_text())
    data["tasks"]["slot"][0] = 50
    sol.write_text(json.dumps(data))
    rc, out, _ = run(capsys, "edge", "verify", inst_file, sol)
    assert rc == 1 and "deadline_missed" in out
    rc, out, _ = run(capsys, "edge", "verify", inst_file, sol, "--json")
    assert rc == 1 and json.loads(out)["violations"][0]["kind"] == "deadline_missed"


def test_figure4_writes_plots_and_data(tmp_path, capsys):
    out_dir = tmp_path / "fig"
    rc, out, err = run(capsys, "edge", "figure4", "-o", out_dir, "--seeds", 1, "--jobs", 20, "--chunks", 40,
                       "--spreads", "0,5", "--fractions", "0,0.5,1", "--algorithms", "cred-m,first-fit")
    assert rc == 0, err
    for f in ("spread.csv", "spread.png", "mix.csv", "mix.png", "figure4.json"):
        assert (out_dir / f).stat().st_size > 0
    assert (out_dir / "spread.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((out_dir / "figure4.json").read_text())
    assert set(summary["spread"]) == {"cred-m", "first-fit", "lower-bound"}


def test_figure4_keeps_its_instances_in_results_and_resumes(tmp_path, capsys):
    args = ["edge", "figure4", "--seeds", 1, "--jobs", 20, "--chunks", 40, "--spreads", "0,5", "--fractions", "0,1", "--algorithms", "cred-m", "--results", tmp_path / "store"]
    rc, _, err = run(capsys, *args, "-o", tmp_path / "a", "-j", 1)
    assert rc == 0, err
    runs = sorted(p.name for p in (tmp_path / "store" / "runs").iterdir())
    assert len(runs) == 3  # spread 0 is fraction 1
    stamp = {r: (tmp_path / "store" / "runs" / r / "summary.json").stat().st_mtime_ns for r in runs}
    rc, _, err = run(capsys, *args, "-o", tmp_path / "b")
    assert rc == 0, err
    assert {r: (tmp_path / "store" / "runs" / r / "summary.json").stat().st_mtime_ns for r in runs} == stamp  # nothing ran again
    assert (tmp_path / "a" / "figure4.json").read_text() == (tmp_path / "b" / "figure4.json").read_text()


# -- bad input: one line, exit 2 -------------------------------------------------------------------
BAD_INSTANCES = [
    ("[1, 2]", "expected a JSON object"),
    ('{"nodes": 1,\n "jobs": [}', "inst.json:2: invalid JSON"),
    ({**GOOD_INSTANCE, "colour": 1}, "inst.json: colour: unknown field"),
    ({**GOOD_INSTANCE, "format": "other"}, "inst.json: format"),
    ({k: v for k, v in GOOD_INSTANCE.items() if k != "nodes"}, "inst.json: nodes: missing"),
    ({**GOOD_INSTANCE, "nodes": 0}, "inst.json: nodes: must be >= 1"),
    ({**GOOD_INSTANCE, "chunks_per_node": True}, "inst.json: chunks_per_node: must be an integer"),
    ({**GOOD_INSTANCE, "vms_per_node": 2.5}, "inst.json: vms_per_node: must be an integer"),
    ({**GOOD_INSTANCE, "nodes": 2**40}, "inst.json: nodes: 1099511627776 is out of range"),
    ({k: v for k, v in GOOD_INSTANCE.items() if k != "jobs"}, "inst.json: jobs: missing"),
    ({**GOOD_INSTANCE, "jobs": []}, "inst.json: jobs: must be a non-empty list"),
    ({**GOOD_INSTANCE, "jobs": [3]}, "inst.json: jobs[0]: expected an object"),
    ({**GOOD_INSTANCE, "jobs": [{"deadline": 2, "chunks": [0], "prio": 1}]}, "inst.json: jobs[0].prio: unknown field"),
    ({**GOOD_INSTANCE, "jobs": [{"chunks": [0]}]}, "inst.json: jobs[0].deadline: missing"),
    ({**GOOD_INSTANCE, "jobs": [{"deadline": 2, "chunks": [0]}, {"deadline": 0, "chunks": [0]}]}, "inst.json: jobs[1].deadline: must be >= 1"),
    ({**GOOD_INSTANCE, "jobs": [{"deadline": "3", "chunks": [0]}]}, "inst.json: jobs[0].deadline: must be an integer"),
    ({**GOOD_INSTANCE, "jobs": [{"deadline": 2}]}, "inst.json: jobs[0].chunks: missing"),
    ({**GOOD_INSTANCE, "jobs": [{"deadline": 2, "chunks": []}]}, "inst.json: jobs[0].chunks: must be a non-empty list"),
    ({**GOOD_INSTANCE, "jobs": [{"deadline": 2, "chunks": [0, -1]}]}, "inst.json: jobs[0].chunks[1]: chunk ids are integers"),
    ({**GOOD_INSTANCE, "jobs": [{"deadline": 2, "chunks": [0, "a"]}]}, "inst.json: jobs[0].chunks[1]"),
    ({**GOOD_INSTANCE, "jobs": [{"deadline": 2, "chunks": [4, 5, 4]}]}, "inst.json: jobs[0].chunks[2]: chunk 4 listed twice"),
    ({**GOOD_INSTANCE, "name": 5}, "inst.json: name: must be a string"),
]


@pytest.mark.parametrize("content,needle", BAD_INSTANCES)
@pytest.mark.parametrize("command", ["solve", "compare"])
def test_bad_instance_is_one_line_exit_2(tmp_path, capsys, content, needle, command):
    p = tmp_path / "inst.json"
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    out_file = tmp_path / "out.json"
    rc, _, err = run(capsys, "edge", command, p, "-o", out_file)
    one_line_error(rc, err, needle)
    assert not out_file.exists()  # nothing written on failure


def test_missing_instance_file(tmp_path, capsys):
    rc, _, err = run(capsys, "edge", "solve", tmp_path / "nope.json")
    one_line_error(rc, err, "nope.json: instance file not found")


def test_unreadable_instance_encoding(tmp_path, capsys):
    p = tmp_path / "inst.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    rc, _, err = run(capsys, "edge", "solve", p)
    one_line_error(rc, err, "cannot read instance")


BAD_SOLUTIONS = [
    ("{", "s.json:1: invalid JSON"),
    ({"placement": {"node": [0], "chunk": [0]}}, "s.json: tasks: missing"),
    ({"tasks": {"job": [], "chunk": [], "node": [], "vm": [], "slot": []}}, "s.json: placement: missing"),
    ({"placement": [0], "tasks": {}}, "s.json: placement: expected an object of columns"),
    ({"placement": {"node": [0, 1], "chunk": [0]}, "tasks": {"job": [], "chunk": [], "node": [], "vm": [], "slot": []}}, "s.json: placement.chunk: has 1 entries but node has 2"),
    ({"placement": {"node": [0], "chunk": [0], "size": [1]}, "tasks": {"job": [], "chunk": [], "node": [], "vm": [], "slot": []}}, "s.json: placement.size: unknown column"),
    ({"placement": {"node": [0], "chunk": [0]}, "tasks": {"job": [0], "chunk": [0], "node": [0], "vm": [0]}}, "s.json: tasks.slot: missing"),
    ({"placement": {"node": [0], "chunk": [0]}, "tasks": {"job": [0], "chunk": [0], "node": [0], "vm": [0.5], "slot": [0]}}, "s.json: tasks.vm[0]: must be an integer"),
    ({"placement": {"node": [0], "chunk": [0], "removed_at": ["x"]}, "tasks": {"job": [], "chunk": [], "node": [], "vm": [], "slot": []}}, "s.json: placement.removed_at[0]: must be an integer or null"),
    ({"placement": {"node": [0], "chunk": [2**40]}, "tasks": {"job": [], "chunk": [], "node": [], "vm": [], "slot": []}}, "s.json: placement.chunk[0]: 1099511627776 is out of range"),
    ({"placement": {"node": [], "chunk": []}, "tasks": {"job": [], "chunk": [], "node": [], "vm": [], "slot": []}, "active_nodes": -1}, "s.json: active_nodes"),
    ({"placement": {"node": [], "chunk": []}, "tasks": {"job": [], "chunk": [], "node": [], "vm": [], "slot": []}, "format": "x"}, "s.json: format"),
    ({"placement": {"node": [], "chunk": []}, "tasks": {"job": [], "chunk": [], "node": [], "vm": [], "slot": []}, "extra": 1}, "s.json: extra: unknown field"),
]


@pytest.mark.parametrize("content,needle", BAD_SOLUTIONS)
def test_bad_solution_is_one_line_exit_2(inst_file, tmp_path, capsys, content, needle):
    p = tmp_path / "s.json"
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    rc, _, err = run(capsys, "edge", "verify", inst_file, p)
    one_line_error(rc, err, needle)


BAD_OPTIONS = [
    (["solve", "{inst}", "-a", "magic"], "--algorithm: unknown algorithm 'magic'"),
    (["compare", "{inst}", "--algorithms", "cred-m,magic"], "--algorithms: unknown algorithm 'magic'"),
    (["compare", "{inst}", "--algorithms", ","], "--algorithms: no algorithm given"),
    (["compare", "{inst}", "--optimum", "sometimes"], "--optimum: expected auto, always or never"),
    (["compare", "{inst}", "--max-variables", "0"], "--max-variables: must be >= 1"),
    (["compare", "{inst}", "--milp-time-limit", "0"], "--milp-time-limit: must be > 0"),
    (["solve", "{inst}", "-a", "milp", "--milp-time-limit", "-1"], "--milp-time-limit: must be > 0"),
    (["generate", "-o", "{out}", "--jobs", "0"], "--jobs: must be an integer in [1, 2**31)"),
    (["generate", "-o", "{out}", "--jobs", "many"], "Invalid value for '--jobs'"),
    (["generate", "-o", "{out}", "--chunks", "0"], "--chunks: must be"),
    (["generate", "-o", "{out}", "-B", "0"], "--chunks-per-node: must be"),
    (["generate", "-o", "{out}", "-S", "0"], "--vms-per-node: must be"),
    (["generate", "-o", "{out}", "--nodes", "0"], "--nodes: must be in [1, 2**31)"),
    (["generate", "-o", "{out}", "--seed", "-1"], "--seed: must be >= 0"),
    (["generate", "-o", "{out}", "--popularity", "-1"], "--popularity: must be >= 0"),
    (["generate", "-o", "{out}", "--chunks-per-job", "zipf:2"], "--chunks-per-job: unknown distribution 'zipf'"),
    (["generate", "-o", "{out}", "--chunks-per-job", "uniform:0,4"], "--chunks-per-job"),
    (["generate", "-o", "{out}", "--deadlines", "4,x"], "--deadlines: expected comma-separated integers"),
    (["generate", "-o", "{out}", "--deadlines", "4,4"], "--deadlines: deadlines must be distinct"),
    (["generate", "-o", "{out}", "--deadlines", "0,4"], "--deadlines"),
    (["generate", "-o", "{out}", "--deadlines", ""], "--deadlines: needs at least one value"),
    (["generate", "-o", "{out}", "--deadlines", "4,8", "--mix", "1"], "--mix: has 1 weights for 2 deadlines"),
    (["generate", "-o", "{out}", "--deadlines", "4,8", "--mix", "1,-1"], "--mix: weights must be finite"),
    (["generate", "-o", "{out}", "--deadlines", "4,8", "--mix", "a,b"], "--mix: expected comma-separated numbers"),
    (["figure4", "-o", "{out}", "--seeds", "0"], "--seeds: must be >= 1"),
    (["figure4", "-o", "{out}", "--optimum-time-limit", "0"], "--optimum-time-limit: must be > 0"),
    (["figure4", "-o", "{out}", "--d1", "10", "--d2", "10"], "--d2: need 1 <= d1 < d2"),
    (["figure4", "-o", "{out}", "--spreads", "-1"], "--spreads: spreads must be >= 0"),
    (["figure4", "-o", "{out}", "--fractions", "1.5"], "--fractions: fractions must be in [0, 1]"),
    (["figure4", "-o", "{out}", "--fractions", "half"], "--fractions: expected comma-separated numbers"),
    (["figure4", "-o", "{out}", "--algorithms", "cred-m,milp"], "--algorithms: milp is not available in sweeps"),
    (["figure4", "-o", "{out}", "--jobs", "0"], "--jobs: must be"),
    (["figure4", "-o", "{out}", "--processes", "0"], "--processes: must be >= 1"),
    (["figure4", "-o", "{out}", "-j", "100000"], "--processes: 100000 processes on a machine"),
    (["figure4", "-o", "{out}", "--backend", "slurm"], "--backend: unknown backend 'slurm'"),
    (["figure4", "-o", "{out}", "--address", "auto"], "--address: only used with --backend ray"),
    (["solve"], "Missing argument"),
    (["nonsense"], "No such command"),
]


@pytest.mark.parametrize("args,needle", BAD_OPTIONS)
def test_bad_option_is_one_line_exit_2(inst_file, tmp_path, capsys, args, needle):
    out = tmp_path / "out"
    argv = ["edge", *(a.format(inst=inst_file, out=out) for a in args)]
    rc, _, err = run(capsys, *argv)
    one_line_error(rc, err, needle)
    assert not out.exists()


def test_missing_solution_file(inst_file, tmp_path, capsys):
    rc, _, err = run(capsys, "edge", "verify", inst_file, tmp_path / "none.json")
    one_line_error(rc, err, "none.json: solution file not found")


def test_milp_on_an_instance_that_does_not_fit_in_n(tmp_path, capsys):
    p = tmp_path / "tight.json"
    p.write_text(json.dumps({**GOOD_INSTANCE, "nodes": 1, "jobs": [{"deadline": 1, "chunks": [0, 1, 2]}]}))
    rc, _, err = run(capsys, "edge", "solve", p, "-a", "milp")
    one_line_error(rc, err, "milp: no schedule fits in N = 1 nodes")


def test_milp_refuses_instances_too_large_to_build(tmp_path, capsys):
    p = tmp_path / "big.json"
    run(capsys, "edge", "generate", "-o", p, "--jobs", 300, "--chunks", 3000, "-B", 8)
    rc, _, err = run(capsys, "edge", "solve", p, "-a", "milp")
    one_line_error(rc, err, "milp: instance too large for the exact MILP")
