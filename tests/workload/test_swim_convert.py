"""trace convert --format swim: SWIM MapReduce workloads to tasks, on fixture files with known derivations."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.errors import InputError
from schedlab.workload.columnar import read_columnar
from schedlab.workload.convert import convert
from schedlab.workload.converters import FORMATS
from schedlab.workload.converters.swim import tasks_of

from .test_google2011 import FIXTURES as _G

FIXTURES = _G.parent / "swim"
DEFAULTS = dict(FORMATS["swim"].options)
MB = 1 << 20


def _jobs(path):
    return [(j.arrival, j.job_id, j.durations) for j in read_columnar(path)]


@pytest.mark.parametrize("name", ["sample.tsv", "with_paths.tsv.gz"])
def test_the_fixture_jobs_become_map_and_reduce_tasks(tmp_path, name):
    report = convert("swim", [FIXTURES / name], tmp_path / "o.parquet")
    jobs = _jobs(tmp_path / "o.parquet")
    assert [(a, k) for a, k, _d in jobs] == [(0, 0), (3, 3), (5, 1), (5, 2), (7, 4)]  # by submit time, file order among equals
    d = {k: durations for _a, k, durations in jobs}
    assert d[0] == pytest.approx([13.8, 13.8, 154.6])
    assert d[1] == [1.0]
    assert d[2] == pytest.approx([13.8])
    assert len(d[3]) == 16 + 3 and d[3][-1] == pytest.approx((3072 + 100) / 3 / 10 + 1)
    assert len(d[4]) == 3 and d[4][-1] == pytest.approx(1 / MB / 10 + 1)
    assert report.counts == {"map_tasks": 2 + 1 + 1 + 16 + 2, "reduce_tasks": 1 + 0 + 0 + 3 + 1}
    assert report.jobs == 5 and report.tasks == 22 + 5


def test_options_change_the_derivation(tmp_path):
    convert("swim", [FIXTURES / "sample.tsv"], tmp_path / "o.parquet", options={"block_mb": 64, "map_mb_per_s": 32, "task_overhead_s": 0})
    d = {k: durations for _a, k, durations in _jobs(tmp_path / "o.parquet")}
    assert d[0][:4] == [2.0, 2.0, 2.0, 2.0]  # 256 MB in 64 MB blocks at 32 MB/s
    assert d[1] == [0.0]


@pytest.mark.parametrize("inp", [0, 1, 128 * MB, 128 * MB + 1, 10**12])
@pytest.mark.parametrize("shuffle", [0, 1, 1024 * MB, 5 * 10**11])
def test_every_byte_is_read_once_at_the_stated_rate(inp, shuffle):
    maps, reduces = tasks_of(inp, shuffle, 7 * MB, DEFAULTS)
    assert len(maps) == max(1, math.ceil(inp / (128 * MB))) and len(reduces) == math.ceil(shuffle / (1024 * MB))
    assert sum(m - 1 for m in maps) == pytest.approx(inp / MB / 10)
    if shuffle:
        assert sum(r - 1 for r in reduces) == pytest.approx((shuffle + 7 * MB) / MB / 10)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("job9\t1\t0\tlots\t0\t0", "input_bytes is not an integer: 'lots'"),
        ("job9\t1\t0\t5\t0", "expected 6 fields, got 5"),
        ("job9\t-1\t0\t5\t0\t0", "negative submit time -1"),
        ("job9\t1\t0\t5\t-3\t0", "negative byte counts"),
    ],
)
def test_a_malformed_line_is_named_or_skipped(tmp_path, line, problem):
    f = tmp_path / "w.tsv"
    f.write_text("job0\t0\t0\t1\t0\t0\n" + line + "\n")
    with pytest.raises(InputError, match=rf"w.tsv:2: {problem}"):
        convert("swim", [f], tmp_path / "o.parquet")
    report = convert("swim", [f], tmp_path / "o.parquet", skip_bad=True)
    assert report.jobs == 1 and sum(report.bad_rows.values()) == 1


def test_an_unknown_submit_time_comes_from_the_gap_or_the_job_is_left_out_and_counted(tmp_path):
    f = tmp_path / "w.tsv"
    f.write_text("job0\t10\t0\t1\t0\t0\njob1\t\t4\t1\t0\t0\njob2\t\t\t1\t0\t0\njob3\t20\t6\t1\t0\t0\n")
    report = convert("swim", [f], tmp_path / "o.parquet")
    assert [(a, k) for a, k, _d in _jobs(tmp_path / "o.parquet")] == [(10, 0), (14, 1), (20, 2)]  # job1 at 10 + 4; job2 left out
    assert report.counts["submit_times_from_gap"] == 1
    assert report.tasks_dropped == {"jobs with an unknown submit time (no submit time, no gap)": 1}
    f.write_text("job0\t\t\t1\t0\t0\njob1\t\t4\t1\t0\t0\njob2\t5\t0\t1\t0\t0\n")  # job1's previous submit is unknown
    with pytest.raises(InputError, match=r"w.tsv:2: the submit time is missing"):
        convert("swim", [f], tmp_path / "o.parquet")


def test_bad_options_and_inputs(tmp_path):
    with pytest.raises(InputError, match="--format-option block_mb: must be > 0"):
        convert("swim", [FIXTURES / "sample.tsv"], tmp_path / "o.parquet", options={"block_mb": 0})
    with pytest.raises(InputError, match="--format-option blocks: not an option of the swim format"):
        convert("swim", [FIXTURES / "sample.tsv"], tmp_path / "o.parquet", options={"blocks": 1})
    with pytest.raises(InputError, match="a swim trace is one file"):
        convert("swim", [FIXTURES / "sample.tsv", FIXTURES / "with_paths.tsv.gz"], tmp_path / "o.parquet")
    with pytest.raises(InputError, match="a swim trace is one file"):
        convert("swim", [FIXTURES], tmp_path / "o.parquet")
    empty = tmp_path / "e.tsv"
    empty.write_text("\n")
    with pytest.raises(InputError, match="no jobs in the input"):
        convert("swim", [empty], tmp_path / "o.parquet")
    assert not (tmp_path / "o.parquet").exists()


def test_cli(tmp_path):
    out = tmp_path / "s.parquet"
    res = CliRunner().invoke(app, ["trace", "convert", "--format", "swim", str(FIXTURES / "sample.tsv"), "--out", str(out), "--format-option", "reduce_mb=512", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout[: res.stdout.rindex("}") + 1])
    assert report["counts"]["reduce_tasks"] == 2 + 6 + 1
