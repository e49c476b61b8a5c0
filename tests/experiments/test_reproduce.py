"""Built-in specs: they validate, `--list` names them, a missing scheduler is one line, `--quick` runs end to end."""

from __future__ import annotations

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.experiments.matrix import expand
from schedlab.experiments.reproduce import builtin_specs, check_schedulers, load_builtin
from schedlab.experiments.spec import parse_spec
from schedlab.schedulers import registry

REQUIRED = ("megha-vs-pigeonc", "megha-vs-sparrow", "megha-cluster-size", "megha-fairness")


def test_list_names_the_builtin_specs(capsys):
    assert set(REQUIRED) <= set(builtin_specs())
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in REQUIRED)


@pytest.mark.parametrize("name", sorted(builtin_specs()))
@pytest.mark.parametrize("quick", [False, True])
def test_builtin_specs_validate_and_expand(name, quick):
    ls = load_builtin(name, quick=quick)
    assert ls.spec.quick is not None, "every built-in spec has a quick section"
    if all(s.name in registry.available() for s in ls.spec.schedulers):
        runs = expand(ls)
        assert runs and len({r.id for r in runs}) == len(runs)
        if quick:
            assert len(runs) <= 8 and all(r.config["workload"]["max_jobs"] or r.config["workload"].get("generate") for r in runs)


def test_a_spec_naming_an_unavailable_scheduler_fails_in_one_line(tmp_path, capsys):
    ls = parse_spec("name: x\nworkloads: [{trace: syn_250}]\nschedulers: [{name: megha}, {name: nosuch}]\n", "x.yaml")
    with pytest.raises(InputError, match=r"^reproduce x: needs scheduler 'nosuch', not available here \(available: "):
        check_schedulers(ls, "reproduce x")
    missing = [n for n in REQUIRED if not all(s.name in registry.available() for s in load_builtin(n).spec.schedulers)]
    if missing:
        assert main(["reproduce", missing[0], "--quick", "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: reproduce {missing[0]}: needs scheduler") and "\n" not in err
        assert not (tmp_path / "r").exists()
    assert main(["reproduce", "nosuch"]) == 2
    assert "no reproduction 'nosuch'" in capsys.readouterr().err


def test_reproduce_quick_end_to_end(tmp_path, capsys):
    out = tmp_path / "fair"
    assert main(["reproduce", "megha-fairness", "--quick", "--out", str(out), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert "2 run(s) done" in err and "report:" in err
    rep = out / "report"
    assert (rep / "report.md").is_file() and (rep / "report.html").is_file()
    for png in ("fairness_counters_poisson-short.png", "allocation_by_size_poisson-short.png", "allocation_percentiles_poisson-short.png"):
        assert (rep / png).stat().st_size > 5000
    md = (rep / "report.md").read_text()
    assert "Quick run" in md and "Figure 11" in md
    # rerunning finds everything done and only rewrites the report
    assert main(["reproduce", "megha-fairness", "--quick", "--out", str(out)]) == 0
    assert "0 run(s) done, 2 already finished" in capsys.readouterr().err
