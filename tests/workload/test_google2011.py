"""The Google 2011 converter on fixture shards in the trace's documented schema: every interpretation
(evictions, kills, out-of-order events, the window's markers, missing requests, constraint operators),
the drop report, bounded-memory sorting, and every malformed-row path."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.workload.columnar import read_columnar, read_metadata
from schedlab.workload.convert import convert
from schedlab.workload.converters import gather_tables
from schedlab.workload.converters.common import Drops
from schedlab.workload.converters.google2011 import (
    ENDED,
    FINISH,
    SCHEDULE,
    SUBMIT,
    UPDATE_PENDING,
    Finished,
    Tally,
    TaskStates,
    convert_google2011,
    drop_unfinished,
    fold_batch,
    reference_events,
)

from .rawtrace import by_id, convert_fixture, job_fields, simulated_counters, spilled

FIXTURES = Path(__file__).parent / "fixtures" / "google2011"
ROWS = 299 + 296 + 30 + 29  # lines of the four fixture shards


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    return convert_fixture("google2011", FIXTURES, tmp_path_factory)


_by_id = by_id


def test_the_documented_cases_convert_as_interpreted(converted):
    out, report, _rows = converted
    jobs = _by_id(out)
    # plain: SUBMIT at 700 s, SCHEDULE at 701 s, FINISH 10/20/30 s later; requests scaled to 64 cores / 16 GB
    j = jobs[1000]
    assert (j.arrival, j.durations, j.mean_duration, j.user, j.priority) == (700.0, [10.0, 20.0, 30.0], 20.0, "uA", 9)
    assert j.requests == [(4.0, 512.0)] * 3 and j.constraints is None and j.task_ids == [0, 1, 2]
    # evicted and resubmitted: the first SUBMIT is the arrival, the last run is the duration
    assert (jobs[2000].arrival, jobs[2000].durations) == (800.0, [20.0, 6.0])
    # requests missing (task 1 states its CPU only): no request, the simulation draws one
    assert jobs[3000].requests is None
    # a killed task is left out; a failed one run again counts its last run
    assert (jobs[4000].task_ids, jobs[4000].durations) == ([1, 2], [5.0, 4.0])
    # before the window (timestamp 0): left out with its whole job
    assert 5000 not in jobs
    # out of order in the file: the SUBMIT after its SCHEDULE, a FINISH before its SCHEDULE
    assert (jobs[6000].arrival, jobs[6000].durations) == (1100.0, [14.0, 18.0])
    # still running, pending, or finished after the window: left out
    assert not {7000, 7001, 8000} & set(jobs)
    # constraints: = and >; != and < with an empty value (present) and a duplicate row; = empty (absent)
    j = jobs[9000]
    assert j.constraints == [(("a1", "=", "v1"), ("a2", ">", "3")), (("a3", "present", ""), ("a4", "<", "10")), (("a5", "absent", ""),)]
    assert j.requests[2] == (16.0, 2048.0)  # UPDATE_PENDING raised task 2's request before it ran
    # a task whose events span both shards
    assert jobs[9500].durations == [99.0] and jobs[9500].constraints == [(("a1", "!=", "v1"),)]
    assert list(jobs) == sorted(jobs, key=lambda k: (jobs[k].arrival, k))  # arrival order


def test_what_was_left_out_is_reported_by_reason(converted):
    _out, report, rows = converted
    assert report.tasks_dropped == {
        "submitted before the trace window": 1,
        "finished after the trace window": 1,
        "killed and not run again": 1,
        "unfinished at the trace's end": 2,
    }
    assert report.counts["constraint_rows_of_dropped_tasks"] == 1
    assert report.counts["events_out_of_order"] == 1
    assert report.rows_read == rows == ROWS and not report.bad_rows
    meta = read_metadata(_out)
    assert meta["source"] == "google2011" and meta["resources"] == ["cores", "memory_mb"]


def test_normalised_requests_are_kept_as_the_trace_gives_them(tmp_path):
    out = tmp_path / "n.parquet"
    convert("google2011", [FIXTURES / "task_events"], out, scale_requests=False)
    jobs = _by_id(out)
    assert read_metadata(out)["resources"] == ["cpus", "memory"]
    assert jobs[1000].requests == [(0.0625, 0.03125)] * 3 and jobs[9000].constraints is None  # no constraint table given


def test_bounded_memory_sorting_gives_the_same_trace(converted, tmp_path):
    out, _report, _rows = converted
    assert job_fields(spilled(convert_google2011, "google2011", FIXTURES, tmp_path, run_rows=3)) == job_fields(out)


def test_a_converted_trace_runs_with_its_own_requests(converted):
    out, report, _rows = converted
    c = simulated_counters(out, report)
    assert c["tasks_request_drawn"] == 2  # job 3000's two tasks
    constrained = sum(1 for j in read_columnar(out) for cons in (j.constraints or []) if cons)
    assert constrained > 4 and c["tasks_trace_constraints_unused"] == constrained  # no machine attributes to match them


def _shard(folder: Path, table: str, lines: list[str]) -> Path:
    d = folder / table
    d.mkdir(parents=True, exist_ok=True)
    p = d / "part-00000-of-00001.csv.gz"
    p.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return p


GOOD_EVENT = "700000000,,1,0,,0,u,1,0,0.1,0.1,0.0,0"
BAD_EVENTS = [
    ("too few fields", "700000000,,1,0,,0,u,1,0,0.1", "expected 13 fields, got 10"),
    ("timestamp not a number", "7e8x,,1,0,,0,u,1,0,0.1,0.1,0.0,0", "timestamp is not an integer: '7e8x'"),
    ("job missing", "700000000,,,0,,0,u,1,0,0.1,0.1,0.0,0", "job is missing"),
    ("unknown event", "700000000,,1,0,,9,u,1,0,0.1,0.1,0.0,0", "unknown event type 9"),
    ("negative task index", "700000000,,1,-2,,0,u,1,0,0.1,0.1,0.0,0", "task indices in [0, 2^24)"),
    ("request not a number", "700000000,,1,0,,0,u,1,0,lots,0.1,0.0,0", "cpu is not a number: 'lots'"),
]


@pytest.mark.parametrize(("line", "expect"), [(b, e) for _n, b, e in BAD_EVENTS], ids=[n for n, _b, _e in BAD_EVENTS])
def test_a_malformed_row_is_named_by_file_and_line_or_skipped_and_counted(tmp_path, line, expect):
    shard = _shard(tmp_path / "t", "task_events", [GOOD_EVENT, GOOD_EVENT.replace(",0,u", ",1,u").replace("700000000", "701000000"), line,
                                                   "709000000,,1,0,,4,u,1,0,0.1,0.1,0.0,0"])
    with pytest.raises(InputError) as e:
        convert("google2011", [tmp_path / "t"], tmp_path / "o.parquet")
    assert str(e.value).startswith(f"{shard}:3: ") and expect in str(e.value)
    assert not (tmp_path / "o.parquet").exists()
    report = convert("google2011", [tmp_path / "t"], tmp_path / "o.parquet", skip_bad=True)
    assert sum(report.bad_rows.values()) == 1 and report.tasks == 1
    assert next(read_columnar(tmp_path / "o.parquet")).durations == [8.0]


def test_malformed_constraint_rows(tmp_path):
    _shard(tmp_path / "t", "task_events", [GOOD_EVENT, "701000000,,1,0,,1,u,1,0,0.1,0.1,0.0,0", "709000000,,1,0,,4,u,1,0,0.1,0.1,0.0,0"])
    shard = _shard(tmp_path / "t", "task_constraints", ["700000000,1,0,0,a,1", "700000000,1,0,7,a,1", "700000000,1,0,2,b,"])
    with pytest.raises(InputError, match=rf"^{shard}:2: job 1 task 0: unknown comparison operator 7$"):
        convert("google2011", [tmp_path / "t"], tmp_path / "o.parquet")
    report = convert("google2011", [tmp_path / "t"], tmp_path / "o.parquet", skip_bad=True)
    assert report.bad_rows == {"constraint rows with an unknown operator or impossible IDs": 1, "constraint rows comparing with an empty value": 1}
    assert next(read_columnar(tmp_path / "o.parquet")).constraints == [(("a", "=", "1"),)]


def test_inputs_are_sorted_into_tables_or_refused(tmp_path):
    loose = tmp_path / "part-00000-of-00001.csv.gz"
    loose.write_bytes(gzip.compress(b"1\n"))
    with pytest.raises(InputError, match="cannot tell which google2011 table this is"):
        gather_tables("google2011", [loose])
    with pytest.raises(InputError, match="no google2011 tables"):
        gather_tables("google2011", [tmp_path])
    named = tmp_path / "named"
    named.mkdir()
    (named / "task_events-000.csv.gz").write_bytes(gzip.compress(b"1\n"))
    (named / "task_constraints.csv").write_text("")
    (named / "schema.csv").write_text("")  # the trace's own schema file is not a table
    assert {t: [p.name for p in ps] for t, ps in gather_tables("google2011", [named]).items()} == {
        "task_events": ["task_events-000.csv.gz"], "task_constraints": ["task_constraints.csv"], "machine_events": [], "machine_attributes": []
    }
    with pytest.raises(InputError, match="no task_events shards"):
        gather_tables("google2011", [FIXTURES / "task_constraints"])
    shards = gather_tables("google2011", [FIXTURES / "task_events" / "part-00001-of-00002.csv.gz", FIXTURES / "task_events"])
    assert [p.name for p in shards["task_events"]] == ["part-00000-of-00002.csv.gz", "part-00001-of-00002.csv.gz"]


def test_nothing_finished_is_one_clear_error(tmp_path):
    _shard(tmp_path / "t", "task_events", [GOOD_EVENT])
    with pytest.raises(InputError, match=r"no task of the google2011 input could be kept \(unfinished at the trace's end: 1\)"):
        convert("google2011", [tmp_path / "t"], tmp_path / "o.parquet")


def test_cli(tmp_path, capsys):
    out = tmp_path / "g.parquet"
    assert main(["trace", "convert", "--format", "google2011", str(FIXTURES), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "wrote 47 jobs (159 tasks)" in err and "killed and not run again: 1" in err
    assert main(["trace", "convert", "--format", "google2011", str(FIXTURES), "--out", str(tmp_path / "g.tr")]) == 2
    assert "converts to the columnar format only" in capsys.readouterr().err


_EVENT = st.tuples(
    st.integers(0, 4),  # task
    st.sampled_from([SUBMIT, SUBMIT, SCHEDULE, SCHEDULE, FINISH, FINISH, *ENDED, UPDATE_PENDING]),
    st.integers(0, 12),  # time step (0: before the window)
    st.sampled_from([np.nan, 0.25, 0.5]),  # cpu
    st.sampled_from([-1, 0, 1]),  # user code
)


@settings(max_examples=300, deadline=None)
@given(events=st.lists(_EVENT, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=4))
def test_the_vectorized_fold_is_the_event_by_event_definition(events, cuts):
    rows = [(t * 1_000_000 if t else 0, task, ev, user, float(task % 2), cpu, 0.125) for task, ev, t, cpu, user in events]
    want_drops = Drops()
    want, want_tally = reference_events(rows, want_drops)
    states, out, drops = TaskStates(), Finished(), Drops()
    tally = Tally(drops)
    bounds = sorted({0, len(rows), *(c for c in cuts if c <= len(rows))})
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        block = rows[lo:hi]
        cols = list(zip(*block, strict=True)) if block else [[]] * 7
        fold_batch(states, {"t": np.asarray(cols[0], np.int64), "key": np.asarray(cols[1], np.int64), "ev": np.asarray(cols[2], np.int64),
                            "user": np.asarray(cols[3], np.int64), "prio": np.asarray(cols[4], float), "cpu": np.asarray(cols[5], float),
                            "mem": np.asarray(cols[6], float)}, out, tally)  # fmt: skip
    drop_unfinished(states, drops)
    got = out.take()
    got_rows = sorted(zip(*(got[c].tolist() for c in Finished.NAMES), strict=True))
    norm = sorted((k, a, d, u, p, c, m) for k, a, d, u, p, c, m in want)
    assert len(got_rows) == len(norm)
    for g, w in zip(got_rows, norm, strict=True):
        assert g[:4] == w[:4] and np.allclose(g[4:], w[4:], equal_nan=True)
    assert drops.counts == want_drops.counts
    assert (tally.ended_early, tally.out_of_order) == (want_tally.ended_early, want_tally.out_of_order)
