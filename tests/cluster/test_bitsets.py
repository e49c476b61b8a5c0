"""Bitset helpers and per-group constraint bitsets."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from schedlab.cluster.bitsets import (
    ConstraintBitsets,
    constraints_of,
    iter_set_bits,
    kth_set_bit,
    lowest_set_bit,
    mask_of,
    random_set_bit,
    set_bits_array,
)


def test_masks_round_trip():
    assert mask_of([0, 3, 20]) == 0b100000000000000001001
    assert constraints_of(mask_of([5, 1, 9])) == [1, 5, 9]
    assert lowest_set_bit(0b10100) == 2


@given(st.integers(1, 2**3000), st.data())
def test_kth_set_bit_matches_enumeration(x, data):
    bits = list(iter_set_bits(x))
    k = data.draw(st.integers(0, len(bits) - 1))
    assert kth_set_bit(x, k) == bits[k]
    assert list(set_bits_array(x)) == bits


def test_random_set_bit_is_uniform_over_set_bits():
    rng = random.Random(3)
    for x in (0b1010001, (1 << 9999) | (1 << 4000) | 1, ((1 << 10000) - 1) ^ (1 << 17)):
        bits = set(iter_set_bits(x))
        draws = Counter(random_set_bit(x, rng) for _ in range(3000))
        assert set(draws) <= bits
        if len(bits) <= 5:
            assert set(draws) == bits
            assert min(draws.values()) > 3000 / len(bits) * 0.8


def test_eligible_is_the_and_of_constraint_bitsets():
    masks = [0b000, 0b011, 0b111, 0b010, 0b110]
    idx = ConstraintBitsets(range(5), masks)
    for task in range(8):
        got = {idx.order[p] for p in iter_set_bits(idx.eligible(task))}
        assert got == {w for w, m in enumerate(masks) if m & task == task}


def test_min_constraints_order_puts_the_best_fit_on_the_highest_bit():
    masks = [0b111, 0b011, 0b001, 0b011, 0b000]
    idx = ConstraintBitsets(range(5), masks, min_constraints_order=True)
    assert idx.workers == [4, 2, 1, 3, 0]  # fewest constraints first, then lowest id
    cand = idx.eligible(0b001)
    assert idx.order[cand.bit_length() - 1] == 2
    cand = idx.eligible(0b010)
    assert idx.order[cand.bit_length() - 1] == 1


def test_a_mask_cache_stays_within_its_budget_and_keeps_what_keeps_coming_back():
    from schedlab.cluster.bitsets import MaskCache

    cache = MaskCache(budget=10 * 1100, pinned={0: "all"})
    for k in range(1, 4):  # three masks that come back: computed, shed, computed again
        cache.put(k, f"v{k}", 1000)
    for k in range(1, 4):
        cache.computed[k] += 5
    for k in range(100, 160):  # a long tail of one-off masks
        cache.put(k, f"v{k}", 1000)
        assert cache.used <= cache.budget
        assert cache[0] == "all" and all(cache.get(j) == f"v{j}" for j in range(1, 4))
    assert len(cache) <= 11 and cache.get(159) == "v159"


def test_bounded_eligible_caches_give_the_same_bitsets():
    import random

    from schedlab.cluster.bitsets import ConstraintBitsets

    rng = random.Random(3)
    masks = [rng.getrandbits(6) for _ in range(300)]
    big, small = ConstraintBitsets(range(300), masks), ConstraintBitsets(range(300), masks)
    small._eligible.budget = 3 * (small._entry_bytes + 100)
    for _ in range(500):
        m = rng.getrandbits(6)
        assert small.eligible(m) == big.eligible(m)
    assert small._eligible.used <= small._eligible.budget
