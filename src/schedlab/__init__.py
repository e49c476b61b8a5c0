"""schedlab: decentralized, federated and data-aware cluster scheduling, simulated fast and reproducibly.

The layers (see DESIGN.md in the project's shared folder) are, from the bottom:
``sim`` (event kernel and Runtime), ``cluster`` (workers, constraints, topology),
``workload`` (jobs, traces, generators), ``metrics`` (recorder and summaries),
``schedulers`` (one module or folder per scheduler) and the ``engine`` that wires them.
"""

from __future__ import annotations

from schedlab.errors import InputError, InvariantError, SchedlabError

__version__ = "0.1.0"

__all__ = ["InputError", "InvariantError", "Result", "SchedlabError", "__version__", "simulate"]


def __getattr__(name: str):
    # The engine pulls in pandas; import it lazily so `import schedlab.sim` stays light.
    if name in ("simulate", "Result"):
        from schedlab import engine

        return getattr(engine, name)
    raise AttributeError(name)
