"""Simulation kernel: event heap, the Runtime interface, network-delay model, named RNG streams."""

from schedlab.sim.kernel import Kernel
from schedlab.sim.rng import RngStreams
from schedlab.sim.runtime import DEFAULT_LATENCY, Component, NetworkModel, Runtime, SimRuntime

__all__ = [
    "DEFAULT_LATENCY",
    "Component",
    "Kernel",
    "NetworkModel",
    "RngStreams",
    "Runtime",
    "SimRuntime",
]
