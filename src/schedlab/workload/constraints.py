"""Task placement-constraint synthesis after Sharma et al. (SoCC 2011), as the constraint-aware papers use it.

Per task, in trace order (``sharma_constraints.json``, "how_to_sample"):

1. task type ``t`` uniform over 1..4;
2. statistical cluster ``k`` from 1..10 with weights
   ``task_type_weights_by_cluster[k][t]``;
3. constraint ``j`` (0..20) kept when ``u·100 ≤ constraint_percent_by_cluster[k][j]``
   for a fresh uniform ``u``.

That is 23 uniforms per task. The authors' simulators draw them from one
``random.Random(42)`` with ``choices`` (type, cluster) and ``random()`` (each
constraint) — docs/authors-simulators.md#task-constraints. This module reproduces that stream
*exactly* but vectorised: CPython's ``random()`` and numpy's legacy
``RandomState.random_sample`` are the same MT19937 ``genrand_res53``, so we copy
the seeded Python state into numpy and take 23 doubles per task at once. With
seed 42 the task constraint sets are bit-for-bit those of the papers' runs, at
numpy speed.

The seed is the *constraint seed* (default 42, as in the papers), separate from
the run seed: changing the run seed changes the generated data center and the
schedulers' random choices, not the tasks' constraints.
"""

from __future__ import annotations

import random
from itertools import accumulate

import numpy as np

from schedlab.cluster.bitsets import NUM_CONSTRAINTS
from schedlab.datafiles import sharma_constraints
from schedlab.defaults import PAPER_CONSTRAINT_SEED

DRAWS_PER_TASK = 2 + NUM_CONSTRAINTS
_CLUSTERS = [str(k) for k in range(1, 11)]
_CHUNK = 1 << 15
_TYPES = ["1", "2", "3", "4"]


class SharmaTables:
    """The sampling tables in array form."""

    def __init__(self) -> None:
        model = sharma_constraints()["task_constraints"]
        pct = model["constraint_percent_by_cluster"]
        w = model["task_type_weights_by_cluster"]
        self.percent = np.array([pct[k] for k in _CLUSTERS], dtype=float)  # (10, 21)
        # Weights of each cluster given the task type, in cluster order (as random.choices sees them).
        self.cluster_weights = [[w[k][t] for k in _CLUSTERS] for t in _TYPES]  # (4, 10)
        # random.choices: cum = accumulate(weights); total = cum[-1] + 0.0; bisect(cum, random()*total, 0, n-1)
        self.cum_weights = [list(accumulate(ws)) for ws in self.cluster_weights]

    def marginal_percent(self) -> np.ndarray:
        """Expected percentage of tasks carrying each constraint."""
        out = np.zeros(NUM_CONSTRAINTS)
        for ws in self.cluster_weights:
            p = np.asarray(ws) / sum(ws)
            out += 0.25 * (p @ self.percent)
        return out


class TaskConstraintSampler:
    """Streams task constraint masks; identical to the authors' ``random.Random(seed)`` draws."""

    def __init__(self, seed: int = PAPER_CONSTRAINT_SEED) -> None:
        self.tables = SharmaTables()
        py = random.Random(seed)
        version, internal, _gauss = py.getstate()
        key = np.array(internal[:-1], dtype=np.uint32)
        self._rs = np.random.RandomState()
        self._rs.set_state(("MT19937", key, internal[-1], 0, 0.0))
        self._cum = np.array(self.tables.cum_weights)  # (4, 10)
        self._total = self._cum[:, -1] + 0.0
        self._buf: list[int] = []
        self._pos = 0

    def sample(self, n: int) -> list[int]:
        """Constraint masks of the next ``n`` tasks."""
        # Draw in fixed chunks and serve from a buffer: per-job calls stay cheap and the
        # temporaries stay in cache (one huge block is several times slower).
        buf, pos = self._buf, self._pos
        if pos + n <= len(buf):
            self._pos = pos + n
            return buf[pos : pos + n]
        out = buf[pos:]
        need = n - len(out)
        while need > 0:
            chunk = self._sample_chunk(_CHUNK)
            if need < _CHUNK:
                out.extend(chunk[:need])
                self._buf, self._pos = chunk, need
                return out
            out.extend(chunk)
            need -= _CHUNK
        self._buf, self._pos = [], 0
        return out

    def _sample_chunk(self, n: int) -> list[int]:
        u = self._rs.random_sample(n * DRAWS_PER_TASK).reshape(n, DRAWS_PER_TASK)
        ttype = (u[:, 0] * 4.0).astype(np.int64)  # floor: u >= 0
        x = u[:, 1] * self._total[ttype]
        # random.choices' bisect_right(cum, x, 0, hi=9): entries <= x, capped at 9.
        cluster = np.minimum((self._cum[ttype] <= x[:, None]).sum(axis=1), len(_CLUSTERS) - 1)
        keep = u[:, 2:] * 100.0 <= self.tables.percent[cluster]
        masks = np.zeros(n, dtype=np.int64)
        for j in range(NUM_CONSTRAINTS):
            masks |= keep[:, j].astype(np.int64) << j
        return masks.tolist()

    def skip(self, n: int) -> None:
        """Advance the stream past ``n`` tasks."""
        self.sample(n)


def reference_sample(n: int, seed: int = PAPER_CONSTRAINT_SEED) -> list[int]:
    """The same draws done the slow way, with ``random.Random`` exactly as the authors' simulators.

    Kept as the executable definition that :class:`TaskConstraintSampler` is tested against.
    """
    t = SharmaTables()
    r = random.Random(seed)
    out = []
    for _ in range(n):
        ttype = r.choices(_TYPES, k=1)[0]
        ws = t.cluster_weights[int(ttype) - 1]
        cluster = r.choices(_CLUSTERS, weights=ws, k=1)[0]
        row = t.percent[int(cluster) - 1]
        m = 0
        for j in range(NUM_CONSTRAINTS):
            if r.random() * 100 <= row[j]:
                m |= 1 << j
        out.append(m)
    return out

