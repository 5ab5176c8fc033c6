"""Two scenarios of one name in a run never overwrite each other's transcripts.

A name is a file's ``name:`` or, without one, its file name; two files in different
folders can share either. Each of the clashing files then writes
``<name>@<folder>.<file>.transcript.json``; a name used once keeps ``<name>.transcript.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SCENARIO = (
    "version: 1\n"
    "{name}"
    "agents:\n  writer: {{script: [{reply}]}}\n"
    "parent: {{agent: writer}}\n"
    "steps: [{{run: go}}]\n"
    "expect: {{response: {{contains: {expected}}}}}\n"
)


def scenario(reply: str, *, name: str | None = None, expected: str | None = None) -> str:
    return SCENARIO.format(
        name=f"name: {name}\n" if name else "", reply=reply, expected=expected or reply
    )


def replies(folder: Path) -> dict[str, str]:
    """File name -> the writer's reply recorded in that transcript."""
    found = {}
    for path in sorted(folder.glob("*.transcript.json")):
        text = path.read_text(encoding="utf-8")
        found[path.name] = next(r for r in ("first", "second", "alone") if r in text)
        json.loads(text)
    return found


def test_two_files_with_one_name_field_get_a_transcript_each(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    (pytester.path / "a").mkdir()
    (pytester.path / "b").mkdir()
    (pytester.path / "a" / "one.loopsim.yaml").write_text(scenario("first", name="checkout"))
    (pytester.path / "b" / "two.loopsim.yaml").write_text(scenario("second", name="'checkout'"))
    (pytester.path / "c.loopsim.yaml").write_text(scenario("alone"))
    out = tmp_path / "transcripts"
    pytester.runpytest(f"--loopsim-transcripts={out}").assert_outcomes(passed=3)
    assert replies(out) == {
        "c.transcript.json": "alone",
        "checkout@a.one.transcript.json": "first",
        "checkout@b.two.transcript.json": "second",
    }


def test_two_files_of_one_file_name_in_two_folders_keep_both_failures(
    pytester: pytest.Pytester,
) -> None:
    for folder, reply in (("x", "first"), ("y", "second")):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "flow.loopsim.yaml").write_text(
            scenario(reply, expected="something else")
        )
    result = pytester.runpytest("-p", "xdist", "-n", "2")
    result.assert_outcomes(failed=2)
    assert replies(pytester.path / ".loopsim" / "transcripts") == {
        "flow@x.flow.transcript.json": "first",
        "flow@y.flow.transcript.json": "second",
    }
    result.stdout.fnmatch_lines(["*transcript: *flow@x.flow.transcript.json*"])
