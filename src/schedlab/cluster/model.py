"""The data center: workers, their resources and machine constraints, and how they are grouped.

Two resource modes:

* **slot mode** — every worker runs one task at a time (the constraint-aware
  Megha/PigeonC paper); ``capacity`` is ``None``;
* **multi-resource mode** — each worker has a capacity vector (e.g. 64 cores and
  16 GB, the Megha paper's Section V) and packs tasks whose request vectors fit.

Machine constraints are one int mask per worker (see :mod:`schedlab.cluster.bitsets`).

A :class:`Topology` says how workers are grouped for a scheduler: federated
(clusters split into partitions — Megha's LMs and GMs) or flat groups (Pigeon's
masters). Worker ids are global and contiguous in ``0 .. n-1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from schedlab.cluster.bitsets import ConstraintBitsets
from schedlab.defaults import DEFAULT_CAPACITY, MULTI_RESOURCES
from schedlab.errors import InputError


@dataclass(frozen=True)
class Topology:
    """Worker ids grouped two levels deep: ``partitions[cluster][partition]``.

    For Megha, cluster ``i`` is LM ``i`` and partition ``j`` of every cluster is
    GM ``j``'s internal partition there. Flat groups (Pigeon) are one cluster per
    group with a single partition each; :attr:`groups` gives them flat.
    """

    partitions: tuple[tuple[tuple[int, ...], ...], ...]

    @property
    def num_clusters(self) -> int:
        return len(self.partitions)

    @property
    def num_partitions(self) -> int:
        return len(self.partitions[0]) if self.partitions else 0

    @property
    def groups(self) -> list[tuple[int, ...]]:
        """Every partition as one flat list, cluster-major."""
        return [p for cl in self.partitions for p in cl]

    def cluster_workers(self, i: int) -> tuple[int, ...]:
        return tuple(w for p in self.partitions[i] for w in p)


def _even_sizes(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def split_federated(n_workers: int, clusters: int, partitions: int) -> Topology:
    """``clusters`` × ``partitions`` near-equal blocks of consecutive worker ids, cluster-major.

    Raises :class:`InputError` if a block would be empty.
    """
    if clusters < 1 or partitions < 1:
        raise InputError("topology", f"need at least 1 cluster and 1 partition, got {clusters} and {partitions}")
    if n_workers < clusters * partitions:
        raise InputError(
            "topology",
            f"{n_workers} workers cannot fill {clusters} clusters x {partitions} partitions "
            "(every partition needs at least one worker)",
        )
    out = []
    start = 0
    for csize in _even_sizes(n_workers, clusters):
        parts = []
        for psize in _even_sizes(csize, partitions):
            parts.append(tuple(range(start, start + psize)))
            start += psize
        out.append(tuple(parts))
    return Topology(tuple(out))


def split_groups(n_workers: int, groups: int) -> Topology:
    """``groups`` near-equal groups of consecutive worker ids (one partition per cluster)."""
    if groups < 1:
        raise InputError("topology", f"need at least 1 group, got {groups}")
    if n_workers < groups:
        raise InputError("topology", f"{n_workers} workers cannot fill {groups} groups")
    out = []
    start = 0
    for size in _even_sizes(n_workers, groups):
        out.append((tuple(range(start, start + size)),))
        start += size
    return Topology(tuple(out))


@dataclass
class Cluster:
    """The workers of a data center.

    ``machine_masks[w]`` is worker ``w``'s machine-constraint mask. ``capacity``
    is ``None`` in slot mode, else an ``(n, R)`` array of per-worker capacities
    named by ``resources``.
    """

    machine_masks: list[int]
    capacity: np.ndarray | None = None
    resources: tuple[str, ...] = ("slots",)
    topology: Topology | None = None
    source: str = "generated"
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.machine_masks) < 1:
            raise InputError("workers", "the data center needs at least one worker")
        if self.capacity is not None:
            cap = np.asarray(self.capacity, dtype=float)
            if cap.ndim != 2 or cap.shape[0] != len(self.machine_masks) or cap.shape[1] != len(self.resources):
                raise InputError("capacity", f"expected shape ({len(self.machine_masks)}, {len(self.resources)}), got {cap.shape}")
            if (cap <= 0).any():
                raise InputError("capacity", "every worker capacity must be > 0")
            self.capacity = cap

    @property
    def n(self) -> int:
        return len(self.machine_masks)

    @property
    def slot_mode(self) -> bool:
        return self.capacity is None

    def total_capacity(self) -> np.ndarray:
        """Total of each resource over all workers (slot mode: the number of workers)."""
        if self.capacity is None:
            return np.array([float(self.n)])
        return self.capacity.sum(axis=0)

    @classmethod
    def slots(cls, machine_masks: Sequence[int], *, source: str = "generated", topology: Topology | None = None) -> Cluster:
        return cls(list(machine_masks), None, ("slots",), topology, source)

    @classmethod
    def multi_resource(
        cls,
        machine_masks: Sequence[int],
        capacity: Sequence[float] = DEFAULT_CAPACITY,
        resources: Sequence[str] = MULTI_RESOURCES,
        *,
        source: str = "generated",
        topology: Topology | None = None,
    ) -> Cluster:
        """Every worker with the same capacity vector (default 64 cores and 16 GB, Megha paper V-B)."""
        if len(capacity) != len(resources):
            raise InputError("capacity", f"{len(capacity)} values for {len(resources)} resources")
        cap = np.tile(np.asarray(capacity, dtype=float), (len(machine_masks), 1))
        return cls(list(machine_masks), cap, tuple(resources), topology, source)

    def bitsets(self) -> ConstraintBitsets:
        """Constraint bitsets over all workers in min-constraints order (built once, then shared)."""
        b = self.extra.get("_bitsets")
        if b is None:
            b = self.extra["_bitsets"] = ConstraintBitsets(range(self.n), self.machine_masks, min_constraints_order=True)
        return b

    def with_topology(self, topology: Topology) -> Cluster:
        ids = sorted(w for g in topology.groups for w in g)
        if ids != list(range(self.n)):
            raise InputError("topology", f"does not cover workers 0..{self.n - 1} exactly once")
        extra = {k: v for k, v in self.extra.items() if not k.startswith("_")}
        return Cluster(self.machine_masks, self.capacity, self.resources, topology, self.source, extra)
