"""Atomic file writes and safe file names: every file loopsim writes goes through here."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import os
import re
from pathlib import Path

from ._errors import LoopsimError

__all__ = [
    "UnsafePathError",
    "check_inside",
    "file_in",
    "safe_file_stem",
    "sync_folders",
    "write_atomic",
]

_TMP_SUFFIX = ".tmp"
_TMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.(?P<n>\d+)\.tmp$")
_counter = itertools.count()  # unique temporary names per process (threads included)
#: directories this process has cleaned of dead writers' temporaries
_cleaned: set[str] = set()
#: directories written into whose entries are not yet flushed (see :func:`sync_folders`)
_unsynced: set[str] = set()


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` atomically; return the path.

    The text goes to a temporary file ``.<name>.<pid>.<n>.tmp`` in the same directory, is
    flushed to disk and renamed over ``path`` (``os.replace``): a crash at any point leaves
    either the old file or the new one, never a torn one. The directory is created when
    missing. Temporary files a killed process left behind in the directory (their process
    is gone) are removed before the first write into it of this process (once per
    directory: a suite writing a thousand transcripts into one folder scans it once, and
    makes the folder once; again only if it is gone).

    The new file gets the usual mode of a new file (``0o666`` less the umask), or the mode
    of the file it replaces.

    Why one fsync here and the folder's later: the file's own fsync before the rename is
    what makes the write atomic across a crash (without it the rename can reach the disk
    before the data, and the name would point at an empty or partial file). The folder's
    fsync only makes the rename itself *durable* (after a crash the name shows the new
    file, not the old one); either outcome is whole, so it is not needed for atomicity.
    A suite writing a thousand transcripts into one folder paid that fsync a thousand
    times (0.16 ms CPU per file, median of 9 paired rounds of 200 transcripts: about a
    twentieth of a scenario item; more in wall time). For a test artifact, durability at
    the end of the run is enough: the folder is flushed once, by :func:`sync_folders`,
    which the pytest plugin and the CLI call when their run ends (else ``atexit``).
    """
    target = Path(path)
    folder = str(target.parent)
    if folder not in _cleaned:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(target.parent)
        _cleaned.add(folder)
    data = text.encode("utf-8")
    tmp = target.parent / f".{target.name}.{os.getpid()}.{next(_counter)}{_TMP_SUFFIX}"
    try:
        mode = target.stat().st_mode & 0o7777
    except OSError:
        mode = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(tmp, flags, 0o666)
    except FileNotFoundError:  # the folder was removed after this process first wrote in it
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                with contextlib.suppress(OSError):
                    tmp.chmod(mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _unsynced.add(folder)
    return target


def sync_folders() -> None:
    """Flush the entries of every folder written into since the last call (one fsync each).

    After it, every file :func:`write_atomic` wrote survives a crash under its name (the
    files' contents were flushed before their renames already). Cheap when nothing was
    written; called at the end of a pytest session, of a CLI command, and at exit.
    """
    while True:
        try:
            folder = _unsynced.pop()  # one at a time: a thread may be writing meanwhile
        except KeyError:
            return
        _fsync_dir(Path(folder))


# A fallback for library use (write_transcript from a user's script): the front ends call
# sync_folders themselves, since a supervised child ends with os._exit. Nothing to do at
# exit when nothing was written.
atexit.register(sync_folders)


def _remove_stale(folder: Path) -> None:
    """Delete the ``.<name>.<pid>.<n>.tmp`` files in ``folder`` whose writer is gone."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if not entry.name.endswith(_TMP_SUFFIX):
                continue
            match = _TMP.match(entry.name)
            if match is None:
                continue
            if not _alive(int(match.group("pid"))):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)  # noqa: PTH108 - a DirEntry's path


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if os.name != "posix":
        return True  # no cheap check: keep it (it is only litter)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: alive
        return True
    return True


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


_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')
#: Windows device names, with or without an extension (``con``, ``NUL.txt``, ``COM1``).
_RESERVED = re.compile(
    r"(?i)(?:CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|(?:COM|LPT)[0-9\u00b9\u00b2\u00b3])(?:\.|$)"
)
_MAX_STEM_BYTES = 150  # leaves room for a suffix such as ".transcript.json" under 255 bytes


def safe_file_stem(name: str) -> str:
    """A scenario name as one safe file-name part: never a path, never unwritable.

    Plain names (``checkout-flow``, ``retry after restart``) are kept as they are. In any
    other name, path separators, control and reserved characters become ``_``, a leading
    dot becomes ``_``, characters that cannot be written as UTF-8 become ``\ufffd``, the
    text is cut to 150 bytes, and ``-`` plus 8 hex digits of the name's hash are added,
    so two different names never share a file.

    Example:
        >>> safe_file_stem("checkout-flow")
        'checkout-flow'
        >>> safe_file_stem("../../etc/passwd")
        '_._.._etc_passwd-3754d6cb'
    """
    raw = name.encode("utf-8", "surrogatepass")
    text = raw.decode("utf-8", "replace")
    cleaned = _UNSAFE.sub("_", text).strip()
    if not cleaned.strip("."):
        cleaned = "scenario"
    if cleaned.startswith("."):  # never a hidden file, never "." or ".."
        cleaned = "_" + cleaned[1:]
    if cleaned.endswith("."):  # Windows drops trailing dots: "a." would be "a"
        cleaned = cleaned[:-1] + "_"
    if _RESERVED.match(cleaned):  # CON, NUL, COM1.txt: devices on Windows
        cleaned = "_" + cleaned
    encoded = cleaned.encode("utf-8")
    if cleaned == name and len(encoded) <= _MAX_STEM_BYTES:
        return cleaned
    digest = hashlib.sha256(raw).hexdigest()[:8]
    short = encoded[: _MAX_STEM_BYTES - 9].decode("utf-8", "ignore")
    return f"{short}-{digest}"


class UnsafePathError(LoopsimError, ValueError):
    """A file name made from user text would land outside its folder."""


def file_in(folder: str | os.PathLike[str], name: str, suffix: str) -> Path:
    """``folder / (safe_file_stem(name) + suffix)``, checked to lie inside ``folder``.

    ``name`` is user text (a scenario, agent, model or test name); whatever it holds, the
    result is one file directly in ``folder``. The check resolves symbolic links, so a
    link planted in ``folder`` cannot lead the file elsewhere either: that raises
    :class:`UnsafePathError`.

    Example:
        >>> file_in("cassettes", "../../escaped", ".transcript.json").name
        '_._.._escaped-ea03bc47.transcript.json'
    """
    base = Path(folder)
    target = base / f"{safe_file_stem(name)}{suffix}"
    check_inside(base, target)
    return target


def check_inside(folder: str | os.PathLike[str], target: Path) -> None:
    """Raise :class:`UnsafePathError` unless ``target`` resolves to a path in ``folder``."""
    root = Path(folder).resolve()
    where = target.resolve()
    if where.parent != root and not where.is_relative_to(root):
        msg = (
            f"refusing to use {target}: it resolves to {where}, outside {root} "
            "(a file name made from a scenario, agent, model or test name must stay in "
            "its folder)"
        )
        raise UnsafePathError(msg)
