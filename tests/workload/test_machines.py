"""A data center from a trace's machines: `trace machines` on Google 2011 fixture shards, constraint bits
against machine attributes, and simulations that match the trace's own constraints to its machines."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from schedlab import engine
from schedlab.cli import app
from schedlab.cluster.machines import (
    ConstraintCatalog,
    Machines,
    read_machines,
    satisfied,
    trace_constraints,
    write_machines,
)
from schedlab.errors import InputError
from schedlab.workload.columnar import read_columnar
from schedlab.workload.convert import convert, convert_machines

FIXTURES = Path(__file__).parent / "fixtures" / "google2011"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("machines")
    convert("google2011", [FIXTURES], d / "trace.parquet")
    convert_machines("google2011", [FIXTURES], d / "machines.parquet")
    return d / "trace.parquet", d / "machines.parquet"


MACHINE_FIXTURES = [("google2011", FIXTURES), ("google2019", FIXTURES.parent / "google2019")]


@pytest.mark.parametrize(("fmt", "folder"), MACHINE_FIXTURES)
def test_machines_at_the_start_of_the_trace(tmp_path, fmt, folder):
    report = convert_machines(fmt, [folder], tmp_path / "m.parquet")
    m = read_machines(tmp_path / "m.parquet")
    # 6 was removed at time 0, 8 added at 1000 s, 99 has attributes but no machine event
    assert m.ids.tolist() == [1, 2, 3, 4, 5, 7]
    assert m.resources == ("cores", "memory_mb")
    np.testing.assert_array_equal(m.capacity[[0, 1, 2, 3, 5]], [[32, 8192], [32, 4096], [64, 16384], [16, 2048], [32, 12288]])
    assert np.isnan(m.capacity[4]).all()  # machine 5 never states its capacity
    assert m.attributes == [
        {"a1": "5", "a4": "7", "a5": "4"},
        {"a1": "3", "a4": "1"},
        {"a2": "5", "a3": "9", "a4": "12"},
        {"a4": "1", "a5": "x"},
        {"a4": "1"},
        {"a1": "9", "a4": "1"},  # a5 set, then deleted, at time 0
    ]
    assert m.at == 0 and m.source == fmt
    assert report.machines == 6 and report.attributes == 5
    assert report.counts == {
        "machine_events_rows_after_the_snapshot": 3,
        "machines_removed_by_then": 1,
        "machines_without_capacity": 1,
        "machine_attributes_rows_after_the_snapshot": 1,
    }


@pytest.mark.parametrize(("fmt", "folder"), MACHINE_FIXTURES)
def test_machines_later_in_the_trace(tmp_path, fmt, folder):
    convert_machines(fmt, [folder], tmp_path / "m.parquet", at=1000)
    m = read_machines(tmp_path / "m.parquet")
    # 4 removed at 400 s (its row comes after a later one in the file), 2 updated at 500 s, 8 added at 1000 s
    assert m.ids.tolist() == [1, 2, 3, 5, 7, 8]
    assert m.capacity[1].tolist() == [64, 8192]
    assert m.attributes[0]["a4"] == "8"  # changed at 600 s


def test_normalised_capacities(tmp_path):
    convert_machines("google2011", [FIXTURES], tmp_path / "m.parquet", scale_requests=False)
    m = read_machines(tmp_path / "m.parquet")
    assert m.resources == ("cpus", "memory") and m.capacity[0].tolist() == [0.5, 0.5]


@pytest.mark.parametrize(
    ("attrs", "predicate", "ok"),
    [
        ({"a": "1"}, ("a", "=", "1"), True),
        ({"a": "1"}, ("a", "=", "01"), False),  # equality compares strings
        ({}, ("a", "=", "1"), False),
        ({"a": "1"}, ("a", "!=", "1"), False),
        ({}, ("a", "!=", "1"), True),  # a missing attribute reads as empty
        ({"a": "5"}, ("a", "<", "10"), True),  # numbers, not strings ("5" > "10" as text)
        ({"a": "5"}, ("a", ">", "10"), False),
        ({"a": "5"}, ("a", "<=", "5"), True),
        ({"a": "5"}, ("a", ">=", "5.5"), False),
        ({}, ("a", "<", "10"), False),
        ({"a": "x"}, ("a", "<", "10"), False),  # not a number
        ({"a": ""}, ("a", "present", ""), True),
        ({}, ("a", "present", ""), False),
        ({}, ("a", "absent", ""), True),
        ({"a": "1"}, ("a", "absent", ""), False),
    ],
)
def test_each_operator(attrs, predicate, ok):
    assert satisfied(attrs, predicate) is ok


_names = st.sampled_from(["a", "b", "c"])
_values = st.sampled_from(["", "1", "2", "10", "x"])
_ops = st.sampled_from(["=", "!=", "<", ">", "<=", ">=", "present", "absent"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.dictionaries(_names, _values, max_size=3), min_size=1, max_size=12),
    st.lists(st.tuples(_names, _ops, _values), max_size=10),
)
def test_machine_masks_are_the_predicates_each_machine_satisfies(machines, predicates):
    predicates = [(a, op, "" if op in ("present", "absent") else v) for a, op, v in predicates]
    cat = ConstraintCatalog(predicates)
    masks = cat.machine_masks(machines)
    for attrs, mask in zip(machines, masks, strict=True):
        for p in predicates:
            assert bool(mask >> cat.bit[p] & 1) == satisfied(attrs, p)
            # a task with this one constraint fits the machine exactly when the machine satisfies it
            assert (cat.mask([p]) & ~mask == 0) == satisfied(attrs, p)


def test_catalog_numbers_constraints_by_value_and_refuses_strangers():
    cat = ConstraintCatalog([("b", "=", "1"), ("a", "<", "3"), ("b", "=", "1")])
    assert cat.predicates == [("a", "<", "3"), ("b", "=", "1")]
    assert cat.mask([]) == 0 and cat.mask(None) == 0
    assert cat.mask([("b", "=", "1"), ("a", "<", "3")]) == 0b11
    with pytest.raises(InputError, match="not in the data center's catalog"):
        cat.mask([("c", "=", "1")])
    with pytest.raises(InputError, match="operator '~'"):
        ConstraintCatalog([("a", "~", "1")])


def _expected_runnable(trace: Path, m: Machines, keep: np.ndarray | None = None) -> tuple[int, int]:
    """(tasks, tasks some machine satisfies every constraint of), by brute force."""
    attrs = m.attributes if keep is None else [m.attributes[i] for i in keep]
    total = runnable = 0
    for job in read_columnar(trace):
        for cons in job.constraints or [()] * job.num_tasks:
            total += 1
            runnable += any(all(satisfied(a, p) for p in cons) for a in attrs)
    return total, runnable


@pytest.mark.parametrize("mode", ["slots", "multi"])
def test_a_run_matches_the_trace_constraints_to_the_trace_machines(files, mode):
    trace, machines = files
    m = read_machines(machines)
    keep = None if mode == "slots" else np.flatnonzero(~np.isnan(m.capacity).any(axis=1))
    total, runnable = _expected_runnable(trace, m, keep)
    r = engine.simulate("megha", trace=str(trace), data_center_from=str(machines), resource_mode=mode, params={"gms": 1, "lms": 1})
    c = r.summary["counters"]
    assert c["trace_tasks"] == total
    assert c["tasks_dropped_unsatisfiable"] == total - runnable > 0
    assert c["trace_constraint_bits"] == len(trace_constraints(trace)) > 0
    assert c["tasks_trace_constrained"] == sum(1 for j in read_columnar(trace) for cs in (j.constraints or []) if cs)
    assert "tasks_trace_constraints_unused" not in c
    assert r.summary["tasks"] == runnable and c["tasks_unfinished"] == 0
    cat = ConstraintCatalog(trace_constraints(trace))
    attrs = m.attributes if keep is None else [m.attributes[i] for i in keep]
    tasks = r.tables()["tasks"].frame()
    for worker, mask in zip(tasks["worker"].tolist(), tasks["constraints"].tolist(), strict=True):
        for p in cat.predicates:
            if mask >> cat.bit[p] & 1:
                assert satisfied(attrs[worker], p), (worker, p)
    if mode == "multi":
        assert c["machines_without_capacity"] == 1
        assert r.summary["config"]["resources"] == ["cores", "memory_mb"]


def test_without_constraints_every_task_runs(files):
    trace, machines = files
    r = engine.simulate("megha", trace=str(trace), data_center_from=str(machines), constraints=False, params={"gms": 1, "lms": 1})
    assert r.summary["counters"]["tasks_dropped_unsatisfiable"] == 0
    assert r.summary["tasks"] == r.summary["counters"]["trace_tasks"]


def test_bad_machines_files_and_combinations(tmp_path, files):
    trace, machines = files
    with pytest.raises(InputError, match="without schedlab machines metadata"):  # a trace is not a machines file
        read_machines(trace)
    text = tmp_path / "t.parquet"
    text.write_text("no")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        read_machines(text)
    m = read_machines(machines)
    m.capacity = m.capacity.copy()
    m.capacity[2, 0] = -1
    write_machines(tmp_path / "neg.parquet", m)
    with pytest.raises(InputError, match=r"neg.parquet:row 3.*capacity_cores must be > 0"):
        read_machines(tmp_path / "neg.parquet")
    with pytest.raises(InputError, match="a data-center config or a machines file, not both"):
        engine.simulate("megha", trace=str(trace), data_center_from=str(machines), config="reference")
    with pytest.raises(InputError, match="5 workers requested but the machines file"):
        engine.simulate("megha", trace=str(trace), data_center_from=str(machines), workers=5, params={"gms": 1, "lms": 1})
    none = Machines(np.array([1, 2]), ("cores", "memory_mb"), np.full((2, 2), np.nan), [{}, {}])
    write_machines(tmp_path / "nocap.parquet", none)
    with pytest.raises(InputError, match="no machine states its capacity"):
        engine.simulate("megha", trace=str(trace), data_center_from=str(tmp_path / "nocap.parquet"), resource_mode="multi", params={"gms": 1, "lms": 1})
    with pytest.raises(InputError, match="machines come from a raw trace format"):
        convert_machines("swf", [FIXTURES], tmp_path / "o.parquet")
    with pytest.raises(InputError, match="--at"):
        convert_machines("google2011", [FIXTURES], tmp_path / "o.parquet", at=-1)


def test_a_malformed_2019_machine_row_names_its_line(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    rows = ['{"time": "0", "machine_id": "1", "type": "ADD", "capacity": {"cpus": 0.5, "memory": 0.5}}', '{"time": "0", "machine_id": "2", "type": "9"}', '{"time": "x"}']
    (d / "machine_events-000000000000.json.gz").write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    with pytest.raises(InputError, match=r"machine_events-000000000000.json.gz:3: time is not an integer"):  # values first
        convert_machines("google2019", [d], tmp_path / "o.parquet")
    report = convert_machines("google2019", [d], tmp_path / "o.parquet", skip_bad=True)
    assert report.machines == 1 and report.bad_rows == {"rows with a malformed value": 1, "rows with an unknown machine event type": 1}
    for second, problem in (('{"time": "0", "machine_id": "2", "type": "9"}', "unknown machine event type 9"), ('{"machine_id": "3", "type": "1"}', "a machine row needs its time and machine_id")):
        (d / "machine_events-000000000000.json.gz").write_bytes(gzip.compress(f"{rows[0]}\n{second}\n".encode()))
        with pytest.raises(InputError, match=rf"json.gz:2: {problem}"):
            convert_machines("google2019", [d], tmp_path / "o.parquet")


def test_a_malformed_machine_row_names_its_line(tmp_path):
    d = tmp_path / "t" / "machine_events"
    d.mkdir(parents=True)
    (d / "part-00000-of-00001.csv.gz").write_bytes(gzip.compress(b"0,1,0,P,0.5,0.5\n0,2,7,P,0.5,0.5\n"))
    with pytest.raises(InputError, match=r"part-00000-of-00001.csv.gz:2: unknown machine event type 7"):
        convert_machines("google2011", [tmp_path / "t"], tmp_path / "o.parquet")
    report = convert_machines("google2011", [tmp_path / "t"], tmp_path / "o.parquet", skip_bad=True)
    assert report.machines == 1 and report.bad_rows == {"rows with an unknown machine event type": 1}
    with pytest.raises(InputError, match="no machine_events shards"):
        convert_machines("google2011", [FIXTURES / "task_events"], tmp_path / "o.parquet")


def test_cli(tmp_path, files):
    trace, _ = files
    out = tmp_path / "m.parquet"
    res = CliRunner().invoke(app, ["trace", "machines", str(FIXTURES), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout[: res.stdout.rindex("}") + 1])["machines"] == 6
    summary = tmp_path / "s.json"
    res = CliRunner().invoke(app, ["simulate", "-s", "megha", "--trace", str(trace), "--data-center-from", str(out), "-p", "gms=1", "-p", "lms=1", "-q", "--summary-json", str(summary)])
    assert res.exit_code == 0, res.output
    s = json.loads(summary.read_text())
    assert s["config"]["data_center"] == f"machines:{out}" and s["config"]["machine_model"] is None


def test_trace_info_counts_the_tasks_no_machine_can_run(files):
    from schedlab.workload.info import trace_report

    trace, machines = files
    m = read_machines(machines)
    total, runnable = _expected_runnable(trace, m)
    r = trace_report(str(trace), machines=str(machines))
    mr = r["machines"]
    assert r["workers"] == m.n and "per_constraint_load" not in r  # the trace's own constraints, not Sharma's
    assert mr["tasks_unsatisfiable"] == total - runnable
    assert mr["constraints"] == len(trace_constraints(trace))
    # each listed constraint: the machines satisfying it, by brute force
    cat = ConstraintCatalog(trace_constraints(trace))
    by_text = {" ".join(p).strip(): p for p in cat.predicates}
    for row in mr["top_constraints"]:
        assert row["machines"] == sum(satisfied(a, by_text[row["constraint"]]) for a in m.attributes)
    with pytest.raises(InputError, match="a config or a machines file, not both"):
        trace_report(str(trace), machines=str(machines), config="reference")
    res = CliRunner().invoke(app, ["trace", "info", str(trace), "--machines", str(machines)])
    assert res.exit_code == 0 and "tasks no machine can run" in res.output


def test_alibaba_machines(tmp_path):
    folder = FIXTURES.parent / "alibaba2018"
    report = convert_machines("alibaba2018", [folder], tmp_path / "m.parquet")
    m = read_machines(tmp_path / "m.parquet")
    assert m.ids.tolist() == [1, 2, 3, 5] and m.resources == ("cores", "memory_mb")
    np.testing.assert_array_equal(m.capacity[:3], [[96, 16384], [96, 16384], [64, 8192]])  # cores as stated, memory of the largest
    assert np.isnan(m.capacity[3]).all()
    assert m.attributes[0] == {"failure_domain_1": "1", "failure_domain_2": "A", "status": "USING"}
    assert report.counts["machine_meta_rows_after_the_snapshot"] == 2
    convert_machines("alibaba2018", [folder], tmp_path / "later.parquet", at=300_000)
    later = read_machines(tmp_path / "later.parquet")
    assert later.ids.tolist() == [1, 2, 3, 4, 5] and later.attributes[0]["status"] == "IMPORT_INSTALLING"
    convert_machines("alibaba2018", [folder], tmp_path / "n.parquet", scale_requests=False)
    n = read_machines(tmp_path / "n.parquet")
    assert n.resources == ("cpus", "memory") and n.capacity[2].tolist() == pytest.approx([64 / 96, 0.5])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "machine_meta.csv").write_text("m_1,0,1,A,96,100,USING\nhost7,0,1,A,96,100,USING\n")
    with pytest.raises(InputError, match=r"machine_meta.csv:2: machine ID 'host7' is not m_<number>"):
        convert_machines("alibaba2018", [bad], tmp_path / "o.parquet")
    assert convert_machines("alibaba2018", [bad], tmp_path / "o.parquet", skip_bad=True).machines == 1
