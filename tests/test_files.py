"""write_atomic: the one way loopsim writes files (transcripts, reproducers, snapshots, schema)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim import _files as loopsim_files
from loopsim._files import safe_file_stem, sync_folders, write_atomic


def test_writes_exact_utf8_text_and_creates_the_folder(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "file.txt"
    assert write_atomic(target, "é\nline two\n") == target
    assert target.read_bytes() == "é\nline two\n".encode()


def test_a_failed_rename_keeps_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "file.txt"
    write_atomic(target, "old")

    def crash(*args: Any, **kwargs: Any) -> None:
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        write_atomic(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]


def test_a_folder_removed_between_writes_is_made_again(tmp_path: Path) -> None:
    # the folder is made at the first write into it, and again when it has gone since
    folder = tmp_path / "out" / "deep"
    write_atomic(folder / "a.txt", "one")
    shutil.rmtree(tmp_path / "out")
    assert write_atomic(folder / "b.txt", "two").read_text() == "two"
    assert sorted(p.name for p in folder.iterdir()) == ["b.txt"]


# -- interrupted writes and modes (issue 14, item 12) -------------------------------------------


_KILLED_MID_WRITE = """
import os, signal, sys
import loopsim._files as files

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # the temporary is written, the rename never comes

os.replace = die
files.write_atomic(sys.argv[1], "x" * 100_000)
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL and pid checks are POSIX")
def test_a_killed_writer_leaves_a_temporary_that_the_next_write_removes(tmp_path: Path) -> None:
    target = tmp_path / "run.transcript.json"
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", _KILLED_MID_WRITE, str(target)], check=False, timeout=60
    )
    assert done.returncode == -9
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1
    assert left[0].startswith(".run.transcript.json.")
    assert left[0].endswith(".tmp")
    write_atomic(target, "fresh")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.transcript.json"]
    assert target.read_text() == "fresh"


def test_temporaries_of_live_writers_and_other_files_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    live = tmp_path / f".a.txt.{os.getpid()}.999.tmp"  # this process: maybe another thread
    other = tmp_path / ".b.txt.1.1.tmp"  # another target's
    unrelated = tmp_path / ".a.txt.notes"
    for path in (live, other, unrelated):
        path.write_text("keep")
    write_atomic(target, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["a.txt", live.name, other.name, unrelated.name]
    )


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_new_files_get_the_umask_mode_and_replaced_files_keep_theirs(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        fresh = write_atomic(tmp_path / "fresh.txt", "x")
        assert fresh.stat().st_mode & 0o777 == 0o644
        kept = tmp_path / "kept.txt"
        kept.write_text("old")
        kept.chmod(0o640)
        write_atomic(kept, "new")
        assert kept.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old_umask)


# -- scenario names as file names (issue 14, item 7) --------------------------------------------


@given(name=st.text(max_size=300))
def test_any_name_becomes_one_writable_file_name(name: str) -> None:
    stem = safe_file_stem(name)
    assert stem
    assert "/" not in stem
    assert "\\" not in stem
    assert "\x00" not in stem
    assert not stem.startswith(".")
    assert len((stem + ".transcript.json").encode("utf-8")) <= 255


@given(first=st.text(max_size=40), second=st.text(max_size=40))
def test_different_names_never_share_a_file(first: str, second: str) -> None:
    if first != second:
        assert safe_file_stem(first) != safe_file_stem(second)


def test_plain_names_are_kept_and_hostile_ones_stay_in_the_folder(tmp_path: Path) -> None:
    assert safe_file_stem("checkout flow-2") == "checkout flow-2"
    for name in ("../../x", "/etc/passwd", "a\x00b", "\ud800", "..", "", "é" * 300):
        written = write_atomic(tmp_path / f"{safe_file_stem(name)}.json", "{}")
        assert written.parent == tmp_path
    assert len(list(tmp_path.iterdir())) == 7


def test_each_file_is_flushed_before_its_rename_and_each_folder_once_at_the_end(
    tmp_path: Path, fsyncs: dict[str, list[str]]
) -> None:
    seen = fsyncs
    one, two = tmp_path / "one", tmp_path / "two"
    for i in range(5):
        write_atomic(one / f"{i}.txt", str(i))
    write_atomic(two / "x.txt", "x")
    write_atomic(one / "0.txt", "again")
    assert len(seen["files"]) == 7  # every write flushes its file: the atomicity
    assert all(Path(p).name.endswith(".tmp") for p in seen["files"])  # before the rename
    assert seen["folders"] == []  # no folder fsync per file
    sync_folders()
    assert sorted(seen["folders"]) == sorted([str(one.resolve()), str(two.resolve())])
    sync_folders()
    assert len(seen["folders"]) == 2  # nothing written since: nothing to flush


def _file_systems_synced(monkeypatch: pytest.MonkeyPatch, *, works: bool) -> list[str]:
    """Record each whole-file-system flush sync_folders asks for (and do it, or fail)."""
    asked: list[str] = []
    real = loopsim_files._sync_file_system

    def recording(folder: str, done: set[int]) -> bool:
        asked.append(folder)
        return real(folder, done) if works else False

    monkeypatch.setattr(loopsim_files, "_sync_file_system", recording)
    return asked


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs is Linux's")
def test_files_written_not_durable_are_flushed_together_when_the_run_ends(
    tmp_path: Path, fsyncs: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _file_systems_synced(monkeypatch, works=True)
    one, two = tmp_path / "one", tmp_path / "two"
    for i in range(5):
        write_atomic(one / f"{i}.txt", str(i), durable=False)
    write_atomic(two / "x.txt", "x", durable=False)
    assert (one / "3.txt").read_text() == "3"  # readable at once, under its name
    assert fsyncs == {"files": [], "folders": []}  # nothing flushed per file
    sync_folders()
    assert sorted(asked) == sorted([str(one), str(two)])  # one syncfs covers both folders
    assert fsyncs == {"files": [], "folders": []}
    write_atomic(one / "kept.txt", "kept")  # durable, as before: its own fsync
    sync_folders()
    assert len(asked) == 2  # a folder of durable files only is not flushed whole
    assert len(fsyncs["files"]) == 1
    assert fsyncs["folders"] == [str(one.resolve())]


def test_without_syncfs_each_file_written_not_durable_is_flushed_at_the_end(
    tmp_path: Path, fsyncs: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _file_systems_synced(monkeypatch, works=False)
    folder = tmp_path / "out"
    for name in ("a", "b", "c"):
        write_atomic(folder / f"{name}.txt", name, durable=False)
    (folder / "b.txt").unlink()  # gone before the end: nothing of ours left to flush
    assert fsyncs["files"] == []
    sync_folders()
    assert sorted(Path(p).name for p in fsyncs["files"]) == ["a.txt", "c.txt"]
    assert fsyncs["folders"] == [str(folder.resolve())]
    sync_folders()
    assert len(fsyncs["files"]) == 2  # flushed once, not again


@pytest.mark.parametrize("durable", [True, False])
def test_a_file_already_holding_the_text_is_kept_with_a_fresh_time(
    tmp_path: Path, fsyncs: dict[str, list[str]], durable: bool
) -> None:
    target = tmp_path / "t.json"
    write_atomic(target, "same text", durable=durable)
    before = target.stat()
    os.utime(target, (1_000_000, 1_000_000))  # an old file
    flushed = len(fsyncs["files"])
    assert write_atomic(target, "same text", durable=durable) == target
    after = target.stat()
    assert after.st_ino == before.st_ino  # not replaced
    assert after.st_mtime > 1_000_000  # the time of this write, as a rewrite gives
    assert target.read_text() == "same text"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]  # no temporary left
    # durable: flushed all the same (another run may have written it unflushed)
    assert len(fsyncs["files"]) == flushed + (1 if durable else 0)
    write_atomic(target, "also text", durable=durable)  # same size, other bytes
    assert target.read_text() == "also text"
    assert target.stat().st_ino != before.st_ino  # written anew, by rename
    for longer in ("same text!", "same tex"):  # a size of its own: not even read
        write_atomic(target, longer, durable=durable)
        assert target.read_text() == longer


def test_a_link_holding_the_text_is_replaced_by_a_file_as_before(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("same", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "same")  # the link is replaced by a file, as before
    assert not link.is_symlink()
    assert link.read_text() == "same"
    assert real.read_text() == "same"


EXITING = """
import os, stat, sys
real = os.fsync
def counting(fd):
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        print("folder", os.readlink(f"/proc/self/fd/{fd}"), flush=True)
    real(fd)
os.fsync = counting
from loopsim._files import write_atomic
write_atomic(sys.argv[1], "written by a script")
print("exiting", flush=True)
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names fds through /proc")
def test_a_script_that_writes_and_exits_has_its_folder_flushed_at_exit(tmp_path: Path) -> None:
    target = tmp_path / "out" / "t.json"
    done = subprocess.run(  # noqa: S603 - our own program, run by this interpreter
        [sys.executable, "-c", EXITING, str(target)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(loopsim.__file__).parents[1])},
    )
    # no folder flush per write; one when the interpreter exits
    assert done.stdout.splitlines() == ["exiting", f"folder {target.parent.resolve()}"]
    assert target.read_text() == "written by a script"
