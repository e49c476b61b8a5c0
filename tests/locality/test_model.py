"""The model (cost functions, evaluator), the generator and the JSON instance format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from schedlab.errors import InputError
from schedlab.locality.instances import (
    draw_distinct,
    generate,
    instance_from_dict,
    instance_to_dict,
    load_instance,
    table2_instance,
)
from schedlab.locality.model import (
    Assignment,
    CallableCost,
    LinearCost,
    LocalityInstance,
    TableCost,
    evaluate,
    is_local,
    loads_from_counts,
    task_locality,
)
from schedlab.sim.rng import RngStreams


def test_cost_functions() -> None:
    g = LinearCost(1.0, cap=3)
    assert [g(n) for n in (1, 2, 3, 4, 10)] == [2, 3, 4, 4, 4]
    assert g.table(5).tolist() == [2, 2, 3, 4, 4, 4]
    t = TableCost((1.5, 2.0, 4.0))
    assert [t(n) for n in (1, 2, 3, 7)] == [1.5, 2.0, 4.0, 4.0]
    assert t.table(4).tolist() == [1.5, 1.5, 2.0, 4.0, 4.0]
    c = CallableCost(lambda n: 1 + n * n)
    assert c.table(3).tolist() == [2, 2, 5, 10]
    with pytest.raises(InputError, match="non-decreasing"):
        TableCost((2.0, 1.5))
    with pytest.raises(InputError, match=">= 1"):
        TableCost((0.5,))
    with pytest.raises(InputError, match="non-decreasing"):
        CallableCost(lambda n: 5 - n).table(3)
    with pytest.raises(InputError, match="theta"):
        LinearCost(-1.0)


def test_evaluator_counts_remote_tasks_per_server_and_ignores_inactive_cores() -> None:
    # Two servers with two cores each; g(n) = 1 + n.
    inst = LocalityInstance.from_lists([[0.0, 5.0], [1.0, 100.0]], [[0], [0], [1], [0]], LinearCost(1.0))
    # t0 local on s0.p0, t1 and t3 remote on s1.p0 (r = 2, cost 3 each), t2 local on s1.p0.
    ev = evaluate(inst, Assignment(np.array([0, 2, 2, 2])))
    assert ev.task_local.tolist() == [True, False, True, False]
    assert ev.server_remote.tolist() == [0, 2]
    assert ev.task_cost.tolist() == [1.0, 3.0, 1.0, 3.0]
    assert ev.core_load.tolist() == [1.0, 5.0, 8.0, 100.0]
    assert ev.makespan == 8.0  # the idle cores at 5 and 100 hold no task
    assert ev.remote_tasks == 2
    # Idle time an online scheduler inserted counts like initial load.
    ev2 = evaluate(inst, Assignment(np.array([0, 2, 2, 2]), idle=np.array([0.0, 0.0, 1.5, 0.0])))
    assert ev2.makespan == 9.5
    # The bookkeeping formula agrees.
    loads, ms = loads_from_counts(inst, np.array([1, 0, 1, 0]), np.array([0, 0, 2, 0]))
    assert ms == 8.0 and loads.tolist() == ev.core_load.tolist()
    assert is_local(inst, np.array([0, 1, 2]), np.array([1, 3, 3])).tolist() == [True, False, True]
    assert task_locality(inst, np.array([0, 2, 2, 2])).tolist() == ev.task_local.tolist()


def test_evaluator_rejects_incomplete_assignments() -> None:
    inst = table2_instance()
    with pytest.raises(ValueError, match="covers 4 tasks"):
        evaluate(inst, np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="t2 is not assigned"):
        evaluate(inst, np.array([0, -1, 2, 3, 4]))


def test_generator_follows_section_6() -> None:
    inst = generate(tasks=200, servers=20, core_num=5, alpha=10.0, beta=50.0, theta=2.0, seed=3)
    assert (inst.n_tasks, inst.n_servers, inst.n_cores) == (200, 20, 100)
    server = np.arange(100) // 5
    assert np.all(inst.initial_load >= 0) and np.all(inst.initial_load <= 10.0 * server + 50.0)
    reps = inst.replica_server.reshape(200, 3)
    assert all(len(set(r)) == 3 for r in reps.tolist())
    assert inst.cost_functions == (LinearCost(2.0, 5),)
    again = generate(tasks=200, servers=20, core_num=5, alpha=10.0, beta=50.0, theta=2.0, seed=3)
    assert np.array_equal(inst.initial_load, again.initial_load) and np.array_equal(inst.replica_server, again.replica_server)
    other = generate(tasks=200, servers=20, core_num=5, alpha=10.0, beta=50.0, theta=2.0, seed=4)
    assert not np.array_equal(inst.initial_load, other.initial_load)
    # Skew: later servers draw from wider ranges.
    skew = generate(tasks=10, servers=50, core_num=40, alpha=40.0, beta=100.0, seed=0)
    means = skew.initial_load.reshape(50, 40).mean(axis=1)
    assert means[-10:].mean() > 5 * means[:10].mean()


def test_draw_distinct_rows() -> None:
    rows = draw_distinct(RngStreams(1).np_rng("x"), 5000, 3, 4)
    assert rows.shape == (5000, 3) and all(len(set(r)) == 3 for r in rows.tolist())


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"tasks": 0}, "--tasks"),
        ({"servers": 2, "replicas": 3}, "--replicas"),
        ({"beta": -1.0}, "--beta"),
        ({"theta": float("nan")}, "--theta"),
        ({"seed": -1}, "--seed"),
    ],
)
def test_generator_rejects_bad_parameters(kwargs, where) -> None:
    with pytest.raises(InputError) as e:
        generate(**kwargs)
    assert e.value.where == where


def test_json_round_trip(tmp_path) -> None:
    for inst in (table2_instance(), generate(tasks=12, servers=4, core_num=3, seed=2)):
        doc = instance_to_dict(inst)
        path = tmp_path / "inst.json"
        path.write_text(json.dumps(doc))
        back = load_instance(path)
        assert np.array_equal(back.initial_load, inst.initial_load)
        assert np.array_equal(back.replica_server, inst.replica_server)
        assert np.array_equal(back.server_core_start, inst.server_core_start)
        assert [f.describe() for f in back.cost_functions] == [f.describe() for f in inst.cost_functions]


def test_json_cores_and_table_costs() -> None:
    inst = instance_from_dict(
        {
            "cost_functions": {"default": {"kind": "table", "values": [2, 3]}, "fast": {"kind": "linear", "theta": 0.1, "cap": 2}},
            "servers": [{"name": "a", "cores": 3}, {"name": "b", "initial_loads": [1, 2], "cost": "fast"}],
            "tasks": [{"replicas": ["a"]}, {"replicas": [1, "a"]}],
        }
    )
    assert inst.n_cores == 5 and inst.initial_load.tolist() == [0, 0, 0, 1, 2]
    assert inst.g(0, 5) == 3 and inst.g(1, 5) == pytest.approx(1.2)
    assert inst.task_name(1) == "t2" and inst.server_name(1) == "b"


BAD = [
    ([], "inst.json", "top level must be a JSON object"),
    ({"tasks": [{"replicas": ["s1"]}]}, "inst.json: servers", "missing"),
    ({"servers": [], "tasks": []}, "inst.json: servers", "non-empty"),
    ({"servers": [{"initial_loads": [1, -2]}], "tasks": [{"replicas": ["s1"]}]}, "inst.json: servers[0].initial_loads[1]", ">= 0"),
    ({"servers": [{"initial_loads": ["x"]}], "tasks": [{"replicas": ["s1"]}]}, "inst.json: servers[0].initial_loads[0]", "finite number"),
    ({"servers": [{"cores": 0}], "tasks": [{"replicas": ["s1"]}]}, "inst.json: servers[0].cores", "integer >= 1"),
    ({"servers": [{"cores": -3}], "tasks": [{"replicas": ["s1"]}]}, "inst.json: servers[0].cores", "integer >= 1"),
    ({"servers": [{"name": "s1"}], "tasks": [{"replicas": ["s1"]}]}, "inst.json: servers[0].initial_loads", "missing"),
    ({"servers": [{"cores": 2, "initial_loads": [0]}], "tasks": [{"replicas": ["s1"]}]}, "inst.json: servers[0].cores", "says 2 cores"),
    ({"servers": [{"cores": 1}, {"name": "s1", "cores": 1}], "tasks": [{"replicas": ["s1"]}]}, "inst.json: servers[1].name", "duplicate"),
    ({"servers": [{"cores": 1, "speed": 2}], "tasks": [{"replicas": ["s1"]}]}, "inst.json: servers[0].speed", "unknown field"),
    ({"servers": [{"cores": 1, "cost": "slow"}], "tasks": [{"replicas": ["s1"]}]}, "inst.json: servers[0].cost", "no cost function"),
    ({"servers": [{"cores": 1}]}, "inst.json: tasks", "missing"),
    ({"servers": [{"cores": 1}], "tasks": [{}]}, "inst.json: tasks[0].replicas", "missing"),
    ({"servers": [{"cores": 1}], "tasks": [{"replicas": []}]}, "inst.json: tasks[0].replicas", "non-empty"),
    ({"servers": [{"cores": 1}], "tasks": [{"replicas": ["s9"]}]}, "inst.json: tasks[0].replicas[0]", "no server named"),
    ({"servers": [{"cores": 1}], "tasks": [{"replicas": [3]}]}, "inst.json: tasks[0].replicas[0]", "no server with index"),
    ({"servers": [{"cores": 1}], "tasks": [{"replicas": ["s1", "s1"]}]}, "inst.json: tasks[0].replicas[1]", "listed twice"),
    ({"servers": [{"cores": 1}], "tasks": [{"replicas": [1.5]}]}, "inst.json: tasks[0].replicas[0]", "server name or index"),
    ({"servers": [{"cores": 1}], "tasks": [{"name": "a", "replicas": [0]}, {"name": "a", "replicas": [0]}]}, "inst.json: tasks[1].name", "duplicate"),
    ({"format": "other/2", "servers": [{"cores": 1}], "tasks": [{"replicas": [0]}]}, "inst.json: format", "unsupported"),
    ({"cost_functions": {"default": {"kind": "cubic"}}, "servers": [{"cores": 1}], "tasks": [{"replicas": [0]}]}, "inst.json: cost_functions.default.kind", "unknown kind"),
    ({"cost_functions": {"default": {"kind": "linear"}}, "servers": [{"cores": 1}], "tasks": [{"replicas": [0]}]}, "inst.json: cost_functions.default.theta", "missing"),
    ({"cost_functions": {"default": {"kind": "linear", "theta": -1}}, "servers": [{"cores": 1}], "tasks": [{"replicas": [0]}]}, "inst.json: cost_functions.default.theta", ">= 0"),
    ({"cost_functions": {"default": {"kind": "table", "values": [2, 1.5]}}, "servers": [{"cores": 1}], "tasks": [{"replicas": [0]}]}, "inst.json: cost_functions.default.values[1]", "non-decreasing"),
    ({"cost_functions": {"default": {"kind": "table", "values": [0.5]}}, "servers": [{"cores": 1}], "tasks": [{"replicas": [0]}]}, "inst.json: cost_functions.default.values[0]", ">= 1"),
]


@pytest.mark.parametrize(("doc", "where", "problem"), BAD)
def test_json_validation_names_the_field(doc, where, problem) -> None:
    with pytest.raises(InputError) as e:
        instance_from_dict(doc, "inst.json")
    assert e.value.where == where
    assert problem in e.value.problem


def test_malformed_json_names_the_line(tmp_path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{\n  "servers": [\n    {"cores": 1},,\n  ]\n}\n')
    with pytest.raises(InputError) as e:
        load_instance(p)
    assert e.value.where == f"{p}:3"
    assert "malformed JSON" in e.value.problem
