"""Whole-grid runs: determinism per seed, the ideal and Eq. (1), utilization, SWF workloads."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.errors import InputError
from schedlab.grid import (
    GridConfig,
    perf_gap,
    queue_time_buckets,
    simulate_grid,
    simulate_with_ideal,
)
from schedlab.grid.simulation import build_workload, config_from
from schedlab.workload.swf import read_swf

SMALL = dict(local_jobs=1500, global_jobs=1500)


def _strip(summary):
    return {k: v for k, v in summary.items() if k not in ("wall_seconds", "simulation_seconds", "workload_seconds", "jobs_per_second")}


@pytest.mark.parametrize("scheduler, dup", [("qlen", 0), ("hybrid2", 3), ("rand", 1)])
def test_same_seed_same_results(scheduler, dup):
    cfg = GridConfig(scheduler=scheduler, duplications=dup, arrivals="weak", seed=3, **SMALL)
    a, b = simulate_grid(cfg), simulate_grid(cfg)
    assert _strip(a.summary) == _strip(b.summary)
    assert np.array_equal(a.global_start, b.global_start)
    c = simulate_grid(GridConfig(scheduler=scheduler, duplications=dup, arrivals="weak", seed=4, **SMALL))
    assert not np.array_equal(a.global_start, c.global_start)


def test_schedulers_share_the_workload():
    base = GridConfig(arrivals="strong", **SMALL)
    w1 = build_workload(base)
    w2 = build_workload(GridConfig(scheduler="rand", duplications=5, delay=0.0, arrivals="strong", **SMALL))
    assert np.array_equal(w1.global_jobs.arrival, w2.global_jobs.arrival)
    assert all(np.array_equal(x.runtime, y.runtime) for x, y in zip(w1.local, w2.local, strict=True))


def test_every_job_runs_once_and_metrics_add_up():
    cfg = GridConfig(scheduler="hybrid1", duplications=2, arrivals="strong", **SMALL)
    r = simulate_grid(cfg)
    s = r.summary
    assert s["global_jobs"] == 1500 and s["local_jobs"] == 8 * 1500
    q = r.global_queue_time
    assert (q >= cfg.delay + 2 * cfg.penalty - 1e-9).all()  # delay and two invalidations, at least
    assert s["mean_queue_time"] == pytest.approx(q.mean())
    assert sum(s["queue_time_buckets"].values()) == pytest.approx(1.0)
    assert s["counters"]["invalidations"] == 2 * 1500
    assert sum(s["global_jobs_per_site"]) == 1500
    # Offered load ≈ 0.6 local + 0.075 global, a little less over the drain at the end.
    assert 0.5 < s["utilization"]["mean"] < 0.75


def test_ideal_and_perf_gap():
    cfg = GridConfig(scheduler="qlen", arrivals="strong", **SMALL)
    result, ideal = simulate_with_ideal(cfg)
    assert ideal.config.scheduler == "act_qt" and ideal.config.delay == 0 and ideal.config.duplications == 0
    gap = result.summary["perf_gap"]
    assert gap == pytest.approx(perf_gap(result.summary["mean_queue_time"], ideal.summary["mean_queue_time"]))
    assert gap == pytest.approx(100 * (result.summary["mean_queue_time"] / ideal.summary["mean_queue_time"] - 1))
    # The ideal compared with itself has no gap.
    same, _ = simulate_with_ideal(cfg.ideal(), ideal=ideal)
    assert same.summary["perf_gap"] == 0.0


def test_metric_helpers():
    b = queue_time_buckets(np.array([0.0, 9.99, 10.0, 99.9, 100.0, 500.0]))
    assert b == {"<10s": pytest.approx(2 / 6), "10-100s": pytest.approx(2 / 6), ">=100s": pytest.approx(2 / 6)}
    assert perf_gap(140.0, 100.0) == pytest.approx(40.0)


@pytest.mark.parametrize("policy", ["easy", "fcfs"])
def test_other_queue_policies_run(policy):
    r = simulate_grid(GridConfig(policy=policy, scheduler="est_qt", arrivals="weak", local_jobs=800, global_jobs=800))
    assert r.summary["global_jobs"] == 800 and r.summary["mean_queue_time"] > 0


@pytest.mark.parametrize(
    "params, where",
    [
        ({"scheduler": "best"}, "scheduler"),
        ({"duplications": 8}, "duplications"),
        ({"policy": "lifo"}, "policy"),
        ({"delay": -1.0}, "delay"),
        ({"local_load": 1.0}, "local_load"),
        ({"tie_break": "last"}, "tie_break"),
        ({"arrivals": "mmpp:10,20"}, "arrivals"),
        ({"size": "pow2:1,128"}, "size"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_configs_name_the_field(params, where):
    with pytest.raises(InputError) as e:
        build_workload(config_from({**SMALL, **params}))
    assert e.value.where == where


SWF = """; Version: 2.2
; Computer: test
1 0 5 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1
2 10 0 -1 8 -1 -1 8 100 -1 5 1 1 1 1 1 -1 -1
3 20 0 300 16 -1 -1 16 250 -1 1 1 1 1 1 1 -1 -1
4 30 0 50 128 -1 -1 128 100 -1 1 1 1 1 1 1 -1 -1
5 40 0 60 -1 -1 -1 2 -1 -1 1 1 1 1 1 1 -1 -1
"""


def test_swf_reader(tmp_path):
    p = tmp_path / "t.swf"
    p.write_text(SWF)
    jobs = read_swf(p, max_processors=64)
    assert list(jobs.arrival) == [0.0, 20.0, 40.0]
    assert list(jobs.size) == [4, 16, 2]
    # Runtime clamped to the requested time; unknown requested time -> exact estimate.
    assert list(jobs.runtime) == [100.0, 250.0, 60.0]
    assert list(jobs.estimate) == [200.0, 250.0, 60.0]
    assert jobs.skipped == {"unknown_runtime_or_size": 1, "wider_than_site": 1, "unknown_submit_time": 0}


@pytest.mark.parametrize(
    "line, problem",
    [
        ("1 0 5 100 4", "expected 18 fields, got 5"),
        ("1 0 5 abc 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1", "field 4 is not a number: 'abc'"),
        ("1 -5 5 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1", "submit time must be >= 0"),
        ("1 0 5 100 4 -1 -1 4.5 200 -1 1 1 1 1 1 1 -1 -1", "processor count must be an integer"),
    ],
)
def test_swf_bad_lines(tmp_path, line, problem):
    p = tmp_path / "bad.swf"
    p.write_text("; header\n5 0 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n" + line + "\n")
    with pytest.raises(InputError) as e:
        read_swf(p)
    assert e.value.where == f"{p}:3"
    assert problem in e.value.problem


def test_swf_decreasing_submit(tmp_path):
    p = tmp_path / "bad.swf"
    p.write_text("1 30 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n2 20 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n")
    with pytest.raises(InputError) as e:
        read_swf(p)
    assert e.value.where == f"{p}:2" and "earlier than the previous" in e.value.problem


def test_grid_on_swf_streams(tmp_path):
    rng = np.random.default_rng(0)
    lines = []
    t = 0
    for i in range(400):
        t += int(rng.integers(0, 30))
        run = int(rng.integers(1, 200))
        lines.append(f"{i + 1} {t} 0 {run} 8 -1 -1 {int(rng.integers(1, 33))} {run * 2} -1 1 1 1 1 1 1 -1 -1")
    p = tmp_path / "trace.swf"
    p.write_text("\n".join(lines) + "\n")
    cfg = GridConfig(local_swf=(str(p),), global_swf=str(p), local_jobs=50, global_jobs=300, scheduler="hybrid1", duplications=1)
    r = simulate_grid(cfg)
    assert r.summary["global_jobs"] == 300
    assert r.summary["local_jobs"] == 400  # 50 per site, dealt round-robin
    assert r.summary["workload"]["global_source"] == str(p)
