"""Writing results without ever leaving a half-written file: temp file in the same folder, then rename.

``write_json``, ``write_table`` (Parquet or CSV) and ``write_run`` (a run's
tasks, jobs, utilization and summary into one folder). A reader sees either the
previous complete file or the new complete file, never a partial one.
``pipe_table`` renders already-formatted cells as a Markdown table, for the
reports' computed summaries.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from schedlab.atomic import atomic_write, file_mode

__all__ = ["TABLE_FORMATS", "atomic_write", "file_mode", "json_ready", "pipe_table", "write_json", "write_run", "write_table"]

TABLE_FORMATS = ("parquet", "csv")


def json_ready(obj: Any) -> Any:
    """JSON has no NaN/inf: write them as null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_ready(v) for v in obj]
    if hasattr(obj, "item"):  # numpy scalar
        return json_ready(obj.item())
    return obj


def pipe_table(header: Iterable[Any], rows: Iterable[Iterable[Any]]) -> str:
    """A Markdown pipe table of ``header`` and ``rows`` (cells as ``str`` gives them; a ``|`` inside one is escaped)."""

    def line(cells: Iterable[Any]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    head = list(header)
    return "\n".join([line(head), "|" + "---|" * len(head), *(line(r) for r in rows)])


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    text = json.dumps(json_ready(obj), indent=2, sort_keys=False) + "\n"

    def w(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    return atomic_write(path, w)


def write_table(path: str | os.PathLike, df: Any, fmt: str = "parquet") -> Path:
    """A table as Parquet or CSV. ``df`` is a DataFrame, or anything with ``frames()`` yielding DataFrames
    (such as a run's :class:`~schedlab.metrics.summary.TaskRecords`), written a block at a time: one Parquet
    row group or CSV block per frame, never the whole table in memory."""
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"unknown table format {fmt!r}")
    if not hasattr(df, "frames"):  # a DataFrame (pandas is not imported here: write_json needs none of it)
        if fmt == "parquet":
            return atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))
        return atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))

    def stream(tmp: str) -> None:
        if fmt == "csv":
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                for i, frame in enumerate(df.frames()):
                    frame.to_csv(f, index=False, header=i == 0)
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        writer = None
        try:
            for frame in df.frames():
                if writer is None:
                    table = pa.Table.from_pandas(frame, preserve_index=False)
                    writer = pq.ParquetWriter(tmp, table.schema)
                else:
                    table = pa.Table.from_pandas(frame, schema=writer.schema, preserve_index=False)
                writer.write_table(table)
        finally:
            if writer is not None:
                writer.close()

    return atomic_write(path, stream)


def write_run(
    out_dir: str | os.PathLike,
    tables: dict[str, Any],
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
