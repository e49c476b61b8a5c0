"""The catalogue of reproductions: every module's figures and tables behind one `schedlab reproduce`."""

from __future__ import annotations

import importlib
import json

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.experiments.catalogue import catalogue, find
from schedlab.experiments.reproduce import builtin_specs


def test_every_module_and_every_spec_is_listed(capsys):
    assert main(["reproduce", "--list"]) == 0
    text = capsys.readouterr().out
    names = [e.name for e in catalogue()]
    assert len(names) == len(set(names))
    assert set(builtin_specs()) <= set(names)
    assert {e.domain for e in catalogue()} == {"data center", "services", "locality", "edge", "grid"}
    for name in names:
        assert name in text


@pytest.mark.parametrize("entry", [e for e in catalogue() if not e.is_spec], ids=lambda e: e.name)
def test_function_entries_resolve(entry):
    module, _, attr = entry.target.partition(":")
    assert callable(getattr(importlib.import_module(module), attr))
    assert entry.out.startswith("reports/")
    quick = entry.default_out(quick=True)
    assert quick.parts[0] == "results" and quick.name == (entry.out.rsplit("/", 1)[-1] if "." in entry.out.rsplit("/", 1)[-1] else f"{entry.name}-quick")


def test_worked_example_is_the_papers(tmp_path, capsys):
    out = tmp_path / "t2.json"
    assert main(["reproduce", "dyndl-table2", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["algorithms"]["milp"]["makespan"] == 3.0  # Table 2's optimum
    assert doc["algorithms"]["dyndloff"]["makespan"] == 3.0
    assert doc["algorithms"]["dyndlon"]["makespan"] == 3.25  # Fig. 2c
    assert "report:" in capsys.readouterr().err


def test_a_quick_figure_from_another_module(tmp_path):
    assert main(["reproduce", "dyndl-fig5", "--quick", "--out", str(tmp_path / "l"), "--results", str(tmp_path / "runs")]) == 0
    assert (tmp_path / "l" / "fig5.md").is_file() and (tmp_path / "l" / "fig5.png").is_file()
    assert main(["reproduce", "cred-fig4", "--quick", "--out", str(tmp_path / "e"), "--results", str(tmp_path / "runs")]) == 0
    assert json.loads((tmp_path / "e" / "figure4.json").read_text())


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["reproduce", "nope"], "error: reproduce: no reproduction 'nope' (available: "),
        (["reproduce", "dyndl-fig5", "--backend", "ray"], "runs its experiments one after another: --jobs, --backend and --address do not apply"),
        (["reproduce", "grid-table1", "--backend", "spark"], "error: --backend: unknown backend 'spark' (choose from local, ray)"),
        (["reproduce", "grid-table1", "--address", "auto"], "error: --address: only used with --backend ray"),
        (["reproduce", "dyndl-table2", "--results", "x"], "error: --results: dyndl-table2 keeps no runs"),
        (["reproduce", "megha-fairness", "--results", "x"], "error: --results: megha-fairness is a spec: its runs are kept in --out"),
        (["reproduce", "dyndl-fig5", "--embedded"], "error: --embedded: applies to megha-prototype only"),
        (["reproduce", "grid-table1", "--jobs", "0"], "error: --jobs: must be >= 1"),
        (["reproduce", "dyndl-fig5", "--jobs", "2"], "runs its experiments one after another: --jobs, --backend and --address do not apply"),
    ],
)
def test_bad_reproduce_input(args, expect, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert expect in err and "\n" not in err


def test_find_names_the_choices():
    with pytest.raises(InputError, match="grid-table1"):
        find("grid-table")
