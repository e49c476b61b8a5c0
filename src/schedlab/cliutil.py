"""Small helpers shared by the command-line front ends (the main CLI and its sub-apps)."""

from __future__ import annotations

import json
from typing import Any

from schedlab.errors import InputError


def parse_key_values(items: list[str] | None, option: str = "--param") -> dict[str, Any]:
    """``KEY=VALUE`` strings → dict; values are read as JSON when they parse (numbers, lists, booleans)."""
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise InputError(option, f"expected KEY=VALUE, got {item!r}")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        params[key.strip().replace("-", "_")] = value
    return params
