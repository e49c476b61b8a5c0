"""Cost profiles (``simulate --costs``): constants run exactly as the same ``--param`` values, spreads are seeded
lognormal draws, and a bad profile is one line naming its file and field."""

from __future__ import annotations

import json

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.schedulers.megha.costs import CostProfile, load_costs

TRACE = "".join(f"{i * 0.05:.2f} 8 1.0 {' '.join(['1'] * 8)}\n" for i in range(60))


def summary(tmp_path, name, *args):
    trace = tmp_path / "t.tr"
    trace.write_text(TRACE)
    out = tmp_path / f"{name}.json"
    rc = main(["simulate", "-s", "megha", "-t", str(trace), "-w", "60", "--gms", "2", "--lms", "2", "--no-constraints", "-q",
               "--summary-json", str(out), *args])
    assert rc == 0
    s = json.loads(out.read_text())
    s.pop("wall_seconds")
    return s


def test_a_profile_of_constants_runs_exactly_as_the_same_params(tmp_path):
    (tmp_path / "c.yaml").write_text("one_way_delay: 0.0004\nsteps: {gm_match: 5.0e-5, lm_verify: 2.0e-5, message: 1.0e-4}\n")
    a = summary(tmp_path, "a", "--costs", str(tmp_path / "c.yaml"))
    b = summary(tmp_path, "b", "--latency", "0.0004", "-p", "gm_match_cost=5e-5", "-p", "lm_verify_cost=2e-5",
                "-p", "message_cost=1e-4")
    assert a == b and a["config"]["latency"] == 0.0004
    assert a["allocation_components"]["processing"]["p50"] > 0


def test_spreads_are_seeded_lognormal_draws_around_the_medians(tmp_path):
    (tmp_path / "flat.yaml").write_text("steps: {gm_match: 5.0e-5, message: 1.0e-4}\n")
    (tmp_path / "wide.yaml").write_text("steps: {gm_match: {p50: 5.0e-5, p90: 2.0e-4}, message: {p50: 1.0e-4, p90: 4.0e-4}}\n")
    flat = summary(tmp_path, "flat", "--costs", str(tmp_path / "flat.yaml"))
    wide = summary(tmp_path, "wide", "--costs", str(tmp_path / "wide.yaml"))
    again = summary(tmp_path, "again", "--costs", str(tmp_path / "wide.yaml"))
    assert wide == again  # the same seed, the same draws
    assert wide["config"]["params"]["cost_spread"]["gm_match"] == pytest.approx(1.0817, abs=1e-3)  # ln 4 / z90
    proc_flat, proc_wide = flat["allocation_components"]["processing"], wide["allocation_components"]["processing"]
    assert proc_wide["p99"] > proc_flat["p99"] and proc_wide != proc_flat
    # a --latency given wins over the profile's delay; --param values over its steps
    (tmp_path / "d.yaml").write_text("one_way_delay: {p50: 0.002, p90: 0.004}\nsteps: {message: 1.0e-4}\n")
    s = summary(tmp_path, "d", "--costs", str(tmp_path / "d.yaml"), "--latency", "0.001", "-p", "message_cost=0")
    assert s["config"]["latency"] == 0.001 and s["config"]["params"]["message_cost"] == 0
    assert "latency_spread" not in s["config"]  # the profile's spread goes with its delay, or not at all


def test_a_profiles_delay_distribution_becomes_the_latency_and_its_spread(tmp_path):
    (tmp_path / "d.yaml").write_text("one_way_delay: {p50: 0.002, p90: 0.004}\nsteps: {message: 1.0e-4}\n")
    s = summary(tmp_path, "d", "--costs", str(tmp_path / "d.yaml"))
    assert s["config"]["latency"] == 0.002
    assert s["config"]["latency_spread"] == pytest.approx(0.5409, abs=1e-3)  # ln 2 / z90
    flat = summary(tmp_path, "flat", "--costs", str(tmp_path / "d.yaml"), "--latency-spread", "0")
    assert "latency_spread" not in flat["config"]  # given on the command line: it wins
    assert s["allocation_time"]["p99"] > flat["allocation_time"]["p99"]


def test_profile_params_and_sigma():
    p = CostProfile.model_validate({"steps": {"lm_verify": {"p50": 1e-5, "p90": 1e-5}, "message": 2e-4}})
    assert p.params() == {"gm_match_cost": 0.0, "lm_verify_cost": 1e-5, "update_cost_per_worker": 0.0, "message_cost": 2e-4}
    assert p.latency() is None


@pytest.mark.parametrize(("text", "says"), [
    ("steps:\n  gm_match: {p50: 2, p90: 1}\n", "{f}: steps.gm_match: p90 (1.0) is below p50 (2.0)"),
    ("steps:\n  gm_matc: 1\n", "{f}: steps.gm_matc: unknown step (steps are gm_match, lm_verify, update_per_worker, message)"),
    ("steps:\n  gm_match: {p50: 1}\n", "{f}: steps.gm_match.p90: Field required"),
    ("steps:\n  gm_match: -1\n", "{f}: steps.gm_match: a cost is >= 0 seconds, got -1.0"),
    ("step:\n  gm_match: 1\n", "{f}: step: Extra inputs are not permitted"),
    ("steps: [\n", "{f}:2: not YAML: expected the node content, but found '<stream end>'"),
    ("- 1\n", "{f}: a cost profile is a mapping with 'steps'"),
])
def test_a_bad_profile_is_one_line_naming_file_and_field(tmp_path, capsys, text, says):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    assert main(["simulate", "-s", "megha", "-t", "syn_250", "--costs", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: " + says.format(f=f)), err


def test_costs_are_for_megha_and_a_missing_file_is_said(tmp_path, capsys):
    assert main(["simulate", "-s", "sparrow", "-t", "syn_250", "--costs", str(tmp_path / "c.yaml")]) == 2
    assert "--costs: a cost profile sets Megha's processing costs; sparrow has none (use -s megha)" in capsys.readouterr().err
    with pytest.raises(Exception, match="no such cost profile"):
        load_costs(tmp_path / "none.yaml")


def test_a_parameter_added_later_stays_out_of_ids_and_summaries_at_its_default():
    """Run ids hash the dumped parameters: cost_spread at its default must leave every stored run's id as it was."""
    from schedlab.schedulers.megha import MeghaParams

    assert "cost_spread" not in MeghaParams().dump() and "cost_spread" in MeghaParams().model_dump()
    assert MeghaParams(cost_spread={"message": 0.5}).dump(mode="json")["cost_spread"] == {"message": 0.5}


def test_a_part_per_input_is_charged_once_per_input_beside_the_per_item_cost(tmp_path):
    """An input of n items costs per_input + n x p50: for jobs of 8 tasks, a part per input worth 4 items' costs less
    than a per-item cost twice as high would, more than none; for single tasks, a part per input alone costs as the
    same per-item cost (and a message's part per input is refused)."""
    (tmp_path / "item.yaml").write_text("steps: {gm_match: 2.0e-4}\n")
    (tmp_path / "fixed.yaml").write_text("steps: {gm_match: {p50: 1.0e-4, p90: 1.0e-4, per_input: 4.0e-4}}\n")
    (tmp_path / "half.yaml").write_text("steps: {gm_match: 1.0e-4}\n")
    item, fixed, half = (summary(tmp_path, n, "--costs", str(tmp_path / f"{n}.yaml")) for n in ("item", "fixed", "half"))
    assert fixed["config"]["params"]["cost_per_input"] == {"gm_match": 4.0e-4}
    assert "cost_per_input" not in item["config"]["params"]  # left out at its default: stored runs keep their ids
    proc = {k: s["allocation_components"]["processing"]["mean"] for k, s in (("item", item), ("fixed", fixed), ("half", half))}
    assert proc["half"] < proc["fixed"] < proc["item"]  # 8 x 1e-4 < 4e-4 + 8 x 1e-4 < 8 x 2e-4 a job
    trace = tmp_path / "single.tr"
    trace.write_text("".join(f"{i * 0.05:.2f} 1 1.0 1\n" for i in range(60)))
    (tmp_path / "alone.yaml").write_text("steps: {gm_match: {p50: 0.0, p90: 0.0, per_input: 2.0e-4}}\n")
    single = []
    for name in ("item", "alone"):
        out = tmp_path / f"single-{name}.json"
        assert main(["simulate", "-s", "megha", "-t", str(trace), "-w", "60", "--gms", "2", "--lms", "2", "--no-constraints", "-q",
                     "--costs", str(tmp_path / f"{name}.yaml"), "--summary-json", str(out)]) == 0
        single.append(json.loads(out.read_text())["allocation_components"]["processing"])
    assert single[0] == single[1] and single[0]["mean"] > 0
    (tmp_path / "bad.yaml").write_text("steps: {message: {p50: 1.0e-4, p90: 1.0e-4, per_input: 1.0e-4}}\n")
    with pytest.raises(InputError, match="per_input is for steps of items"):
        load_costs(tmp_path / "bad.yaml")


def test_a_delays_part_per_task_becomes_the_latency_per_task(tmp_path):
    (tmp_path / "d.yaml").write_text("one_way_delay: {p50: 0.001, p90: 0.002, per_task: 1.0e-4}\nsteps: {message: 1.0e-4}\n")
    s = summary(tmp_path, "d", "--costs", str(tmp_path / "d.yaml"))
    flat = summary(tmp_path, "flat", "--costs", str(tmp_path / "d.yaml"), "--latency-per-task", "0")
    assert s["config"]["latency_per_task"] == 1.0e-4 and "latency_per_task" not in flat["config"]
    # 8 tasks a job: its requests and launches carry them, and take longer
    assert s["allocation_components"]["communication"]["mean"] > flat["allocation_components"]["communication"]["mean"]
    (tmp_path / "bad.yaml").write_text("steps: {gm_match: {p50: 1.0e-4, p90: 1.0e-4, per_task: 1.0e-4}}\n")
    with pytest.raises(InputError, match="per_task is for delays"):
        load_costs(tmp_path / "bad.yaml")
