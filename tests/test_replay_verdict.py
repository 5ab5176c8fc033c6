"""The replay verdict: it says what it compared, and every change to the code under test
diverges, while model-side changes are reported as answered from the recording."""

from __future__ import annotations

from pathlib import Path

import pytest

import loopsim
from loopsim import ReplayChatClient, ScriptedChatClient, Transcript
from loopsim._transcript._verdict import Replayed, compare_replay
from loopsim.cli import main

SCENARIOS = Path(__file__).parent.parent / "scenarios"


def record(tmp_path: Path, name: str) -> tuple[Path, str]:
    source = SCENARIOS / f"{name}.loopsim.yaml"
    result = loopsim.run_scenario(loopsim.load_scenario(source))
    assert result.passed, result.report(tail=0)
    assert result.transcript is not None
    path = loopsim.write_transcript(tmp_path / f"{name}.transcript.json", result.transcript)
    return path, source.read_text(encoding="utf-8")


def replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], transcript: Path, text: str
) -> tuple[int, str]:
    scenario = tmp_path / "changed.loopsim.yaml"
    scenario.write_text(text, encoding="utf-8")
    (tmp_path / "loopsim.schema.json").write_text("{}", encoding="utf-8")
    capsys.readouterr()
    code = main(["replay", str(transcript), "--scenario", str(scenario)])
    return code, capsys.readouterr().out


def test_an_unchanged_scenario_says_exactly_what_was_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript, text = record(tmp_path, "completion_marker")
    code, out = replay(tmp_path, capsys, transcript, text)
    assert code == 0
    assert out == (
        "identical: 2 model calls answered from the recording; the code under test sent "
        "the same 2 requests; 2 recorded delays reused\n"
    )


def _replace(old: str, new: str) -> tuple[str, str]:
    return old, new


# Each row changes the code under test (not the model side) and must diverge.
CODE_CHANGES = [
    pytest.param(
        "completion_marker",
        _replace("    - completion_marker: DONE", "    - completion_marker: DONE\n  max_iterations: 1"),
        "fewer model calls than recorded",
        id="loop-options-max-iterations",
    ),
    pytest.param(
        "fresh_context_in_memory",
        _replace("fresh_context_per_iteration: true", "fresh_context_per_iteration: false"),
        "a request differs",
        id="loop-options-fresh-context",
    ),
    pytest.param(
        "evaluator_ordering",
        _replace(
            '    - completion_marker: DONE\n    - delegate: {decisions: [{continue: "add a title"}, stop]}',
            '    - delegate: {decisions: [{continue: "add a title"}, stop]}\n    - completion_marker: DONE',
        ),
        "loop decisions differ",
        id="evaluator-order",
    ),
    pytest.param(
        "wait_timeout",
        _replace("wait_timeout: 60", "wait_timeout: 30"),
        "a request differs",
        id="wait-timeout",
    ),
    pytest.param(
        "tool_calls",
        _replace("      add: {result: 5}", "      add: {result: 5}\n      sub: {result: 1}"),
        "tools ['add'",
        id="tools-offered",
    ),
    pytest.param(
        "tool_calls",
        _replace("      add: {result: 5}", "      add: {result: 6}"),
        "a request differs",
        id="tool-result",
    ),
    pytest.param(
        "completion_marker",
        _replace("  writer:\n", "  writer:\n    instructions: be brief\n"),
        "instructions",
        id="instructions",
    ),
    pytest.param(
        "wait_timeout",
        _replace(
            "wait_timeout: 60}",
            "wait_timeout: 60, background_agents_instructions: delegate everything}",
        ),
        "instructions",
        id="provider-options",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "change", "expected"), CODE_CHANGES)
def test_every_change_to_the_code_under_test_diverges(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    change: tuple[str, str],
    expected: str,
) -> None:
    transcript, text = record(tmp_path, name)
    old, new = change
    assert old in text, f"the {name} scenario no longer has {old!r}"
    code, out = replay(tmp_path, capsys, transcript, text.replace(old, new))
    assert code == 1, out
    assert out.startswith("diverged: "), out
    assert expected in out.split("\n\n")[0], out
    assert "compared: " in out


def test_a_changed_delay_is_answered_from_the_recording_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript, text = record(tmp_path, "wait_timeout")
    code, out = replay(tmp_path, capsys, transcript, text.replace("delay: 150", "delay: 900"))
    assert code == 0
    assert out.startswith("identical: 8 model calls answered from the recording; ")
    assert "1 recorded delay reused" in out
    assert "answered from the recording, though the scenario's model side now differs" in out
    assert "agent slow at t=0: the scenario's model now takes 900 s (recorded: 150 s)" in out


def test_a_changed_script_is_answered_from_the_recording_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript, text = record(tmp_path, "completion_marker")
    code, out = replay(tmp_path, capsys, transcript, text.replace("a first draft", "a draft"))
    assert code == 0
    assert 'now answers assistant: "a draft" (recorded: assistant: "a first draft")' in out


# -- the verdict through the API --------------------------------------------------------


def _two_turns() -> tuple[loopsim.Agent, Transcript]:
    agent = loopsim.Agent(ScriptedChatClient([loopsim.Turn("one", delay=5), "two"]), name="a")

    async def talk() -> None:
        session = agent.create_session()
        await agent.run("first", session=session)
        await agent.run("second", session=session)

    return agent, loopsim.record(talk)[1]


def test_fewer_model_calls_than_recorded_diverge() -> None:
    _, recorded = _two_turns()

    async def once() -> None:
        replayed = loopsim.Agent(ReplayChatClient(recorded, "a"), name="a")
        await replayed.run("first", session=replayed.create_session())

    verdict = compare_replay(recorded, loopsim.record(once)[1])
    assert not verdict.identical
    assert verdict.divergences[0].startswith(
        "fewer model calls than recorded: 1 recorded turn(s) never requested"
    )
    assert (verdict.model_calls, verdict.recorded_calls, verdict.delays_reused) == (1, 2, 1)


def test_more_model_calls_than_recorded_diverge() -> None:
    _, recorded = _two_turns()
    longer = loopsim.Agent(ScriptedChatClient(["one", "two", "three"]), name="a")

    async def thrice() -> None:
        session = longer.create_session()
        for text in ("first", "second", "third"):
            await longer.run(text, session=session)

    verdict = compare_replay(recorded, loopsim.record(thrice)[1])
    assert any(
        d.startswith("more model calls than recorded: 1 call(s)") for d in verdict.divergences
    )


def test_a_strict_mismatch_is_reported_with_both_sides() -> None:
    _, recorded = _two_turns()
    error = loopsim.ReplayMismatchError("a", 4, "message[2] user: second", "message[2] user: 2nd")
    verdict = compare_replay(recorded, Replayed(None, error=error))
    assert verdict.divergences == (
        (
            "a request differs: agent a at recorded event 4: recorded message[2] user: second; "
            "live message[2] user: 2nd"
        ),
    )
    assert "diverged: a request differs" in verdict.text


def test_other_tools_and_task_statuses_diverge() -> None:
    def event(seq: int, kind: str, **data: object) -> loopsim.TranscriptEvent:
        return loopsim.TranscriptEvent(seq=seq, time=0, kind=kind, data=data)

    def run(tool: str, status: str) -> Transcript:
        return Transcript(
            events=[
                event(1, "tool_call", agent="p", session="s", call_id="c", name=tool, arguments={}),
                event(2, "task_status", session="s", task_id=1, agent="w", status=status),
            ]
        )

    same = compare_replay(run("a", "completed"), run("a", "completed"))
    assert same.identical
    verdict = compare_replay(run("a", "completed"), run("b", "lost"))
    assert verdict.divergences == (
        (
            "the code under test calls other tools: tool call 1: recorded p called a({}), "
            "live p called b({})"
        ),
        "task statuses differ: task 1 (session s) recorded completed (w), live lost (w)",
    )
