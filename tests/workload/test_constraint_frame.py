"""Constraint rows held by the raw converters: folded as they come (categorical parts, compacted every
COMPACT_PARTS parts) into exactly the frame one fold of every row at the end gives."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.workload.converters.tasks import (
    COMPACT_PARTS,
    compact_constraints,
    constraint_frame,
    constraint_part,
)

ROW = st.tuples(st.integers(0, 6), st.sampled_from(["arch", "kernel", "rack", "zone"]), st.sampled_from(["=", "!=", "<", ">", "present"]),
                st.sampled_from(["", "1", "2", "x86", "arm", "10"]))  # fmt: skip


def _part(rows):
    k, a, o, v = zip(*rows, strict=True) if rows else ((), (), (), ())
    return constraint_part(list(k), list(a), list(o), list(v))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(ROW, max_size=6), max_size=3 * COMPACT_PARTS))
def test_compacting_as_parts_come_gives_the_frame_of_every_row_at_once(blocks) -> None:
    parts: list = []
    for rows in blocks:
        parts.append(_part(rows))
        parts = compact_constraints(parts)
    got = constraint_frame(parts)
    want = constraint_frame([_part([r for rows in blocks for r in rows])]) if blocks else constraint_frame([])
    pd.testing.assert_frame_equal(got, want)
    # the old way: strings, joined once, then categorical — the same rows, order and categories
    if blocks and any(blocks):
        flat = [r for rows in blocks for r in rows]
        old = pd.DataFrame(flat, columns=["key", "attribute", "operator", "value"])
        old = old.drop_duplicates().sort_values("key", kind="stable").reset_index(drop=True)
        for c in ("attribute", "operator", "value"):
            old[c] = old[c].astype("category")
        pd.testing.assert_frame_equal(got, old)


def test_many_parts_are_compacted_on_the_way_and_give_the_same_frame() -> None:
    rows = [(k % 37, ["arch", "rack"][k % 2], ["=", "<"][k % 3 == 0], str(k % 5)) for k in range(1000)]
    parts: list = []
    held = []
    for i in range(0, len(rows), 5):  # 200 parts of 5 rows
        parts.append(_part(rows[i : i + 5]))
        parts = compact_constraints(parts)
        held.append(len(parts))
    assert max(held) == COMPACT_PARTS - 1 and min(held[COMPACT_PARTS:]) == 1  # folded every COMPACT_PARTS parts
    pd.testing.assert_frame_equal(constraint_frame(parts), constraint_frame([_part(rows)]))
