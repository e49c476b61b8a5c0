"""A service process's wall clock, which a fault campaign can set off by some seconds (clock skew).

Linux time namespaces shift only the monotonic and boot-time clocks; a
process's ``time.time()`` cannot be moved per process without moving the
machine's. Every stamp the services compare across processes — signatures'
times (:mod:`~.auth`), requests' first send times and LMs' takeover times
(:mod:`~.links`), launch deadlines (:mod:`~.failures`), records — comes
from the runtime's clock, so the skew is injected there: :class:`WallClock`
is ``time.time()`` plus an offset read from a file (``<role>-<id>.clock`` in
the cluster's run folder, a number of seconds; no file, no skew), looked at
at most once a second. ``schedlab chaos --clock-skew`` writes and removes
that file.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

CHECK_EVERY = 1.0  # seconds between looks at the offset file


class WallClock:
    """``time.time()`` + the offset in ``path`` (0 without a file)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.offset = 0.0
        self._looked = float("-inf")
        self._mtime: float | None = None

    def __call__(self) -> float:
        now = time.time()
        if self.path is not None and now - self._looked >= CHECK_EVERY:
            self._looked = now
            self._reload()
        return now + self.offset

    def _reload(self) -> None:
        assert self.path is not None
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            self.offset, self._mtime = 0.0, None
            return
        if mtime == self._mtime:
            return
        self._mtime = mtime
        with contextlib.suppress(OSError, ValueError):
            self.offset = float(self.path.read_text().strip() or 0.0)


def set_skew(path: str | Path, seconds: float) -> None:
    """Set a process's clock ``seconds`` off (0 removes the skew)."""
    p = Path(path)
    if seconds == 0:
        p.unlink(missing_ok=True)
        return
    tmp = p.with_suffix(".clock.tmp")
    tmp.write_text(f"{seconds!r}\n")
    tmp.replace(p)


def clock_file(cluster_file: str | os.PathLike, role: str, ident: int) -> Path:
    """Where the offset of component ``role ident``'s clock lives: its cluster's run folder."""
    from schedlab.services.clusterfile import run_dir

    return run_dir(cluster_file) / f"{role}-{ident}.clock"
