"""Shared test helpers: tiny traces and data centers built by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.workload.trace import TraceJob


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def tiny_trace(tmp_path: Path) -> Path:
    return write_lines(
        tmp_path / "tiny.tr",
        [
            "0 2 1.5 1 2",
            "0.5 1 3 3",
            "1 3 1 1 1 1",
        ],
    )


def jobs(*specs: tuple[float, list[float]]) -> list[TraceJob]:
    """TraceJobs from (arrival, durations) pairs."""
    return [TraceJob(a, sum(d) / len(d), list(d), i + 1) for i, (a, d) in enumerate(specs)]
