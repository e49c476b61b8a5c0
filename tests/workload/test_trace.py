"""Trace reader and writer: round trips, the papers' conventions, every malformed-line error."""

from __future__ import annotations

import gzip

import pytest

from schedlab.errors import InputError
from schedlab.workload.trace import (
    TraceConventions,
    TraceJob,
    apply_conventions,
    count_jobs,
    read_raw,
    read_trace,
    write_trace,
)
from tests.helpers import write_lines


def test_round_trip_plain_and_gzip(tmp_path):
    jobs = [TraceJob(0.0, 1.25, [1.0, 1.5]), TraceJob(2.5, 3.0, [3.0]), TraceJob(2.5, 0.1, [0.1, 0.1, 0.1])]
    for name in ("t.tr", "t.tr.gz"):
        p = tmp_path / name
        assert write_trace(p, jobs) == 3
        back = list(read_trace(p, TraceConventions.exact()))
        assert [(j.arrival, j.mean_duration, j.durations) for j in back] == [
            (j.arrival, j.mean_duration, j.durations) for j in jobs
        ]
    assert count_jobs(tmp_path / "t.tr.gz") == 3


def test_bundled_traces_have_the_documented_sizes():
    sizes = {"syn_250": (2000, 500000), "google": (10000, 312558)}
    for name, (nj, nt) in sizes.items():
        js = list(read_trace(name))
        assert len(js) == nj and sum(j.num_tasks for j in js) == nt


def test_conventions_truncate_and_dephase_like_the_authors():
    raw = [TraceJob(1.0, 2.7, [2.7, 0.4]), TraceJob(1.0, 1.0, [1.0]), TraceJob(1.0, 1.0, [1.0]), TraceJob(1.01, 5.0, [5.9])]
    out = list(apply_conventions(iter(raw), TraceConventions()))
    assert out[0].durations == [2.0, 0.0]
    # the k-th repeat of a timestamp moves by 0.01*(k-1), added cumulatively
    times = [j.arrival for j in out]
    assert times == sorted(times)
    assert sorted(times) == sorted([1.0, 1.0 + 0.01, 1.0 + 0.01 + 0.01, 1.01])
    assert out[-1].arrival == 1.0 + 0.01 + 0.01  # re-ordered after the job originally at 1.01
    exact = list(apply_conventions(iter([TraceJob(1.0, 1.0, [2.7])]), TraceConventions.exact()))
    assert exact[0].durations == [2.7]


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("0 2 1", "task count is 2 but the line has 0"),
        ("0 2", "got 2 field(s)"),
        ("0 3 1 1 1", "task count is 3 but the line has 2"),
        ("x 1 1 1", "arrival time is not a number"),
        ("0 1 1 abc", "task duration is not a number"),
        ("0 1 1 -1", "finite and >= 0"),
        ("0 1 1 inf", "finite and >= 0"),
        ("0 1 1 nan", "finite and >= 0"),
        ("0 0 1", "positive integer"),
        ("0 1.5 1 1", "positive integer"),
        ("-1 1 1 1", "negative arrival"),
        ("0 1 -2 1", "negative mean"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, line, what):
    p = write_lines(tmp_path / "bad.tr", ["# a comment", "0 1 1 1", "", line])
    with pytest.raises(InputError) as e:
        list(read_trace(p))
    assert str(e.value).startswith(f"{p}:4: ")
    assert what in str(e.value)


def test_time_going_back_is_an_error(tmp_path):
    p = write_lines(tmp_path / "back.tr", ["5 1 1 1", "4 1 1 1"])
    with pytest.raises(InputError, match=r"back.tr:2: arrival time 4 is earlier than the previous job's 5"):
        list(read_raw(p))


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(InputError, match="no such trace file"):
        read_trace(tmp_path / "missing.tr")
    p = tmp_path / "broken.tr.gz"
    p.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match="unreadable"):
        list(read_trace(p))
    q = tmp_path / "ok.tr.gz"
    with gzip.open(q, "wt") as f:
        f.write("0 1 1 1\n")
    assert len(list(read_trace(q))) == 1


def test_writer_refuses_bad_jobs_and_leaves_nothing_behind(tmp_path):
    p = tmp_path / "out.tr"
    with pytest.raises(InputError):
        write_trace(p, [TraceJob(2.0, 1.0, [1.0]), TraceJob(1.0, 1.0, [1.0])])
    assert not p.exists()
    assert list(tmp_path.iterdir()) == []


def test_count_jobs_counts_job_lines_without_parsing_them(tmp_path):
    p = tmp_path / "t.tr"
    p.write_text("# a comment\n0 2 1.5 1 2\n\n   \n  # indented comment\n1 1 3 3\n2 1 not-a-number")
    # blank and comment lines are not jobs; a malformed line is counted (the reader refuses it in the run)
    assert count_jobs(p) == 3
