"""``loopsim replay`` given a cassette or a full transcript of a scenario with a real model.

A cassette (``cassettes/<scenario>.transcript.json``) holds model calls only; a full
transcript (``--loopsim-transcripts``) holds the whole run. Unchanged code passes either
way; the verdict says when it compared a cassette; a changed tool result diverges on
both; a cassette of another scenario is a usage error naming both.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import loopsim
from loopsim.cli import main

SCENARIOS = Path(__file__).parent.parent / "scenarios"
CASSETTE = SCENARIOS / "cassettes" / "recorded_model.transcript.json"
SCENARIO = SCENARIOS / "recorded_model.loopsim.yaml"


def replay(
    capsys: pytest.CaptureFixture[str], recording: Path, scenario: Path
) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["replay", str(recording), "--scenario", str(scenario)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def full_transcript(tmp_path: Path) -> Path:
    result = loopsim.run_scenario(loopsim.load_scenario(SCENARIO))  # replays the cassette
    assert result.passed, result.report(tail=0)
    assert result.transcript is not None
    return loopsim.write_transcript(tmp_path / "full.transcript.json", result.transcript)


def copy_scenario(tmp_path: Path, old: str = "", new: str = "") -> Path:
    """The shipped scenario with its model module and cassette, the text changed."""
    shutil.copy(SCENARIOS / "recorded_model.py", tmp_path / "recorded_model.py")
    (tmp_path / "cassettes").mkdir(exist_ok=True)
    shutil.copy(CASSETTE, tmp_path / "cassettes" / CASSETTE.name)
    (tmp_path / "loopsim.schema.json").write_text("{}", encoding="utf-8")
    target = tmp_path / SCENARIO.name
    target.write_text(SCENARIO.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return target


def test_a_cassette_of_unchanged_code_is_identical_and_says_what_it_compared(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = replay(capsys, CASSETTE, SCENARIO)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        (
            "identical: 2 model calls answered from the recording; the code under test sent "
            "the same 2 requests; 0 recorded delays reused"
        ),
        (
            "recording: a cassette: compared the model calls and what the code under test sent "
            "(messages, tool results, tools, instructions); it holds no tool, loop or task "
            "events to compare"
        ),
    ]


def test_a_full_transcript_of_unchanged_code_is_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = replay(capsys, full_transcript(tmp_path), SCENARIO)
    assert (code, err) == (0, "")
    assert out.startswith("identical: 2 model calls")
    assert "a cassette" not in out  # everything compared, as for any transcript


@pytest.mark.parametrize("kind", ["cassette", "full"])
def test_a_changed_tool_result_diverges_given_either(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = CASSETTE if kind == "cassette" else full_transcript(tmp_path)
    changed = copy_scenario(tmp_path, "add: {result: 5,", "add: {result: 6,")
    code, out, _ = replay(capsys, recording, changed)
    assert code == 1
    assert out.startswith("diverged: ")
    assert 'add result #call_add = "6"' in out  # the tool named, its live result shown
    assert 'add result #call_add = "5"' in out


def test_a_cassette_of_another_scenario_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = SCENARIOS / "completion_marker.loopsim.yaml"
    code, out, err = replay(capsys, CASSETTE, other)
    assert (code, out) == (2, "")
    assert f"{CASSETTE} is a cassette of scenario 'recorded_model' (agents calc)" in err
    assert "(scenario 'completion_marker'," in err
    assert "Traceback" not in err
