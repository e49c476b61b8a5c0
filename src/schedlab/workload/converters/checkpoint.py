"""Restartable conversions: a converter's state after each whole shard, kept in a work folder.

A full production trace is hundreds of shards and tens of minutes of
conversion; a crash, a kill or a malformed row near the end (without
``--skip-bad``) would otherwise cost the whole run. Given a work folder
(``trace convert --work-dir DIR``) a converter keeps its spilled runs there
and, after a shard of its main table (at most one a minute), a checkpoint: its state as numpy
arrays and a few JSON values, and how many shards are done. A rerun with the
same inputs and options and the same folder restores the last checkpoint and
reads on from the next shard, so a bad shard can be fixed and the conversion
resumed. The shards already done must be unchanged (path, size, modification
time); anything else about the conversion differing is refused, naming the
folder. The output is still written only at the end, atomically; the folder
is removed once the output is written.

Without a work folder the converter works in a temporary folder and keeps no
checkpoints.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.atomic import atomic_write
from schedlab.errors import InputError
from schedlab.workload.converters import RawJob
from schedlab.workload.converters.common import Drops

CHECKPOINT = "checkpoint.json"
MARK = ".schedlab-conversion"  # a work folder's mark: only a folder with it is ever removed
EVERY_S = 60.0  # at most one checkpoint a minute


def _stamp(p: Path) -> list[Any]:
    st = p.stat()
    return [str(p), st.st_size, st.st_mtime_ns]


class WorkDir:
    """Where a conversion spills, and (when the user named it) its checkpoints.

    ``what`` identifies the conversion (format, options, tables' shards): a folder holding another's
    checkpoints is refused. ``shards`` are the main table's shards, in reading order."""

    def __init__(
        self,
        path: str | os.PathLike | None,
        what: dict[str, Any],
        shards: Sequence[Path],
        prefix: str = "schedlab-convert-",
        every_s: float = EVERY_S,
        spill_dir: str | os.PathLike | None = None,
    ) -> None:
        self.keeps = path is not None
        self.every_s = every_s
        self._last = time.monotonic()
        self.shards = list(shards)
        self.what = what
        if path is None:  # a temporary folder (in ``spill_dir``, if given)
            if spill_dir is not None:
                os.makedirs(spill_dir, exist_ok=True)
            self._tmp: tempfile.TemporaryDirectory[str] | None = tempfile.TemporaryDirectory(prefix=prefix, dir=spill_dir)
            self.dir = Path(self._tmp.name)
        else:
            self._tmp = None
            self.dir = Path(path)
            if self.dir.exists() and not self.dir.is_dir():
                raise InputError(str(path), "--work-dir is a file, not a folder")
            # the folder is removed once the output is written: it must hold nothing but a conversion's work
            if self.dir.is_dir() and any(self.dir.iterdir()) and not (self.dir / MARK).exists():
                raise InputError(str(path), "--work-dir must be a new or empty folder, or one a conversion left its work in (it is removed when the conversion is done)")
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / MARK).touch()

    def load(self) -> tuple[int, dict[str, np.ndarray], dict[str, Any]] | None:
        """The last checkpoint (shards done, arrays, values), or None; a foreign one is an error."""
        if not self.keeps or not (self.dir / CHECKPOINT).exists():
            return None
        where = str(self.dir)
        try:
            meta = json.loads((self.dir / CHECKPOINT).read_text())
            done = int(meta["shards_done"])
            if meta["what"] != json.loads(json.dumps(self.what)):
                raise InputError(where, "holds the checkpoints of another conversion (other format, options or tables): remove it or give another --work-dir")
            stamps = meta["shards"]
            if [s[0] for s in stamps] != [str(p) for p in self.shards]:
                raise InputError(where, "holds the checkpoints of a conversion of other shards: remove it or give another --work-dir")
            for p, s in zip(self.shards[:done], stamps[:done], strict=True):
                if _stamp(p) != s:
                    raise InputError(where, f"{p} changed after it was converted: remove the folder to convert from the start")
            with np.load(self.dir / meta["arrays"], allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            return done, arrays, meta["values"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputError(where, f"unreadable checkpoint ({e}): remove the folder to convert from the start") from None

    def due(self) -> bool:
        """Whether a checkpoint is due: ``every_s`` seconds since the last (a checkpoint writes the converter's
        whole state, tens of MB on a full trace, so not after every one of hundreds of shards)."""
        return self.keeps and time.monotonic() - self._last >= self.every_s

    def save(self, shards_done: int, arrays: dict[str, np.ndarray], values: dict[str, Any]) -> None:
        """A checkpoint after ``shards_done`` shards (nothing without a named folder); the previous one stays
        valid until this one is complete."""
        if not self.keeps:
            return
        self._last = time.monotonic()
        name = f"state-{shards_done:06d}.npz"
        atomic_write(self.dir / name, lambda tmp: _savez(tmp, arrays))
        old = (self.dir / CHECKPOINT).exists() and json.loads((self.dir / CHECKPOINT).read_text()).get("arrays")
        meta = {"shards_done": shards_done, "what": self.what, "shards": [_stamp(p) if k < shards_done else [str(p)] for k, p in enumerate(self.shards)],
                "arrays": name, "values": values}  # fmt: skip
        atomic_write(self.dir / CHECKPOINT, lambda tmp: Path(tmp).write_text(json.dumps(meta)))
        if old and old != name:
            (self.dir / old).unlink(missing_ok=True)

    def finish(self) -> None:
        """The output is written: the folder's work is done."""
        if self._tmp is not None:
            self._tmp.cleanup()
        elif (self.dir / MARK).exists():
            shutil.rmtree(self.dir, ignore_errors=True)

    def abandon(self) -> None:
        """The conversion failed: a temporary folder goes, a named one stays for the rerun."""
        if self._tmp is not None:
            self._tmp.cleanup()


def work_for(job: RawJob, fmt: str, main: str, **settings: Any) -> WorkDir:
    """The work folder of ``job``'s conversion, checkpointed after each shard of its ``main`` table; what
    identifies the conversion is the format, the job's settings and options, its other tables' shards and the
    converter's own ``settings``."""
    what = {"format": fmt, "scale_requests": job.scale_requests, "skip_bad": job.skip_bad, "options": dict(job.options),
            "tables": {t: [str(q) for q in ps] for t, ps in sorted(job.tables.items()) if t != main}, **settings}  # fmt: skip
    return WorkDir(job.work_dir, what, job.tables[main], prefix=f"schedlab-{fmt}-", every_s=job.checkpoint_every_s, spill_dir=job.spill_dir)


def counts_state(drops: Drops, bad_rows: Drops) -> dict[str, Any]:
    """A conversion's drop and malformed-row counts, for a checkpoint's values."""
    return {"drops": dict(drops.counts), "bad_rows": dict(bad_rows.counts)}


def restore_counts(drops: Drops, bad_rows: Drops, values: dict[str, Any]) -> None:
    """Add a checkpoint's counts (:func:`counts_state`) back."""
    for target, saved in ((drops, values["drops"]), (bad_rows, values["bad_rows"])):
        for k, v in saved.items():
            target.add(k, v)


def _savez(tmp: str, arrays: dict[str, np.ndarray]) -> None:
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]  # (no array is named allow_pickle)
