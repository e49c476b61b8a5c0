"""`schedlab reproduce megha-prototype --quick`: the simulated and the real run side by side, with its report."""

from __future__ import annotations

import json

import pytest

from schedlab.cli import main


@pytest.mark.parametrize("embedded", [True, False])
def test_quick_prototype_reproduction(tmp_path, capsys, embedded, request):
    if not embedded:
        request.getfixturevalue("broker")
    out = tmp_path / "proto"
    rc = main(["reproduce", "megha-prototype", "--quick", "--out", str(out), *(["--embedded"] if embedded else [])])
    assert rc == 0, capsys.readouterr().err
    assert {p.name for p in out.iterdir()} >= {"report.md", "allocation_cdf.png", "summary_sim.json", "summary_real.json", "execution_delay.json"}
    sim = json.loads((out / "summary_sim.json").read_text())
    real = json.loads((out / "summary_real.json").read_text())
    assert sim["tasks"] == real["tasks"] > 100
    assert real["counters"]["tasks_unfinished"] == 0 and real["counters"]["duplicate_finishes"] == 0
    assert real["runtime"]["transport"] == ("inproc" if embedded else "http+amqp") and real["runtime"]["task"] == "cpu"
    delay = json.loads((out / "execution_delay.json").read_text())
    assert delay["count"] == real["tasks"] and delay["p50"] > -0.05  # a task never ends before its duration
    text = (out / "report.md").read_text()
    assert "Figure 12" in text and "| simulated |" in text and "| real |" in text


def test_prototype_options(capsys):
    assert main(["reproduce", "megha-prototype", "--jobs", "2"]) == 2
    assert "--jobs, --backend and --address do not apply" in capsys.readouterr().err
    assert main(["reproduce", "megha-fairness", "--embedded"]) == 2
    assert "applies to megha-prototype only" in capsys.readouterr().err
