"""One description of a run: RunConfig behind the CLI, the Python API, specs and the summary; scheduler flags from Params."""

from __future__ import annotations

import json
import typing

import pytest

import schedlab
from schedlab.cli import main
from schedlab.cli_params import epilog, parse_flags
from schedlab.errors import InputError
from schedlab.experiments.spec import DataCenterSpec, NetworkSpec, WorkloadSpec
from schedlab.run_config import RunConfig
from schedlab.schedulers import registry
from schedlab.workload.trace import TraceJob


def _jobs(n: int = 6) -> list[TraceJob]:
    return [TraceJob(float(k), 1.5, [1.0, 2.0], k + 1) for k in range(n)]


def test_defaults_live_once_and_specs_read_them():
    assert WorkloadSpec(trace="syn_250").constraint_seed == RunConfig.default("constraint_seed") == 42
    assert NetworkSpec().latency == RunConfig.default("latency") == 0.0005
    assert DataCenterSpec().machine_model == RunConfig.default("machine_model")
    assert WorkloadSpec(trace="syn_250").exact_durations is RunConfig.default("exact_durations")


def test_the_summary_config_block_is_written_from_the_run_config():
    cfg = RunConfig.build(scheduler="centralized", workers=30, seed=3, latency=0.002, processing_costs={"Launch": 1e-4}, constraints=False)
    s = schedlab.simulate(cfg.model_copy(update={"trace": "mine"}), _jobs(), trace_label="mine").summary
    block = s["config"]
    assert (s["scheduler"], s["trace"], s["seed"], s["workers"]) == ("centralized", "mine", 3, 30)
    assert block["latency"] == 0.002 and block["processing_costs"] == {"Launch": 1e-4}
    assert block["constraints"] is False and block["constraint_seed"] is None
    assert block["params"] == registry.parse_params(registry.get("centralized"), {}).model_dump()


def test_keyword_api_and_run_config_give_the_same_run():
    a = schedlab.simulate("sparrow", _jobs(), workers=20, seed=1, params={"probe_ratio": 3}).summary
    b = schedlab.simulate(RunConfig.build(scheduler="sparrow", trace="custom", workers=20, seed=1, params={"probe_ratio": 3}), _jobs()).summary
    for s in (a, b):
        s.pop("wall_seconds")
    assert a == b


@pytest.mark.parametrize(
    ("settings", "where"),
    [({"seed": -1}, "--seed"), ({"latency": -0.1}, "--latency"), ({"workers": 0}, "--workers"),
     ({"machine_model": "x"}, "--machine-model"), ({"resource_mode": "gpu"}, "--resource-mode"), ({"colour": 1}, "--colour")],
)
def test_bad_settings_name_their_option(settings, where):
    with pytest.raises(InputError) as e:
        RunConfig.build(**settings)
    assert e.value.where == where


def _flag_args(field, value):
    """Command-line tokens that give ``value`` to ``field`` as its own flag."""
    flag = "--" + field.replace("_", "-")
    if isinstance(value, bool):
        return [flag if value else f"--no-{flag[2:]}"]
    if isinstance(value, list):
        return [flag, ",".join(str(v) for v in value)]
    return [flag, str(value)]


def _sample(field):
    """A valid non-default value for a parameter, from its type."""
    ann, default = field.annotation, field.get_default()
    args = typing.get_args(ann)
    if typing.get_origin(ann) is typing.Literal:
        return next(a for a in args if a != default)
    if ann is bool:
        return not default
    if ann is float:
        return (default or 0.0) + 0.5
    if int in args or ann is int:
        return 2
    if float in args:
        return 1.5
    return None


@pytest.mark.parametrize("name", registry.available())
def test_every_scheduler_parameter_is_a_flag(name):
    fields = registry.get(name).Params.model_fields
    for key, field in fields.items():
        value = _sample(field)
        if value is None:
            continue
        got = parse_flags(name, _flag_args(key, value))
        assert registry.parse_params(registry.get(name), got).model_dump()[key] == value, key
        assert "--" + key.replace("_", "-") in epilog()


def test_list_parameters_take_commas():
    assert parse_flags("megha", ["--shares", "0.7,0.3", "--queue-gms=1,2"]) == {"shares": [0.7, 0.3], "queue_gms": [1, 2]}


def test_flags_reach_the_summary(tmp_path, tiny_trace):
    out = tmp_path / "s.json"
    assert main(["simulate", "-q", "-s", "eagle", "-t", str(tiny_trace), "-w", "40", "--no-sss", "--sss-rounds=2",
                 "--probe-ratio", "3", "--summary-json", str(out)]) == 0
    params = json.loads(out.read_text())["config"]["params"]
    assert (params["sss"], params["sss_rounds"], params["probe_ratio"]) == (False, 2, 3.0)


def test_help_lists_scheduler_parameters(capsys):
    assert main(["simulate", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--gms", "--worker-choice", "--sss/--no-sss", "--probe-ratio", "--distributors"):
        assert flag in text


def test_a_run_config_and_other_settings_are_refused():
    cfg = RunConfig.build(scheduler="ideal", trace="syn_250", workers=20)
    for kwargs in ({"seed": 3}, {"latency": 0.1}):
        with pytest.raises(InputError, match="give a RunConfig or settings"):
            schedlab.simulate(cfg, **kwargs)
    with pytest.raises(InputError, match="give a RunConfig or settings"):
        schedlab.simulate(cfg, "syn_500")
