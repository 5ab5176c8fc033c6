"""Atomic file writes: every file loopsim writes goes through :func:`write_atomic`."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` atomically; return the path.

    The text goes to a temporary file in the same directory, is flushed to disk and
    renamed over ``path`` (``os.replace``): a crash at any point leaves either the old
    file or the new one, never a torn one. The directory is created when missing.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp_name).replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)  # noqa: PTH108 - the name came from mkstemp
        raise
    _fsync_dir(target.parent)
    return target


def _fsync_dir(directory: Path) -> None:
    # Makes the rename durable on POSIX; not possible (nor needed) on Windows.
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
