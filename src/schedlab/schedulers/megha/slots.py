"""Megha's slot-mode inner loops, each a function of plain lists, dicts and ints, with a compiled twin.

These are the per-task steps every slot-mode run repeats half a million times on
syn_250 (Megha paper, Section IV: a GM matches a task in its global view, an LM
validates the GM's launch request against its own state and starts what still
holds, both masters free a finished task's worker in their state):

* :func:`gm_take` — a GM's search of its view for a task's worker (internal
  partitions before external ones, each round-robin) and its taking;
* :func:`lm_accept` — an LM's validation of a launch request (the worker is free
  in the LM's state and has the task's constraints);
* :func:`lm_vacate` — an LM frees the workers of finished tasks and notes the
  change for every GM's next update;
* :func:`gm_release` — a GM frees, in its view, the workers its finished tasks held.

Each ``*_py`` function is the reference; ``_slots.c`` holds the same functions in
C (same arguments, same effects in the same order, same exceptions), and the
unprefixed names are the compiled ones where the extension was built
(tests/schedulers/test_megha_slots.py compares the two, and whole runs).
Worker bitsets are Python ints: clearing a bit is done as ``x ^ bit`` only when
it is set, which gives the same int value as ``x & ~bit`` without making
``~bit``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from schedlab.cluster.bitsets import choose_position_drawn

try:
    from schedlab.schedulers.megha import _slots as compiled  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler: the Python twins run
    compiled = None

# a master's worker bitsets by partition: a GM's list, an LM's dict of its own partitions
Bitsets = list[int] | dict[int, int]


def gm_take_py(
    mask: int,
    el: Sequence[int | None],
    eligible_at: Callable[[Any, int, int], int],
    groups: Sequence[tuple[int, Sequence[int]]],
    rr: list[int],
    avail: Bitsets,
    reserved: Bitsets,
    draw: Callable[[], float] | None,
) -> tuple[int, int] | None:
    """The worker a GM gives a task of constraint ``mask`` in its view: ``(p, pos)``, taken, or None.

    ``groups`` are ``(g, partitions)``: the internal partitions (g = 0) are tried
    before the external ones (g = 1), each group from its round-robin position
    ``rr[g]``, which moves past the partition that serves. ``el[p]`` are the
    partition's workers eligible for ``mask`` (None: not computed yet, then
    ``eligible_at(el, mask, p)`` computes it into ``el``). The worker is
    :func:`~schedlab.cluster.bitsets.choose_position`'s among the partition's
    free eligible workers (``draw``: the random choice's stream's ``random``
    method, None for min-constraints); it leaves ``avail`` and joins ``reserved``.
    """
    for g, after, p in partition_walk(groups, rr):
        e = el[p]
        if e is None:
            e = eligible_at(el, mask, p)
        cand = avail[p] & e
        if cand:
            rr[g] = after
            pos = choose_position_drawn(cand, draw)
            bit = 1 << pos
            avail[p] ^= bit
            reserved[p] |= bit
            return p, pos
    return None


def partition_walk(groups: Sequence[tuple[int, Sequence[int]]], rr: Sequence[int]) -> Iterator[tuple[int, int, int]]:
    """The order a GM tries partitions in: each group ``(g, partitions)`` in turn, from its round-robin
    position ``rr[g]``, once around; yields ``(g, the position after this partition, partition)``."""
    for g, group in groups:
        n = len(group)
        i = rr[g]
        for _ in range(n):
            p = group[i]
            i += 1
            if i == n:
                i = 0
            yield g, i, p


def lm_accept_py(
    items: Sequence[Sequence[int]],
    avail: Bitsets,
    tmask: Sequence[int],
    machine_masks: Sequence[int],
    order: Sequence[Sequence[int]],
    running: dict[int, tuple[int, int, int]],
    gm: int,
    accepted: list[tuple[int, int]],
    rejected: list[Any],
) -> dict[int, int]:
    """Validate launch request ``items`` (``(tid, p, pos)``) of GM ``gm``; returns partition -> bits taken.

    A task is accepted when its worker is free in ``avail`` and has every
    constraint of the task: the worker's bit leaves ``avail``, ``running[tid]``
    becomes ``(p, pos, gm)`` and ``(tid, worker)`` is appended to ``accepted``;
    otherwise the item itself is appended to ``rejected``.
    """
    taken: dict[int, int] = {}
    for item in items:
        tid, p, pos = item
        bit = 1 << pos
        w = order[p][pos]
        if avail[p] & bit and not tmask[tid] & ~machine_masks[w]:
            avail[p] ^= bit
            running[tid] = (p, pos, gm)
            taken[p] = taken.get(p, 0) | bit
            accepted.append((tid, w))
        else:
            rejected.append(item)
    return taken


def lm_vacate_py(group: Sequence[Sequence[int]], running: dict[int, tuple[int, int, int]], avail: Bitsets, noted: list[list[int]], base: int) -> None:
    """Finished tasks ``group`` (``(tid, worker)``) leave ``running``; their workers become free in
    ``avail`` and noted for the GM that placed each (``noted[p - base][gm]``)."""
    for item in group:
        p, pos, gm = running.pop(item[0])
        bit = 1 << pos
        avail[p] |= bit
        noted[p - base][gm] |= bit


def gm_release_py(group: Sequence[Sequence[int]], where: Sequence[tuple[int, int]], reserved: Bitsets, avail: Bitsets, freed: list[tuple[int, int]]) -> None:
    """A GM's finished tasks ``group`` (``(tid, worker)``) no longer hold their workers: each worker's
    ``(p, pos)`` is appended to ``freed``, leaves ``reserved`` and joins ``avail``."""
    for item in group:
        place = where[item[1]]
        freed.append(place)
        p, pos = place
        bit = 1 << pos
        if reserved[p] & bit:
            reserved[p] ^= bit
        avail[p] |= bit


if compiled is not None:
    gm_take = compiled.gm_take
    lm_accept = compiled.lm_accept
    lm_vacate = compiled.lm_vacate
    gm_release = compiled.gm_release
else:
    gm_take = gm_take_py
    lm_accept = lm_accept_py
    lm_vacate = lm_vacate_py
    gm_release = gm_release_py
