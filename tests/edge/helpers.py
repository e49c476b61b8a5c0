"""Shared helpers of the edge tests: random small instances (hypothesis) and the Figure 2 stand-in."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from schedlab.edge.generate import generate_instance
from schedlab.edge.instance import EdgeInstance


@st.composite
def instances(draw, max_jobs: int = 8, max_chunks: int = 10, max_deadline: int = 6, nodes: int = 1000) -> EdgeInstance:
    """Any small instance: arbitrary chunk sets (overlapping or not), deadlines, B and S."""
    universe = draw(st.integers(1, max_chunks))
    ids = draw(st.lists(st.integers(0, 50), min_size=universe, max_size=universe, unique=True))
    jobs = draw(
        st.lists(
            st.tuples(st.integers(1, max_deadline), st.lists(st.sampled_from(ids), min_size=1, max_size=universe, unique=True)),
            min_size=1,
            max_size=max_jobs,
        )
    )
    return EdgeInstance.from_jobs(
        jobs,
        nodes=nodes,
        chunks_per_node=draw(st.integers(1, 4)),
        vms_per_node=draw(st.integers(1, 3)),
    )


def small_generated(seed: int) -> EdgeInstance:
    """A small generated instance (1–3 deadline classes) drawn from ``seed``; MILP-sized."""
    r = np.random.default_rng(1000 + seed)
    classes = int(r.integers(1, 4))
    deadlines = sorted(r.choice(np.arange(2, 11), classes, replace=False).tolist())
    return generate_instance(
        jobs=int(r.integers(6, 16)),
        chunks=int(r.integers(8, 21)),
        chunks_per_job="uniform:2,8",
        popularity=1.0,
        deadlines=deadlines,
        chunks_per_node=int(r.integers(2, 7)),
        vms_per_node=int(r.integers(1, 5)),
        seed=seed,
    )


# The report's Figure 2 ("number of nodes = 10, virtual machines on each node = 2, limit of data
# chunks on each node = 4, and jobs requirements as shown") is an image whose job table is not in
# the text, so it cannot be reconstructed. This stand-in keeps its N, S and B and has two deadline
# classes, so that it also shows Figure 3's point (reuse of active nodes). Worked by hand in
# test_edge_algorithms.py.
FIGURE2_JOBS = [
    (2, [0, 1, 2, 3]),  # J0
    (2, [0, 1]),  # J1
    (2, [4, 5]),  # J2
    (4, [0, 4, 6, 7]),  # J3
    (4, [6, 7, 8]),  # J4
    (4, [1, 8, 9]),  # J5
]


def figure2_instance() -> EdgeInstance:
    return EdgeInstance.from_jobs(FIGURE2_JOBS, nodes=10, chunks_per_node=4, vms_per_node=2, name="figure2-equivalent")
