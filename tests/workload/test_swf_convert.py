"""SWF (Parallel Workloads Archive) traces converted: one task per processor, the reader's skips reported."""

from __future__ import annotations

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.workload.columnar import read_columnar, read_metadata
from schedlab.workload.convert import convert
from schedlab.workload.trace import read_raw

# job, submit, wait, run, alloc, cpu, mem, req procs, req time, req mem, status, user, group, app, queue, partition, prev, think
SWF = """; Version: 2.2
; Computer: test
1 100 5 30 4 -1 -1 4 60 -1 1 3 1 -1 1 -1 -1 -1
2 160 0 -1 2 -1 -1 2 60 -1 0 3 1 -1 1 -1 -1 -1
3 170 2 90 -1 -1 -1 2 60 -1 1 4 1 -1 1 -1 -1 -1
4 200 1 10 1 -1 -1 -1 -1 -1 1 4 1 -1 1 -1 -1 -1
"""


def test_each_job_becomes_one_task_per_processor(tmp_path):
    src = tmp_path / "log.swf"
    src.write_text(SWF)
    out = tmp_path / "t.parquet"
    report = convert("swf", [src], out)
    jobs = list(read_columnar(out))
    assert [(j.arrival, j.durations) for j in jobs] == [(0.0, [30.0] * 4), (70.0, [60.0] * 2), (100.0, [10.0])]  # run 90 > 60 requested: cut
    assert report.tasks_dropped == {"jobs with an unknown or non-positive runtime or size": 1}
    assert (report.jobs, report.tasks) == (3, 7) and read_metadata(out)["source"] == "swf"
    convert("swf", [src], tmp_path / "t.tr")
    assert [j.durations for j in read_raw(tmp_path / "t.tr")] == [j.durations for j in jobs]


def test_an_unknown_submit_time_leaves_the_job_out_and_counts_it(tmp_path, capsys):
    src = tmp_path / "log.swf"
    lines = SWF.splitlines()
    lines.insert(4, "9 -1 0 30 1 -1 -1 1 60 -1 1 3 1 -1 1 -1 -1 -1")  # unknown submit time, between jobs 2 and 3
    src.write_text("\n".join(lines) + "\n")
    report = convert("swf", [src], tmp_path / "t.parquet")
    assert [j.arrival for j in read_columnar(tmp_path / "t.parquet")] == [0.0, 70.0, 100.0]
    assert report.tasks_dropped["jobs with an unknown (-1) submit time"] == 1
    src.write_text(SWF.replace("4 200 1", "4 -5 1"))
    assert main(["trace", "convert", "--format", "swf", str(src), "--out", str(tmp_path / "b.parquet")]) == 2
    assert f"{src}:6: submit time must be >= 0, got -5" in capsys.readouterr().err


def test_bad_swf_inputs(tmp_path, capsys):
    src = tmp_path / "log.swf"
    src.write_text(SWF)
    with pytest.raises(InputError, match="an SWF trace is one file"):
        convert("swf", [src, src], tmp_path / "t.parquet")
    bad = tmp_path / "bad.swf"
    bad.write_text("1 100 5 30 4\n")
    assert main(["trace", "convert", "--format", "swf", str(bad), "--out", str(tmp_path / "b.parquet")]) == 2
    assert f"{bad}:1: expected 18 fields, got 5" in capsys.readouterr().err
    assert not (tmp_path / "b.parquet").exists()
