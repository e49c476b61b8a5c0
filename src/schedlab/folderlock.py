"""One writer per results folder: an advisory lock held for the whole of a sweep.

Two sweeps writing one folder would each rewrite its results from their own
view and silently keep only one's rows; the second is refused at once instead
(POSIX ``flock`` on ``<folder>/.lock``, released by the kernel if the holder
dies, so a killed sweep never leaves the folder locked). Where ``fcntl`` is
missing (not POSIX) there is no lock.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from schedlab.errors import InputError


@contextlib.contextmanager
def exclusive_folder(root: str | os.PathLike) -> Iterator[None]:
    """Hold ``root`` (created if needed) for this process; InputError if another holds it."""
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl  # POSIX only
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(folder / ".lock", "a+") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(str(folder), "another sweep is writing to this results folder") from None
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
