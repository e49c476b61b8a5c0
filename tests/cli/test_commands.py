"""The Python API and the `schedlab` command: the summary contract, outputs, and every bad-input path."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from schedlab import Result, simulate
from schedlab.cli import main
from tests.helpers import write_lines

STATS = {"count", "mean", "p50", "p90", "p99", "p999", "p9999", "max"}


def test_python_api_result(tiny_trace):
    r = simulate("ideal", str(tiny_trace), workers=50, seed=3)
    assert isinstance(r, Result)
    assert isinstance(r.tasks, pd.DataFrame) and isinstance(r.jobs, pd.DataFrame)
    assert len(r.jobs) == r.summary["jobs"] and len(r.tasks) == r.summary["tasks"]


def test_simulate_writes_the_summary_contract(tmp_path, tiny_trace, capsys):
    out = tmp_path / "s.json"
    rc = main(["simulate", "-s", "centralized", "-t", str(tiny_trace), "-w", "40", "--seed", "2", "--summary-json", str(out), "--out", str(tmp_path / "run"), "--format", "both"])
    assert rc == 0
    s = json.loads(out.read_text())
    for key in ("scheduler", "trace", "workers", "seed", "jobs", "tasks", "counters", "wall_seconds", "events", "utilization"):
        assert key in s
    assert s["scheduler"] == "centralized" and s["workers"] == 40 and s["seed"] == 2
    for key in ("jrt_delay", "jrt", "allocation_time"):
        assert set(s[key]) == STATS
    assert set(s["allocation_components"]) == {"framework_queuing", "processing", "worker_queuing", "communication"}
    assert all(set(v) == STATS for v in s["allocation_components"].values())
    assert set(s["utilization"]) == {"mean", "p50", "p99"}
    files = {p.name for p in (tmp_path / "run").iterdir()}
    assert files == {"tasks.parquet", "jobs.parquet", "utilization.parquet", "inconsistencies.parquet", "tasks.csv", "jobs.csv",
                     "utilization.csv", "inconsistencies.csv", "summary.json"}
    assert "jrt_delay" in capsys.readouterr().out


def test_same_seed_same_summary(tiny_trace):
    a = simulate("ideal", str(tiny_trace), workers=30, seed=5).summary
    b = simulate("ideal", str(tiny_trace), workers=30, seed=5).summary
    for k in ("jrt_delay", "allocation_time", "utilization", "counters"):
        assert a[k] == b[k]


def _err(capsys) -> str:
    e = capsys.readouterr().err.strip()
    assert "\n" not in e and "Traceback" not in e, e
    return e


@pytest.mark.parametrize(
    ("lines", "what"),
    [
        (["0 2 1 1"], "bad.tr:1: task count is 2 but the line has 1"),
        (["0 1 1 x"], "bad.tr:1: task duration is not a number: 'x'"),
        (["0 1 1 -4"], "bad.tr:1: task duration must be finite and >= 0, got '-4'"),
        (["3 1 1 1", "2 1 1 1"], "bad.tr:2: arrival time 2 is earlier than the previous job's 3"),
    ],
)
def test_malformed_trace_one_line_exit_2_no_output(tmp_path, capsys, lines, what):
    p = write_lines(tmp_path / "bad.tr", lines)
    out = tmp_path / "s.json"
    rc = main(["simulate", "-t", str(p), "-w", "10", "--summary-json", str(out), "--out", str(tmp_path / "run")])
    assert rc == 2
    assert what in _err(capsys)
    assert not out.exists() and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["simulate", "-s", "nope"], "error: --scheduler: unknown scheduler 'nope'"),
        (["simulate", "-t", "nosuchtrace"], "error: nosuchtrace: no such trace file"),
        (["simulate", "-t", "syn_250", "-w", "0"], "error: --workers: must be >= 1"),
        (["simulate", "-p", "decision_cost=-1", "-s", "centralized"], "error: param decision_cost"),
        (["simulate", "-p", "oops"], "error: --param: expected KEY=VALUE"),
        (["simulate", "--worker-choice", "best"], "error: --worker-choice: Input should be 'min-constraints' or 'random'"),
        (["simulate", "-s", "sparrow", "--gms", "3"], "error: --gms: not a parameter of scheduler 'sparrow' (its parameters: --probe-ratio"),
        (["simulate", "-s", "megha", "--gmz", "3"], "error: --gmz: no such option (scheduler 'megha' takes --gms"),
        (["simulate", "-s", "megha", "--gms"], "error: --gms: needs a value"),
        (["simulate", "-s", "megha", "--gms", "2", "-p", "gms=3"], "error: --gms: given twice"),
        (["simulate", "-s", "megha", "stray"], "error: stray: unexpected argument"),
        (["simulate", "--format", "xml"], "error: --format: unknown format"),
        (["simulate", "--machine-model", "x", "-w", "5"], "error: --machine-model: unknown model"),
        (["simulate", "--resources", "gpu"], "error: --resource-mode: Input should be 'slots' or 'multi'"),
        (["simulate", "--resources", "multi", "--requests", "fixed:1", "-w", "5"], "error: requests: 'fixed:1' gives 1 resource"),
        (["simulate", "--seed", "-1", "-w", "5"], "error: --seed: must be a non-negative integer"),
        (["simulate", "--workers", "abc"], "error: Invalid value for '--workers'"),
        (["simulate", "--msg-cost", "LaunchTask=abc"], "error: --msg-cost: expected TYPE=SECONDS"),
        (["simulate", "--latency", "-1", "-w", "5"], "error: --latency: must be >= 0"),
        (["trace", "generate", "-o", "x.tr", "--duration", "exp:-1"], "error: duration: 'exp:-1': mean must be > 0"),
        (["trace", "generate", "-o", "x.tr", "--arrivals", "mmpp:10,0.5,3"], "error: mmpp.scv"),
        (["trace", "generate", "-o", "x.tr", "--job-duration-spread", "1.5"], "error: job_duration_spread: must be in [0, 1), got 1.5"),
        (["trace", "info", "google", "-w", "-3"], "error: --workers: must be >= 1"),
        (["simulate", "-s", "megha", "-w", "10", "--gms", "4", "--lms", "3"], "error: topology: 10 workers cannot fill 3 clusters x 4 partitions"),
        (["simulate", "-s", "megha", "--config", "reference-pigeon"], "error: --config: Megha needs a Megha config"),
        (["simulate", "-s", "megha", "-w", "50", "--updates", "sometimes"], "error: --updates: Input should be 'delta', 'snapshot', 'delta+own' or 'delta+own-unguarded'"),
        (["simulate", "-s", "megha", "-w", "50", "--heartbeat", "0"], "error: --heartbeat: Input should be greater than 0"),
        (["simulate", "-s", "megha", "--config", "reference", "--gms", "3"], "error: param gms: the config has 5 GMs"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, args, what):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    assert what in _err(capsys)
    assert not (tmp_path / "x.tr").exists()


def test_bad_config_names_the_field(tmp_path, capsys):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"LMs": {"1": {"partitions": {"1": ["0b1"] * 20}}}}))
    assert main(["simulate", "--config", str(p)]) == 2
    assert "c.json: LMs.1.partitions.1: expected a list of 21 constraint bit strings" in _err(capsys)
    assert main(["simulate", "--config", "reference", "-w", "5"]) == 2
    assert "config reference has 10000" in _err(capsys)


def test_trace_generate_then_info_then_simulate(tmp_path, capsys):
    p = tmp_path / "g.tr.gz"
    assert main(["trace", "generate", "-o", str(p), "-n", "30", "--arrivals", "poisson:2", "--tasks-per-job", "geom:4", "--duration", "exp:3", "--seed", "9"]) == 0
    capsys.readouterr()
    assert main(["trace", "info", str(p), "-w", "100", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["workload"]["jobs"] == 30 and "load" in info and len(info["per_constraint_load"]) == 21
    assert main(["simulate", "-t", str(p), "-w", "100", "-q"]) == 0


def test_schedulers_listing(capsys):
    assert main(["schedulers"]) == 0
    out = capsys.readouterr().out
    assert "ideal" in out and "centralized" in out


def test_megha_inconsistencies_over_time_add_up_to_its_counter(tmp_path):
    """The inconsistencies series (per second and GM) holds every rejection the counter counts."""
    import itertools

    from schedlab.workload.trace import read_trace

    r = simulate("megha", list(itertools.islice(read_trace("syn_250"), 300)), trace_label="syn_250", config="reference", seed=1)
    t = r.inconsistencies
    assert r.summary["counters"]["inconsistencies"] > 0
    assert int(t["inconsistencies"].sum()) == r.summary["counters"]["inconsistencies"]
    assert set(t["gm"]) <= set(range(5)) and (t["time"] == t["time"].round()).all()
    r.save(tmp_path / "run", ("csv",))
    assert pd.read_csv(tmp_path / "run" / "inconsistencies.csv")["inconsistencies"].sum() == t["inconsistencies"].sum()
    assert simulate("ideal", list(itertools.islice(read_trace("syn_250"), 5)), trace_label="syn_250", workers=300).inconsistencies.empty
