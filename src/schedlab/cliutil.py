"""Small helpers shared by the command-line front ends (the main CLI and its sub-apps)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from schedlab.errors import InputError


def parse_key_values(items: list[str] | None, option: str = "--param") -> dict[str, Any]:
    """``KEY=VALUE`` strings → dict; values are read as JSON when they parse (numbers, lists, booleans)."""
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise InputError(option, f"expected KEY=VALUE, got {item!r}")
        params[key.strip().replace("-", "_")] = json_or_text(raw)
    return params


def json_or_text(raw: str) -> Any:
    """A command-line value as JSON when it parses (numbers, lists, booleans), else as the text itself."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


# -- outputs, checked when the options are parsed (before any work) ----------------------------------
def _nearest_existing(p: Path) -> Path:
    d = p
    while not d.exists() and d != d.parent:
        d = d.parent
    return d


def _writable_folder(folder: Path, option: str, shown: Path) -> None:
    """``folder`` exists or can be created, and takes new files (``shown`` is the user's path, for the message)."""
    base = _nearest_existing(folder)
    if not base.is_dir():
        raise InputError(option, f"{shown}: {base} is not a folder")
    try:  # a real probe: permission bits say nothing to root, nor about read-only mounts
        with tempfile.TemporaryFile(dir=base):
            pass
    except OSError as e:
        raise InputError(option, f"{shown}: cannot write in {base} ({e.strerror or e})") from None


def check_output_file(path: Path | None, option: str) -> Path | None:
    """An output file: not a folder, and its folder can be created or written."""
    if path is None:
        return None
    if path.is_dir():
        raise InputError(option, f"{path} is a folder (give a file name)")
    _writable_folder(path.parent, option, path)
    return path


def check_output_dir(path: Path | None, option: str) -> Path | None:
    """An output folder: a folder or nothing yet, that can be created or written."""
    if path is None:
        return None
    if path.exists() and not path.is_dir():
        raise InputError(option, f"{path} exists and is not a folder")
    _writable_folder(path, option, path)
    return path


def output_file(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer callback for an output-file option (``callback=output_file``)."""
    return check_output_file(value, _option_name(param))


def output_dir(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer callback for an output-folder option (``callback=output_dir``)."""
    return check_output_dir(value, _option_name(param))


def parse_seconds(text: str, option: str) -> float:
    """A duration: ``5``, ``5s``, ``500ms`` or ``2m`` -> seconds (one clear error otherwise)."""
    t = str(text).strip().lower()
    for unit, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0)):
        if t.endswith(unit):
            t, factor = t[: -len(unit)], scale
            break
    else:
        factor = 1.0
    try:
        value = float(t) * factor
    except ValueError:
        raise InputError(option, f"expected a duration such as 5, 5s, 500ms or 2m, got {text!r}") from None
    if value != value or value < 0:
        raise InputError(option, f"must be a duration >= 0, got {text!r}")
    return value


def seconds(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> float | None:
    """Typer callback for a duration option (``callback=seconds``): 5, 5s, 500ms, 2m."""
    return None if value is None else parse_seconds(value, _option_name(param))


def _option_name(param: Any) -> str:
    opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    return opts[0] if opts else str(getattr(param, "name", "output"))


def usable_jobs(jobs: int | None, option: str = "--jobs", runs: int | None = None) -> int:
    """Processes for a local pool: at least 1, refused above 4 per CPU (more only contend for the same cores)."""
    cpus = os.cpu_count() or 1
    if jobs is None:
        jobs = cpus
    if jobs < 1:
        raise InputError(option, f"must be >= 1, got {jobs}")
    if jobs > 4 * cpus:
        raise InputError(option, f"{jobs} processes on a machine with {cpus} CPUs: at most {4 * cpus} are of any use")
    return jobs if runs is None else max(1, min(jobs, runs))


# -- tables -------------------------------------------------------------------------------------
def fmt(x: Any) -> str:
    """A number as tables show it: integers without a point, others with 4 significant digits, nothing as '-'."""
    if x is None:
        return "-"
    if isinstance(x, float):
        if x != x:
            return "-"
        if x == int(x) and abs(x) < 1e9:
            return str(int(x))
        return f"{x:.4g}"
    return str(x)


def summary_table(s: dict[str, Any]) -> Table:
    """A run summary's JRT delay, JRT and allocation time (with its components) as one table (simulated or real runs)."""
    t = Table(title=f"{s['scheduler']} on {s['trace']} — {s['workers']} workers, seed {s['seed']}", title_justify="left")
    cols = ("count", "mean", "p50", "p90", "p99", "p999", "max")
    t.add_column("seconds")
    for c in cols:
        t.add_column(c, justify="right")
    rows = [("jrt_delay", s["jrt_delay"])]
    rows += [(f"  {k}", s[k]) for k in ("jrt_delay_short", "jrt_delay_long") if s.get(k, {}).get("count")]
    rows += [("jrt", s["jrt"]), ("allocation_time", s["allocation_time"])]
    rows += [(f"  {k}", v) for k, v in s["allocation_components"].items()]
    for name, st in rows:
        t.add_row(name, *(fmt(st.get(c)) for c in cols))
    return t
