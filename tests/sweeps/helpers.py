"""Helpers for the sweeps tests: a point function that counts its calls."""

from __future__ import annotations

from pathlib import Path


def square_point(x: int, calls: str, fail: bool = False) -> dict:
    """A point's function for the runner's tests: records each call as a file in ``calls``, fails on request."""
    import math
    import os
    import uuid

    Path(calls, f"{x}-{os.getpid()}-{uuid.uuid4().hex}").touch()
    if fail:
        raise ValueError(f"point {x} fails")
    return {"x": x, "square": x * x, "missing": math.nan, "pair": (x, -x)}
