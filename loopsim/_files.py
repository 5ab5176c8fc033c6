"""Atomic file writes and safe file names: every file loopsim writes goes through here."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import os
import re
import stat
import sys
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
#: per such directory, the files written into it with ``durable=False``, not yet flushed
_unflushed: dict[str, list[str]] = {}


def write_atomic(path: str | os.PathLike[str], text: str, *, durable: bool = True) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` atomically; return the path.

    The text goes to a temporary file ``.<name>.<pid>.<n>.tmp`` in the same directory and
    is renamed over ``path`` (``os.replace``): a reader, or this process dying at any
    point, sees either the old file or the new one, never a torn one. The directory is
    created when missing. Temporary files a killed process left behind in the directory
    (their process is gone) are removed before the first write into it of this process
    (once per directory: a suite writing a thousand transcripts into one folder scans it
    once, and makes the folder once; again only if it is gone).

    The new file gets the usual mode of a new file (``0o666`` less the umask), or the mode
    of the file it replaces.

    A regular file that already holds exactly ``text`` is not written again (a rerun into
    the same folder writes the same transcripts): it is left as it is and gets the time
    of this write (``os.utime``), as a rewrite would give it. Reading it back costs far
    less than a new file and a rename over the old one (0.1-0.2 ms of kernel time each).

    What reaches the disk when, against a crash of the machine (power loss):

    * ``durable=True`` (the default: recordings, snapshots, anything a person keeps): the
      file is flushed (fsync) before its rename, so even then the name points at the old
      file or the new one.
    * ``durable=False`` (a run's own artefacts, a transcript per scenario): no flush per
      file; the files are flushed together by :func:`sync_folders` when the run ends. Until
      then a machine crash may leave a short file under the new name, which the reader
      refuses (a ``TranscriptError``), never a wrong one. Measured: the per-file fsync was
      0.35-0.45 ms of wall time and 0.15-0.3 ms CPU per transcript on CI's disk, about a
      third of writing one; one flush of the file system at the end costs 0.05 ms a file.

    In both cases the folder is flushed once, by :func:`sync_folders`, which the pytest
    plugin and the CLI call when their run ends (else ``atexit``): the folder's fsync only
    makes the renames themselves durable (after a crash the name shows the new file, not
    the old one), and paying it per file cost 0.16 ms CPU per transcript.
    """
    target = Path(path)
    # Plain strings from here on (hence the PTH noqa): Path objects for the parent and the
    # temporary name cost more than the writing of a small file's bytes.
    name = os.fspath(target)
    folder, leaf = os.path.split(name)
    folder = folder or "."  # what str(target.parent) gives for a bare name
    if folder not in _cleaned:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(target.parent)
        _cleaned.add(folder)
    data = text.encode("utf-8")
    try:
        status: os.stat_result | None = os.lstat(name)
    except OSError:
        status = None
    if status is not None and _holds(name, status, data):
        _touch(name)
        if durable:
            _fsync_path(name)  # it may be another run's unflushed write
    else:
        mode = None if status is None else _mode(name, status)
        _replace(name, folder, leaf, data, mode, durable=durable)
    if not durable:  # before the folder is listed: sync_folders takes both, in that order
        _unflushed.setdefault(folder, []).append(name)
    _unsynced.add(folder)
    return target


def _replace(
    name: str, folder: str, leaf: str, data: bytes, mode: int | None, *, durable: bool
) -> None:
    """Write ``data`` to a new temporary next to ``name`` (``folder/leaf``) and rename it
    over ``name``; the temporary is removed when that fails."""
    tmp = os.path.join(folder, f".{leaf}.{os.getpid()}.{next(_counter)}{_TMP_SUFFIX}")  # noqa: PTH118
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(tmp, flags, 0o666)
    except FileNotFoundError:  # the folder was removed after this process first wrote in it
        Path(folder).mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                with contextlib.suppress(OSError):
                    _chmod(handle.fileno(), tmp, mode)
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, name)  # noqa: PTH105
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # noqa: PTH108
        raise


def _holds(name: str, status: os.stat_result, data: bytes) -> bool:
    """``name`` (``status``: its ``lstat``) is a regular file holding exactly ``data``."""
    if not stat.S_ISREG(status.st_mode) or status.st_size != len(data):
        return False  # a link, a folder, or another size: not even read
    try:
        with open(name, "rb") as handle:  # noqa: PTH123 - a plain string path
            return handle.read(len(data) + 1) == data
    except OSError:
        return False


def _touch(name: str) -> None:
    # A rerun writes the same transcript again: the file keeps its bytes and gets the
    # time of this write, as a rewrite would give it.
    with contextlib.suppress(OSError):
        os.utime(name)


def _mode(name: str, status: os.stat_result) -> int | None:
    if not stat.S_ISLNK(status.st_mode):
        return status.st_mode & 0o7777
    try:  # a link (inside the folder: file_in checked): the mode of what it points at
        return os.stat(name).st_mode & 0o7777  # noqa: PTH116
    except OSError:
        return None


def _chmod(fd: int, name: str, mode: int) -> None:
    if hasattr(os, "fchmod"):  # by the open file: no second walk of its path
        os.fchmod(fd, mode)
    else:
        os.chmod(name, mode)  # noqa: PTH101 - Windows has no fchmod


def sync_folders() -> None:
    """Flush every folder written into since the last call, and the files written into it
    with ``durable=False``.

    After it, every file :func:`write_atomic` wrote survives a crash under its name. A
    folder holding such files is flushed with its whole file system at once (``syncfs``,
    Linux; once per file system), else file by file; any other folder with one fsync.
    Cheap when nothing was written; called at the end of a pytest session, of a CLI
    command, and at exit.
    """
    synced: set[int] = set()  # the file systems flushed whole by this call (st_dev)
    while True:
        try:
            folder = _unsynced.pop()  # one at a time: a thread may be writing meanwhile
        except KeyError:
            return
        files = _unflushed.pop(folder, None)
        if files is None:
            _fsync_dir(Path(folder))
        elif not _sync_file_system(folder, synced):
            for name in files:
                _fsync_path(name)
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


def _sync_file_system(folder: str, done: set[int]) -> bool:
    """Flush the file system ``folder`` is on (Linux ``syncfs``); False where that is not
    possible. ``done`` holds the file systems already flushed by this round."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        device = Path(folder).stat().st_dev
    except OSError:
        return False
    if device in done:
        return True
    import ctypes  # noqa: PLC0415 - only at the end of a run that wrote unflushed files

    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
        fd = os.open(folder, os.O_RDONLY)
    except (AttributeError, OSError):
        return False
    try:
        if syncfs(fd) != 0:
            return False
    finally:
        os.close(fd)
    done.add(device)
    return True


def _fsync_path(name: str) -> None:
    with contextlib.suppress(OSError):  # removed or replaced since: nothing of ours to keep
        fd = os.open(name, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


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
    if os.name == "posix" and _plain_leaf(target):
        return target
    check_inside(base, target)
    return target


def _plain_leaf(target: Path) -> bool:
    """``target`` (one safe name in its folder) is missing or not a link: it lies in the
    folder as :func:`check_inside` would find, without resolving both paths (two
    ``realpath`` walks cost about 0.1 ms a transcript)."""
    try:
        status = os.lstat(target)
    except OSError:
        return True  # nothing there: the file is made in the folder itself
    return not stat.S_ISLNK(status.st_mode)


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
