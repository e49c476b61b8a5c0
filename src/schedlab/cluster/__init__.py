"""Cluster model: workers (slot or multi-resource), machine-constraint bitsets, topology, configs.

Exports load on first use (numpy comes with them), so the run configuration
and the CLI can read this package's constants without paying for numpy.
"""

from schedlab.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "NUM_CONSTRAINTS": "bitsets",
        "ConstraintBitsets": "bitsets",
        "constraints_of": "bitsets",
        "iter_set_bits": "bitsets",
        "kth_set_bit": "bitsets",
        "lowest_set_bit": "bitsets",
        "mask_of": "bitsets",
        "random_set_bit": "bitsets",
        "load_config": "config",
        "MACHINE_MODELS": "generate",
        "generate_machine_masks": "generate",
        "Cluster": "model",
        "Topology": "model",
        "split_federated": "model",
        "split_groups": "model",
    },
)
