"""No silent dropping: `submit` and `simulate` say in one line how many tasks were dropped as unsatisfiable,
why, and the option that changes it; on a cluster whose workers declare no constraints, `submit` draws the
papers' synthetic constraints only with --constraints paper."""

from __future__ import annotations

import json

import pytest

from schedlab.cli import main
from schedlab.cluster.model import Cluster
from schedlab.dropped import DropReasons, drop_line
from schedlab.errors import InputError
from schedlab.services.client import draws_constraints


def test_the_constraint_rule() -> None:
    plain, constrained = Cluster([0, 0, 0]), Cluster([0, 0b101, 0])
    assert [draws_constraints(plain, c) for c in ("auto", "paper", "none", True, False)] == [False, True, False, True, False]
    assert [draws_constraints(constrained, c) for c in ("auto", "paper", "none")] == [True, True, False]
    with pytest.raises(InputError, match="unknown choice 'papers'"):
        draws_constraints(plain, "papers")


def test_the_line() -> None:
    assert drop_line(DropReasons(), 10, {}) is None
    d = DropReasons()
    d.add("constraints", 348)
    d.add("request", 2)
    d.empty_jobs = 60
    assert drop_line(d, 400, {"constraints": "--no-constraints draws none"}) == (
        "dropped 350 of 400 tasks as unsatisfiable, 60 job(s) left empty: 348 because their constraints are met by no worker "
        "(--no-constraints draws none); 2 because their request is larger than every worker")


def _trace(tmp_path):
    trace = tmp_path / "t.tr"
    trace.write_text("".join(f"{0.05 * i:.2f} 4 0.05 0.05 0.05 0.05 0.05\n" for i in range(10)))
    return trace


def test_submit_on_a_cluster_without_constraints_draws_none_unless_asked(tmp_path, capsys) -> None:
    path, trace, out = tmp_path / "c.yaml", _trace(tmp_path), tmp_path / "s.json"
    assert main(["cluster", "init", str(path), "--workers", "8", "--heartbeat", "0.2"]) == 0
    capsys.readouterr()
    assert main(["submit", "--cluster", str(path), "--embedded", "--trace", str(trace), "--summary-json", str(out), "-q"]) == 0
    s = json.loads(out.read_text())
    assert s["tasks"] == 40 and s["config"]["constraints"] is False
    assert "dropped" not in capsys.readouterr().err
    assert main(["submit", "--cluster", str(path), "--embedded", "--trace", str(trace), "--summary-json", str(out), "-q",
                 "--constraints", "paper"]) == 0
    s = json.loads(out.read_text())
    dropped = s["counters"]["tasks_dropped_unsatisfiable"]
    assert s["config"]["constraints"] is True and dropped > 0 and s["tasks"] == 40 - dropped
    err = capsys.readouterr().err.strip().splitlines()
    line = [x for x in err if x.startswith("dropped")]
    assert line == [f"dropped {dropped} of 40 tasks as unsatisfiable" + line[0].split("unsatisfiable", 1)[1]], err
    assert "because their constraints are met by no worker (drawn with the papers' statistics; --constraints none draws none)" in line[0]


def test_simulate_says_what_it_dropped(tmp_path, capsys) -> None:
    trace = _trace(tmp_path)
    assert main(["simulate", "-s", "centralized", "-t", str(trace), "-w", "3", "-q"]) == 0
    err = capsys.readouterr().err
    assert "dropped " in err and "of 40 tasks as unsatisfiable" in err and "--no-constraints draws none" in err, err
    assert main(["simulate", "-s", "centralized", "-t", str(trace), "-w", "3", "-q", "--no-constraints"]) == 0
    assert "dropped" not in capsys.readouterr().err
