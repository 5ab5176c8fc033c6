"""``expect: {transcript: snapshot}`` and ``--snapshot-update``."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent
SCENARIOS = ROOT / "scenarios"

pytest_plugins = ["pytester"]


@pytest.fixture
def scenario(pytester: pytest.Pytester) -> Path:
    path = pytester.path / "completion_marker.loopsim.yaml"
    path.write_text(
        (SCENARIOS / "completion_marker.loopsim.yaml").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    return path


def _snapshot(pytester: pytest.Pytester) -> Path:
    return pytester.path / "__snapshots__" / "completion_marker.transcript.txt"


def test_missing_snapshot_fails_and_says_how_to_create_it(
    pytester: pytest.Pytester, scenario: Path
) -> None:
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*expect.transcript: no transcript snapshot at *completion_marker.transcript.txt*"]
    )
    result.stdout.fnmatch_lines(
        ["*create it by running this scenario once with --snapshot-update*"]
    )
    assert not _snapshot(pytester).exists()


def test_update_option_writes_the_shipped_snapshot_then_it_passes(
    pytester: pytest.Pytester, scenario: Path
) -> None:
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    written = _snapshot(pytester).read_text(encoding="utf-8")
    shipped = (SCENARIOS / "__snapshots__" / "completion_marker.transcript.txt").read_text(
        encoding="utf-8"
    )
    assert written == shipped
    pytester.runpytest().assert_outcomes(passed=1)
    # another backend records the same events; only the header names the backend
    pytester.runpytest("--loopsim-backend=trio").assert_outcomes(passed=1)


def test_changed_behaviour_shows_a_diff(pytester: pytest.Pytester, scenario: Path) -> None:
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    scenario.write_text(
        scenario.read_text(encoding="utf-8").replace("a first draft", "a rough draft"),
        encoding="utf-8",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*expect.transcript: the transcript differs from its snapshot*",
            "*--- *completion_marker.transcript.txt (snapshot)",
            "*+++ this run",
            '*-           model_response        writer  session-0001  assistant: "a first draft"',
            '*+           model_response        writer  session-0001  assistant: "a rough draft"',
        ]
    )
    before = _snapshot(pytester).read_text(encoding="utf-8")
    pytester.runpytest()
    assert _snapshot(pytester).read_text(encoding="utf-8") == before
