"""write_atomic: the one way loopsim writes files (transcripts, reproducers, snapshots, schema)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from loopsim._files import write_atomic


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
