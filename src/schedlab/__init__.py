"""schedlab: decentralized, federated and data-aware cluster scheduling, simulated fast and reproducibly.

The layers (ARCHITECTURE.md, at the repository root, maps them all) are, from the bottom:
``sim`` (event kernel and Runtime), ``cluster`` (workers, constraints, topology),
``workload`` (jobs, traces, generators), ``metrics`` (recorder and summaries),
``schedulers`` (one module or folder per scheduler) and the ``engine`` that wires them.
"""

from __future__ import annotations

from schedlab.errors import InputError, InvariantError, SchedlabError
from schedlab.lazy import lazy_exports

__version__ = "0.1.0"

# The engine pulls in pandas: loaded on first use so that `import schedlab.sim` stays light.
_, __getattr__ = lazy_exports(__name__, {"simulate": "engine", "Result": "engine"})
__all__ = ["InputError", "InvariantError", "Result", "SchedlabError", "__version__", "simulate"]
