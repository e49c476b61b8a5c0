"""Megha's compiled slot-mode loops (schedlab/schedulers/megha/_slots.c) do what their Python twins do.

Each function is given the same random state twice — partitions of up to 200 workers, some
bits already taken, cache entries not yet computed, random or min-constraints choice — and must
return the same, leave every list, dict and stream in the same state, and raise the same
exception on malformed input; whole Megha runs must give the same summary either way. Where the
extension was not built these tests skip, except when ``SCHEDLAB_REQUIRE_COMPILED=1`` (CI sets it).
"""

from __future__ import annotations

import copy
import itertools
import os
import random
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlab
import schedlab.cluster.bitsets as bitsets
from schedlab.schedulers.megha import gm as gm_module
from schedlab.schedulers.megha import lm as lm_module
from schedlab.schedulers.megha import slots
from schedlab.workload.trace import read_trace

if slots.compiled is None:
    if os.environ.get("SCHEDLAB_REQUIRE_COMPILED") == "1":
        raise RuntimeError("schedlab.schedulers.megha._slots was not built (SCHEDLAB_REQUIRE_COMPILED=1): is a C compiler installed?")
    pytest.skip("schedlab.schedulers.megha._slots was not built (no C compiler at install): the Python twins run", allow_module_level=True)

C = slots.compiled


def bits(r: random.Random, width: int, density: float) -> int:
    return sum(1 << i for i in range(width) if r.random() < density)


def view(seed: int, parts: int, density: float) -> dict:
    """A GM's view of ``parts`` partitions: sizes, free and reserved bits, an eligibility cache entry."""
    r = random.Random(seed)
    sizes = [r.choice([1, 29, 30, 31, 60, 61, 200]) for _ in range(parts)]
    avail = [bits(r, n, density) for n in sizes]
    reserved = [bits(r, n, 0.3) & ~a for n, a in zip(sizes, avail, strict=True)]
    eligible = [bits(r, n, r.choice([0.0, 0.2, 1.0])) for n in sizes]
    el: list[int | None] = [e if r.random() < 0.5 else None for e in eligible]
    order = list(range(parts))
    r.shuffle(order)
    cut = r.randrange(parts + 1)
    groups = ((0, order[:cut]), (1, order[cut:]))
    rr = [r.randrange(max(1, cut)), r.randrange(max(1, parts - cut))]
    return {"avail": avail, "reserved": reserved, "el": el, "eligible": eligible, "groups": groups, "rr": rr}


def take_all(take, state: dict, mask: int, draw, times: int) -> list:
    """``times`` matches in a row with ``take`` (gm_take or its twin) on ``state``; what each returned."""
    calls: list[tuple[int, int]] = []

    def eligible_at(entry, m, p):
        calls.append((m, p))
        entry[p] = state["eligible"][p]
        return entry[p]

    out = [take(mask, state["el"], eligible_at, state["groups"], state["rr"], state["avail"], state["reserved"], draw) for _ in range(times)]
    return [out, calls]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 12), st.sampled_from([0.0, 0.05, 0.5, 1.0]), st.booleans())
def test_gm_take_is_the_python_one(seed: int, parts: int, density: float, random_choice: bool) -> None:
    a, b = view(seed, parts, density), view(seed, parts, density)
    ra, rb = random.Random(seed), random.Random(seed)
    got = take_all(C.gm_take, a, 0b101, ra.random if random_choice else None, 8)
    want = take_all(slots.gm_take_py, b, 0b101, rb.random if random_choice else None, 8)
    assert got == want
    assert a == b
    assert ra.getstate() == rb.getstate()  # as many draws on both sides


def test_gm_take_walks_internal_partitions_first_and_round_robin() -> None:
    # partitions 0 and 1 internal, 2 external; every worker free and eligible
    avail, reserved, rr = [0b11, 0b1, 0b1], [0, 0, 0], [0, 0]
    el = [0b11, 0b1, 0b1]
    groups = ((0, [0, 1]), (1, [2]))
    seen = [C.gm_take(0, el, None, groups, rr, avail, reserved, None) for _ in range(5)]
    # min-constraints: the highest bit; round-robin 0, 1, 0 then the external partition, then nothing
    assert seen == [(0, 1), (1, 0), (0, 0), (2, 0), None]
    assert avail == [0, 0, 0] and reserved == [0b11, 0b1, 0b1] and rr == [1, 0]  # the next of a group of one is itself


def lm_state(seed: int) -> dict:
    r = random.Random(seed)
    sizes = [r.choice([1, 30, 31, 90]) for _ in range(4)]
    base = 8  # the LM's partitions are 8..11
    order = [[] for _ in range(base)] + [[r.randrange(50) for _ in range(n)] for n in sizes]
    avail = {base + j: bits(r, n, 0.6) for j, n in enumerate(sizes)}
    masks = [bits(r, 4, 0.5) for _ in range(50)]
    tmask = array("q", [bits(r, 4, 0.2) for _ in range(40)])
    items = [(t, base + (j := r.randrange(4)), r.randrange(sizes[j])) for t in r.sample(range(40), 12)]
    return {"avail": avail, "masks": masks, "tmask": tmask, "order": order, "items": items, "running": {}, "base": base}


def accept(fn, s: dict, gm: int) -> tuple:
    accepted: list = []
    rejected: list = []
    taken = fn(s["items"], s["avail"], s["tmask"], s["masks"], s["order"], s["running"], gm, accepted, rejected)
    return taken, accepted, rejected


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 4))
def test_lm_accept_and_vacate_are_the_python_ones(seed: int, gm: int) -> None:
    a, b = lm_state(seed), lm_state(seed)
    assert accept(C.lm_accept, a, gm) == accept(slots.lm_accept_py, b, gm)
    assert a == b
    # the accepted tasks finish, in another order
    group = [(tid, -1) for tid in sorted(a["running"], reverse=True)]
    noted_a, noted_b = [[0] * 6 for _ in range(4)], [[0] * 6 for _ in range(4)]
    C.lm_vacate(group, a["running"], a["avail"], noted_a, a["base"])
    slots.lm_vacate_py(group, b["running"], b["avail"], noted_b, b["base"])
    assert a == b and noted_a == noted_b and a["running"] == {}


def test_lm_accept_checks_freedom_and_constraints() -> None:
    avail = {0: 0b011}
    order = [[7, 8, 9]]
    masks = [0] * 7 + [0b1, 0b0, 0b1]
    tmask = array("q", [0b1, 0b1, 0b0])
    running: dict = {}
    accepted: list = []
    rejected: list = []
    # task 0 on pos 0 (worker 7, has the constraint): yes; task 1 on pos 1 (worker 8 lacks it): no;
    # task 2 on pos 2 (worker 9 is busy): no
    taken = C.lm_accept([(0, 0, 0), (1, 0, 1), (2, 0, 2)], avail, tmask, masks, order, running, 3, accepted, rejected)
    assert taken == {0: 0b1} and accepted == [(0, 7)] and rejected == [(1, 0, 1), (2, 0, 2)]
    assert avail == {0: 0b010} and running == {0: (0, 0, 3)}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 8))
def test_gm_release_is_the_python_one(seed: int, parts: int) -> None:
    r = random.Random(seed)
    where = [(r.randrange(parts), r.randrange(70)) for _ in range(30)]
    group = [(t, w) for t, w in enumerate(r.sample(range(30), 10))]
    states = []
    for fn in (C.gm_release, slots.gm_release_py):
        rs = random.Random(seed + 1)
        reserved = [bits(rs, 70, 0.5) for _ in range(parts)]
        avail = [bits(rs, 70, 0.5) for _ in range(parts)]
        freed: list = []
        fn(group, where, reserved, avail, freed)
        states.append((reserved, avail, freed))
    assert states[0] == states[1]
    reserved, avail, freed = states[0]
    for p, pos in freed:
        assert avail[p] >> pos & 1 and not reserved[p] >> pos & 1


def both_raise(call) -> type[BaseException]:
    """The exception type both twins raise on the same malformed input (it must be the same)."""
    kinds = []
    for fn in (getattr(C, call[0]), getattr(slots, call[0] + "_py")):
        with pytest.raises(Exception) as info:
            fn(*copy.deepcopy(call[1]))
        kinds.append(info.type)
    assert kinds[0] is kinds[1], kinds
    return kinds[0]


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (("lm_accept", ([(0, 0)], {0: 1}, array("q", [0]), [0], [[0]], {}, 0, [], [])), ValueError),  # two values, not three
        (("lm_accept", ([(0, 0, -1)], {0: 1}, array("q", [0]), [0], [[0]], {}, 0, [], [])), ValueError),  # negative position
        (("lm_accept", ([(0, 5, 0)], {0: 1}, array("q", [0]), [0], [[0]], {}, 0, [], [])), IndexError),  # no partition 5
        (("lm_accept", ([(0, 0, 0)], {}, array("q", [0]), [0], [[0]], {}, 0, [], [])), KeyError),  # not this LM's partition
        (("lm_vacate", ([(4, -1)], {}, {0: 0}, [[0]], 0)), KeyError),  # not running here
        (("gm_release", ([(0, 3)], [(0, 0)], [0], [0], [])), IndexError),  # unknown worker
        (("gm_take", (0, [None], lambda e, m, p: "not an int", ((0, [0]),), [0], [1], [0], None)), TypeError),
        (("gm_take", (0, [1], None, ((0, [0]),), [3], [1], [0], None)), IndexError),  # a round-robin position past the group
    ],
)
def test_malformed_input_raises_the_same_error(call, kind) -> None:
    assert both_raise(call) is kind


def test_wrong_argument_counts_are_refused() -> None:
    for name in ("gm_take", "lm_accept", "lm_vacate", "gm_release"):
        with pytest.raises(TypeError, match="arguments"):
            getattr(C, name)(1, 2)


def python_twins(monkeypatch) -> None:
    """Every compiled part off: Megha's loops and the bit selection run in Python."""
    monkeypatch.setattr(gm_module, "gm_take", slots.gm_take_py)
    monkeypatch.setattr(gm_module, "gm_release", slots.gm_release_py)
    monkeypatch.setattr(lm_module, "lm_accept", slots.lm_accept_py)
    monkeypatch.setattr(lm_module, "lm_vacate", slots.lm_vacate_py)
    monkeypatch.setattr(bitsets, "compiled", None)


@pytest.mark.parametrize("choice", ["random", "min-constraints"])
def test_a_megha_run_is_the_same_with_the_python_twins(monkeypatch, choice: str) -> None:
    # syn_250's first 500 jobs keep the cluster busy enough for every path of the loops (queued tasks,
    # rejections, repartitions) at a quarter of the whole trace's time
    jobs = list(itertools.islice(read_trace("syn_250"), 500))
    kw = dict(workers=2000, seed=3, params={"gms": 2, "lms": 3, "worker_choice": choice}, constraints=True, trace_label="syn_250")
    with_c = schedlab.simulate("megha", jobs, **kw).summary
    python_twins(monkeypatch)
    without = schedlab.simulate("megha", jobs, **kw).summary
    counters = with_c["counters"]
    assert counters["rejected_requests"] > 0 and counters["repartitions"] > 0  # the loops' every path ran
    for s in (with_c, without):
        s.pop("wall_seconds")
    assert with_c == without
