"""Lazy package exports (PEP 562): a package names what it exports and where, and the
submodule is imported on first use, so ``import schedlab.X`` and the CLI stay quick to start
(pandas, scipy and matplotlib load only when something needs them)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """``__all__`` and a module ``__getattr__`` for ``package``; ``exports`` maps a name to its submodule."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return sorted(exports), __getattr__
