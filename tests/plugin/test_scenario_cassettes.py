"""Scenario files with a real model (``model: module:function``) and their cassettes.

The "real" model is a loopsim FunctionChatClient made by ``models:real`` in the test's
folder: it logs when it is made and each request it answers (``calls.log``), answers
with the REPLY environment variable, and refuses to be made when NO_MODEL is set (CI
without a key). Its cassette lives in ``cassettes/greet.transcript.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _shapes import answers_in

pytest_plugins = ["pytester"]

MODELS = """
import os
from pathlib import Path

import loopsim

LOG = Path(__file__).parent / "calls.log"


def _log(line):
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\\n")


def real(name):
    _log("made " + name)
    if os.environ.get("NO_MODEL"):
        raise AssertionError("the real model was made")

    def answer(messages, options):
        _log("asked " + messages[-1].text)
        return os.environ.get("REPLY", "hello") + " " + messages[-1].text

    return loopsim.FunctionChatClient(answer, name=name)
"""

SCENARIO = """version: 1
agents:
  greeter:
    model: models:real
    instructions: INSTRUCTIONS
parent: {agent: greeter}
steps:
  - run: hi
  - run: QUESTION
expect:
  calls: {greeter: 2}
  response: {contains: hello}
"""


def write(
    pytester: pytest.Pytester, *, instructions: str = "be kind", question: str = "again"
) -> Path:
    (pytester.path / "models.py").write_text(MODELS, encoding="utf-8")
    text = SCENARIO.replace("INSTRUCTIONS", instructions).replace("QUESTION", question)
    path = pytester.path / "greet.loopsim.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def cassette(pytester: pytest.Pytester) -> Path:
    return pytester.path / "cassettes" / "greet.transcript.json"


def log(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / "calls.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_mode_none_without_a_cassette_fails_and_says_how_to_record(
    pytester: pytest.Pytester,
) -> None:
    write(pytester)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)  # a failed item, not an error
    out = result.stdout.str()
    assert "no recording at cassettes/greet.transcript.json" in out
    assert "loopsim run --loopsim-record-mode=once greet.loopsim.yaml" in out
    assert "pytest --loopsim-record-mode=once greet.loopsim.yaml" in out
    assert "Traceback" not in out
    assert "During handling" not in out
    assert out.count("no recording at") == 2  # the failure and its summary line
    assert "def runtest" not in out  # no traceback of the plugin's code
    assert log(pytester) == []  # the model was neither made nor asked
    assert not cassette(pytester).exists()


def test_once_records_then_none_replays_the_same_run_without_the_model(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(pytester)
    recorded = pytester.runpytest("--loopsim-record-mode=once", "--loopsim-transcripts=first")
    recorded.assert_outcomes(passed=1)
    assert log(pytester) == ["made greeter", "asked hi", "asked again"]
    assert answers_in(cassette(pytester)) == ["hello hi", "hello again"]
    monkeypatch.setenv("NO_MODEL", "1")  # making the model now fails the run
    pytester.runpytest("--loopsim-transcripts=second").assert_outcomes(passed=1)
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)  # it exists
    assert log(pytester) == ["made greeter", "asked hi", "asked again"]  # never called again
    first = (pytester.path / "first" / "greet.transcript.json").read_bytes()
    second = (pytester.path / "second" / "greet.transcript.json").read_bytes()
    assert first == second  # the replay is the recorded run, byte for byte


def test_the_printed_command_records_the_cassette(pytester: pytest.Pytester) -> None:
    write(pytester)
    # ``loopsim run`` is pytest underneath: the command the failure prints records it.
    loopsim = (sys.executable, "-m", "loopsim", "run")
    result = pytester.run(*loopsim, "--loopsim-record-mode=once", "greet.loopsim.yaml")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert answers_in(cassette(pytester)) == ["hello hi", "hello again"]
    assert pytester.run(*loopsim, "greet.loopsim.yaml").ret == 0


def test_all_re_records_and_a_failed_run_writes_no_cassette(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(pytester)
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    before = cassette(pytester).read_bytes()
    monkeypatch.setenv("REPLY", "goodbye")  # the model now fails `response: {contains: hello}`
    pytester.runpytest("--loopsim-record-mode=all").assert_outcomes(failed=1)
    assert cassette(pytester).read_bytes() == before  # a failed run keeps the old one
    monkeypatch.setenv("REPLY", "hello there,")
    pytester.runpytest("--loopsim-record-mode=all").assert_outcomes(passed=1)
    assert answers_in(cassette(pytester)) == ["hello there, hi", "hello there, again"]
    assert log(pytester).count("made greeter") == 3  # once per recording run
    monkeypatch.setenv("NO_MODEL", "1")
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_changed_request_diverges_with_both_sides_shown(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(pytester)
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("NO_MODEL", "1")
    write(pytester, question="once more")  # the code under test asks something else
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "ReplayMismatchError" in out
    assert "replay of agent 'greeter' diverged at event" in out
    result.stdout.fnmatch_lines(["*recorded:*again*", "*live:*once more*"])
    assert not any(line.startswith("made") for line in log(pytester)[1:])
    write(pytester, instructions="be terse")  # other instructions: also a divergence
    changed = pytester.runpytest()
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*recorded:*be kind*", "*live:*be terse*"])


def test_fewer_calls_than_recorded_fail(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(pytester)
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("NO_MODEL", "1")
    text = (pytester.path / "greet.loopsim.yaml").read_text(encoding="utf-8")
    text = text.replace("  - run: again\n", "").replace("greeter: 2", "greeter: 1")
    (pytester.path / "greet.loopsim.yaml").write_text(text, encoding="utf-8")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*1 recorded turn(s) of greeter were never replayed*"])


def test_both_engines_record_once_and_replay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("agent_framework", reason="agent-framework-core is not installed")
    write(pytester)
    both = "--loopsim-engine=both"
    pytester.runpytest(both, "--loopsim-record-mode=once").assert_outcomes(passed=1)
    # The model is asked once; the second engine replays what the first recorded.
    assert log(pytester) == ["made greeter", "asked hi", "asked again"]
    assert answers_in(cassette(pytester)) == ["hello hi", "hello again"]
    monkeypatch.setenv("NO_MODEL", "1")
    pytester.runpytest(both).assert_outcomes(passed=1)
    pytester.runpytest("--loopsim-engine=agent_framework").assert_outcomes(passed=1)
    write(pytester, question="once more")
    result = pytester.runpytest("--loopsim-engine=agent_framework")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*recorded:*again*", "*live:*once more*"])


def test_scripted_scenarios_in_the_same_folder_keep_their_scripts(
    pytester: pytest.Pytester,
) -> None:
    write(pytester)
    scripted = pytester.path / "scripted.loopsim.yaml"
    scripted.write_text(
        "version: 1\nagents:\n  a: {script: [hello]}\nparent: {agent: a}\n"
        "steps:\n  - run: hi\nexpect:\n  response: {contains: hello}\n",
        encoding="utf-8",
    )
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=1, failed=1)  # the scripted one runs its script
    result.stdout.fnmatch_lines(["FAILED greet.loopsim.yaml*"])
    assert not (pytester.path / "cassettes" / "scripted.transcript.json").exists()


def test_new_episodes_keeps_the_recording_and_adds_the_new_request(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(pytester)
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    path = pytester.path / "greet.loopsim.yaml"
    text = path.read_text(encoding="utf-8")
    text = text.replace("  - run: again\n", "  - run: again\n  - run: more\n")
    path.write_text(text.replace("greeter: 2", "greeter: 3"), encoding="utf-8")
    monkeypatch.setenv("REPLY", "hello you,")
    pytester.runpytest("--loopsim-record-mode=new_episodes").assert_outcomes(passed=1)
    assert log(pytester)[-1] == "asked more"  # only the new request reached the model
    assert log(pytester).count("asked hi") == 1
    assert answers_in(cassette(pytester)) == ["hello hi", "hello again", "hello you, more"]
    monkeypatch.setenv("NO_MODEL", "1")
    pytester.runpytest().assert_outcomes(passed=1)


def test_new_episodes_never_makes_the_model_when_the_cassette_answers_everything(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(pytester)
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    assert log(pytester).count("made greeter") == 1
    monkeypatch.setenv("NO_MODEL", "1")  # making it now would fail the run
    for mode in ("none", "once", "new_episodes"):
        pytester.runpytest(f"--loopsim-record-mode={mode}").assert_outcomes(passed=1)
    assert log(pytester).count("made greeter") == 1
