"""Files shipped inside the package: the four traces, the reference data-center configs, the constraint model.

Compressed copies of what the papers' authors published with their simulators — the four traces
(Google sub-trace and syn_250/500/1000, in the Sparrow/Eagle format), the 10,000-worker Megha and
Pigeon data-center configs and the Sharma et al. (SoCC 2011) constraint tables — so that a run
needs nothing outside the package (docs/authors-simulators.md#sources).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

BUNDLED_TRACES: dict[str, str] = {
    "google": "GOOG_subtrace.tr.gz",
    "syn_250": "syn_250.0.tr.gz",
    "syn_500": "syn_500.0.tr.gz",
    "syn_1000": "syn_1000.0.tr.gz",
}

# The data-center size each bundled trace is studied with in the papers.
PAPER_WORKERS: dict[str, int] = {"google": 20000, "syn_250": 10000, "syn_500": 10000, "syn_1000": 10000}
# How many jobs each bundled trace holds (for progress bars, without reading the trace).
BUNDLED_JOBS: dict[str, int] = {"google": 10000, "syn_250": 2000, "syn_500": 2000, "syn_1000": 2000}
DEFAULT_WORKERS = 10000  # a data center for any other workload: the size of the papers' configs

REFERENCE_CONFIGS: dict[str, str] = {
    "megha": "megha_config_G5L5S10000_C.json.gz",
    "pigeon": "pigeon_config_D10M100S10000_C.json.gz",
}


def data_path(name: str) -> Path:
    """Path of a file in the package's data folder."""
    p = resources.files("schedlab") / "data" / name
    return Path(str(p))


def bundled_trace_path(name: str) -> Path:
    return data_path(BUNDLED_TRACES[name])


@cache
def sharma_constraints() -> dict[str, Any]:
    """The 21-constraint placement model (task sampling tables, machine frequencies)."""
    with open(data_path("sharma_constraints.json"), encoding="utf-8") as f:
        return json.load(f)
