"""What every raw-trace converter needs: reading CSV and JSON-lines shards fast with ``file:line`` errors,
and counting what is dropped and why.

* :func:`read_csv_shards` streams CSV shards (``.gz`` or plain) as column
  batches through pyarrow's CSV reader (typed columns, one block at a time).
  A row with the wrong number of fields, or a value that does not convert,
  is an :class:`~schedlab.errors.InputError` naming ``file:line``; with
  ``skip_bad`` it is counted and skipped. pyarrow does not say which line a
  conversion failed on, so a shard with such a value is re-read from the
  failing block with Python's ``csv`` module (the slow path, for bad data only).
* :func:`read_json_shards` streams JSON-lines shards (BigQuery's export: one
  object per line, ``.gz`` or plain) as Arrow column batches, a block of
  lines at a time through pyarrow's JSON parser. A value may be written as a
  JSON number or as a string (BigQuery writes INT64 as ``"123"``); a block
  that pyarrow cannot read is re-read line by line with Python's ``json``
  module, which names (or, with ``skip_bad``, counts and skips) the bad line.
* :func:`enum_codes`: an enumeration written as integers, integers in strings
  or names, as integer codes.
* :class:`Drops` counts dropped items by reason, for the conversion's report.

Blocks are 2 MB: pyarrow's streaming reader decompresses and parses ahead of
its consumer, and with 8 MB blocks what it held ahead grew with the shard's
size (a 4.3 M-row gzipped shard had 170 MB parsed ahead); with 2 MB blocks a
converter's peak memory stays near flat in the input's size at the same speed.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from schedlab.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

# column kinds: how a CSV field is parsed; "?" suffix = may be empty (None)
KINDS = {"int", "int?", "float?", "str", "str?", "bool?"}


class Batch:
    """Rows of one shard: ``cols[name][i]`` is row ``i``, read from line :meth:`line` of ``path``."""

    __slots__ = ("path", "cols", "line0", "lines")

    def __init__(self, path: Path, cols: dict[str, Any], line0: int, lines: list[int] | None = None) -> None:
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
    block_bytes: int = 2 << 20,
    as_arrays: bool = False,
    delimiter: str = ",",
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
        for b in _read_shard(path, columns, skip_bad, bad_rows, progress, block_bytes, names, delimiter):
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
    path: Path, columns: Sequence[tuple[str, str]], skip_bad: bool, bad_rows: Drops, progress: Callable[[int], None] | None, block_bytes: int, use: list[str],
    delimiter: str = ",",
) -> Iterator[Batch]:  # fmt: skip
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
    parse = pacsv.ParseOptions(delimiter=delimiter, invalid_row_handler=on_invalid)
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
        return _fallback(path, columns, rows_done + len_passed, skip_bad, bad_rows, progress, invalid, delimiter)

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
    delimiter: str = ",",
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
            for lineno, row in enumerate(csv.reader(f, delimiter=delimiter), start=1):
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


# -- JSON lines ------------------------------------------------------------------------------------
_INT = re.compile(r"-?[0-9]+")  # what pyarrow casts from a string to int64


def read_json_shards(
    paths: Sequence[Path],
    schema: pa.Schema,
    *,
    skip_bad: bool,
    bad_rows: Drops,
    progress: Callable[[int], None] | None = None,
    block_bytes: int = 16 << 20,
) -> Iterator[Batch]:
    """Each JSON-lines shard's rows as batches of ``{field: pyarrow.Array}`` in ``schema`` (a missing field or
    ``null`` is null; fields not in ``schema`` are ignored).

    ``schema`` holds int64, float64, bool and string fields, and structs and lists of them. BigQuery's export
    writes INT64 as strings; pyarrow's JSON parser takes a column as numbers or as strings, not both
    (an int64 column refuses ``"123"``, a string column refuses ``123``), so each block is parsed with
    the representation its first lines use (and earlier blocks used) and cast to ``schema``: an int64
    or float64 field may be written either way, a string field as a string or an integer. A block the
    parser or the cast refuses (bad JSON, a representation that changes within the block, a value that
    does not convert) is re-read line by line with Python's ``json`` module, which applies the same
    rules and names the bad line as ``file:line`` (with ``skip_bad``: counts and skips it). Blank lines
    are skipped, and counted in line numbers."""
    kinds: dict[str, str] = {}  # a scalar's path -> how the shards write it ("str", "int", "float")
    for path in paths:
        line = 1
        for chunk in _json_chunks(path, block_bytes):
            lines_in = chunk.count(b"\n") + (not chunk.endswith(b"\n"))
            batch, rows = _json_block(path, chunk, line, lines_in, schema, kinds, skip_bad, bad_rows)
            line += lines_in
            if rows:
                if progress is not None:
                    progress(rows)
                yield batch


def _json_chunks(path: Path, block_bytes: int) -> Iterator[bytes]:
    """The shard's text in blocks of whole lines (of about ``block_bytes``), decompressed by Arrow."""
    import pyarrow as pa

    try:
        with pa.input_stream(str(path), compression="detect") as f:
            rest = b""
            while True:
                data = f.read(block_bytes)
                if not data:
                    break
                data = rest + data
                cut = data.rfind(b"\n") + 1
                if cut:
                    yield data[:cut]
                rest = data[cut:]
            if rest:
                yield rest
    except (pa.ArrowException, OSError, EOFError) as e:
        raise InputError(str(path), f"unreadable data: {e}") from None


def _json_block(
    path: Path, chunk: bytes, line0: int, lines_in: int, schema: pa.Schema, kinds: dict[str, str], skip_bad: bool, bad_rows: Drops
) -> tuple[Batch, int]:
    """The block's rows (and how many), through pyarrow, or line by line where pyarrow refuses it."""
    import pyarrow as pa
    import pyarrow.json as pj

    _sniff(chunk, schema, kinds)
    parse = pa.schema([pa.field(f.name, _parse_type(f.type, f.name, kinds)) for f in schema])
    try:
        table = pj.read_json(
            pa.py_buffer(chunk),
            read_options=pj.ReadOptions(use_threads=True, block_size=1 << 20),
            parse_options=pj.ParseOptions(explicit_schema=parse, unexpected_field_behavior="ignore"),
        )
        if parse != schema:
            table = table.cast(schema)
    except pa.ArrowException:
        return _json_lines(path, chunk, line0, schema, kinds, skip_bad, bad_rows)
    lines = None
    if table.num_rows != lines_in:  # blank lines: pyarrow skips them
        lines = [line0 + k for k, raw in enumerate(chunk.split(b"\n")) if raw.strip()]
    return Batch(path, {n: table.column(n).combine_chunks() for n in schema.names}, line0, lines), table.num_rows


def _sniff(chunk: bytes, schema: pa.Schema, kinds: dict[str, str], lines: int = 16) -> None:
    """How the block's first lines write each scalar (into ``kinds``)."""
    start = 0
    for _ in range(lines):
        end = chunk.find(b"\n", start)
        raw = chunk[start:] if end < 0 else chunk[start:end]
        try:
            obj = json.loads(raw) if raw.strip() else None
            if isinstance(obj, dict):
                for f in schema:
                    _json_value(obj.get(f.name), f.type, f.name, f.name, kinds)
        except ValueError:
            pass
        if end < 0:
            return
        start = end + 1


def _parse_type(t: pa.DataType, path: str, kinds: dict[str, str]) -> pa.DataType:
    """The type pyarrow parses a field as: the target's, with each scalar as the shards write it (an
    int64 not seen yet as a string: BigQuery's way)."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _parse_type(f.type, f"{path}.{f.name}", kinds)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(_parse_type(t.value_type, f"{path}[]", kinds))
    kind = kinds.get(path)
    if pa.types.is_integer(t):
        return pa.string() if kind in (None, "str") else t
    if pa.types.is_floating(t):
        return pa.string() if kind == "str" else t
    if pa.types.is_boolean(t):
        return pa.string() if kind == "str" else pa.int64() if kind == "int" else t
    return pa.int64() if kind == "int" else t


def _json_lines(path: Path, chunk: bytes, line0: int, schema: pa.Schema, kinds: dict[str, str], skip_bad: bool, bad_rows: Drops) -> tuple[Batch, int]:
    """The slow path: the block line by line with Python's ``json`` module, naming (or skipping) a bad line."""
    import pyarrow as pa

    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    for k, raw in enumerate(chunk.split(b"\n")):
        if not raw.strip():
            continue
        where = f"{path}:{line0 + k}"
        try:
            obj = json.loads(raw)
        except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
            if skip_bad:
                bad_rows.add("rows that are not JSON objects")
                continue
            why = f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else str(e)
            raise InputError(where, f"not valid JSON ({why})") from None
        if not isinstance(obj, dict):
            if skip_bad:
                bad_rows.add("rows that are not JSON objects")
                continue
            raise InputError(where, f"not a JSON object: {raw[:60].decode(errors='replace')!r}")
        try:
            rows.append({f.name: _json_value(obj.get(f.name), f.type, f.name, f.name, kinds) for f in schema})
        except ValueError as e:
            if skip_bad:
                bad_rows.add("rows with a malformed value")
                continue
            raise InputError(where, str(e)) from None
        lines.append(line0 + k)
    table = pa.Table.from_pylist(rows, schema=schema)
    return Batch(path, {n: table.column(n).combine_chunks() for n in schema.names}, line0, lines), len(rows)


def _json_value(v: Any, t: pa.DataType, name: str, path: str, kinds: dict[str, str]) -> Any:
    """A JSON value as the field's type (the rules pyarrow's parse and cast follow); records how it was written."""
    import pyarrow as pa

    if v is None:
        return None
    if pa.types.is_struct(t):
        if not isinstance(v, dict):
            raise ValueError(f"{name} is not an object: {v!r}")
        return {f.name: _json_value(v.get(f.name), f.type, f"{name}.{f.name}", f"{path}.{f.name}", kinds) for f in t}
    if pa.types.is_list(t):
        if not isinstance(v, list):
            raise ValueError(f"{name} is not a list: {v!r}")
        return [_json_value(x, t.value_type, f"{name}[{i}]", f"{path}[]", kinds) for i, x in enumerate(v)]
    kind = "str" if isinstance(v, str) else "float" if isinstance(v, float) else "int" if isinstance(v, int) and not isinstance(v, bool) else None
    if kind is not None:
        kinds[path] = kind
    if pa.types.is_boolean(t):  # true/false, or as BigQuery may write them: "true"/"false", 1/0
        if isinstance(v, bool):
            return v
        if kind == "str" and v.lower() in ("true", "false", "1", "0"):
            return v.lower() in ("true", "1")
        if kind == "int" and v in (0, 1):
            return bool(v)
        raise ValueError(f"{name} is not a boolean: {v!r}")
    if pa.types.is_integer(t):
        if kind == "int" or (kind == "str" and _INT.fullmatch(v)):
            x = int(v)
            if -(1 << 63) <= x < 1 << 63:
                return x
        raise ValueError(f"{name} is not an integer: {v!r}")
    if pa.types.is_floating(t):
        if kind in ("int", "float"):
            return float(v)
        if kind == "str":
            try:
                return float(v)
            except ValueError:
                pass
        raise ValueError(f"{name} is not a number: {v!r}")
    if kind == "str":
        return v
    if kind == "int":
        return str(v)
    raise ValueError(f"{name} is not a string: {v!r}")


def enum_codes(values: pa.Array, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """An enumeration as ``(codes, null)``: a value written as an integer (or one in a string) is itself, a
    name (any case) its index in ``names``; anything else is -1, and so is null (``null`` tells them apart)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    null = values.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_integer(values.type):
        return values.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64), null
    enc = pc.dictionary_encode(values)
    lookup = {n.upper(): i for i, n in enumerate(names)}
    table = np.asarray([_enum_value(str(s), lookup) for s in enc.dictionary.to_pylist()] + [-1], np.int64)
    return table[enc.indices.fill_null(len(table) - 1).to_numpy(zero_copy_only=False)], null


def _enum_value(s: str, lookup: dict[str, int]) -> int:
    if _INT.fullmatch(s):
        x = int(s)
        return x if -(1 << 63) <= x < 1 << 63 else -1
    return lookup.get(s.upper(), -1)
