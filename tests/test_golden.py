"""Golden summaries: short reference runs whose every figure must survive a reorganisation of the code.

``benchmarks/golden.py`` holds the runs and ``benchmarks/golden.json`` their
recorded results (summary JSON with event counts, and hashes of the task, job
and utilization tables); this is its fast subset, checked in every test run.
A deliberate change of results re-records them (``python benchmarks/golden.py
--write``) and says why in its commit.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
_spec = importlib.util.spec_from_file_location("golden", BENCH / "golden.py")
assert _spec is not None and _spec.loader is not None
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)
RECORDED = json.loads((BENCH / "golden.json").read_text())


@pytest.mark.parametrize("name", golden.FAST)
def test_fast_golden_run_is_unchanged(name):
    assert name in RECORDED, f"no recorded result for {name}: python benchmarks/golden.py --write --only {name}"
    assert golden.diff(RECORDED[name], golden.run(name)) == []
