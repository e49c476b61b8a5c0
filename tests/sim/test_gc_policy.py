"""quiet_gc: the collector's settings during a run, and what it leaves behind."""

from __future__ import annotations

import gc

import pytest

from schedlab.sim.gc_policy import RUN_THRESHOLDS, quiet_gc


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_thresholds_are_raised_inside_and_restored_after_even_on_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), quiet_gc():
        assert gc.get_threshold() == RUN_THRESHOLDS
        assert gc.isenabled()
        raise RuntimeError("a failed run")
    assert gc.get_threshold() == before


def test_cyclic_garbage_made_during_the_run_is_still_collected() -> None:
    with quiet_gc():
        for _ in range(3 * RUN_THRESHOLDS[0]):
            _Node()
        alive = sum(isinstance(o, _Node) for o in gc.get_objects())
    assert alive <= RUN_THRESHOLDS[0]  # collected by the collector's own passes, not all kept to the end


def test_a_previous_runs_garbage_is_not_kept_through_the_next_run() -> None:
    garbage = [_Node() for _ in range(1000)]
    del garbage
    with quiet_gc():
        gc.collect()  # a full pass inside a run reaches what earlier runs left (nothing is frozen away)
        assert not any(isinstance(o, _Node) for o in gc.get_objects())
