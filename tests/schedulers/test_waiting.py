"""WaitingClasses: the earliest waiting task a predicate accepts, whatever the class layout."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schedlab.schedulers.waiting import WaitingClasses

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 7)),
        st.tuples(st.just("pop"), st.integers(0, 7)),
        st.tuples(st.just("front"), st.integers(0, 7)),
    ),
    max_size=80,
)


@given(ops)
def test_pop_first_returns_the_earliest_compatible_task(seq):
    w = WaitingClasses()
    model: list[tuple[int, int]] = []  # (tid, mask) in queue order
    next_tid = 0
    for op, x in seq:
        if op == "add":
            w.add(next_tid, (x,))
            model.append((next_tid, x))
            next_tid += 1
        elif op == "front":
            w.push_front(next_tid, (x,))
            model.insert(0, (next_tid, x))
            next_tid += 1
        else:
            lacking = ~x  # a worker with machine mask x
            got = w.pop_first_mask(lacking)
            want = next((t for t, m in model if not m & lacking), -1)
            assert got == want
            if want >= 0:
                model = [(t, m) for t, m in model if t != want]
        assert len(w) == len(model)
        assert list(w) == [t for t, _ in model]


def _mask(bits: frozenset[int]) -> int:
    return sum(1 << b for b in bits)


# Task classes of the Sharma catalogue's shape: a few of 21 constraints, so several lookup groups are
# involved and many classes wait at once (the path that compares head ranks instead of scanning).
wide_ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.frozensets(st.integers(0, 20), max_size=3)),
        st.tuples(st.just("front"), st.frozensets(st.integers(0, 20), max_size=3)),
        st.tuples(st.just("pop"), st.frozensets(st.integers(0, 22), max_size=18)),
        st.tuples(st.just("remove"), st.integers(0, 200)),
    ),
    max_size=200,
)


@given(wide_ops)
def test_many_classes_over_21_constraints_pop_the_earliest_compatible_task(seq):
    w = WaitingClasses()
    model: list[tuple[int, int]] = []
    next_tid = 0
    for op, x in seq:
        if op in ("add", "front"):
            m = _mask(x)
            if op == "add":
                w.add(next_tid, (m,))
                model.append((next_tid, m))
            else:
                w.push_front(next_tid, (m,))
                model.insert(0, (next_tid, m))
            next_tid += 1
        elif op == "remove":
            if model:
                t, m = model.pop(x % len(model))
                w.remove(t, (m,))
        else:
            machine = _mask(x)
            got = w.pop_first_mask(~machine)
            want = next((t for t, m in model if not m & ~machine), -1)
            assert got == want
            if want >= 0:
                model = [(t, m) for t, m in model if t != want]
            # the cheap test agrees with the definition for every live class
            for key, s in w.slot.items():
                assert (w.compatible(~machine) >> s & 1) == (not key[0] & ~machine)
        assert len(w) == len(model)
        assert list(w) == [t for t, _ in model]
