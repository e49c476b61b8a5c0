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
