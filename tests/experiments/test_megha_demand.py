"""The Megha paper's Figure 5 (slots a workload requires over time) for every workload of the Megha specs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from schedlab.experiments.megha_demand import demand, write_demand


def test_demand_counts_each_task_from_arrival_for_its_duration():
    wl = {"generate": {"jobs": 2, "arrivals": "poisson:1", "tasks_per_job": "geom:3", "duration": "exp:2", "seed": 1, "start": 0.0}}
    from schedlab.experiments.matrix import workload_jobs

    jobs = list(workload_jobs(wl))
    series, t0 = demand(wl, None)
    assert series.sum() == pytest.approx(sum(sum(j.durations) for j in jobs))  # slot-seconds: every task's duration
    assert t0 == np.floor(jobs[0].arrival)


def test_quick_writes_a_table_and_a_plot_per_workload(tmp_path):
    path = write_demand(tmp_path, quick=True)
    doc = json.loads((tmp_path / "demand.json").read_text())
    assert path.name == "demand.md" and len(doc["workloads"]) >= 2
    for r in doc["workloads"]:
        assert r["max"] >= r["p99"] >= r["median"] >= 0
        assert (tmp_path / f"demand_{r['workload']}.png").stat().st_size > 5000
