"""Cluster model: workers (slot or multi-resource), machine-constraint bitsets, topology, configs."""

from schedlab.cluster.bitsets import (
    NUM_CONSTRAINTS,
    ConstraintBitsets,
    constraints_of,
    iter_set_bits,
    kth_set_bit,
    lowest_set_bit,
    mask_of,
    random_set_bit,
)
from schedlab.cluster.config import load_config
from schedlab.cluster.generate import MACHINE_MODELS, generate_machine_masks
from schedlab.cluster.model import Cluster, Topology, split_federated, split_groups

__all__ = [
    "MACHINE_MODELS",
    "NUM_CONSTRAINTS",
    "Cluster",
    "ConstraintBitsets",
    "Topology",
    "constraints_of",
    "generate_machine_masks",
    "iter_set_bits",
    "kth_set_bit",
    "load_config",
    "lowest_set_bit",
    "mask_of",
    "random_set_bit",
    "split_federated",
    "split_groups",
]
