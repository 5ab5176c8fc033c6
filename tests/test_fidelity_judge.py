"""AgentLoopMiddleware.with_judge on both engines: verdicts, caps, feedback, errors."""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient
from agent_framework._harness._loop import JudgeVerdict as AFJudgeVerdict

import loopsim
from loopsim import AgentLoopMiddleware, ChatResponse, JudgeVerdict, ScriptedChatClient
from loopsim._wording import WORDING, agrees, match

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def both(
    judge_replies: list[Any],
    worker_replies: list[str],
    af_judge_replies: list[Any] | None = None,
    **judge_options: Any,
) -> tuple[tuple[Any, Any, Any], tuple[Any, Any, Any]]:
    """Run one judged loop on each engine: (response, judge client, worker client) each."""
    ls_judge = ScriptedChatClient(judge_replies)
    ls_worker = ScriptedChatClient(worker_replies)
    ls_agent = loopsim.Agent(
        ls_worker, middleware=[AgentLoopMiddleware.with_judge(ls_judge, **judge_options)]
    )
    af_judge = FakeAFChatClient(af_judge_replies if af_judge_replies is not None else judge_replies)
    af_worker = FakeAFChatClient(worker_replies)
    af_agent = af.Agent(
        client=af_worker, middleware=[af.AgentLoopMiddleware.with_judge(af_judge, **judge_options)]
    )
    ours = loopsim.simulate(ls_agent.run, "write the report")
    theirs = loopsim.simulate(af_agent.run, "write the report")
    return (ours, ls_judge, ls_worker), (theirs, af_judge, af_worker)


def test_the_judge_loop_is_capped_at_five_by_default_on_both_engines() -> None:
    assert AgentLoopMiddleware.DEFAULT_JUDGE_MAX_ITERATIONS == 5
    assert loopsim.AgentLoopMiddleware.with_judge(ScriptedChatClient([])).max_iterations == 5
    (_, ls_judge, ls_worker), (_, af_judge, af_worker) = both(
        ["VERDICT: MORE"] * 4, [f"draft {i}" for i in range(5)]
    )
    assert len(ls_worker.requests) == len(af_worker.requests) == 5
    # the capped run is not judged
    assert len(ls_judge.requests) == len(af_judge.requests) == 4


def test_text_markers_decide_and_the_reasoning_is_fed_back_on_both_engines() -> None:
    (ours, ls_judge, ls_worker), (theirs, af_judge, af_worker) = both(
        ["Not yet. VERDICT: MORE - cite a source", "VERDICT: DONE"], ["draft", "final"]
    )
    assert ours.messages[-1].text == theirs.messages[-1].text == "final"
    assert len(ls_judge.requests) == len(af_judge.requests) == 2
    ours_input = ls_worker.requests[1].messages[-1].text
    theirs_input = af_worker.requests[1][0][-1].text
    assert match(ours_input) == (
        "judge.feedback",
        {"feedback": "Not yet. VERDICT: MORE - cite a source"},
    )
    assert agrees(ours_input, theirs_input)
    # what the judge sees: its instructions, framing, the request, the response, a question
    ours_roles = [m.role for m in ls_judge.requests[0].messages]
    theirs_roles = [str(m.role) for m in af_judge.requests[0][0]]
    assert ours_roles == theirs_roles == ["system", "user", "user", "user", "assistant", "user"]
    assert ls_judge.requests[0].messages[2].text == "write the report"
    assert ls_judge.requests[0].options.response_format is JudgeVerdict
    assert af_judge.requests[0][1]["response_format"] is AFJudgeVerdict


@pytest.mark.parametrize(
    ("reply", "keeps_going"),
    [
        ("VERDICT: DONE", False),
        ("VERDICT: MORE", True),
        ("verdict: done, but VERDICT: MORE", True),  # MORE wins, case ignored
        ("looks fine to me", True),  # neither marker: not answered
        ('{"answered": true}', True),  # JSON text without structured output: no marker
    ],
)
def test_the_text_fallback_agrees_on_both_engines(reply: str, keeps_going: bool) -> None:
    (_, _, ls_worker), (_, _, af_worker) = both([reply], ["one", "two"], max_iterations=2)
    runs = 2 if keeps_going else 1
    assert len(ls_worker.requests) == len(af_worker.requests) == runs


def test_a_structured_verdict_decides_and_its_reasoning_is_fed_back_on_both_engines() -> None:
    not_yet = '{"answered": false, "reasoning": "needs a source"}'
    done = '{"answered": true, "reasoning": "good"}'
    ours = [ChatResponse(text, response_format=JudgeVerdict) for text in (not_yet, done)]
    theirs = [
        af.ChatResponse(
            messages=[af.Message(role="assistant", contents=[text])],
            response_format=AFJudgeVerdict,
        )
        for text in (not_yet, done)
    ]
    (_, _, ls_worker), (_, _, af_worker) = both(ours, ["draft", "final"], af_judge_replies=theirs)
    assert len(ls_worker.requests) == len(af_worker.requests) == 2
    ours_input = ls_worker.requests[1].messages[-1].text
    assert match(ours_input) == ("judge.feedback", {"feedback": "needs a source"})
    assert agrees(ours_input, af_worker.requests[1][0][-1].text)


def test_judge_verdict_accepts_upstreams_reasoning_field() -> None:
    verdict = JudgeVerdict.model_validate({"answered": False, "reasoning": "because"})
    assert (verdict.answered, verdict.reasoning) == (False, "because")
    assert (
        JudgeVerdict.model_validate_json('{"answered": true, "gapAnalysis": "x"}').gap_analysis
        == "x"
    )
    theirs = AFJudgeVerdict(answered=False, reasoning="because")
    assert JudgeVerdict.model_validate(theirs.model_dump()) == verdict


def test_a_verdict_parser_alone_decides_on_both_engines() -> None:
    def ours_parser(response: Any) -> JudgeVerdict:
        return JudgeVerdict(answered="ship" in response.text, reasoning="parsed")

    def theirs_parser(response: Any) -> AFJudgeVerdict:
        return AFJudgeVerdict(answered="ship" in response.text, reasoning="parsed")

    ls_worker = ScriptedChatClient(["a", "b"])
    ls_loop = AgentLoopMiddleware.with_judge(
        ScriptedChatClient(["VERDICT: DONE", "ship it"]), verdict_parser=ours_parser
    )
    loopsim.simulate(loopsim.Agent(ls_worker, middleware=[ls_loop]).run, "go")
    af_worker = FakeAFChatClient(["a", "b"])
    af_loop = af.AgentLoopMiddleware.with_judge(
        FakeAFChatClient(["VERDICT: DONE", "ship it"]), verdict_parser=theirs_parser
    )
    loopsim.simulate(af.Agent(client=af_worker, middleware=[af_loop]).run, "go")
    # the marker in the first reply is ignored: the parser said "not answered"
    assert len(ls_worker.requests) == len(af_worker.requests) == 2


def test_a_verdict_parser_returning_something_else_is_a_type_error_on_both_engines() -> None:
    ls_loop = AgentLoopMiddleware.with_judge(
        ScriptedChatClient(["x"]), verdict_parser=lambda response: True
    )
    with pytest.raises(TypeError, match="JudgeVerdict"):
        loopsim.simulate(loopsim.Agent(ScriptedChatClient(["a"]), middleware=[ls_loop]).run, "go")
    af_loop = af.AgentLoopMiddleware.with_judge(
        FakeAFChatClient(["x"]), verdict_parser=lambda response: True
    )
    with pytest.raises(TypeError, match="JudgeVerdict"):
        loopsim.simulate(af.Agent(client=FakeAFChatClient(["a"]), middleware=[af_loop]).run, "go")


def test_criteria_reach_the_agent_and_the_judge_on_both_engines() -> None:
    (_, ls_judge, ls_worker), (_, af_judge, af_worker) = both(
        ["VERDICT: DONE"], ["done"], criteria=["cites sources", "is short"]
    )
    ours_first = ls_worker.requests[0].messages[0]
    theirs_first = af_worker.requests[0][0][0]
    assert (ours_first.role, str(theirs_first.role)) == ("system", "system")
    assert match(ours_first.text) == (
        "judge.criteria_instruction",
        {"bullets": "- cites sources\n- is short"},
    )
    assert agrees(ours_first.text, theirs_first.text)
    instructions = ls_judge.requests[0].messages[0].text
    assert instructions.endswith(
        WORDING["judge.criteria_block"].replace("{bullets}", "- cites sources\n- is short")
    )
    assert "{{criteria}}" not in instructions
    assert af_judge.requests[0][0][0].text.endswith("- cites sources\n- is short")
