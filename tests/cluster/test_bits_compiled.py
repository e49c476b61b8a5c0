"""The compiled bit selection (schedlab/cluster/_bits.c) gives its Python twins' answers, draw for draw.

``kth_set_bit`` must name the same bit and ``random_set_bit`` the same bit after the same number
of calls to the stream (the next draw is compared too), on ints of every size around the digit
and word boundaries, dense and sparse — so a run chooses the same workers either way; whole Megha
runs are compared too. Where the extension was not built (no C compiler at install) these tests
skip, except when ``SCHEDLAB_REQUIRE_COMPILED=1`` (CI sets it): then a missing extension is a failure.
"""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab
import schedlab.cluster.bitsets as bitsets

if bitsets.compiled is None:
    if os.environ.get("SCHEDLAB_REQUIRE_COMPILED") == "1":
        raise RuntimeError("schedlab.cluster._bits was not built (SCHEDLAB_REQUIRE_COMPILED=1): is a C compiler installed?")
    pytest.skip("schedlab.cluster._bits was not built (no C compiler at install): the Python twins run", allow_module_level=True)

C = bitsets.compiled


@st.composite
def bitsets_(draw):
    """A positive int: a few runs of set bits over up to 70,000 positions, dense or sparse."""
    width = draw(st.sampled_from([1, 2, 29, 30, 31, 32, 59, 60, 61, 63, 64, 65, 500, 4000, 70000]))
    density = draw(st.sampled_from([0.001, 0.05, 0.124, 0.126, 0.5, 1.0]))
    seed = draw(st.integers(0, 2**32))
    r = random.Random(seed)
    x = sum(1 << i for i in range(width) if r.random() < density)
    return x | (1 << (width - 1)) | (1 << draw(st.integers(0, width - 1)))


@settings(max_examples=300, deadline=None)
@given(bitsets_(), st.data())
def test_kth_set_bit_is_the_python_one(x: int, data) -> None:
    k = data.draw(st.integers(0, x.bit_count() - 1))
    assert C.kth_set_bit(x, k) == bitsets.kth_set_bit_py(x, k)


@settings(max_examples=300, deadline=None)
@given(bitsets_(), st.integers(0, 2**32))
def test_random_set_bit_makes_the_same_draws(x: int, seed: int) -> None:
    a, b = random.Random(seed), random.Random(seed)
    for _ in range(5):
        assert C.random_set_bit(x, a.random) == bitsets.random_set_bit_py(x, b)
        assert a.getstate() == b.getstate()  # as many draws on both sides


def test_the_rank_is_checked() -> None:
    for x, k in ((0, 0), (0b101, 2), (0b101, -1)):
        with pytest.raises(ValueError, match="set bits"):
            C.kth_set_bit(x, k)


@pytest.mark.parametrize("bad", [-1, -(1 << 100)])
def test_negative_ints_are_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        C.kth_set_bit(bad, 0)
    with pytest.raises(ValueError, match="non-negative"):
        C.random_set_bit(bad, random.random)


def test_an_empty_set_and_wrong_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="no set bit"):
        C.random_set_bit(0, random.random)
    with pytest.raises(TypeError):
        C.kth_set_bit(1.0, 0)
    with pytest.raises(TypeError):
        C.random_set_bit(1, 2, 3)
    with pytest.raises(TypeError):
        C.random_set_bit(5, "not callable")
    with pytest.raises(TypeError):
        C.random_set_bit(5, lambda: "not a float")


def test_a_megha_run_is_the_same_with_the_python_twins(monkeypatch) -> None:
    kw = dict(workers=2000, seed=3, params={"gms": 2, "lms": 2})
    with_c = schedlab.simulate("megha", "syn_250", **kw).summary
    monkeypatch.setattr(bitsets, "compiled", None)
    without = schedlab.simulate("megha", "syn_250", **kw).summary
    for s in (with_c, without):
        s.pop("wall_seconds")
    assert with_c == without
