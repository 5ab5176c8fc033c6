"""A pytest session flushes each folder it wrote transcripts into once, at its end.

Each transcript's own fsync (before its rename) keeps the write atomic; the folder's
fsync, which only makes the renames durable, is not paid per file (see write_atomic).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


def test_a_pytest_session_flushes_its_transcript_folder_once(
    pytester: pytest.Pytester, tmp_path: Path, fsyncs: dict[str, list[str]]
) -> None:
    scenario = (
        "version: 1\nagents:\n  w: {{script: [{reply}]}}\nparent: {{agent: w}}\n"
        "steps: [{{run: go}}]\nexpect: {{response: {{contains: {reply}}}}}\n"
    )
    for i in range(3):
        (pytester.path / f"s{i}.loopsim.yaml").write_text(scenario.format(reply=f"r{i}"))
    out = tmp_path / "transcripts"
    seen = fsyncs
    pytester.runpytest_inprocess(f"--loopsim-transcripts={out}").assert_outcomes(passed=3)
    assert sorted(p.name for p in out.iterdir()) == [f"s{i}.transcript.json" for i in range(3)]
    assert len(seen["files"]) == 3
    assert seen["folders"] == [str(out.resolve())]  # once, at the session's end
