"""Helpers for the experiments tests: tiny specs that run in a fraction of a second."""

from __future__ import annotations

from pathlib import Path

TINY = """\
name: tiny
workloads:
  - name: gen
    generate: {jobs: 12, arrivals: "poisson:0.5", tasks_per_job: "geom:4", duration: "exp:2", seed: 3}
data_centers:
  - workers: 40
schedulers:
  - name: megha
    label: "megha_{worker_choice}"
    params: {gms: 2, lms: 2}
    grid: {worker_choice: [random, min-constraints]}
seeds: [0]
"""


def write_spec(tmp_path: Path, text: str = TINY, name: str = "exp.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def comparable(summary: dict) -> dict:
    """A summary without what legitimately differs between two executions (wall time)."""
    return {k: v for k, v in summary.items() if k != "wall_seconds"}

