"""Writing results without ever leaving a half-written file: temp file in the same folder, then rename.

``write_json``, ``write_table`` (Parquet or CSV) and ``write_run`` (a run's
tasks, jobs, utilization and summary into one folder). A reader sees either the
previous complete file or the new complete file, never a partial one.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

TABLE_FORMATS = ("parquet", "csv")

# mkstemp creates files readable by their owner only; a written file gets the usual umask-based mode.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp_path)`` then rename the temp file onto ``path``; the temp file is removed on failure."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)
        write(tmp)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p


def _clean(obj: Any) -> Any:
    """JSON has no NaN/inf: write them as null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item"):  # numpy scalar
        return _clean(obj.item())
    return obj


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    text = json.dumps(_clean(obj), indent=2, sort_keys=False) + "\n"

    def w(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    return atomic_write(path, w)


def write_table(path: str | os.PathLike, df: pd.DataFrame, fmt: str = "parquet") -> Path:
    if fmt == "parquet":
        return atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))
    if fmt == "csv":
        return atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))
    raise ValueError(f"unknown table format {fmt!r}")


def write_run(
    out_dir: str | os.PathLike,
    tables: dict[str, pd.DataFrame],
    summary: dict[str, Any],
    formats: Iterable[str] = ("parquet",),
) -> list[Path]:
    """``<name>.<fmt>`` for each table and format, then ``summary.json`` last (its presence marks a complete run)."""
    d = Path(out_dir)
    written = []
    for fmt in formats:
        for name, df in tables.items():
            written.append(write_table(d / f"{name}.{fmt}", df, fmt))
    written.append(write_json(d / "summary.json", summary))
    return written
