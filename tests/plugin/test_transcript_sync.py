"""A pytest session flushes each folder it wrote transcripts into once, at its end.

Each transcript's own fsync (before its rename) keeps the write atomic; the folder's
fsync, which only makes the renames durable, is not paid per file (see write_atomic).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from loopsim._files import sync_folders

pytest_plugins = ["pytester"]


def count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Record every fsync: regular files and folders, by path."""
    seen: dict[str, list[str]] = {"files": [], "folders": []}
    real = os.fsync

    def counting(fd: int) -> None:
        kind = "folders" if stat.S_ISDIR(os.fstat(fd).st_mode) else "files"
        seen[kind].append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return seen


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names fds through /proc")
def test_a_pytest_session_flushes_its_transcript_folder_once(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync_folders()
    scenario = (
        "version: 1\nagents:\n  w: {{script: [{reply}]}}\nparent: {{agent: w}}\n"
        "steps: [{{run: go}}]\nexpect: {{response: {{contains: {reply}}}}}\n"
    )
    for i in range(3):
        (pytester.path / f"s{i}.loopsim.yaml").write_text(scenario.format(reply=f"r{i}"))
    out = tmp_path / "transcripts"
    seen = count_fsyncs(monkeypatch)
    pytester.runpytest_inprocess(f"--loopsim-transcripts={out}").assert_outcomes(passed=3)
    assert sorted(p.name for p in out.iterdir()) == [f"s{i}.transcript.json" for i in range(3)]
    assert len(seen["files"]) == 3
    assert seen["folders"] == [str(out.resolve())]  # once, at the session's end
