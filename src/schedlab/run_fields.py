"""The settings of a run — name, default, help text — as plain data, for :class:`~schedlab.run_config.RunConfig`.

The model declares its fields from this table, so a setting and its default
still live once; the command line reads its options' defaults and help here,
so ``schedlab --help`` builds them without loading pydantic.
"""

from __future__ import annotations

import copy
from typing import Any

from schedlab.defaults import (
    DEFAULT_CAPACITY,
    DEFAULT_LATENCY,
    DEFAULT_REQUESTS,
    MACHINE_MODELS,
    PAPER_CONSTRAINT_SEED,
)

# field -> (default, description); a dict default is a fresh empty dict for each run
FIELDS: dict[str, tuple[Any, str]] = {
    "scheduler": ("ideal", "Scheduler name (see `schedlab schedulers`)."),
    "trace": ("google", "google, syn_250, syn_500, syn_1000, or a trace file (a label when the jobs are given as a stream)."),
    "workers": (None, "Data-center size (default: the paper's size for a bundled trace, else 10000)."),
    "seed": (0, "Run seed: generated data center and schedulers' random choices."),
    "config": (None, "Data-center config file (*_config_*.json) or 'reference' / 'reference-pigeon'."),
    "data_center_from": (
        None,
        "Machines file (`schedlab trace machines`): the trace's own machines as the workers, with their capacities; "
        "the trace's own constraints are matched against their attributes.",
    ),
    "params": ({}, "The scheduler's own parameters (its Params model)."),
    "constraints": (True, "Placement constraints (Sharma et al.) on tasks and workers."),
    "constraint_seed": (PAPER_CONSTRAINT_SEED, f"Seed of the task-constraint draws ({PAPER_CONSTRAINT_SEED} = the papers')."),
    "machine_model": ("independent", f"Generated machine constraints: {' or '.join(MACHINE_MODELS)}."),
    "resource_mode": ("slots", "slots (one task per worker) or multi (64 cores, 16 GB per worker)."),
    "capacity": (DEFAULT_CAPACITY, "Multi mode: each worker's cores and memory (MB)."),
    "requests": (DEFAULT_REQUESTS, "Task resource requests in multi mode, e.g. fixed:1,256."),
    "latency": (DEFAULT_LATENCY, "One-way network latency per message, seconds."),
    "latency_spread": (0.0, "Spread of the one-way latency: each message's is drawn from a lognormal with median --latency "
                            "and this sigma (0: every message takes exactly --latency); messages to one receiver stay in order."),
    "latency_per_task": (0.0, "Growth of the one-way latency per task a message carries (a launch request's, a launch's), "
                              "seconds: a real cluster's messages take longer the more tasks they name (0: none)."),
    "processing_costs": ({}, "Processing cost at the receiver per message type, seconds."),
    "exact_durations": (False, "Keep fractional durations and equal arrival times (no truncation or dephasing)."),
}


def default(name: str) -> Any:
    """A setting's default (a fresh copy of a mutable one)."""
    return copy.copy(FIELDS[name][0])


def describe(name: str) -> str:
    """A setting's help text."""
    return FIELDS[name][1]


def option_name(field: str) -> str:
    """The CLI option of a field: ``constraint_seed`` -> ``--constraint-seed``."""
    return "--" + field.replace("_", "-")
