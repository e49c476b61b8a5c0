"""`schedlab grid …`: JSON output, sweeps and plots, and bad input as one line with exit code 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from schedlab.cli import main

SMALL = ["--local-jobs", "600", "--global-jobs", "600"]


def test_simulate_json(capsys):
    rc = main(["grid", "simulate", "-s", "hybrid2", "-d", "2", "--arrivals", "weak", "--with-ideal", "--json", *SMALL])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert set(s["queue_time_buckets"]) == {"<10s", "10-100s", ">=100s"}
    for key in ("mean_queue_time", "perf_gap", "ideal_mean_queue_time", "utilization"):
        assert key in s
    assert 0 < s["utilization"]["mean"] < 1 and len(s["utilization"]["per_site"]) == 8


def test_simulate_without_ideal_has_no_gap(capsys, tmp_path):
    rc = main(["grid", "simulate", "--json", "--out", str(tmp_path / "run"), *SMALL])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert "perf_gap" not in s
    jobs = pd.read_csv(tmp_path / "run" / "jobs.csv")
    assert len(jobs) == 600 and (jobs["queue_time"] >= 1.0).all()
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["mean_queue_time"] == pytest.approx(s["mean_queue_time"])


def test_simulate_table(capsys):
    assert main(["grid", "simulate", "-s", "rand", *SMALL]) == 0
    assert "mean queue time" in capsys.readouterr().out


def test_sweep_resumes_and_plots(tmp_path, capsys):
    out = tmp_path / "sw"
    args = ["grid", "sweep", "--out", str(out), "-s", "rand,hybrid1", "-d", "0-1", "--arrivals", "strong", "-q", *SMALL]
    assert main([*args, "--plot"]) == 0
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 1 + 2 * 2  # the ideal and four runs
    assert set(df["scheduler"]) == {"ideal", "rand", "hybrid1"}
    assert (df[df["scheduler"] == "ideal"]["perf_gap"] == 0).all()
    assert (out / "gap_vs_duplications_0-strong_delay1.png").stat().st_size > 1000
    assert (out / "composition_0-strong.png").stat().st_size > 1000
    # A second run finds every row done and reruns nothing.
    before = (out / "results.csv").read_text()
    assert main(args) == 0
    assert pd.read_csv(out / "results.csv").equals(pd.read_csv(pd.io.common.StringIO(before)))
    assert main(["grid", "plot", str(out), "--kind", "composition", "--out", str(tmp_path / "f4.png")]) == 0
    assert (tmp_path / "f4.png").stat().st_size > 1000


@pytest.mark.parametrize(
    "args, message",
    [
        (["grid", "simulate", "-s", "best"], "error: --scheduler: unknown scheduler 'best'"),
        (["grid", "simulate", "-d", "9"], "error: --duplications: must be in 0..7"),
        (["grid", "simulate", "--policy", "lifo"], "error: --policy: unknown queue policy 'lifo'"),
        (["grid", "simulate", "--arrivals", "mmpp:10,20"], "error: --arrivals: mmpp takes 3 or 4 argument(s)"),
        (["grid", "simulate", "--arrivals", "mmpp:10,20,5"], "error: --arrivals: an MMPP-2 has SCV < IDC"),
        (["grid", "simulate", "--size", "pow2:1,128"], "error: --size: 'pow2:1,128' gives jobs of up to 128 processors"),
        (["grid", "simulate", "--runtime", "weibull:1"], "error: --runtime: unknown distribution 'weibull'"),
        (["grid", "simulate", "--local-load", "1.2"], "error: --local-load: must be in [0, 1)"),
        (["grid", "simulate", "--delay", "-1"], "error: --delay: must be >= 0"),
        (["grid", "sweep", "--out", "x", "-d", "3-1"], "error: --duplications: expected integers"),
        (["grid", "sweep", "--out", "x", "-s", "rand,nope"], "error: --schedulers: unknown scheduler 'nope'"),
        (["grid", "simulate", "--global-swf", "/nonexistent.swf"], "error: /nonexistent.swf: no such SWF file"),
        (["grid", "plot", "/nonexistent", "--out", "f.png"], "error: /nonexistent: no results.csv here"),
        (["grid", "simulate", "--sites", "abc"], "error: Invalid value for '--sites'"),
    ],
)
def test_bad_options_one_line_exit_2(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_swf_line_one_line_exit_2(tmp_path, capsys):
    p = tmp_path / "bad.swf"
    p.write_text("; a trace\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n2 5 0 ten 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n")
    assert main(["grid", "simulate", "--global-swf", str(p), *SMALL]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {p}:3: field 4 is not a number: 'ten'\n"


def test_sweep_arrival_lists():
    from schedlab.grid.cli import _split_arrivals

    assert _split_arrivals("strong,weak") == ["strong", "weak"]
    assert _split_arrivals("mmpp:10,20,55,0.01;poisson:4,non-bursty") == ["mmpp:10,20,55,0.01", "poisson:4", "non-bursty"]


def test_help_names_the_workload_defaults(capsys, monkeypatch):
    from schedlab.grid import workload as gw

    monkeypatch.setenv("COLUMNS", "400")
    main(["grid", "simulate", "--help"])
    text = capsys.readouterr().out
    for default in (gw.DEFAULT_SIZE, gw.DEFAULT_RUNTIME, str(gw.DEFAULT_ESTIMATE_FACTOR)):
        assert f"[default: ({default})]" in text


@pytest.mark.parametrize(
    "text, problem",
    [
        ('arrivals,scheduler\n"strong', "not a readable CSV results file"),
        ("", "not a readable CSV results file"),
        ("a,b\n1,2\n", "not a grid sweep results file (missing"),
    ],
)
def test_plot_of_a_bad_results_file_is_one_line(tmp_path, capsys, text, problem):
    p = tmp_path / "results.csv"
    p.write_text(text)
    assert main(["grid", "plot", str(tmp_path), "--out", str(tmp_path / "plots")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {p}: {problem}") and err.count("\n") == 1
    assert not (tmp_path / "plots").exists() or not any((tmp_path / "plots").iterdir())
