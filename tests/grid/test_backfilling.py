"""Backfilling invariants: no processor over-allocated; under conservative
backfilling no job starts later than the reservation it got when queued, and no job — backfilled
or moved — ever delays another's reservation; the pruned compression equals the textbook one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.grid.site import DONE
from tests.grid.helpers import max_allocated, run_one_site

PROCESSORS = 16


@st.composite
def job_lists(draw, max_jobs: int = 40):
    n = draw(st.integers(1, max_jobs))
    jobs = []
    t = 0.0
    for _ in range(n):
        t += draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 3.0, 7.5]))
        size = draw(st.integers(1, PROCESSORS))
        runtime = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0]))
        factor = draw(st.sampled_from([1.0, 1.0, 1.5, 2.0, 4.0]))
        jobs.append((t, size, runtime, runtime * factor))
    return jobs


@settings(max_examples=150, deadline=None)
@given(job_lists())
def test_conservative_guarantees(jobs):
    run = run_one_site(jobs, PROCESSORS)
    entries = run.entries
    assert all(e.state == DONE for e in entries)
    assert max_allocated(entries) <= PROCESSORS
    for e in entries:
        # Every job waits at least until it arrives, and starts exactly at its last reservation.
        assert e.start >= e.submit
        seq = run.reservations[e.job]
        assert e.start == seq[-1]
        # Never later than the reservation it got when queued ...
        assert e.start <= run.first_reservation[e.job]
        # ... and reservations only ever move earlier: nobody (backfilled or moved) delays anybody.
        assert all(b < a for a, b in zip(seq, seq[1:], strict=False))


@settings(max_examples=100, deadline=None)
@given(job_lists())
def test_pruned_compression_equals_textbook(jobs):
    fast = run_one_site(jobs, PROCESSORS)
    ref = run_one_site(jobs, PROCESSORS, reference=True)
    assert [e.start for e in fast.entries] == [e.start for e in ref.entries]


@pytest.mark.parametrize("policy", ["easy", "fcfs"])
@settings(max_examples=100, deadline=None)
@given(jobs=job_lists())
def test_easy_and_fcfs_never_overallocate(policy, jobs):
    run = run_one_site(jobs, PROCESSORS, policy=policy)
    assert all(e.state == DONE for e in run.entries)
    assert max_allocated(run.entries) <= PROCESSORS
    if policy == "fcfs":
        # No backfilling: jobs start in arrival order.
        starts = [e.start for e in run.entries]
        assert starts == sorted(starts)


def test_conservative_worked_example():
    # 4 processors. A (4 procs, est 10) runs; B (4, est 10) is reserved at 10; C (1, est 5) cannot
    # backfill before 10 without delaying B, so it is reserved at 20. A ends at 4 (early): B moves
    # to 4 and C to 14; B ends at 7 (early): C moves to 7.
    jobs = [(0.0, 4, 4.0, 10.0), (1.0, 4, 3.0, 10.0), (2.0, 1, 2.0, 5.0)]
    run = run_one_site(jobs, 4)
    a, b, c = run.entries
    assert run.first_reservation == {0: 0.0, 1: 10.0, 2: 20.0}
    assert (a.start, b.start, c.start) == (0.0, 4.0, 7.0)
    assert run.reservations[2] == [20.0, 14.0, 7.0]


def test_backfilling_fills_a_hole_without_delaying():
    # 4 processors: A (2, 10) runs; B (4, 10) reserved at 10; C (2, est 10) fits beside A now.
    jobs = [(0.0, 2, 10.0, 10.0), (0.0, 4, 10.0, 10.0), (0.0, 2, 10.0, 10.0)]
    run = run_one_site(jobs, 4)
    assert [e.start for e in run.entries] == [0.0, 10.0, 0.0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 8), st.integers(1, 9)), max_size=25))
def test_freed_regions_stay_sorted_disjoint_and_cover_what_was_freed(added):
    """The compression's freed regions: adding one merges those it overlaps or touches."""
    from schedlab.grid.site import _add_region

    regions: list = []
    made: list = []
    for a, length, cap in added:
        region = _add_region(regions, float(a), float(a + length), cap)
        assert region in regions and region.a <= a and region.b >= a + length
        made.append(region)
    # A region merged into another is left with no room, so that lists still holding it drop it.
    assert all(g.cap == 0 for g in made if g not in regions)
    for r1, r2 in zip(regions, regions[1:], strict=False):
        assert r1.a < r1.b < r2.a  # sorted, disjoint, not touching
    # The union is what was added (checked at half-units), and each cap is the largest merged in.
    for x in range(0, 100):
        t = x / 2
        inside = [cap for a, length, cap in added if a <= t <= a + length]
        holder = [g for g in regions if g.a <= t <= g.b]
        assert bool(inside) == bool(holder)
        if holder:
            merged = [cap for a, length, cap in added if holder[0].a <= a and a + length <= holder[0].b]
            assert holder[0].cap == max(merged)


def test_a_job_too_short_to_register_where_it_starts_holds_no_processor():
    # 1e-38 s after t = 1 is still t = 1: its claim is empty, like a zero-length job's. It used to
    # be counted as running beside the job reserved into that empty claim (17 of 16 processors).
    jobs = [(0.0, 1, 1.0, 1.0), (0.0, 16, 1.175494351e-38, 1.175494351e-38), (0.0, 1, 2.0, 2.0)]
    run = run_one_site(jobs, PROCESSORS)
    assert all(e.state == DONE for e in run.entries)
    assert max_allocated(run.entries) <= PROCESSORS
