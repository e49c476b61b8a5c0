"""Simulation kernel: event heap, the Runtime interface, network-delay model, named RNG streams.

Exports load on first use, so the run configuration and the CLI can read the
defaults here without numpy.
"""

from schedlab.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "Kernel": "kernel",
        "RngStreams": "rng",
        "DEFAULT_LATENCY": "runtime",
        "Component": "runtime",
        "NetworkModel": "runtime",
        "Runtime": "runtime",
        "SimRuntime": "runtime",
    },
)
