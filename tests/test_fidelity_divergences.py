"""The last divergences of the shipped scenarios, each pinned on both engines.

* an answered approval: what the model is shown afterwards (the call, then its result);
* ``release_session``: the records it leaves, and when they become ``lost``;
* children finishing at one virtual instant: which one the wait tool reports.

Each test runs one program on loopsim's built-in engine and on agent-framework-core
(behind a minimal fake chat client) and asserts the same facts of both.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient, af_call

import loopsim
from loopsim import FunctionCallContent, Message, ScriptedChatClient
from loopsim._wording import WORDING, agrees

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

Shape = list[tuple[str, list[tuple[str, Any]]]]


def shape(messages: Any) -> Shape:
    """Role and (type, what identifies it) of every content: call ids, results, texts."""
    out: Shape = []
    for m in messages:
        contents: list[tuple[str, Any]] = []
        for c in m.contents:
            kind = str(c.type)
            if kind in ("function_call", "function_result"):
                contents.append((kind, c.call_id))
            elif kind == "text":
                contents.append((kind, c.text))
            else:
                contents.append((kind, None))
        out.append((str(m.role), contents))
    return out


def results(messages: Any) -> list[str]:
    return [str(c.result) for m in messages for c in m.contents if c.type == "function_result"]


def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _ls_call() -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id="c1", name="delete", arguments={"path": "/x"})]
    )


def _approval_program(engine: str, second: str) -> tuple[list[Any], Any]:
    """rm (asks approval) -> ``second`` ("yes", "no" or a text) -> "next".

    Returns the messages of every model request, and the session's stored history.
    """
    replies: list[Any] = ["done", "again"]
    if engine == "loopsim":
        client: Any = ScriptedChatClient([_ls_call(), *replies])
        agent: Any = loopsim.Agent(
            client, name="ops", tools=[loopsim.tool(delete, approval_mode="always_require")]
        )
    else:
        client = FakeAFChatClient([af_call("c1", "delete", path="/x"), *replies])
        agent = af.Agent(
            client=client, name="ops", tools=[af.tool(delete, approval_mode="always_require")]
        )

    async def main() -> Any:
        session = agent.create_session()
        first = await agent.run("rm", session=session)
        request = first.messages[0].contents[1]
        assert request.type == "function_approval_request"
        if second in ("yes", "no"):
            message: Any = (
                Message("user", [request.create_response(second == "yes")])
                if engine == "loopsim"
                else af.Message(
                    role="user", contents=[request.to_function_approval_response(second == "yes")]
                )
            )
        else:
            message = second
        await agent.run(message, session=session)
        await agent.run("next", session=session)
        if engine == "loopsim":
            return list(session.history())
        return list(session.state["in_memory"]["messages"])

    stored = loopsim.simulate(main)
    sent = [r.messages if engine == "loopsim" else r[0] for r in client.requests]
    return sent, stored


ENGINES = ["loopsim", "agent_framework"]


@pytest.mark.parametrize("answer", ["yes", "no"])
def test_after_an_answered_approval_the_model_sees_the_call_then_its_result(answer: str) -> None:
    ours, ours_stored = _approval_program("loopsim", answer)
    theirs, theirs_stored = _approval_program("agent_framework", answer)
    call = ("assistant", [("function_call", "c1")])
    # the run that answers: the request beside the call and the host's answer are gone,
    # the answer's message became the tool message with the result
    expected_answering = [("user", [("text", "rm")]), call, ("tool", [("function_result", "c1")])]
    assert shape(ours[1]) == shape(theirs[1]) == expected_answering
    # the next run: the history as loaded, settled approvals left out
    expected_next = [
        *expected_answering,
        ("assistant", [("text", "done")]),
        ("user", [("text", "next")]),
    ]
    assert shape(ours[2]) == shape(theirs[2]) == expected_next
    assert [m.author_name for m in ours[2]] == [m.author_name for m in theirs[2]]
    assert [m.author_name for m in ours[1]] == [m.author_name for m in theirs[1]]
    ours_result, theirs_result = results(ours[1])[0], results(theirs[1])[0]
    if answer == "yes":
        assert ours_result == theirs_result == "deleted /x"
    else:
        assert ours_result == WORDING["agent.tool.rejected"]
        assert agrees(ours_result, theirs_result)
    # the session keeps everything as it happened: the request, the answer, the result
    stored_shape = [
        ("user", [("text", "rm")]),
        ("assistant", [("function_call", "c1"), ("function_approval_request", None)]),
        ("user", [("function_approval_response", None)]),
        ("tool", [("function_result", "c1")]),
        ("assistant", [("text", "done")]),
        ("user", [("text", "next")]),
        ("assistant", [("text", "again")]),
    ]
    assert shape(ours_stored) == shape(theirs_stored) == stored_shape


def test_an_approval_left_unanswered_is_hidden_from_the_model_with_its_call() -> None:
    ours, ours_stored = _approval_program("loopsim", "never mind")
    theirs, theirs_stored = _approval_program("agent_framework", "never mind")
    expected = [("user", [("text", "rm")]), ("user", [("text", "never mind")])]
    assert shape(ours[1]) == shape(theirs[1]) == expected
    assert shape(ours[2]) == shape(theirs[2])
    assert shape(ours[2])[:2] == expected
    # still kept in the session, still open
    assert shape(ours_stored) == shape(theirs_stored)
    assert shape(ours_stored)[1] == (
        "assistant",
        [("function_call", "c1"), ("function_approval_request", None)],
    )
