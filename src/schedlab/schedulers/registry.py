"""Scheduler registry: built-in names, third-party plugins, and parameter validation.

Built-ins are imported lazily by dotted path. Third-party packages register
schedulers through the entry-point group ``schedlab.schedulers``
(``name = "package.module:Class"``); a plugin may not shadow a built-in.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from pydantic import ValidationError

from schedlab.algorithms import params_error
from schedlab.errors import InputError
from schedlab.schedulers.base import Scheduler, SchedulerParams

BUILTIN: dict[str, str] = {
    "ideal": "schedlab.schedulers.ideal:IdealScheduler",
    "centralized": "schedlab.schedulers.centralized:CentralizedScheduler",
    "megha": "schedlab.schedulers.megha:MeghaScheduler",
    "pigeon": "schedlab.schedulers.pigeon:PigeonScheduler",
    "pigeonc": "schedlab.schedulers.pigeon:PigeonCScheduler",
    "sparrow": "schedlab.schedulers.sparrow:SparrowScheduler",
    "eagle": "schedlab.schedulers.eagle:EagleScheduler",
    "hawk": "schedlab.schedulers.hawk:HawkScheduler",
}

ENTRY_POINT_GROUP = "schedlab.schedulers"


def _plugins() -> dict[str, Any]:
    try:
        eps = entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # pragma: no cover - broken metadata must not break built-ins
        return {}
    return {ep.name: ep for ep in eps if ep.name not in BUILTIN}


def available() -> list[str]:
    """Names of every scheduler that can be run, sorted."""
    return sorted({*BUILTIN, *_plugins()})


def get(name: str) -> type[Scheduler]:
    """The scheduler class called ``name``; an unknown name is an :class:`InputError`."""
    if name in BUILTIN:
        module, _, attr = BUILTIN[name].partition(":")
        return getattr(importlib.import_module(module), attr)
    plugins = _plugins()
    if name in plugins:
        cls = plugins[name].load()
        if not (isinstance(cls, type) and issubclass(cls, Scheduler)):
            raise InputError("--scheduler", f"plugin {name!r} is not a schedlab Scheduler class")
        return cls
    raise InputError("--scheduler", f"unknown scheduler {name!r} (available: {', '.join(available())})")


def parse_params(cls: type[Scheduler], raw: dict[str, Any] | None) -> SchedulerParams:
    """Validate ``raw`` against ``cls.Params``; the first problem becomes one :class:`InputError` line."""
    try:
        return cls.Params(**(raw or {}))
    except ValidationError as e:
        raise params_error(e, cls.Params, f"scheduler {cls.name!r}") from None
