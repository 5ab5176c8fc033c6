"""The loopsim command line: exit codes, validate, new, schema, run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli import loopsim_cli

from loopsim.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main

ROOT = Path(__file__).parent.parent
SCENARIOS = ROOT / "scenarios"
CORPUS = ROOT / "tests" / "data" / "invalid_scenarios"


def test_validate_shipped_scenarios_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SCENARIOS)]) == EXIT_OK
    assert "0 invalid" in capsys.readouterr().out


@pytest.mark.parametrize("case", sorted(CORPUS.glob("*.yaml"))[:5], ids=lambda p: p.name)
def test_validate_invalid_file_exits_2_with_located_message(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(case)]) == EXIT_USAGE
    out = capsys.readouterr().out
    expected = case.with_suffix(".expected").read_text(encoding="utf-8").strip()
    assert expected.split(": ", 1)[1] in out
    assert "Traceback" not in out


def test_validate_nothing_found_is_usage_error(tmp_path: Path) -> None:
    assert main(["validate", str(tmp_path)]) == EXIT_USAGE


def test_new_writes_valid_starter_and_refuses_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "checkout"
    assert main(["new", str(target)]) == EXIT_OK
    written = tmp_path / "checkout.loopsim.yaml"
    assert written.read_text(encoding="utf-8").startswith("# yaml-language-server: $schema=")
    assert (tmp_path / "loopsim.schema.json").exists()
    assert main(["validate", str(written)]) == EXIT_OK
    before = written.read_text(encoding="utf-8")
    assert main(["new", str(target)]) == EXIT_USAGE
    assert written.read_text(encoding="utf-8") == before


def test_new_starter_runs_green(tmp_path: Path) -> None:
    assert main(["new", str(tmp_path / "starter")]) == EXIT_OK
    assert (
        main(["run", str(tmp_path / "starter.loopsim.yaml"), "-q", "-p", "no:cacheprovider"])
        == EXIT_OK
    )


def test_schema_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == EXIT_OK
    schema = json.loads(capsys.readouterr().out)
    assert schema["properties"]["version"] == {
        "const": 1,
        "description": "the scenario format version",
    }


def test_shipped_schema_file_is_fresh(capsys: pytest.CaptureFixture[str]) -> None:
    main(["schema"])
    printed = capsys.readouterr().out
    shipped = (SCENARIOS / "loopsim.schema.json").read_text(encoding="utf-8")
    assert shipped == printed, "stale: run `loopsim schema -o scenarios/loopsim.schema.json`"


def test_every_shipped_scenario_names_the_schema() -> None:
    for path in SCENARIOS.glob("*.loopsim.yaml"):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=loopsim.schema.json", path.name


def test_run_failing_scenario_exits_1(tmp_path: Path) -> None:
    text = (SCENARIOS / "max_iterations_cap.loopsim.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "bad.loopsim.yaml"
    bad.write_text(text.replace("iterations: 3", "iterations: 4"), encoding="utf-8")
    assert main(["run", str(bad), "-q", "-p", "no:cacheprovider"]) == EXIT_FAILED


def test_run_prints_a_summary_of_passed_failed_and_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (SCENARIOS / "max_iterations_cap.loopsim.yaml").read_text(encoding="utf-8")
    (tmp_path / "good.loopsim.yaml").write_text(text, encoding="utf-8")
    bad = text.replace("iterations: 3", "iterations: 4")
    (tmp_path / "bad.loopsim.yaml").write_text(bad, encoding="utf-8")
    broken = (CORPUS / "negative_delay.yaml").read_text(encoding="utf-8")
    (tmp_path / "broken.loopsim.yaml").write_text(broken, encoding="utf-8")
    assert main(["run", str(tmp_path), "-q", "-p", "no:cacheprovider"]) == EXIT_FAILED
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("loopsim: 3 scenarios: 1 passed, 1 failed, 1 invalid (")
    assert last.endswith(" of virtual time)")


def test_run_invalid_file_exits_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.loopsim.yaml"
    broken.write_text(
        (CORPUS / "negative_delay.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert main(["run", str(broken), "-q", "-p", "no:cacheprovider"]) == EXIT_USAGE


def test_unknown_subcommand_is_usage_error() -> None:
    assert main(["frobnicate"]) == EXIT_USAGE


def test_python_dash_m_works(tmp_path: Path) -> None:
    done = loopsim_cli("validate", str(SCENARIOS / "streaming.loopsim.yaml"))
    assert done.returncode == EXIT_OK, done.stderr
    assert "ok" in done.stdout


@pytest.mark.parametrize(
    ("environment", "extra"),
    [
        ({}, []),
        ({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, []),
        ({}, ["--disable-plugin-autoload"]),
        ({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, ["-p", "loopsim.pytest_plugin"]),
    ],
)
def test_run_loads_the_plugin_exactly_once_however_pytest_is_told(
    tmp_path: Path, environment: dict[str, str], extra: list[str]
) -> None:
    done = loopsim_cli(
        "run",
        str(SCENARIOS / "streaming.loopsim.yaml"),
        "-p",
        "no:cacheprovider",
        *extra,
        cwd=tmp_path,
        env=environment,
    )
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    assert "1 scenario: 1 passed" in done.stdout


TRANSCRIPTS = ROOT / "tests" / "data" / "transcripts"


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("text", "loop_background.txt"),
        ("mermaid", "loop_background.mmd"),
        ("timeline", "loop_background.timeline.mmd"),
    ],
)
def test_show_renders_fixture_transcript(
    fmt: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = TRANSCRIPTS / "loop_background.transcript.json"
    assert main(["show", str(path), "--format", fmt]) == EXIT_OK
    assert capsys.readouterr().out == (TRANSCRIPTS / expected).read_text(encoding="utf-8")


def test_show_unreadable_file_exits_2(tmp_path: Path) -> None:
    broken = tmp_path / "x.transcript.json"
    broken.write_text("{", encoding="utf-8")
    assert main(["show", str(broken)]) == EXIT_USAGE


def _record(scenario: Path, folder: Path) -> Path:
    from loopsim._scenario import load_scenario, run_scenario

    result = run_scenario(load_scenario(scenario), backend="trio")
    written = result.write_transcript(folder)
    assert written is not None
    return written


def test_replay_same_scenario_is_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = SCENARIOS / "background_fast_first.loopsim.yaml"
    recorded = _record(scenario, tmp_path)
    assert main(["replay", str(recorded), "--scenario", str(scenario)]) == EXIT_OK
    assert capsys.readouterr().out == (
        "identical: 9 model calls answered from the recording; the code under test sent "
        "the same 9 requests; 2 recorded delays reused\n"
    )


def test_replay_modified_scenario_prints_first_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The models answer from the recording, so what can diverge is the loop around them:
    # here the completion marker changes and the loop stops one iteration early.
    original = SCENARIOS / "completion_marker.loopsim.yaml"
    recorded = _record(original, tmp_path)
    changed = tmp_path / "completion_marker.loopsim.yaml"
    changed.write_text(
        original.read_text(encoding="utf-8").replace(
            "- completion_marker: DONE", "- completion_marker: draft"
        ),
        encoding="utf-8",
    )
    assert main(["replay", str(recorded), "--scenario", str(changed)]) == EXIT_FAILED
    out = capsys.readouterr().out
    assert out.startswith("diverged: fewer model calls than recorded: 1 recorded turn(s)")
    assert "  also: loop decisions differ: decision 1: recorded loop writer iteration 1" in out
    assert (
        "  also: iteration counts differ: loop writer recorded 2 iteration(s) "
        "(evaluators_stopped), live 1 iteration(s) (evaluators_stopped)"
    ) in out
    assert "compared: 1 of 2 recorded model calls answered from the recording" in out
    assert "\nfirst divergence at event " in out
    assert "evaluator_decision" in out
    assert "continue" in out
    assert "stop" in out


def test_replay_feeds_recorded_model_turns_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A changed script does not matter: the recording answers in the models' place.
    original = SCENARIOS / "completion_marker.loopsim.yaml"
    recorded = _record(original, tmp_path)
    changed = tmp_path / "completion_marker.loopsim.yaml"
    changed.write_text(
        original.read_text(encoding="utf-8").replace("a first draft", "a rough draft"),
        encoding="utf-8",
    )
    assert main(["replay", str(recorded), "--scenario", str(changed)]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("identical: 2 model calls answered from the recording; ")
    # ... but not silently: the model-side change is named.
    assert (
        'agent writer at t=0: the scenario\'s model now answers assistant: "a rough draft" '
        '(recorded: assistant: "a first draft")'
    ) in out


def test_replay_needs_a_valid_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recorded = _record(SCENARIOS / "completion_marker.loopsim.yaml", tmp_path)
    assert main(["replay", str(recorded)]) == EXIT_USAGE
    assert "no scenario runner" in capsys.readouterr().err
    broken = tmp_path / "broken.loopsim.yaml"
    broken.write_text((CORPUS / "negative_delay.yaml").read_text(encoding="utf-8"))
    assert main(["replay", str(recorded), "--scenario", str(broken)]) == EXIT_USAGE
    assert "agents.writer.script[0].delay" in capsys.readouterr().err


def test_docs_show_the_starter_and_it_runs() -> None:
    # Examples in docs are tests: the full example in docs/scenarios.md is the starter.
    from loopsim._scenario import load_scenario_text, run_scenario
    from loopsim.cli import STARTER

    starter = STARTER.format(schema="loopsim.schema.json", name="haiku", file="haiku.loopsim.yaml")
    docs = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert f"```yaml\n{starter}```" in docs
    result = run_scenario(load_scenario_text(starter))
    assert result.passed, result.report()
