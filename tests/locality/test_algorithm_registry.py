"""The one registry format (:mod:`schedlab.algorithms`) and the locality registry built on it."""

from __future__ import annotations

import typing

import pydantic
import pytest
from pydantic import Field

from schedlab.algorithms import Algorithm, AlgorithmParams, AlgorithmRegistry
from schedlab.errors import InputError
from schedlab.locality import online
from schedlab.locality.algorithms import ALGORITHMS, PAPER_ALGORITHMS, run_algorithm
from schedlab.locality.instances import table2_instance


# -- the generic registry ------------------------------------------------------------------------------------------
class ToyParams(AlgorithmParams):
    step: float = Field(1.0, gt=0, description="how far to go")
    mode: typing.Literal["up", "down"] = Field("up", description="which way")


def _toy(inst: list[float], seed: int, p: ToyParams) -> list[float]:
    if inst and inst[0] < 0:
        raise InputError("step", "refused for a negative instance")
    sign = 1 if p.mode == "up" else -1
    return [x + sign * p.step + seed for x in inst]


def _plain(inst: list[float], seed: int, p: AlgorithmParams) -> list[float]:
    return list(inst)


TOYS: AlgorithmRegistry[list[float], list[float]] = AlgorithmRegistry(
    "toy",
    [Algorithm("toy", "Toy", "heuristic", "moves every value", _toy, ToyParams, seeded=True), Algorithm("plain", "PLAIN", "baseline", "copies", _plain)],
)


def test_names_entries_and_lookup() -> None:
    assert TOYS.names() == ("toy", "plain")
    assert [a.label for a in TOYS.entries()] == ["Toy", "PLAIN"]
    assert "toy" in TOYS and "nope" not in TOYS and len(TOYS) == 2
    with pytest.raises(InputError) as e:
        TOYS.get("nope")
    assert str(e.value) == "--algorithm: unknown algorithm 'nope' (choose from toy, plain)"


def test_run_validates_params_and_passes_the_seed() -> None:
    assert TOYS.run("toy", [1.0, 2.0]) == [2.0, 3.0]
    assert TOYS.run("toy", [1.0], seed=10, params={"step": 2, "mode": "down"}) == [9.0]
    assert TOYS.run("toy", [1.0], params=ToyParams(step=0.5)) == [1.5]
    assert TOYS.run("plain", [4.0]) == [4.0]


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("toy", {"step": 0}, "param step: Input should be greater than 0, got 0"),
        ("toy", {"step": "1"}, "param step: Input should be a valid number, got '1'"),
        ("toy", {"step": True}, "param step: Input should be a valid number, got True"),
        ("toy", {"mode": "sideways"}, "param mode: Input should be 'up' or 'down', got 'sideways'"),
        ("toy", {"speed": 1}, "param speed: unknown parameter for toy algorithm 'toy' (its parameters: step, mode)"),
        ("plain", {"step": 1}, "param step: unknown parameter for toy algorithm 'plain' (its parameters: none)"),
        ("plain", ToyParams(), "params: ToyParams are not the parameters of toy algorithm 'plain'"),
        ("toy", [("step", 1)], "params: expected parameter names and values, got list"),
    ],
)
def test_parse_params_errors_are_one_line(name, raw, message) -> None:
    with pytest.raises(InputError) as e:
        TOYS.parse_params(name, raw)
    assert str(e.value) == message


def test_params_are_frozen_with_defaults_and_descriptions() -> None:
    p = TOYS.parse_params("toy", None)
    assert p == ToyParams() and TOYS.parse_params("toy", p) is p
    with pytest.raises(pydantic.ValidationError):
        p.step = 3.0  # type: ignore[misc]
    assert [(q.name, q.type, q.default, q.description) for q in TOYS.get("toy").parameters()] == [
        ("step", "float", 1.0, "how far to go"),
        ("mode", "up | down", "up", "which way"),
    ]
    assert TOYS.get("plain").parameters() == ()


def test_an_algorithm_refusing_one_of_its_parameters_is_reported_as_that_param() -> None:
    with pytest.raises(InputError) as e:
        TOYS.run("toy", [-1.0])
    assert str(e.value) == "param step: refused for a negative instance"


def test_a_name_registered_twice_is_a_bug() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        AlgorithmRegistry("toy", [Algorithm("a", "A", "k", "", _plain), Algorithm("a", "A", "k", "", _plain)])


# -- the locality registry ------------------------------------------------------------------------------------------
# The parameters as they were before the registry moved to pydantic models: name -> {param: (type, default)}.
OLD_PARAMS: dict[str, dict[str, tuple[str, object]]] = {
    "dyndloff": {},
    "dyndlon": {"delay_threshold": ("float", 3.0), "remote_pick": ("str", "random"), "timeline": ("str", "running")},
    "hadoop": {"remote_pick": ("str", "random"), "timeline": ("str", "running")},
    "delay": {"delay_threshold": ("float", 3.0), "remote_pick": ("str", "random"), "timeline": ("str", "running")},
    "ltfpa": {"threshold": ("int", 0), "routing": ("str", "load"), "timeline": ("str", "running")},
    "list": {"remote_cost": ("str", "dynamic")},  # added for the sensitivity study; the default is the old behaviour
    "hta": {"time_limit": ("float", None)},
    "bar": {},
    "milp": {"time_limit": ("float", 60.0), "fewest_remote": ("bool", False)},
}
CHOICES = {"remote_pick": online.REMOTE_PICKS, "timeline": online.TIMELINES, "routing": online.ROUTINGS, "remote_cost": ("dynamic", "static")}


def test_locality_params_keep_the_names_types_and_defaults() -> None:
    assert ALGORITHMS.names() == (*PAPER_ALGORITHMS, "milp")
    for algo in ALGORITHMS.entries():
        params = algo.parameters()
        assert {q.name: q.default for q in params} == {k: d for k, (_, d) in OLD_PARAMS[algo.name].items()}, algo.name
        for q in params:
            old_type = OLD_PARAMS[algo.name][q.name][0]
            expected = " | ".join(CHOICES[q.name]) if q.name in CHOICES else old_type
            assert q.type in (expected, f"{expected} | None"), (algo.name, q.name, q.type)
            assert q.description, (algo.name, q.name)
    assert online.REMOTE_PICKS == ("random", "first") and online.TIMELINES == ("running", "model") and online.ROUTINGS == ("load", "queue")


def test_locality_params_are_checked_as_strictly_as_before() -> None:
    assert ALGORITHMS.parse_params("dyndlon", {"delay_threshold": 1}).delay_threshold == 1.0  # int -> float
    for name, raw in [
        ("dyndlon", {"delay_threshold": True}),
        ("dyndlon", {"delay_threshold": float("inf")}),
        ("ltfpa", {"threshold": 1.5}),
        ("ltfpa", {"threshold": -1}),
        ("milp", {"fewest_remote": 1}),
        ("milp", {"time_limit": None}),
        ("hta", {"time_limit": 0}),
        ("hadoop", {"remote_pick": None}),
    ]:
        with pytest.raises(InputError, match=f"^param {next(iter(raw))}: "):
            ALGORITHMS.parse_params(name, raw)


def test_run_algorithm_takes_a_dict_or_a_params_model() -> None:
    inst = table2_instance()
    params = ALGORITHMS.parse_params("dyndlon", {"delay_threshold": 1, "remote_pick": "first"})
    a = run_algorithm("dyndlon", inst, 4, {"delay_threshold": 1, "remote_pick": "first"})
    b = run_algorithm("dyndlon", inst, 4, params)
    assert (a.makespan, a.remote_tasks, a.assignment.task_core.tolist()) == (b.makespan, b.remote_tasks, b.assignment.task_core.tolist())
    assert a.details["delay_threshold"] == 1.0 and isinstance(a.details["delay_threshold"], float)
