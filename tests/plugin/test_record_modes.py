"""``--loopsim-record-mode=none|once|new_episodes|all`` and the ``loopsim_cassette`` fixture."""

from __future__ import annotations

from pathlib import Path

import pytest
from _shapes import answers_in

pytest_plugins = ["pytester"]

# The "real" model: a FunctionChatClient that logs each call to a file, answers with the
# REPLY environment variable, and refuses to run at all when NO_MODEL is set (CI).
TEST_FILE = """
import os
from pathlib import Path

import loopsim

LOG = Path(__file__).parent / "calls.log"


def real_model(messages, options):
    if os.environ.get("NO_MODEL"):
        raise AssertionError("the real model was called")
    with LOG.open("a", encoding="utf-8") as log:
        log.write(messages[-1].text + "\\n")
    return os.environ.get("REPLY", "hello") + " " + messages[-1].text


def test_greet(loopsim_cassette):
    client = loopsim_cassette.client("greeter", loopsim.FunctionChatClient(real_model))
    agent = loopsim.Agent(client, name="greeter")

    async def talk():
        session = agent.create_session()
        answers = [(await agent.run(q, session=session)).text for q in QUESTIONS]
        return answers

    answers = loopsim.simulate(talk)
    assert answers[0].endswith("one")
"""


def write_test(pytester: pytest.Pytester, questions: list[str]) -> Path:
    return pytester.makepyfile(test_talk=f"QUESTIONS = {questions!r}\n{TEST_FILE}")


def cassette(pytester: pytest.Pytester) -> Path:
    return pytester.path / "cassettes" / "test_talk" / "test_greet.transcript.json"


def calls(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "calls.log"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def test_the_default_mode_fails_without_a_cassette_and_says_how_to_record(
    pytester: pytest.Pytester,
) -> None:
    write_test(pytester, ["one"])
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no recording at *test_greet.transcript.json*"])
    assert "--loopsim-record-mode=once" in result.stdout.str()
    assert calls(pytester) == []


def test_once_records_then_none_replays_without_the_model(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_test(pytester, ["one", "two"])
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    assert calls(pytester) == ["one", "two"]
    assert answers_in(cassette(pytester)) == ["hello one", "hello two"]
    monkeypatch.setenv("NO_MODEL", "1")
    pytester.runpytest().assert_outcomes(passed=1)  # default mode none: replays
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)  # exists
    assert calls(pytester) == ["one", "two"]


def test_none_fails_when_the_code_asks_something_else(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_test(pytester, ["one"])
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    write_test(pytester, ["one", "two"])  # one more model call than recorded
    monkeypatch.setenv("NO_MODEL", "1")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no further recorded turn for agent 'greeter'*"])


def test_all_re_records(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    write_test(pytester, ["one"])
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("REPLY", "hi")
    pytester.runpytest("--loopsim-record-mode=all").assert_outcomes(passed=1)
    assert calls(pytester) == ["one", "one"]
    assert answers_in(cassette(pytester)) == ["hi one"]


def test_new_episodes_keeps_the_recording_and_adds_new_requests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_test(pytester, ["one"])
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    write_test(pytester, ["one", "two"])
    monkeypatch.setenv("REPLY", "hi")
    pytester.runpytest("--loopsim-record-mode=new_episodes").assert_outcomes(passed=1)
    assert calls(pytester) == ["one", "two"]  # only "two" reached the model this time
    assert answers_in(cassette(pytester)) == ["hello one", "hi two"]
    monkeypatch.setenv("NO_MODEL", "1")
    pytester.runpytest().assert_outcomes(passed=1)


def test_an_unknown_mode_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_test(pytester, ["one"])
    result = pytester.runpytest("--loopsim-record-mode=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid choice: 'sometimes'*"])


SCENARIO = """version: 1
agents:
  greeter:
    script:
      - reply: REPLY
parent: {agent: greeter}
steps:
  - run: hi
expect:
  response: {contains: hello}
"""


def write_scenario(pytester: pytest.Pytester, reply: str) -> Path:
    path = pytester.path / "greet.loopsim.yaml"
    path.write_text(SCENARIO.replace("REPLY", reply), encoding="utf-8")
    return path


def test_a_scenario_file_records_its_cassette_next_to_it_and_replays_it(
    pytester: pytest.Pytester,
) -> None:
    write_scenario(pytester, "hello there")
    pytester.runpytest().assert_outcomes(passed=1)  # mode none, no cassette: its scripts
    target = pytester.path / "cassettes" / "greet.transcript.json"
    assert not target.exists()
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    assert answers_in(target) == ["hello there"]
    # The model side changes; the cassette answers in its place (mode none replays it).
    write_scenario(pytester, "goodbye")
    pytester.runpytest().assert_outcomes(passed=1)
    target.unlink()
    pytester.runpytest().assert_outcomes(failed=1)  # without the cassette: its scripts


def test_a_replay_mismatch_is_reported_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_test(pytester, ["one", "two"])
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    recorded = cassette(pytester).read_bytes()
    write_test(pytester, ["one", "three"])  # the second request differs
    monkeypatch.setenv("NO_MODEL", "1")
    for mode in ("none", "new_episodes"):
        result = pytester.runpytest(f"--loopsim-record-mode={mode}")
        result.assert_outcomes(failed=1)  # the divergence, and no teardown error beside it
        assert "never requested" not in result.stdout.str()
        result.stdout.fnmatch_lines(["*live:*three*"])
    assert cassette(pytester).read_bytes() == recorded  # a failed test writes nothing


def test_unplayed_turns_still_fail_a_passing_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_test(pytester, ["one", "two"])
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    write_test(pytester, ["one"])  # one model call fewer than recorded
    monkeypatch.setenv("NO_MODEL", "1")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*1 recorded turn(s) never requested*"])


# The real client comes from a factory that counts its calls (BUILT.log): building it is
# what needs a key and a network, so a mode that replays must never call it.
FACTORY_TEST = TEST_FILE.replace(
    'loopsim_cassette.client("greeter", loopsim.FunctionChatClient(real_model))',
    'loopsim_cassette.client("greeter", build)',
).replace(
    "def test_greet(",
    """def build():
    with (Path(__file__).parent / "built.log").open("a", encoding="utf-8") as log:
        log.write("built\\n")
    return loopsim.FunctionChatClient(real_model)


def test_greet(""",
)


def builds(pytester: pytest.Pytester) -> int:
    log = pytester.path / "built.log"
    return len(log.read_text(encoding="utf-8").split()) if log.exists() else 0


@pytest.mark.parametrize(
    ("mode", "questions", "built"),
    [
        ("none", ["one"], 0),
        ("once", ["one"], 0),
        ("new_episodes", ["one"], 0),  # the cassette answers everything
        ("new_episodes", ["one", "two"], 1),  # a request past it: built then, once
        ("all", ["one"], 1),
    ],
)
def test_the_real_client_is_built_only_when_a_request_needs_it(
    pytester: pytest.Pytester, mode: str, questions: list[str], built: int
) -> None:
    pytester.makepyfile(test_talk="QUESTIONS = ['one']\n" + FACTORY_TEST)
    pytester.runpytest("--loopsim-record-mode=once").assert_outcomes(passed=1)
    assert builds(pytester) == 1
    pytester.makepyfile(test_talk=f"QUESTIONS = {questions!r}\n{FACTORY_TEST}")
    pytester.runpytest(f"--loopsim-record-mode={mode}").assert_outcomes(passed=1)
    assert builds(pytester) == 1 + built
