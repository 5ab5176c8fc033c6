"""``loopsim replay --report-drift NEW``: re-record against the real model into a separate
file and print, per model call, what changed; the recording is never overwritten."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from loopsim.cli import main

SCENARIOS = Path(__file__).parent.parent / "scenarios"
NAME = "recorded_model"


def setup(tmp_path: Path, old: str = "", new: str = "") -> tuple[Path, Path]:
    """The shipped model scenario in tmp_path, its model module's text changed."""
    model = (SCENARIOS / f"{NAME}.py").read_text(encoding="utf-8")
    # a module name of its own: an imported module is kept for the rest of the process
    module = "drift_model_" + re.sub(r"\W", "_", tmp_path.name)
    (tmp_path / f"{module}.py").write_text(model.replace(old, new), encoding="utf-8")
    text = (SCENARIOS / f"{NAME}.loopsim.yaml").read_text(encoding="utf-8")
    text = text.replace(f"model: {NAME}:calc", f"model: {module}:calc")
    (tmp_path / f"{NAME}.loopsim.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "loopsim.schema.json").write_text("{}", encoding="utf-8")
    (tmp_path / "cassettes").mkdir()
    cassette = tmp_path / "cassettes" / f"{NAME}.transcript.json"
    shutil.copy(SCENARIOS / "cassettes" / f"{NAME}.transcript.json", cassette)
    return cassette, tmp_path / f"{NAME}.loopsim.yaml"


def drift(
    capsys: pytest.CaptureFixture[str], cassette: Path, scenario: Path, new: Path
) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["replay", str(cassette), "--scenario", str(scenario), "--report-drift", str(new)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_same_model_reports_no_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOPSIM_EXAMPLE_BASE_URL", raising=False)  # the offline stand-in
    cassette, scenario = setup(tmp_path)
    before = cassette.read_bytes()
    new = tmp_path / "new.transcript.json"
    code, out, err = drift(capsys, cassette, scenario, new)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "no drift: 2 model call(s), the same requests and answers",
        "  calc model call 1: same request, same answer",
        "  calc model call 2: same request, same answer",
        f"new recording: {new} (the scenario passed on it)",
    ]
    assert new.exists()
    assert cassette.read_bytes() == before


def test_a_changed_answer_is_reported_per_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOPSIM_EXAMPLE_BASE_URL", raising=False)
    # "the model upgrade": the same tool call, then another wording of the sum
    cassette, scenario = setup(tmp_path, 'f"2 + 3 = {results[-1]}"', 'f"2 + 3 = {results[-1]}!"')
    before = cassette.read_bytes()
    new = tmp_path / "new.transcript.json"
    code, out, _ = drift(capsys, cassette, scenario, new)
    assert code == 1
    assert out.splitlines()[:3] == [
        "drift: 1 of 2 model call(s) changed",
        "  calc model call 1: same request, same answer",
        (
            '  calc model call 2: answer changed: recorded assistant: "2 + 3 = 5"; '
            'new assistant: "2 + 3 = 5!"'
        ),
    ]
    assert cassette.read_bytes() == before  # never overwritten


def test_the_recording_itself_is_refused_as_the_new_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette, scenario = setup(tmp_path)
    before = cassette.read_bytes()
    code, out, err = drift(capsys, cassette, scenario, cassette)
    assert (code, out) == (2, "")
    assert "never overwrites" in err
    assert cassette.read_bytes() == before


def test_drift_needs_a_scenario(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cassette, _ = setup(tmp_path)
    code = main(["replay", str(cassette), "--report-drift", str(tmp_path / "n.transcript.json")])
    assert code == 2
    assert "--report-drift needs --scenario" in capsys.readouterr().err
