"""A pytest session flushes the transcripts it wrote, and their folders, once at its end.

A transcript is renamed into place whole (atomic for readers and against the process
dying); neither the file nor its folder is flushed per write, but all at once when the
session ends (see write_atomic).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from loopsim import _files

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("syncfs", [True, False], ids=["syncfs", "file-by-file"])
def test_a_pytest_session_flushes_its_transcripts_once_at_its_end(
    pytester: pytest.Pytester,
    tmp_path: Path,
    fsyncs: dict[str, list[str]],
    monkeypatch: pytest.MonkeyPatch,
    syncfs: bool,
) -> None:
    if syncfs and not sys.platform.startswith("linux"):
        pytest.skip("syncfs is Linux's")
    scenario = (
        "version: 1\nagents:\n  w: {{script: [{reply}]}}\nparent: {{agent: w}}\n"
        "steps: [{{run: go}}]\nexpect: {{response: {{contains: {reply}}}}}\n"
    )
    for i in range(3):
        (pytester.path / f"s{i}.loopsim.yaml").write_text(scenario.format(reply=f"r{i}"))
    out = tmp_path / "transcripts"
    seen = fsyncs
    flushed: list[tuple[str, int]] = []  # (folder, how many fsyncs had been made by then)
    real = _files._sync_file_system

    def whole(folder: str, done: set[int]) -> bool:
        flushed.append((folder, len(seen["files"]) + len(seen["folders"])))
        return real(folder, done) if syncfs else False

    monkeypatch.setattr(_files, "_sync_file_system", whole)
    pytester.runpytest_inprocess(f"--loopsim-transcripts={out}").assert_outcomes(passed=3)
    assert sorted(p.name for p in out.iterdir()) == [f"s{i}.transcript.json" for i in range(3)]
    assert flushed == [(str(out), 0)]  # once, at the session's end: nothing flushed before
    if syncfs:
        assert seen == {"files": [], "folders": []}  # the file system's flush covers all
    else:
        assert sorted(Path(p).name for p in seen["files"]) == [
            f"s{i}.transcript.json" for i in range(3)
        ]
        assert seen["folders"] == [str(out.resolve())]
