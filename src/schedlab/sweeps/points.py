"""What the sweep runner runs: the :class:`Runnable` protocol, and :class:`Point`, a runnable call of any domain.

Every sweep of every domain goes through one runner
(:mod:`schedlab.sweeps.runner`: this process, a local process pool or
Ray) into one store (:mod:`schedlab.sweeps.store`: one folder per run,
one lock, resume by id). What it runs is a :class:`Runnable`:

* a data-center run (:class:`schedlab.experiments.matrix.Run`: one cell of a
  spec's matrix, simulated by the engine, with its tables);
* a :class:`Point`: a call ``module:function(**inputs)`` returning a JSON
  mapping — one grid simulation, one DynDL figure point, one CRED instance, one
  Megha run reduced to the figures a report reads.

A point's id is a hash of its target and its inputs (canonical JSON), and the
inputs are all the function receives, so the resume key covers every input by
construction: change anything a result depends on and the point is new. The
function must be deterministic in its inputs (timings aside) and importable in
a fresh process (the pool starts workers with ``spawn``; Ray ships the point).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import pandas as pd


@dataclass
class RunOutput:
    """What a worker sends back: the summary (stored as ``summary.json``) and the tables the runnable keeps."""

    summary: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


class Runnable(Protocol):
    """One unit of a sweep: ``id`` (its resume key), ``config`` (what decides its result), and how to run it."""

    @property
    def id(self) -> str: ...

    @property
    def config(self) -> dict[str, Any]: ...

    @property
    def tables(self) -> tuple[str, ...]: ...

    def labels(self) -> dict[str, Any]: ...

    def describe(self) -> str: ...

    def paths(self) -> dict[str, str | None]: ...

    def execute(self) -> RunOutput: ...


def null_to_nan(obj: Any, keys: Collection[str] | None = None) -> Any:
    """A result as its function returned it: the store keeps JSON, where NaN became null.

    Every None inside dicts and lists becomes NaN — or, with ``keys``, only the
    values of those keys (for results where None also means "not given").
    """

    def restore(v: Any, key: str | None) -> Any:
        if isinstance(v, dict):
            return {k: restore(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [restore(x, key) for x in v]
        if v is None and (keys is None or key in keys):
            return math.nan
        return v

    return restore(obj, None)


def canonical_id(obj: Any) -> str:
    """16 hex digits of the SHA-256 of ``obj`` as canonical JSON (sorted keys, no spaces, no NaN)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Point:
    """A call ``target(**inputs)`` (``target`` = ``"module:function"``) whose result is a JSON mapping.

    ``label`` is what tables and progress lines show (figure, x, seed,
    algorithm…); it does not enter the id, which is a hash of the target and
    the inputs only.
    """

    target: str
    inputs: Mapping[str, Any]
    label: Mapping[str, Any] = field(default_factory=dict)

    @cached_property
    def id(self) -> str:  # the store looks it up several times per point: hash once
        return canonical_id(self.config)

    @property
    def config(self) -> dict[str, Any]:
        return {"target": self.target, "inputs": dict(self.inputs)}

    @property
    def tables(self) -> tuple[str, ...]:
        return ()

    def labels(self) -> dict[str, Any]:
        return {"id": self.id, **self.label}

    def describe(self) -> str:
        shown = self.label or self.inputs
        return ", ".join(f"{k} {v}" for k, v in shown.items())

    def paths(self) -> dict[str, str | None]:
        return {}

    def function(self) -> Callable[..., Mapping[str, Any]]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def execute(self) -> RunOutput:
        return RunOutput(dict(self.function()(**self.inputs)))
