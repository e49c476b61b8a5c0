"""What every raw-trace converter needs: reading CSV shards fast with ``file:line`` errors, and counting
what is dropped and why.

* :func:`read_csv_shards` streams CSV shards (``.gz`` or plain) as column
  batches through pyarrow's CSV reader (typed columns, one block at a time).
  A row with the wrong number of fields, or a value that does not convert,
  is an :class:`~schedlab.errors.InputError` naming ``file:line``; with
  ``skip_bad`` it is counted and skipped. pyarrow does not say which line a
  conversion failed on, so a shard with such a value is re-read from the
  failing block with Python's ``csv`` module (the slow path, for bad data only).
* :class:`Drops` counts dropped items by reason, for the conversion's report.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from schedlab.errors import InputError

# column kinds: how a CSV field is parsed; "?" suffix = may be empty (None)
KINDS = {"int", "int?", "float?", "str", "str?", "bool?"}


class Batch:
    """Rows of one shard: ``cols[name][i]`` is row ``i``, read from line :meth:`line` of ``path``."""

    __slots__ = ("path", "cols", "line0", "lines")

    def __init__(self, path: Path, cols: dict[str, list], line0: int, lines: list[int] | None = None) -> None:
        self.path, self.cols, self.line0, self.lines = path, cols, line0, lines

    def __getitem__(self, name: str) -> Any:  # a list, or a numpy array (as_arrays)
        return self.cols[name]

    def line(self, i: int) -> int:
        return self.lines[i] if self.lines is not None else self.line0 + i

    def where(self, i: int) -> str:
        return f"{self.path}:{self.line(i)}"


class Drops:
    """Counts of what a conversion left out, by reason (reasons in first-seen order)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, reason: str, n: int = 1) -> None:
        if n:
            v = self.counts.get(reason, 0) + n
            if v:
                self.counts[reason] = v
            else:
                del self.counts[reason]

    def total(self) -> int:
        return sum(self.counts.values())


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa

    base = kind.rstrip("?")
    return {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.int8()}[base]


def read_csv_shards(
    paths: Sequence[Path],
    columns: Sequence[tuple[str, str]],
    *,
    skip_bad: bool,
    bad_rows: Drops,
    use: Sequence[str] | None = None,
    progress: Callable[[int], None] | None = None,
    block_bytes: int = 8 << 20,
    as_arrays: bool = False,
    as_arrow: bool = False,
) -> Iterator[Batch]:
    """Each shard's rows as batches of ``{column: values}`` (``None`` for an empty optional field).

    Every column is parsed and checked; only those in ``use`` (default: all) are handed over, as
    Python lists, or with ``as_arrays`` as numpy arrays (int64; float64 with NaN for an empty
    optional number; object arrays with None for strings), or with ``as_arrow`` as the Arrow
    arrays themselves (typed, nulls for empty fields: string columns stay out of Python objects).
    """
    kinds = dict(columns)
    names = list(use) if use is not None else [n for n, _k in columns]
    for path in paths:
        for b in _read_shard(path, columns, skip_bad, bad_rows, progress, block_bytes, names):
            cols = {n: b.cols[n] for n in names}
            if as_arrow:
                b.cols = {n: _as_arrow(v, kinds[n]) for n, v in cols.items()}
            elif as_arrays:
                b.cols = {n: _as_array(v, kinds[n]) for n, v in cols.items()}
            else:
                b.cols = {n: v if isinstance(v, list) else v.to_pylist() for n, v in cols.items()}
            yield b


def _as_arrow(values: Any, kind: str) -> Any:
    import pyarrow as pa

    return pa.array(values, _arrow_type(kind)) if isinstance(values, list) else values  # lists: the slow path's


def _as_array(values: Any, kind: str) -> Any:
    import numpy as np

    base = kind.rstrip("?")
    if base == "str":
        return np.asarray(values if isinstance(values, list) else values.to_pylist(), dtype=object)
    if isinstance(values, list):
        if kind.endswith("?"):
            return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
        return np.asarray(values, dtype=np.int64 if base in ("int", "bool") else np.float64)
    if kind.endswith("?"):
        return values.to_numpy(zero_copy_only=False).astype(np.float64)  # nulls become NaN
    return values.to_numpy(zero_copy_only=False)


def _read_shard(
    path: Path, columns: Sequence[tuple[str, str]], skip_bad: bool, bad_rows: Drops, progress: Callable[[int], None] | None, block_bytes: int, use: list[str]
) -> Iterator[Batch]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [n for n, _k in columns]
    invalid: list[tuple[int | None, str]] = []
    skipped: list[int] = []  # lines pyarrow skipped (skip_bad), not yet passed by the batches yielded

    def on_invalid(row: Any) -> str:
        if skip_bad:
            if row.number is not None:
                skipped.append(row.number)
            bad_rows.add("rows with the wrong number of fields")
            return "skip"
        invalid.append((row.number, f"expected {row.expected_columns} fields, got {row.actual_columns}"))
        return "error"

    read = pacsv.ReadOptions(column_names=names, block_size=block_bytes, use_threads=False)
    parse = pacsv.ParseOptions(invalid_row_handler=on_invalid)
    convert = pacsv.ConvertOptions(
        column_types={n: _arrow_type(k) for n, k in columns},
        null_values=[""],
        strings_can_be_null=True,
        quoted_strings_can_be_null=True,
    )
    rows_done = 0
    len_passed = 0  # skipped lines before the next batch

    def slow_path() -> Iterator[Batch]:
        """From the first line not yet handed over, with Python's csv module: it names (or skips) the bad line."""
        bad_rows.add("rows with the wrong number of fields", -len(skipped))  # the re-read counts these again
        return _fallback(path, columns, rows_done + len_passed, skip_bad, bad_rows, progress, invalid)

    try:
        reader = pacsv.open_csv(str(path), read_options=read, parse_options=parse, convert_options=convert)
    except (pa.ArrowInvalid, OSError, EOFError, gzip.BadGzipFile):
        yield from slow_path()
        return
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except (pa.ArrowInvalid, OSError, EOFError, gzip.BadGzipFile):
            yield from slow_path()
            return
        if any(batch.column(n).null_count for n, k in columns if not k.endswith("?")):  # an empty required field
            yield from slow_path()
            return
        line0 = rows_done + len_passed + 1
        lines: list[int] | None = None
        if skipped:  # the batch's rows are the lines from line0 on, less those skipped
            lines, line = [], line0
            skipped.sort()
            k = 0
            while len(lines) < batch.num_rows:
                if k < len(skipped) and skipped[k] == line:
                    k += 1
                else:
                    lines.append(line)
                line += 1
            len_passed += k
            del skipped[:k]
        rows_done += batch.num_rows
        if progress is not None:
            progress(batch.num_rows)
        yield Batch(path, {n: batch.column(n) for n in use}, line0, lines)


def _fallback(
    path: Path,
    columns: Sequence[tuple[str, str]],
    lines_done: int,
    skip_bad: bool,
    bad_rows: Drops,
    progress: Callable[[int], None] | None,
    invalid: list[tuple[int | None, str]],
) -> Iterator[Batch]:
    """Re-read the shard from line ``lines_done + 1`` with Python's csv module, to name the bad line.

    (Every column is handed over here; callers read only those they asked for.)"""
    if invalid and not skip_bad:
        line, what = invalid[0]
        raise InputError(f"{path}:{line if line is not None else lines_done + 1}", what)
    names = [n for n, _k in columns]
    parsers = [_parser(k) for _n, k in columns]
    out: dict[str, list] = {n: [] for n in names}
    lines: list[int] = []
    try:
        with _open_text(path) as f:
            for lineno, row in enumerate(csv.reader(f), start=1):
                if lineno <= lines_done:
                    continue
                if not row:
                    continue
                try:
                    if len(row) != len(columns):
                        raise ValueError(f"expected {len(columns)} fields, got {len(row)}")
                    values = [p(v, n) for p, v, n in zip(parsers, row, names, strict=True)]
                except ValueError as e:
                    if skip_bad:
                        bad_rows.add("rows with the wrong number of fields" if "fields" in str(e) else "rows with a malformed value")
                        continue
                    raise InputError(f"{path}:{lineno}", str(e)) from None
                for n, v in zip(names, values, strict=True):
                    out[n].append(v)
                lines.append(lineno)
                if len(lines) >= 65536:
                    if progress is not None:
                        progress(len(lines))
                    yield Batch(path, out, lines[0], lines)
                    out, lines = {n: [] for n in names}, []
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as e:
        raise InputError(str(path), f"unreadable data: {e}") from None
    if lines:
        if progress is not None:
            progress(len(lines))
        yield Batch(path, out, lines[0], lines)


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _parser(kind: str) -> Callable[[str, str], Any]:
    optional = kind.endswith("?")
    base = kind.rstrip("?")

    def parse(text: str, name: str) -> Any:
        if text == "":
            if optional:
                return None
            raise ValueError(f"{name} is missing")
        try:
            if base == "int":
                return int(text)
            if base == "float":
                return float(text)
            if base == "bool":
                return int(text)
        except ValueError:
            raise ValueError(f"{name} is not {'an integer' if base != 'float' else 'a number'}: {text!r}") from None
        return text

    return parse
