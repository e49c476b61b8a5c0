"""trace sample (whole jobs, windows, seeds, every field kept) and trace info's statistics of what a
columnar trace carries beyond durations."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.workload.columnar import read_columnar, read_metadata, write_columnar
from schedlab.workload.info import trace_report
from schedlab.workload.sample import sample_trace
from schedlab.workload.trace import TraceConventions, TraceJob, read_raw, read_trace, write_trace


def _jobs(n: int = 50) -> list[TraceJob]:
    return [
        TraceJob(10.0 * k, 1.0, [1.0] * (1 + k % 4), requests=[(float(k % 3 + 1), 256.0)] * (1 + k % 4), user=f"u{k % 3}", priority=k % 2,
                 job_id=100 + k, constraints=[(("rack", "!=", "r1"),)] + [()] * (k % 4) if k % 5 == 0 else None)
        for k in range(n)
    ]


@pytest.fixture
def columnar(tmp_path):
    p = tmp_path / "in.parquet"
    write_columnar(p, _jobs(), ("cores", "memory_mb"), source="test", request_units={"cores": "cores"})
    return p


def test_a_random_sample_of_whole_jobs_keeps_every_field_and_arrival_order(columnar, tmp_path):
    out = tmp_path / "s.parquet"
    r = sample_trace(columnar, out, jobs=12, seed=3)
    got = list(read_columnar(out))
    by_id = {j.job_id: j for j in _jobs()}
    assert r.jobs == len(got) == 12 and r.jobs_read == 50 and r.tasks == sum(j.num_tasks for j in got)
    assert [j.arrival for j in got] == sorted(j.arrival for j in got)
    for j in got:
        src = by_id[j.job_id]
        assert (j.arrival, j.durations, j.requests, j.user, j.priority, j.constraints) == (src.arrival, src.durations, src.requests, src.user, src.priority, src.constraints)
    assert read_metadata(out)["source"] == "sample of test" and read_metadata(out)["request_units"] == {"cores": "cores"}
    # the same seed draws the same sample; another seed another one
    sample_trace(columnar, tmp_path / "t.parquet", jobs=12, seed=3)
    assert [j.job_id for j in read_columnar(tmp_path / "t.parquet")] == [j.job_id for j in got]
    sample_trace(columnar, tmp_path / "u.parquet", jobs=12, seed=4)
    assert [j.job_id for j in read_columnar(tmp_path / "u.parquet")] != [j.job_id for j in got]


def test_tasks_window_first_and_rebase(columnar, tmp_path):
    out = tmp_path / "s.parquet"
    r = sample_trace(columnar, out, tasks=30, seed=1)
    sizes = [j.num_tasks for j in read_columnar(out)]
    assert sum(sizes) >= 30 and sum(sizes) - max(sizes) < 30  # whole jobs, stopped at the first that reaches 30
    r = sample_trace(columnar, out, window=(100.0, 200.0), jobs=3, first=True, rebase=True)
    got = list(read_columnar(out))
    assert [j.job_id for j in got] == [110, 111, 112] and [j.arrival for j in got] == [0.0, 10.0, 20.0]
    assert (r.first_arrival, r.last_arrival) == (100.0, 120.0)
    r = sample_trace(columnar, out, window=(100.0, 200.0))
    assert r.jobs == 10


def test_tr_traces_sample_to_tr(tmp_path):
    src = tmp_path / "in.tr"
    write_trace(src, _jobs())
    sample_trace(src, tmp_path / "s.tr", jobs=5, seed=0)
    assert len(list(read_raw(tmp_path / "s.tr"))) == 5
    assert len(list(read_trace("syn_250", TraceConventions.exact()))) == 2000
    sample_trace("syn_250", tmp_path / "b.tr", tasks=1000, first=True)
    assert [j.num_tasks for j in read_raw(tmp_path / "b.tr")] == [250] * 4


@pytest.mark.parametrize(
    ("kwargs", "expect"),
    [
        ({}, "say what to keep"),
        ({"jobs": 1, "tasks": 1}, "not both"),
        ({"jobs": 0}, "--jobs: must be >= 1"),
        ({"window": (5.0, 1.0)}, "0 <= START < END"),
        ({"window": (10_000.0, 20_000.0)}, "no job in the window"),
    ],
)
def test_bad_options(columnar, tmp_path, kwargs, expect):
    with pytest.raises(InputError, match=expect):
        sample_trace(columnar, tmp_path / "s.parquet", **kwargs)
    assert not (tmp_path / "s.parquet").exists()


def test_a_columnar_sample_is_not_written_as_tr(columnar, tmp_path):
    with pytest.raises(InputError, match="would lose its requests and constraints"):
        sample_trace(columnar, tmp_path / "s.tr", jobs=2)


def test_trace_info_reports_requests_constraints_users_and_priorities(columnar):
    r = trace_report(columnar)
    assert r["requests"]["tasks_stated"] == r["workload"]["tasks"] and r["requests"]["per_resource"]["cores"]["max"] == 3.0
    assert r["constraints"]["tasks_constrained"] == 10 and r["constraints"]["operators"] == {"!=": 10}
    assert r["constraints"]["top_attributes"] == {"rack": 10}
    assert r["users"]["users"] == 3 and set(r["priorities"]) == {"0", "1"}
    assert "requests" not in trace_report("syn_250")  # a .tr trace carries none of these


def test_cli(columnar, tmp_path, capsys):
    assert main(["trace", "sample", str(columnar), "--jobs", "4", "--out", str(tmp_path / "s.parquet")]) == 0
    assert "wrote 4 of 50 jobs" in capsys.readouterr().err
    assert main(["trace", "sample", str(columnar), "--window", "5", "--out", str(tmp_path / "w.parquet")]) == 2
    assert "--window: expected START,END" in capsys.readouterr().err
    assert main(["trace", "info", str(columnar)]) == 0
    out = capsys.readouterr().out
    assert "request cores" in out and "constraint operators" in out and "users" in out


def test_trace_info_draws_its_figure(columnar, tmp_path):
    png = tmp_path / "info.png"
    trace_report(columnar, plot=png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    trace_report("syn_250", plot=tmp_path / "plain.png")  # no requests or constraints: the panels say so
    assert (tmp_path / "plain.png").stat().st_size > 0


def test_the_requested_load_over_time_is_the_brute_force_integral():
    from schedlab.workload.info import _weighted_integral_at

    rng = np.random.default_rng(5)
    starts, durs, w = rng.uniform(0, 50, 40), rng.uniform(0, 20, 40), rng.uniform(0.5, 4, 40)
    points = np.linspace(-5, 80, 33)
    brute = [(w * np.clip(t - starts, 0, durs)).sum() for t in points]
    assert np.allclose(_weighted_integral_at(points, starts, durs, w), brute)
