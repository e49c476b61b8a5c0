"""Named random streams derived from one experiment seed.

``RngStreams(seed).rng("gm:1")`` always returns the same stream for the same
(seed, name), whatever other streams exist or were created first, so adding a
component never changes another's draws, and the same inputs and seed give
identical results, bit for bit. Names are mapped to ``numpy.random.SeedSequence`` spawn keys
through a stable hash (not Python's salted ``hash``).

Two flavours per name: :meth:`RngStreams.rng` gives a ``random.Random`` — the
fastest source of single draws in CPython, for scheduler hot paths — and
:meth:`RngStreams.np_rng` gives a ``numpy.random.Generator`` for vectorised
generation (workloads, machine constraints). The two flavours of one name are
independent streams.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np


def _name_key(name: str, flavour: int) -> tuple[int, ...]:
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=16).digest()
    return (flavour, *(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)))


class RngStreams:
    """Factory of deterministic named random streams for one seed."""

    def __init__(self, seed: int) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = seed
        self._py: dict[str, random.Random] = {}
        self._np: dict[str, np.random.Generator] = {}

    def _seed_sequence(self, name: str, flavour: int) -> np.random.SeedSequence:
        return np.random.SeedSequence(entropy=self.seed, spawn_key=_name_key(name, flavour))

    def rng(self, name: str) -> random.Random:
        """The ``random.Random`` stream called ``name`` (created on first use, then shared)."""
        r = self._py.get(name)
        if r is None:
            state = self._seed_sequence(name, 0).generate_state(4, dtype=np.uint64)
            r = random.Random(int.from_bytes(state.tobytes(), "little"))
            self._py[name] = r
        return r

    def np_rng(self, name: str) -> np.random.Generator:
        """The numpy ``Generator`` stream called ``name`` (created on first use, then shared)."""
        g = self._np.get(name)
        if g is None:
            g = np.random.Generator(np.random.PCG64(self._seed_sequence(name, 1)))
            self._np[name] = g
        return g
