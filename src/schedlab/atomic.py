"""Atomic file writes: a temp file in the target folder, then a rename — readers never see half a file.

The bottom of the layering (no schedlab imports), so any layer can write safely.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def file_mode() -> int:
    """The mode a plain new file gets under the current umask (temp files start as 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp_path)`` then rename the temp file onto ``path``; the temp file is removed on failure."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, file_mode())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p
