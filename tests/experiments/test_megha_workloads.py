"""The Megha paper's workloads from raw traces (trace megha-samples) and the built-in specs run on them
(reproduce --paper-traces), on the converters' fixture traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.errors import InputError
from schedlab.experiments.megha_workloads import build_samples, with_paper_traces
from schedlab.experiments.reproduce import load_builtin, reproduce
from schedlab.experiments.results import load_results
from schedlab.experiments.spec import parse_spec
from schedlab.workload.columnar import read_columnar

FIXTURES = Path(__file__).parents[1] / "workload" / "fixtures"
RAW = {"google_19": [FIXTURES / "google2019"], "cloudera": [FIXTURES / "swim" / "sample.tsv"]}


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    out = tmp_path_factory.mktemp("samples")
    made = build_samples(RAW, out, sizes={"google_19": 20, "cloudera": 10})
    return out, {m.name: m for m in made}


def test_samples_are_the_first_whole_jobs_up_to_the_papers_task_count(samples):
    out, made = samples
    for name, n in (("google_19", 20), ("cloudera", 10)):
        full = list(read_columnar(out / f"{name}.full.parquet"))
        cut = list(read_columnar(out / f"{name}.parquet"))
        sizes = [j.num_tasks for j in full]
        k = next(i for i in range(len(sizes)) if sum(sizes[: i + 1]) >= n) + 1  # jobs up to the one reaching n
        assert [j.job_id for j in cut] == [j.job_id for j in full[:k]]
        assert cut[0].arrival == 0 and [j.arrival - cut[0].arrival for j in cut] == pytest.approx([j.arrival - full[0].arrival for j in full[:k]])
        assert made[name].tasks == sum(sizes[:k]) >= n and made[name].tasks_converted == sum(sizes)
    manifest = json.loads((out / "samples.json").read_text())
    assert [s["name"] for s in manifest["samples"]] == ["google_19", "cloudera"]
    # the requests and constraints survive the cut (the paper's workloads carry them)
    assert any(j.requests for j in read_columnar(out / "google_19.parquet"))


def test_bad_sample_requests(tmp_path):
    with pytest.raises(InputError, match="unknown sample"):
        build_samples({"yahoo": [FIXTURES]}, tmp_path)
    with pytest.raises(InputError, match="give at least one raw trace"):
        build_samples({}, tmp_path)
    with pytest.raises(InputError, match="--start"):
        build_samples(RAW, tmp_path, start=-1)


def test_a_spec_runs_the_paper_sample_its_workload_stands_in_for(samples):
    out, _ = samples
    ls = with_paper_traces(load_builtin("megha-vs-sparrow"), out)
    (w,) = ls.spec.workloads  # the generated poisson-80 stands in for nothing of the paper's: left out
    assert (w.name, w.trace, w.max_jobs, w.constraints) == ("cloudera", str(out / "cloudera.parquet"), None, False)
    assert ls.spec.name == "megha-vs-sparrow-paper"
    assert [d.resource_mode for d in ls.spec.data_centers] == ["slots"]  # Sparrow runs one task per worker
    again = parse_spec(ls.text, "spec.yaml")  # what the results folder keeps is the spec that ran
    assert again.spec.workloads[0].trace == w.trace
    quick = with_paper_traces(load_builtin("megha-fairness", quick=True), out, quick=True)
    assert quick.spec.workloads[0].trace == str(out / "google_19.parquet") and quick.spec.workloads[0].max_jobs == 50
    with pytest.raises(InputError, match=r"alibaba.parquet: no alibaba sample here: make it with `schedlab trace megha-samples --alibaba2018"):
        with_paper_traces(load_builtin("megha-gm-lm"), out)
    with pytest.raises(InputError, match="stands in for none of the Megha paper's samples"):
        with_paper_traces(load_builtin("megha-worker-choice"), out)


def test_reproduce_on_paper_traces(samples, tmp_path):
    out, _ = samples
    res, rep = reproduce("megha-vs-sparrow", tmp_path / "r", quick=True, paper_traces=out)
    assert not res.failed and rep is not None
    df = load_results(tmp_path / "r")
    assert set(df["workload"]) == {"cloudera"} and set(df["scheduler"]) == {"megha", "sparrow"}
    assert (tmp_path / "r" / "analysis").is_dir()  # the claims of a paper-trace run stay beside its runs


def test_cli(tmp_path):
    out = tmp_path / "s"
    res = CliRunner().invoke(app, ["trace", "megha-samples", "--swim", str(FIXTURES / "swim" / "sample.tsv"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "cloudera.parquet").is_file() and "cloudera: " in res.output
    res = CliRunner().invoke(app, ["reproduce", "megha-vs-sparrow", "--quick", "--paper-traces", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r")])
    assert res.exit_code != 0
