"""The columnar (Parquet) trace format: lossless round trips, streaming across batches, what it carries
beyond the .tr format, the same simulation from either file, and every malformed-file error."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.workload.columnar import META_KEY, read_columnar, read_metadata, write_columnar
from schedlab.workload.convert import convert
from schedlab.workload.trace import (
    TraceConventions,
    TraceJob,
    count_jobs,
    read_raw,
    read_trace,
    resolve_trace,
    write_trace,
)


def _plain(jobs):
    return [(j.arrival, j.mean_duration, j.durations) for j in jobs]


def _rich_jobs() -> list[TraceJob]:
    return [
        TraceJob(0.0, 2.0, [1.0, 3.0], requests=[(1.0, 256.0), None], user="alice", priority=9, job_id=17, task_ids=[0, 4],
                 constraints=[(("arch", "=", "x86"), ("kernel", ">", "3")), ()]),
        TraceJob(0.0, 5.0, [5.0], user=None, priority=None, job_id=3),
        TraceJob(2.5, 1.5, [1.0, 2.0, 1.5], requests=[(2.0, 512.0), (4.0, 1024.0), (1.0, 128.0)], user="bob", priority=0, job_id=5,
                 constraints=[(), (("gpu", "present", ""),), (("rack", "!=", "r7"),)]),
    ]


def test_bundled_traces_convert_losslessly_both_ways(tmp_path):
    for name in ("syn_250", "google"):
        pq_path = tmp_path / f"{name}.parquet"
        report = convert("auto", [name], pq_path)
        original = list(read_raw(resolve_trace(name)[1]))
        assert report.jobs == len(original) and report.tasks == sum(j.num_tasks for j in original) and not report.dropped
        assert _plain(read_columnar(pq_path)) == _plain(original)
        assert count_jobs(pq_path) == len(original)
        back = tmp_path / f"{name}.tr.gz"
        convert("auto", [pq_path], back)
        assert _plain(read_raw(back)) == _plain(original)


def test_a_simulation_reads_the_same_jobs_from_either_file(tmp_path):
    tr = tmp_path / "t.tr"
    write_trace(tr, [TraceJob(float(i // 2), 2.0, [1.0 + (i % 3), 3.0, 2.0]) for i in range(60)])  # repeated arrivals: dephased
    pq_path = tmp_path / "t.parquet"
    convert("tr", [tr], pq_path)
    a = schedlab.simulate("megha", str(tr), workers=8, seed=3, params={"gms": 2, "lms": 2})
    b = schedlab.simulate("megha", str(pq_path), workers=8, seed=3, params={"gms": 2, "lms": 2})
    strip = ("wall_seconds", "trace", "config")
    assert {k: v for k, v in a.summary.items() if k not in strip} == {k: v for k, v in b.summary.items() if k not in strip}
    assert a.tasks.equals(b.tasks)


def test_requests_constraints_users_priorities_and_ids_round_trip(tmp_path):
    p = tmp_path / "rich.parquet"
    jobs = _rich_jobs()
    assert write_columnar(p, jobs, ("cores", "memory_mb"), source="test", request_units={"cores": "cores"}) == 3
    meta = read_metadata(p)
    assert meta["resources"] == ["cores", "memory_mb"] and meta["jobs"] == 3 and meta["tasks"] == 6 and meta["source"] == "test"
    back = list(read_columnar(p))
    assert _plain(back) == _plain(jobs)
    assert [j.requests for j in back] == [[(1.0, 256.0), None], None, [(2.0, 512.0), (4.0, 1024.0), (1.0, 128.0)]]
    assert [j.user for j in back] == ["alice", None, "bob"] and [j.priority for j in back] == [9, None, 0]
    assert [j.job_id for j in back] == [17, 3, 5] and back[0].task_ids == [0, 4]
    assert back[0].constraints == [(("arch", "=", "x86"), ("kernel", ">", "3")), ()]
    assert back[1].constraints is None
    assert back[2].constraints == [(), (("gpu", "present", ""),), (("rack", "!=", "r7"),)]
    # the .tr format cannot hold them: converting back says what was left out
    report = convert("auto", [p], tmp_path / "rich.tr")
    assert report.dropped == {"requests": 2, "constraints": 2, "user": 2, "priority": 2}
    assert _plain(read_raw(tmp_path / "rich.tr")) == _plain(jobs)


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=12),
    gaps=st.lists(st.sampled_from([0.0, 0.5, 3.0]), min_size=12, max_size=12),
    row_group=st.integers(1, 20),
    batch=st.integers(1, 20),
)
def test_jobs_spanning_row_groups_and_batches_read_back_whole(tmp_path_factory, sizes, gaps, row_group, batch):
    t, jobs = 0.0, []
    for k, n in enumerate(sizes):
        t += gaps[k]
        reqs = [None if (k + i) % 4 == 0 else (float(i + 1), 64.0 * k) for i in range(n)]
        jobs.append(TraceJob(t, 1.0, [float(i + k) for i in range(n)], requests=reqs, job_id=k))
    p = tmp_path_factory.mktemp("c") / "t.parquet"
    write_columnar(p, jobs, ("cores", "memory_mb"), row_group_tasks=row_group)
    back = list(read_columnar(p, batch_tasks=batch))
    assert _plain(back) == _plain(jobs)
    for a, b in zip(back, jobs, strict=True):
        want = None if all(r is None for r in b.requests) else b.requests
        assert a.requests == want and a.job_id == b.job_id


def test_stated_requests_are_used_and_missing_ones_drawn_and_counted(tmp_path):
    p = tmp_path / "r.parquet"
    write_columnar(p, _rich_jobs(), ("cores", "memory_mb"))
    r = schedlab.simulate("ideal", str(p), workers=4, resource_mode="multi", constraints=False)
    assert r.summary["counters"]["tasks_request_drawn"] == 2  # a task of job 17 and job 3, which states none
    assert r.summary["counters"]["tasks_trace_constraints_unused"] == 3  # no machine attributes to match them against
    assert r.extra["requests"][0] == (1.0, 256.0) and r.extra["requests"][3] == (2.0, 512.0)
    # requests in other resources than the data center's are refused before anything runs
    q = tmp_path / "cpus.parquet"
    write_columnar(q, [TraceJob(0.0, 1.0, [1.0], requests=[(0.5,)])], ("cpus",))
    with pytest.raises(InputError, match=r"requests are in \(cpus\) but the data center's resources are \(cores, memory_mb\)"):
        schedlab.simulate("ideal", str(q), workers=4, resource_mode="multi")
    # slot mode has no requests: the trace's are not used, and no count appears
    assert "tasks_request_drawn" not in schedlab.simulate("ideal", str(q), workers=4).summary["counters"]


PLAIN_META = {"version": 1, "resources": [], "jobs": 1, "tasks": 1}


def _table(rows: dict, meta: dict | None = PLAIN_META) -> pa.Table:  # noqa: B006 - never mutated
    t = pa.table(rows)
    return t if meta is None else t.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})


GOOD = {"job": [1, 1, 2], "arrival": [0.0, 0.0, 1.0], "duration": [1.0, 2.0, 3.0], "mean_duration": [1.5, 1.5, 3.0]}


def _with(**cols):
    return {**GOOD, **cols}


BAD_FILES = [
    ("no metadata", _table(GOOD, None), "without schedlab trace metadata"),
    ("another version", _table(GOOD, {"version": 2, "resources": []}), "trace format version 2; this schedlab reads version 1"),
    ("missing column", _table({k: v for k, v in GOOD.items() if k != "duration"}), "missing column(s) duration"),
    ("missing request column", _table(GOOD, {"version": 1, "resources": ["cores"]}), "missing column(s) request_cores"),
    ("null duration", _table(_with(duration=[1.0, None, 3.0])), "row 2: duration is missing"),
    ("negative duration", _table(_with(duration=[1.0, 2.0, -3.0])), "row 3: duration must be finite and >= 0"),
    ("nan arrival", _table(_with(arrival=[0.0, 0.0, float("nan")])), "row 3: arrival must be finite and >= 0"),
    ("arrival goes back", _table(_with(arrival=[2.0, 2.0, 1.0])), "row 3: arrival 1 is earlier than the previous job's 2"),
    ("one job, two arrivals", _table(_with(arrival=[0.0, 0.5, 1.0])), "row 2: job 1's tasks have different arrivals"),
    ("bad request", _table({**GOOD, "request_cores": [1.0, float("inf"), 1.0]}, {"version": 1, "resources": ["cores"]}),
     "row 2: request_cores must be finite and >= 0"),
    ("bad operator", _table({**GOOD, "constraints": [[{"attribute": "a", "operator": "~", "value": "1"}], None, None]}),
     "row 1: constraint operator '~' is not one of"),
    ("constraint without value", _table({**GOOD, "constraints": [None, None, [{"attribute": "a", "operator": "<", "value": None}]]}),
     "row 3: constraint a < has no value"),
]


@pytest.mark.parametrize(("table", "expect"), [(t, e) for _n, t, e in BAD_FILES], ids=[n for n, _t, _e in BAD_FILES])
def test_malformed_files_are_one_clear_error_naming_the_row(tmp_path, table, expect):
    p = tmp_path / "bad.parquet"
    pq.write_table(table, p)
    with pytest.raises(InputError) as e:
        list(read_trace(p, TraceConventions.exact()))
    assert str(p) in str(e.value) and expect in str(e.value)


def test_not_a_parquet_file(tmp_path):
    p = tmp_path / "t.parquet"
    p.write_text("0 1 1.0 1.0\n")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        list(read_trace(p))


def test_writer_refuses_what_would_not_read_back(tmp_path):
    p = tmp_path / "w.parquet"
    with pytest.raises(InputError, match="earlier than the previous"):
        write_columnar(p, [TraceJob(2.0, 1.0, [1.0]), TraceJob(1.0, 1.0, [1.0])])
    with pytest.raises(InputError, match="no resources"):
        write_columnar(p, [TraceJob(0.0, 1.0, [1.0], requests=[(1.0,)])])
    with pytest.raises(InputError, match="no jobs"):
        write_columnar(p, [])
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_cli_convert_and_simulate(tmp_path, capsys):
    out = tmp_path / "g.parquet"
    assert main(["trace", "convert", "syn_250", "--out", str(out)]) == 0
    assert "wrote 2000 jobs (500000 tasks)" in capsys.readouterr().err
    assert main(["trace", "convert", str(out), "--out", str(tmp_path / "back.tr"), "--format", "columnar"]) == 0
    capsys.readouterr()
    assert main(["trace", "convert", "syn_250", "--out", str(tmp_path / "x.parquet"), "--format", "swf2"]) == 2
    assert "--format: unknown input format 'swf2'" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()
