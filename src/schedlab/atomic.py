"""Atomic file writes: a temp file in the target folder, then a rename — readers never see half a file.

The bottom of the layering (no schedlab imports), so any layer can write safely.

``all_or_nothing()`` makes every write inside it part of one transaction: the
temp files are renamed onto their targets only when the block ends without an
error; on an error every temp file and every folder the block created is
removed, so a command either leaves all of its outputs or none — except if a
final rename fails (a same-folder rename, next to never), when the error names
the files already written. (Sweeps do not
use it: their store keeps each finished run, which is what makes them
resumable.)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path

# (staged (temp, target) pairs, folders created) of the innermost all_or_nothing block
_TRANSACTION: ContextVar[tuple[list[tuple[str, Path]], list[Path]] | None] = ContextVar("schedlab_outputs", default=None)


def file_mode() -> int:
    """The mode a plain new file gets under the current umask (temp files start as 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _make_parents(folder: Path, created: list[Path] | None) -> None:
    missing = []
    d = folder
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    folder.mkdir(parents=True, exist_ok=True)
    if created is not None:
        created.extend(reversed(missing))


def atomic_write(path: str | os.PathLike, write: Callable[[str], object]) -> Path:
    """Call ``write(tmp_path)`` then rename the temp file onto ``path``; the temp file is removed on failure.

    ``write``'s return value is ignored (so ``Path.write_text`` and the like can be passed as they are).

    Inside :func:`all_or_nothing` the rename waits for the end of the block.
    An OSError names ``path`` (the user's), not the temp file.
    """
    p = Path(path)
    tx = _TRANSACTION.get()
    tmp = None
    try:
        _make_parents(p.parent, None if tx is None else tx[1])
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
        os.close(fd)
        write(tmp)
        os.chmod(tmp, file_mode())
        if tx is None:
            os.replace(tmp, p)
        else:
            tx[0].append((tmp, p))
    except BaseException as e:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(e, OSError) and e.errno is not None:
            raise OSError(e.errno, e.strerror or str(e), str(p)) from None  # the errno's own subclass
        raise
    return p


@contextlib.contextmanager
def all_or_nothing() -> Iterator[None]:
    """Every :func:`atomic_write` in the block lands together at its end, or none does."""
    staged: list[tuple[str, Path]] = []
    created: list[Path] = []
    token = _TRANSACTION.set((staged, created))
    try:
        yield
        _TRANSACTION.reset(token)
        token = None
        done: list[Path] = []
        for tmp, target in staged:
            try:
                os.replace(tmp, target)
            except OSError as e:  # same-folder renames all but never fail; if one does, say what landed
                landed = f"; already written: {', '.join(map(str, done))}" if done else ""
                raise OSError(e.errno, f"{e.strerror or e}{landed}", str(target)) from None
            done.append(target)
    except BaseException:
        for tmp, _target in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        for d in reversed(created):
            with contextlib.suppress(OSError):
                d.rmdir()  # only if empty: never a folder that holds anything else
        raise
    finally:
        if token is not None:
            _TRANSACTION.reset(token)
