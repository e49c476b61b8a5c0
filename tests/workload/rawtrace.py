"""What the raw-trace converter tests share: a fixture trace converted once, its jobs by ID or as comparable
fields, the same conversion with tiny spill runs, and a converted trace simulated with its own requests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import schedlab
from schedlab.workload.columnar import ColumnarTraceWriter, read_columnar
from schedlab.workload.convert import ConvertReport, convert
from schedlab.workload.converters import RawJob, gather_tables


def convert_fixture(fmt: str, folder: Path, tmp_path_factory: Any) -> tuple[Path, ConvertReport, int]:
    """``folder`` converted: (output, report, input rows the progress callback was told of)."""
    out = tmp_path_factory.mktemp(fmt) / f"{fmt}.parquet"
    seen: list[int] = []
    report = convert(fmt, [folder], out, progress=seen.append)
    return out, report, sum(seen)


def by_id(path: Path) -> dict:
    return {j.job_id: j for j in read_columnar(path)}


def job_fields(path: Path) -> list[tuple]:
    """Every job's every field, in file order."""
    return [(j.job_id, j.arrival, j.durations, j.mean_duration, j.task_ids, j.requests, j.constraints, j.user, j.priority) for j in read_columnar(path)]


def spilled(converter: Callable[..., Iterator[Any]], fmt: str, folder: Path, tmp_path: Path, **sizes: int) -> Path:
    """``folder`` converted by ``converter`` with the small ``sizes`` (spill runs, blocks, chunks); checks that the
    spilled runs are gone afterwards."""
    spill = tmp_path / "spill"
    spill.mkdir()
    small = tmp_path / "small.parquet"
    ColumnarTraceWriter(small, ("cores", "memory_mb")).write_tables(converter(RawJob(gather_tables(fmt, [folder]), spill_dir=spill), **sizes))
    assert not list(spill.iterdir())
    return small


def simulated_counters(out: Path, report: ConvertReport) -> dict:
    """A Megha run of the converted trace in multi-resource mode: every task of the trace ran."""
    r = schedlab.simulate("megha", str(out), workers=20, resource_mode="multi", seed=1, params={"gms": 2, "lms": 2})
    c: dict = r.summary["counters"]
    assert c["trace_tasks"] == report.tasks and c["tasks_unfinished"] == 0
    return c
