"""The compiled compression pass (schedlab/grid/_compress.c) gives the Python pass's reservations bit for bit.

Both passes run on the same workloads and every reservation made — each job's whole history of
moves, in order — is compared, on one site (random job lists with ties and with continuous times)
and on whole grids with duplication (cancelled and moved copies, herded queues). Where the
extension was not built (no C compiler at install) these tests skip, except when
``SCHEDLAB_REQUIRE_COMPILED=1`` (CI sets it): then a missing extension is a failure.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab.grid.profile as profile_module
import schedlab.grid.site as site_module
from schedlab.grid.simulation import GridConfig, build_workload, simulate_grid
from tests.grid.helpers import run_one_site

if profile_module.compiled is None:
    if os.environ.get("SCHEDLAB_REQUIRE_COMPILED") == "1":
        raise RuntimeError("schedlab.grid._compress was not built (SCHEDLAB_REQUIRE_COMPILED=1): is a C compiler installed?")
    pytest.skip("schedlab.grid._compress was not built (no C compiler at install): the Python pass runs", allow_module_level=True)

PROCESSORS = 16


@st.composite
def tied_jobs(draw, max_jobs: int = 60):
    """Times on a coarse grid, so that many starts, ends and reservations coincide."""
    n = draw(st.integers(1, max_jobs))
    jobs, t = [], 0.0
    for _ in range(n):
        t += draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 3.0]))
        size = draw(st.integers(1, PROCESSORS))
        runtime = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0]))
        jobs.append((t, size, runtime, runtime * draw(st.sampled_from([1.0, 1.5, 2.0, 4.0]))))
    return jobs


@st.composite
def continuous_jobs(draw, max_jobs: int = 60):
    """Arbitrary float times, so that the rounding slack of the prunes comes into play."""
    n = draw(st.integers(1, max_jobs))
    jobs, t = [], 0.0
    for _ in range(n):
        t += draw(st.floats(0.0, 4.0, allow_nan=False))
        size = draw(st.integers(1, PROCESSORS))
        runtime = draw(st.floats(0.0, 20.0, allow_nan=False))
        jobs.append((t, size, runtime, runtime * draw(st.floats(1.0, 5.0, allow_nan=False))))
    return jobs


def _same_schedule(jobs) -> None:
    c = run_one_site(jobs, PROCESSORS, compiled=True)
    p = run_one_site(jobs, PROCESSORS, compiled=False)
    assert c.reservations == p.reservations
    assert [e.start for e in c.entries] == [e.start for e in p.entries]
    assert c.site.moves == p.site.moves  # type: ignore[attr-defined]
    assert c.site.profile.times == p.site.profile.times  # type: ignore[attr-defined]
    assert bytes(c.site.profile.free) == bytes(p.site.profile.free)  # type: ignore[attr-defined]


@settings(max_examples=200, deadline=None)
@given(tied_jobs())
def test_compiled_pass_equals_python_pass_with_ties(jobs):
    _same_schedule(jobs)


@settings(max_examples=200, deadline=None)
@given(continuous_jobs())
def test_compiled_pass_equals_python_pass_on_float_times(jobs):
    _same_schedule(jobs)


@pytest.mark.parametrize(
    "scheduler,arrivals,duplications",
    [("rand", "strong", 7), ("hybrid2", "strong", 2), ("qlen", "strong", 0), ("util", "weak", 3)],
)
def test_compiled_pass_gives_the_same_grid_run(monkeypatch, scheduler, arrivals, duplications):
    cfg = GridConfig(local_jobs=600, global_jobs=600, seed=3, scheduler=scheduler, arrivals=arrivals, duplications=duplications)
    workload = build_workload(cfg)
    compiled = simulate_grid(cfg, workload)
    monkeypatch.setattr(profile_module, "compiled", None)
    python = simulate_grid(cfg, workload)
    timing = ("simulation_seconds", "jobs_per_second", "workload_seconds", "wall_seconds")
    assert {k: v for k, v in compiled.summary.items() if k not in timing} == {
        k: v for k, v in python.summary.items() if k not in timing
    }
    assert compiled.summary["counters"]["reservation_moves"] > 0
    np.testing.assert_array_equal(compiled.global_start, python.global_start)
    np.testing.assert_array_equal(compiled.global_site, python.global_site)
    for a, b in zip(compiled.local_queue_times, python.local_queue_times, strict=True):
        np.testing.assert_array_equal(a, b)


def test_compiled_pass_prunes_with_the_python_pass_slack():
    assert profile_module.compiled.SLACK == site_module._SLACK


def test_compiled_pass_refuses_malformed_arguments():
    compress = profile_module.compiled.compress
    with pytest.raises(TypeError):
        compress([], [0.0], b"\x10", 0.0, 0.0, 1.0, None)  # bytes, not a bytearray
    with pytest.raises(ValueError):
        compress([], [0.0, 1.0], bytearray(b"\x10"), 0.0, 0.0, 1.0, None)
    with pytest.raises(TypeError):
        compress([(1.0, 1)], [0.0], bytearray(b"\x10"), 0.0, 0.0, 1.0, None)
    with pytest.raises(TypeError):
        compress([], [0.0], bytearray(b"\x10"), 0.0, 0.0, 1.0)


def test_compiled_profile_functions_refuse_what_the_profile_cannot_hold():
    c = profile_module.compiled
    with pytest.raises(ValueError, match="would leave"):  # more free than a byte holds: refused, nothing changed
        times, free = [0.0], bytearray(b"\xf0")
        c.add(times, free, 1.0, 2.0, 100)
    # only the breakpoints were added (each a copy of its segment): the same step function
    assert times == [0.0, 1.0, 2.0] and free == bytearray(b"\xf0\xf0\xf0")
    with pytest.raises(ValueError, match="no room"):
        c.earliest([0.0], bytearray(b"\x04"), 0.0, 8, 1.0)
    with pytest.raises(ValueError, match="before the profile"):
        c.earliest([5.0], bytearray(b"\x04"), 1.0, 1, 1.0)
    with pytest.raises(TypeError):
        c.merge([0.0], b"\x04")
