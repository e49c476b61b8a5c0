"""The availability profile's queries against brute force, for the byte representation (at most
255 processors) and the wide one (more), after random claims, releases, trims and merges."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.grid import profile as profile_module
from schedlab.grid.profile import INF, Profile


def _free_at(times: list[float], free: list[int], t: float) -> int:
    i = max(k for k, x in enumerate(times) if x <= t)
    return free[i]


def _room(times, free, size, s, e) -> bool:
    """``size`` free on all of ``[s, e)`` (brute force over the breakpoints inside)."""
    return all(_free_at(times, free, y) >= size for y in [s, *[x for x in times if s < x < e]])


def _runs(times, free, size) -> list[tuple[float, float]]:
    """Maximal runs of time with at least ``size`` free."""
    out, start = [], None
    for k, t in enumerate(times):
        if free[k] >= size and start is None:
            start = t
        elif free[k] < size and start is not None:
            out.append((start, t))
            start = None
    if start is not None:
        out.append((start, INF))
    return out


@st.composite
def profiles(draw, capacity: int):
    """A profile after random claims at first fit, some released early, and a trim; plus its plain lists."""
    p = Profile(capacity, 0.0)
    claims = []
    for _ in range(draw(st.integers(0, 14))):
        at = float(draw(st.integers(0, 30)))
        length = float(draw(st.integers(1, 12)))
        size = draw(st.integers(1, capacity))
        s = p.earliest(at, size, length)
        p.add(s, s + length, -size)
        claims.append((s, s + length, size))
    for s, e, size in claims:
        if draw(st.booleans()):
            cut = draw(st.floats(s, e, allow_nan=False))
            p.add(cut, e, size)  # ended early at `cut`
    now = float(draw(st.integers(0, 10)))
    p.trim(now)
    if draw(st.booleans()):
        p.merge()
    return p, now


def _check(p: Profile, now: float, data) -> None:
    times, free = list(p.times), list(p.free)
    cap = p.capacity
    assert all(0 <= f <= cap for f in free) and free[-1] == cap
    size = data.draw(st.integers(1, cap))
    duration = float(data.draw(st.integers(0, 15)))
    # earliest: the first candidate (now or a breakpoint) with room for the whole duration.
    t = p.earliest(now, size, duration)
    cands = [now, *[x for x in times if x > now]]
    want = (
        now
        if duration == 0
        else next(c for c in cands if _room(times, free, size, c, c + duration))
    )
    assert t == want
    # earliest_move: the first start in [lo, hi) with room up to the claim that reaches `a`.
    a = now + data.draw(st.integers(0, 30))
    lo = max(now, a - duration)
    hi = a + data.draw(st.integers(1, 30))
    claim = hi + data.draw(st.integers(0, 10))
    duration = max(duration, 1.0)
    cands = sorted({lo, a, *[x for x in times if lo < x < hi]})
    ok = [
        c
        for c in cands
        if c < hi
        and _room(times, free, size, c, min(c + duration, claim))
        and (c >= a or _room(times, free, size, c, a))
    ]
    assert p.earliest_move(lo, a, hi, size, claim, duration) == (ok[0] if ok else None)
    if ok:
        assert times[p.found] <= ok[0] and (p.found + 1 == len(times) or ok[0] < times[p.found + 1])
    # longest_run: the longest maximal run meeting [a, b).
    b = a + data.draw(st.integers(1, 20))
    meeting = [e - s for s, e in _runs(times, free, size) if s < b and e > a]
    assert p.longest_run(a, b, size) == (max(meeting) if meeting else 0.0)
    # max_free: the most free at any instant of [a, b).
    assert p.max_free(a, b) == max(
        _free_at(times, free, y) for y in [a, *[x for x in times if a < x < b]]
    )
    assert p.free_at(a) == _free_at(times, free, a)
    # move: a claim moved earlier equals its release plus a new claim; it reports the max_free of
    # the released part and of the region it was given.
    old = p.earliest(now + data.draw(st.integers(0, 20)), size, duration)
    p.add(old, old + duration, -size)
    news = [c for c in sorted({now, *p.times}) if c < old and _room(list(p.times), list(p.free), size, c, min(c + duration, old))]
    if news:
        new = data.draw(st.sampled_from(news))
        want = Profile(cap, now)
        want.times, want.free = list(p.times), p.free[:]
        want.add(old, old + duration, size)
        want.add(new, new + duration, -size)
        ra = now + data.draw(st.integers(0, 30))
        rb = ra + data.draw(st.integers(1, 20))
        # With or without the index of the segment holding `new` (as `earliest_move` leaves it).
        at = max(k for k, x in enumerate(p.times) if x <= new) if data.draw(st.booleans()) else -1
        freed_cap, region_cap = p.move(old, new, duration, size, ra, rb, at)
        for y in sorted({*p.times, *want.times}):
            assert p.free_at(y) == want.free_at(y)
        assert freed_cap == want.max_free(max(new + duration, old), old + duration)
        assert region_cap == want.max_free(ra, rb)


@settings(max_examples=300, deadline=None)
@given(profiles(8), st.data())
def test_byte_profile_queries_match_brute_force(pn, data):
    p, now = pn
    assert isinstance(p.free, bytearray)
    _check(p, now, data)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_byte_profile_queries_match_brute_force_without_the_compiled_functions(data):
    # Where the extension is not built, the byte profile's Python scans run: keep them checked.
    saved = profile_module.compiled
    profile_module.compiled = None
    try:
        p, now = data.draw(profiles(8))
        _check(p, now, data)
    finally:
        profile_module.compiled = saved


@settings(max_examples=150, deadline=None)
@given(profiles(300), st.data())
def test_wide_profile_queries_match_brute_force(pn, data):
    p, now = pn
    assert not isinstance(p.free, bytearray)  # more than 255 processors: one int per segment
    _check(p, now, data)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(1, 10), st.integers(1, 8)), max_size=12),
    st.integers(1, 8),
    st.integers(1, 25),
)
def test_profile_earliest_is_the_first_fit(claims, size, duration):
    p = Profile(8, 0.0)
    for start, length, procs in claims:
        s = p.earliest(float(start), procs, float(length))
        p.add(s, s + length, -procs)
    assert min(p.free) >= 0
    t = p.earliest(0.0, size, float(duration))

    def fits(x: float) -> bool:
        return all(p.free_at(y) >= size for y in [x, *[b for b in p.times if x < b < x + duration]])

    assert fits(t)
    # No earlier candidate (0 or a breakpoint) fits.
    assert not any(fits(c) for c in [0.0, *p.times] if c < t)
    assert p.earliest(0.0, size, 0.0) == 0.0  # a job of no duration fits at once
    before = len(p)
    p.merge()
    assert len(p) <= before
    assert p.earliest(0.0, size, float(duration)) == t


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([64, 300]), st.data())
def test_move_over_long_regions_matches_brute_force(capacity, data):
    """`move` measures the region it is given with NumPy when the region spans many segments."""
    p = Profile(capacity, 0.0)
    for k in range(300):  # a staircase: hundreds of segments
        p.add(float(k), float(k) + data.draw(st.integers(1, 40)), -data.draw(st.integers(0, 3)))
    size = data.draw(st.integers(1, 4))
    old = p.earliest(350.0, size, 10.0)
    p.add(old, old + 10.0, -size)
    new = data.draw(st.sampled_from([x for x in [0.0, *p.times] if x < old and p.earliest(x, size, min(10.0, old - x)) == x]))
    want = Profile(capacity, 0.0)
    want.times, want.free = list(p.times), p.free[:]
    want.add(old, old + 10.0, size)
    want.add(new, new + 10.0, -size)
    a = float(data.draw(st.integers(0, 100)))
    b = a + data.draw(st.integers(1, 300))
    assert p.move(old, new, 10.0, size, a, b) == (want.max_free(max(new + 10.0, old), old + 10.0), want.max_free(a, b))
    assert all(p.free_at(y) == want.free_at(y) for y in sorted({*p.times, *want.times}))


@pytest.mark.parametrize("capacity", [255, 300])
def test_move_measures_a_long_region_up_to_its_last_segment(capacity):
    # Free processors rise segment by segment over [0, 200): the most free is the region's last.
    p = Profile(capacity, 0.0)
    for k in range(200):
        p.add(0.0, k + 1.0, -1)
    p.add(300.0, 310.0, -1)
    for b in (150.5, 199.5, 200.0):
        q = Profile(capacity, 0.0)
        q.times, q.free = list(p.times), p.free[:]
        assert q.move(300.0, 250.0, 10.0, 1, 0.0, b) == (capacity, capacity - 200 + int(b - 1e-9))


@pytest.mark.parametrize(
    ("block", "claim", "want"),
    [
        (None, 30.0, 0.0),  # room all along a window of 40 segments
        ((15.2, 15.7), 30.0, 15.7),  # blocked past the segments read one by one
        ((2.2, 2.7), 30.0, 2.7),  # blocked among them
        ((15.2, 15.7), 2.0, 0.0),  # the window needs room only up to the job's own claim
    ],
)
def test_earliest_move_over_windows_of_many_segments(block, claim, want):
    p = Profile(8, 0.0)
    for k in range(20):
        p.add(float(k), k + 0.5, -1)  # 40 segments with 7 or 8 free
    if block is not None:
        p.add(*block, -6)  # fewer than 4 free there
    assert p.earliest_move(0.0, 0.0, 30.0, 4, claim, 30.0) == want
    assert p.times[p.found] == want
