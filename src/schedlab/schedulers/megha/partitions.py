"""Megha's data-center layout: LMs (clusters) split into one partition per GM.

Megha paper, Section IV-A: each LM's cluster is divided into ``count(GMs)``
partitions; partition ``j`` of every LM is GM ``j``'s *internal* partition and
all others are *external* to it (Eq. 3–4).

Partitions are numbered globally ``p = lm · G + gm``. Inside a partition the
workers are ranked by (number of machine constraints, global id) and the most
preferred gets the highest bit (:class:`~schedlab.cluster.bitsets.ConstraintBitsets`),
so the GM's "min-constraints" choice is ``cand.bit_length() - 1`` and every
component refers to a worker as ``(p, pos)``. The same immutable layout object
is shared by the GMs and LMs of a run (it holds no state but a cache).

The workers eligible for a task mask are cached per mask, and computed one
partition at a time as a GM's search reaches it: a search usually ends in the
first partition it tries, so a new mask costs a few ANDs, not a few per
partition of the data center.
"""

from __future__ import annotations

from typing import cast

from schedlab.cluster.bitsets import ConstraintBitsets, MaskCache, constraint_count, iter_set_bits
from schedlab.cluster.model import Cluster, Topology, split_federated
from schedlab.errors import InputError

ELIGIBLE_CACHE_BYTES = 256 << 20


class Layout:
    """Partitions, their workers' bit positions and constraint bitsets."""

    def __init__(self, cluster: Cluster, topology: Topology) -> None:
        self.num_lms = topology.num_clusters
        self.num_gms = topology.num_partitions
        if any(len(cl) != self.num_gms for cl in topology.partitions):
            raise InputError("topology", "every LM needs one partition per GM")
        self.num_partitions = self.num_lms * self.num_gms
        self.index: list[ConstraintBitsets] = []
        self.lm_of: list[int] = []
        self.owner: list[int] = []  # GM whose internal partition it is
        # worker -> (p, pos): a list, read for every finished task (a third cheaper than a dict lookup)
        where: list[tuple[int, int] | None] = [None] * len(cluster.machine_masks)
        masks = cluster.machine_masks
        num_constraints = constraint_count(masks)  # the same for every partition: their bitsets line up per constraint
        for lm, parts in enumerate(topology.partitions):
            for gm, workers in enumerate(parts):
                if not workers:
                    raise InputError("topology", f"partition {gm + 1} of LM {lm + 1} has no workers")
                idx = ConstraintBitsets(workers, masks, min_constraints_order=True, num_constraints=num_constraints)
                p = len(self.index)
                self.index.append(idx)
                self.lm_of.append(lm)
                self.owner.append(gm)
                for pos, w in enumerate(idx.order):
                    where[w] = (p, pos)
        if None in where:
            raise InputError("topology", f"worker {where.index(None)} is in no partition")
        self.where = cast("list[tuple[int, int]]", where)
        self.order: list[list[int]] = [idx.order for idx in self.index]
        self.full: list[int] = [idx.all for idx in self.index]
        # by_constraint[c][p]: partition p's bitset of workers with constraint c
        self.by_constraint: list[list[int]] = [list(col) for col in zip(*(idx.by_constraint for idx in self.index), strict=True)]
        # every GM's every match reads it: a roomier budget than the default. An entry is a list with None
        # for the partitions not computed yet (eligible_entry, eligible_at), or a tuple once complete
        # (eligible); its cost is counted in full either way.
        self._eligible = MaskCache(ELIGIBLE_CACHE_BYTES)
        # read directly by the GMs' matching loop (a dict lookup, not a call)
        self.eligible_cache: dict[int, list[int | None] | tuple[int, ...]] = self._eligible
        self._entry_bytes = (len(self.where) + 7) // 8 + 8 * len(self.index)

    def partition(self, lm: int, gm: int) -> int:
        return lm * self.num_gms + gm

    def eligible(self, mask: int) -> tuple[int, ...]:
        """For every partition, the bits of its workers that satisfy ``mask`` (cached per mask)."""
        e = self._eligible.get(mask)
        if type(e) is tuple:
            return e
        if e is None:
            e = self.eligible_entry(mask)
        for p, bits in enumerate(e):
            if bits is None:
                self.eligible_at(e, mask, p)
        done = tuple(cast(list[int], e))
        self._eligible[mask] = done  # the same entry, complete (its cost was counted when it was made)
        return done

    def eligible_entry(self, mask: int) -> list[int | None]:
        """A new cache entry for ``mask``, nothing computed yet: fill it with :meth:`eligible_at`."""
        e: list[int | None] = [None] * self.num_partitions
        self._eligible.put(mask, e, self._entry_bytes)
        return e

    def eligible_at(self, entry: list[int | None] | tuple[int, ...], mask: int, p: int) -> int:
        """The bits of partition ``p``'s workers that satisfy ``mask``, computed into ``mask``'s cache entry."""
        cur = self.full[p]
        by_constraint = self.by_constraint
        for c in iter_set_bits(mask):
            cur = cur & by_constraint[c][p] if c < len(by_constraint) else 0
        cast(list, entry)[p] = cur
        return cur

    def partitions_of_lm(self, lm: int) -> range:
        return range(lm * self.num_gms, (lm + 1) * self.num_gms)


def megha_topology(cluster: Cluster, gms: int | None, lms: int | None) -> Topology:
    """The cluster's own Megha topology (from a config), or ``lms`` × ``gms`` near-equal blocks."""
    topo = cluster.topology
    if topo is not None and cluster.extra.get("layout") == "megha":  # from the config
        if gms is not None and gms != topo.num_partitions:
            raise InputError("param gms", f"the config has {topo.num_partitions} GMs (partitions per LM), not {gms}")
        if lms is not None and lms != topo.num_clusters:
            raise InputError("param lms", f"the config has {topo.num_clusters} LMs, not {lms}")
        return topo
    if topo is not None and cluster.extra.get("layout") == "pigeon":
        raise InputError("--config", "Megha needs a Megha config (LMs and partitions), not a Pigeon one")
    return split_federated(cluster.n, lms if lms is not None else 5, gms if gms is not None else 5)
