"""Specs of the grid, locality and edge domains: the data-center spec's format, the one runner and store, checked input."""

from __future__ import annotations

import pandas as pd
import pytest

from schedlab.cli import main
from tests.experiments.helpers import write_spec

GRID = """\
name: grid-dup
domain: grid
instance: {local_jobs: 200, global_jobs: 200}
vary: {arrivals: [strong, weak]}
schedulers:
  - name: hybrid1
    label: "hybrid1+{duplications}"
    grid: {duplications: [0, 2]}
  - name: rand
seeds: 2
"""

LOCALITY = """\
name: loc
domain: locality
instance: {tasks: 30, servers: 10, core_num: 4}
vary: {beta: [100, 1000]}
schedulers:
  - name: dyndloff
  - name: delay
    label: "delay-{delay_threshold}"
    grid: {delay_threshold: [0.0, 3.0]}
seeds: [0, 1]
"""

EDGE = """\
name: edge
domain: edge
instance: {jobs: 20, chunks: 40}
vary: {deadlines: ["10", "10,20"]}
schedulers: [{name: cred-m}, {name: first-fit}]
seeds: 1
"""


def test_a_grid_spec_runs_each_point_once_with_the_ideal_and_the_grid_commands_numbers(tmp_path, capsys):
    from schedlab.grid.metrics import perf_gap
    from schedlab.grid.simulation import GridConfig, simulate_grid

    out = tmp_path / "r"
    assert main(["sweep", str(write_spec(tmp_path, GRID)), "--out", str(out), "-j", "1"]) == 0
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 2 * 2 * (1 + 3)  # arrivals x seeds x (ideal + three variants)
    assert list(df["scheduler"].unique()) == ["ideal", "hybrid1+0", "hybrid1+2", "rand"]
    row = df[(df.scheduler == "hybrid1+2") & (df.arrivals == "weak") & (df.seed == 1)].iloc[0]
    cfg = GridConfig(local_jobs=200, global_jobs=200, arrivals="weak", seed=1, scheduler="hybrid1", duplications=2)
    direct = simulate_grid(cfg).summary["mean_queue_time"]
    assert row["mean_queue_time"] == pytest.approx(direct, rel=1e-12)
    ideal = simulate_grid(cfg.ideal()).summary["mean_queue_time"]
    assert row["perf_gap"] == pytest.approx(perf_gap(direct, ideal), rel=1e-9)
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 2 * 4 and {"mean_queue_time", "perf_gap"} <= set(summary.columns)
    report = (out / "report.md").read_text()
    assert "## perf_gap" in report and (out / "perf_gap.png").stat().st_size > 1000
    capsys.readouterr()
    assert main(["sweep", str(write_spec(tmp_path, GRID)), "--out", str(out)]) == 0
    assert "0 run(s) done, 16 already finished" in capsys.readouterr().err


def test_a_locality_spec_gives_the_algorithms_own_numbers(tmp_path):
    from schedlab.experiments.domain_sweep import run_domain_sweep
    from schedlab.locality.algorithms import run_algorithm
    from schedlab.locality.instances import generate

    res = run_domain_sweep(write_spec(tmp_path, LOCALITY), tmp_path / "r", jobs=2)
    assert len(res.ran) == 2 * 3 * 2 and not res.failed
    df = pd.read_csv(tmp_path / "r" / "results.csv")
    row = df[(df.scheduler == "delay-3.0") & (df.beta == 1000) & (df.seed == 1)].iloc[0]
    r = run_algorithm("delay", generate(tasks=30, servers=10, core_num=4, beta=1000, seed=1), 1, {"delay_threshold": 3.0})
    assert (row["makespan"], row["remote_tasks"]) == (r.makespan, r.remote_tasks)


def test_an_edge_spec_verifies_every_schedule(tmp_path):
    from schedlab.experiments.domain_sweep import run_domain_sweep

    run_domain_sweep(write_spec(tmp_path, EDGE), tmp_path / "r", jobs=1)
    df = pd.read_csv(tmp_path / "r" / "results.csv")
    assert len(df) == 4 and df["feasible"].all() and (df["active_nodes"] >= df["lower_bound"]).all()


@pytest.mark.parametrize(
    ("edit", "expect"),
    [
        (("domain: grid", "domain: cloud"), "exp.yaml:2: domain: Input should be 'grid', 'locality' or 'edge'"),
        (("- name: rand", "- name: best"), "exp.yaml:9: schedulers[1].name: unknown grid scheduler 'best' (choose from rand, qlen"),
        (("[0, 2]", "[0, -2]"), "exp.yaml:8: schedulers[0].grid.duplications[1]: Input should be greater than or equal to 0"),
        (("[strong, weak]", "[strong, gusty]"), "exp.yaml:4: vary.arrivals[1]: unknown arrival process 'gusty'"),
        (("{local_jobs: 200,", "{speed: 3, local_jobs: 200,"), "exp.yaml:3: instance.speed: unknown setting (choose from sites, processors"),
        (("{local_jobs: 200,", "{duplications: 3, local_jobs: 200,"), "instance.duplications: is set by the schedulers' params and the seeds"),
        (("seeds: 2", "seeds: 2\nmetrics: [jrt_delay.p99]"), "exp.yaml:11: metrics[0]: unknown metric 'jrt_delay.p99' for domain grid"),
        (("vary: {arrivals: [strong, weak]}", "vary: {arrivals: []}"), "exp.yaml:4: vary: vary 'arrivals' has no values"),
        (("label: \"hybrid1+{duplications}\"", "label: \"h\""), "exp.yaml:7: schedulers[0].label: two variants are labelled 'h'"),
    ],
)
def test_bad_domain_specs_are_one_line_naming_the_line_and_field(tmp_path, capsys, edit, expect):
    spec = write_spec(tmp_path, GRID.replace(*edit))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert expect in err and "\n" not in err
    assert not (tmp_path / "r").exists()  # nothing written


def test_a_bad_generator_setting_of_another_domain_names_its_field(tmp_path, capsys):
    spec = write_spec(tmp_path, LOCALITY.replace("tasks: 30", "tasks: 0"))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r")]) == 2
    assert "exp.yaml:3: instance.tasks: must be" in capsys.readouterr().err


def test_compare_and_report_read_a_domain_sweeps_folder(tmp_path, capsys):
    import json

    out = tmp_path / "r"
    assert main(["sweep", str(write_spec(tmp_path, GRID)), "--out", str(out), "-j", "1"]) == 0
    capsys.readouterr()
    assert main(["compare", str(out), "--baseline", "rand", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["baseline"] == "rand" and doc["runs_finished"] == doc["runs_total"] == 16
    rows = {(r["arrivals"], r["scheduler"], r["metric"]): r for r in doc["rows"]}
    assert rows[("weak", "rand", "perf_gap")]["ratio"] == 1.0 and rows[("weak", "ideal", "perf_gap")]["mean"] == 0.0
    assert rows[("strong", "hybrid1+2", "mean_queue_time")]["n"] == 2
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "report.md").read_text() == (out / "report.md").read_text()
    assert main(["compare", str(out), "--metric", "jrt_delay.p99"]) == 2
    assert "error: --metric: no finished run reports 'jrt_delay.p99'" in capsys.readouterr().err


def test_compare_of_a_domain_folder_with_nothing_finished_is_one_line(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["sweep", str(write_spec(tmp_path, EDGE)), "--out", str(out), "-j", "1"]) == 0
    for summary in (out / "runs").glob("*/summary.json"):
        summary.unlink()  # as if every run had failed
    capsys.readouterr()
    assert main(["compare", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {out}: no finished run to compare (run `schedlab sweep` first)"
