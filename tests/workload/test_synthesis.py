"""Workload synthesis: task constraints, arrival processes, distributions, generators, load statistics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.errors import InputError
from schedlab.workload import (
    ArrivalSpec,
    Dist,
    RequestModel,
    TaskConstraintSampler,
    constant_rate_jobs,
    fit_mmpp2,
    generate_jobs,
    index_of_dispersion,
    per_constraint_load,
    per_second_load,
)
from schedlab.workload.arrivals import scv_of
from schedlab.workload.constraints import SharmaTables, reference_sample
from schedlab.workload.stats import WorkloadArrays, load_summary
from schedlab.workload.trace import read_trace


# -- task constraints ----------------------------------------------------------------------------
@given(st.lists(st.integers(0, 700), min_size=1, max_size=8), st.integers(0, 2**32))
@settings(max_examples=20, deadline=None)
def test_vectorised_sampler_equals_the_authors_random_calls(chunks, seed):
    s = TaskConstraintSampler(seed)
    got = []
    for n in chunks:
        got += s.sample(n)
    assert got == reference_sample(len(got), seed)


def test_sampled_constraint_frequencies_match_the_tables():
    masks = np.array(TaskConstraintSampler(42).sample(200_000))
    freq = np.array([((masks >> c) & 1).mean() * 100 for c in range(21)])
    expected = SharmaTables().marginal_percent()
    assert np.allclose(freq, expected, atol=0.3), (freq - expected).round(2)


def test_syn_250_on_the_reference_data_center_has_16_unsatisfiable_tasks():
    """docs/authors-simulators.md#task-constraints: with the papers' seed-42 draws, syn_250 has exactly 16 such tasks."""
    from schedlab.cluster import ConstraintBitsets, load_config

    cl = load_config("reference")
    idx = ConstraintBitsets(range(cl.n), cl.machine_masks)
    masks = TaskConstraintSampler(42).sample(500_000)
    assert sum(1 for m in masks if idx.eligible(m) == 0) == 16


# -- arrival processes ---------------------------------------------------------------------------
@pytest.mark.parametrize("idc", [55.0, 384.0])
def test_mmpp_fit_hits_the_targets_exactly(idc):
    m = fit_mmpp2(10.0, 20.0, idc)
    assert m.mean == pytest.approx(10.0)
    assert m.scv == pytest.approx(20.0, rel=1e-6)
    assert m.idc == pytest.approx(idc, rel=1e-9)


def test_mmpp_samples_have_the_target_statistics():
    m = fit_mmpp2(10.0, 20.0, 55.0)
    x = m.sample(2_000_000, np.random.default_rng(5))
    assert x.mean() == pytest.approx(10.0, rel=0.05)
    assert scv_of(x) == pytest.approx(20.0, rel=0.05)
    assert index_of_dispersion(x, windows=400) == pytest.approx(55.0, rel=0.2)


def test_mmpp_refuses_impossible_targets():
    for args in ((10, 0.5, 30), (10, 20, 1.0), (-1, 20, 30)):
        with pytest.raises(InputError):
            fit_mmpp2(*args)


def test_arrival_specs():
    rng = np.random.default_rng(0)
    assert ArrivalSpec.parse("constant:2").interarrivals(3, rng).tolist() == [2, 2, 2]
    assert ArrivalSpec.parse("poisson:5").interarrivals(100000, rng).mean() == pytest.approx(5, rel=0.02)
    assert ArrivalSpec.parse("mmpp:10,20,55").mmpp.idc == pytest.approx(55)
    for bad in ("weird:1", "poisson", "poisson:-1", "mmpp:1,2", "poisson:x"):
        with pytest.raises(InputError):
            ArrivalSpec.parse(bad)


# -- distributions and generators ----------------------------------------------------------------
def test_distribution_specs_and_their_errors():
    rng = np.random.default_rng(1)
    assert Dist.parse("3", "d").sample(2, rng).tolist() == [3.0, 3.0]
    x = Dist.parse("uniform:2,4", "n", integer=True).sample(1000, rng)
    assert x.min() >= 2 and x.max() <= 4 and x.dtype == np.int64
    assert Dist.parse("exp:2", "d").sample(200000, rng).mean() == pytest.approx(2, rel=0.02)
    assert Dist.parse("geom:5", "n", integer=True).sample(100000, rng).mean() == pytest.approx(5, rel=0.03)
    # heavy-tailed task counts: at least one task, the continuous distribution's mean within rounding
    counts = Dist.parse("pareto:1.5,10", "n", integer=True).sample(400000, rng)
    assert counts.dtype == np.int64 and counts.min() == 10 and counts.max() > 10000
    assert np.median(counts) == pytest.approx(10 * 2 ** (1 / 1.5), abs=1)  # median of Pareto(1.5, 10), floored
    logn = Dist.parse("lognormal:3,1", "n", integer=True).sample(200000, rng)
    assert logn.min() >= 1 and np.median(logn) == pytest.approx(np.exp(3), abs=1)
    for spec, integer in (("exp:0", False), ("const:0", True), ("uniform:3,1", False), ("foo:1", False), ("exp:1,2", False), ("exp:a", False),
                          ("const:1.5", True), ("geom:1", False), ("pareto:1,10", True), ("pareto:1.5,0.5", True), ("lognormal:1,-1", True)):
        with pytest.raises(InputError):
            Dist.parse(spec, "field", integer=integer)


def test_constant_rate_jobs_reproduce_syn_250():
    gen = list(constant_rate_jobs(2000, 250))
    real = list(read_trace("syn_250"))
    assert [(j.arrival, j.durations) for j in gen] == [(j.arrival, j.durations) for j in real]


def test_generated_jobs_are_deterministic_and_ordered():
    a = list(generate_jobs(50, "poisson:2", "geom:3", "exp:1", np.random.default_rng(4)))
    b = list(generate_jobs(50, "poisson:2", "geom:3", "exp:1", np.random.default_rng(4)))
    assert [(j.arrival, j.durations) for j in a] == [(j.arrival, j.durations) for j in b]
    assert all(x.arrival <= y.arrival for x, y in zip(a, a[1:], strict=False))
    assert all(j.num_tasks >= 1 for j in a)


def test_job_duration_spread_makes_a_job_s_tasks_alike_and_whole_jobs_long():
    rng = np.random.default_rng(3)
    jobs = list(generate_jobs(400, "poisson:1", "const:20", "lognormal:3,2", rng, job_duration_spread=0.2))
    for j in jobs:  # every task within ±20 % of its job's one draw
        lo, hi = min(j.durations), max(j.durations)
        assert lo > 0 and hi <= lo * 1.2 / 0.8 + 1e-9
    per_task = list(generate_jobs(400, "poisson:1", "const:20", "lognormal:3,2", np.random.default_rng(3)))
    # the heavy tail moves from tasks to jobs: the job means spread far wider than with per-task draws
    assert np.std(np.log([j.mean_duration for j in jobs])) > 2 * np.std(np.log([j.mean_duration for j in per_task]))
    # the default (per task) draws exactly what it drew before the option existed
    again = list(generate_jobs(400, "poisson:1", "const:20", "lognormal:3,2", np.random.default_rng(3), job_duration_spread=None))
    assert [j.durations for j in again] == [j.durations for j in per_task]
    with pytest.raises(InputError, match="job_duration_spread"):
        list(generate_jobs(5, "poisson:1", "const:2", "exp:1", rng, job_duration_spread=1.0))


def test_request_models():
    rng = np.random.default_rng(0)
    assert RequestModel.parse("fixed:1,256", 2).sample(2, rng).tolist() == [[1, 256], [1, 256]]
    u = RequestModel.parse("uniform:1-4,128-1024", 2).sample(500, rng)
    assert u[:, 0].min() >= 1 and u[:, 0].max() <= 4
    c = RequestModel.parse("choice:1x256@3,2x512@1", 2).sample(4000, rng)
    assert (c[:, 0] == 1).mean() == pytest.approx(0.75, abs=0.03)
    for bad in ("fixed:1", "bogus:1,2", "uniform:4-1,1-2", "choice:1x2@-1", "fixed:a,b"):
        with pytest.raises(InputError):
            RequestModel.parse(bad, 2)


# -- statistics ----------------------------------------------------------------------------------
def test_per_second_load_is_the_time_average_over_each_second():
    # two tasks: [0, 1.5) and [0.5, 1.0) on 2 workers
    load = per_second_load(np.array([0.0, 0.5]), np.array([1.5, 0.5]), 2.0)
    assert load.tolist() == pytest.approx([(1.0 + 0.5) / 2, 0.5 / 2])


def test_table_1_loads_of_the_bundled_traces():
    """Constraint-aware paper, Table 1 (median, mean, p99)."""
    for name, workers, expected in (("syn_250", 10000, (0.025, 0.025, 0.025)), ("syn_500", 10000, (0.05, 0.05, 0.05))):
        w = WorkloadArrays.from_jobs(read_trace(name))
        got = load_summary(per_second_load(w.task_start, w.task_duration, workers))
        assert (got["median"], got["mean"], got["p99"]) == pytest.approx(expected)
    w = WorkloadArrays.from_jobs(read_trace("google"))
    got = load_summary(per_second_load(w.task_start, w.task_duration, 20000))
    # paper: 0.0032, 0.05, 0.77
    assert got["median"] == pytest.approx(0.0032, abs=0.0005)
    assert got["mean"] == pytest.approx(0.05, abs=0.01)
    assert got["p99"] == pytest.approx(0.77, abs=0.03)


def test_per_constraint_load_counts_only_tasks_needing_the_constraint():
    starts = np.array([0.0, 0.0, 0.0])
    durs = np.array([1.0, 1.0, 1.0])
    masks = np.array([0b1, 0b11, 0b0])
    rows = per_constraint_load(starts, durs, masks, [2.0, 4.0] + [1.0] * 19)
    assert rows[0]["tasks"] == 2 and rows[0]["mean"] == pytest.approx(1.0)
    assert rows[1]["tasks"] == 1 and rows[1]["mean"] == pytest.approx(0.25)
    assert rows[2]["tasks"] == 0 and rows[2]["mean"] == 0.0
