"""compare (table, JSON, ratios to a baseline) and report (Markdown, HTML, non-empty PNGs)."""

from __future__ import annotations

import json

import pytest

from schedlab.cli import main
from schedlab.experiments.compare import compare
from schedlab.experiments.report import write_report
from schedlab.experiments.runner import run_sweep
from tests.experiments.helpers import write_spec

SPEC = """\
name: two-sizes
workloads:
  - name: gen
    generate: {jobs: 15, arrivals: "poisson:0.3", tasks_per_job: "geom:6", duration: "exp:3", seed: 1}
data_centers:
  - workers: 30
  - workers: 60
schedulers:
  - name: megha
    params: {gms: 2, lms: 2}
  - name: centralized
seeds: [0, 1]
baseline: centralized
"""

FAIR = """\
name: fair
workloads:
  - name: gen
    generate: {jobs: 20, arrivals: "poisson:0.2", tasks_per_job: "geom:8", duration: "exp:20", seed: 1}
data_centers:
  - {workers: 8, resource_mode: multi}
schedulers:
  - name: megha
    params: {gms: 2, lms: 2, shares: [0.3, 0.7]}
seeds: [0]
plots: [fairness_counters]
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    return run_sweep(write_spec(tmp, SPEC), tmp / "res", jobs=1).root


def test_compare_table_means_spread_and_ratios(results):
    t = compare(results, ["jrt_delay.p99", "utilization.mean"])
    assert t.attrs["baseline"] == "centralized"
    assert len(t) == 2 * 2 * 2  # data centers x schedulers x metrics
    assert (t["n"] == 2).all()
    base = t[t["scheduler"] == "centralized"]
    assert ((base["ratio"] == 1.0) | base["baseline_mean"].eq(0)).all()
    row = t[(t["scheduler"] == "megha") & (t["data_center"] == "30w") & (t["metric"] == "utilization.mean")].iloc[0]
    ref = t[(t["scheduler"] == "centralized") & (t["data_center"] == "30w") & (t["metric"] == "utilization.mean")].iloc[0]
    assert row["ratio"] == pytest.approx(row["mean"] / ref["mean"])
    assert row["min"] <= row["mean"] <= row["max"]


def test_compare_cli_table_json_and_errors(results, capsys):
    assert main(["compare", str(results)]) == 0
    out = capsys.readouterr().out
    assert "jrt_delay" in out and "p50" in out and "×" in out and "megha" in out
    assert main(["compare", str(results), "--json", "--baseline", "megha", "-m", "allocation_time.p99"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"] == "megha" and data["metrics"] == ["allocation_time.p99"]
    assert {r["scheduler"] for r in data["rows"]} == {"megha", "centralized"}
    assert main(["compare", str(results), "-m", "jrt_delay.p42"]) == 2
    assert "error: --metric: unknown metric 'jrt_delay.p42'" in capsys.readouterr().err
    assert main(["compare", str(results), "--baseline", "nosuch"]) == 2
    assert "error: --baseline: no scheduler is labelled 'nosuch'" in capsys.readouterr().err
    assert main(["compare", str(results.parent)]) == 2
    assert "not a results folder" in capsys.readouterr().err


def test_report_writes_markdown_html_and_non_empty_pngs(results, tmp_path):
    rep = write_report(results, tmp_path / "rep")
    names = {p.name for p in rep.images}
    for expected in (
        "jrt_delay_cdf_gen.png",
        "allocation_cdf_gen.png",
        "allocation_percentiles_gen.png",
        "allocation_components_gen.png",
        "allocation_by_size_gen.png",
        "utilization_cdf_gen.png",
        "utilization_normalized.png",
        "constraint_load_gen_30w.png",
        "constraint_load_gen_60w.png",
    ):
        assert expected in names
    for p in rep.images:
        data = p.read_bytes()
        assert len(data) > 5000 and data[:8] == b"\x89PNG\r\n\x1a\n"
    md = rep.markdown.read_text()
    assert all(f"({p.name})" in md for p in rep.images)
    assert "Figures 6–8" in md and "Table 1" in md and "## Runs" in md
    page = rep.html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page and 'src="jrt_delay_cdf_gen.png"' in page
    assert json.loads((tmp_path / "rep" / "comparison.json").read_text())["baseline"] == "centralized"
    assert not list((tmp_path / "rep").glob("*.tmp"))


def test_fairness_counters_plot(tmp_path, capsys):
    root = run_sweep(write_spec(tmp_path, FAIR), tmp_path / "res", jobs=1).root
    assert main(["report", str(root)]) == 0
    assert "wrote" in capsys.readouterr().err
    png = root / "report" / "fairness_counters_gen.png"
    assert png.is_file() and png.stat().st_size > 5000
    md = (root / "report" / "report.md").read_text()
    assert "Megha paper, Figure 11" in md and "preemption_attempts" in md


# Megha with more GMs than the workers can keep apart: rejections in most busy seconds
CONTENDED = {"name": "contended", "seeds": [0], "tables": ["jobs", "utilization", "inconsistencies"],
             "plots": ["inconsistencies_over_time"], "data_centers": [{"workers": 20}],
             "schedulers": [{"name": "megha", "params": {"gms": 3, "lms": 2}}],
             "workloads": [{"name": "gen", "generate": {"jobs": 40, "arrivals": "poisson:2", "tasks_per_job": "geom:10",
                                                        "duration": "exp:3", "seed": 1}}]}


def test_inconsistencies_over_time_plot(tmp_path):
    import yaml

    root = run_sweep(write_spec(tmp_path, yaml.safe_dump(CONTENDED)), tmp_path / "res", jobs=1).root
    write_report(root)
    assert (root / "report" / "inconsistencies_gen.png").stat().st_size > 5000
    assert "Figure 5: conflicts per second" in (root / "report" / "report.md").read_text()


def test_inconsistencies_per_gm_fills_zeros_and_averages_long_spans():
    import pandas as pd

    from schedlab.experiments.report import inconsistencies_per_gm

    t = pd.DataFrame({"time": [100.0, 100.0, 103.0], "gm": [0, 2, 0], "inconsistencies": [2, 1, 4]})
    f = inconsistencies_per_gm(t, 100.0, 105.0)
    assert list(f.columns) == ["GM 1", "GM 3"] and f.index.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert f["GM 1"].tolist() == [2, 0, 0, 4, 0] and f["GM 3"].tolist() == [1, 0, 0, 0, 0]
    g = inconsistencies_per_gm(t, 100.0, 105.0, max_points=2)  # bins of 3 s: per-second means
    assert g.index.tolist() == [0.0, 3.0] and g["GM 1"].tolist() == pytest.approx([2 / 3, 4 / 3])
