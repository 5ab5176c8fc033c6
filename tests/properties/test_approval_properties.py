"""Approval flows on both engines: whatever the host answers, the model sees the same.

A drawn conversation: each run's model answer is a text, a call needing approval (one or
two), or a call that runs at once; the host then answers every pending approval (each
yes or no) or ignores them with a new text. loopsim's Agent and agent_framework's Agent
run the same script, and every model request must have the same shape on both: roles,
content kinds, call ids and results.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient
from _shapes import results, shape
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import FunctionCallContent, Message, ScriptedChatClient
from loopsim._wording import agrees

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def delete(path: str) -> str:
    """Delete a file (needs approval)."""
    return f"deleted {path}"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


ANSWER_KINDS = st.sampled_from(["text", "approval", "two_approvals", "plain"])


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[Any, list[str]]]:
    """Runs: (host input: a text, or a list of yes/no per pending approval; answer kinds)."""
    runs: list[tuple[Any, list[str]]] = []
    pending = 0
    for number in range(draw(st.integers(2, 5))):
        if pending and draw(st.booleans()):
            host: Any = draw(st.lists(st.booleans(), min_size=pending, max_size=pending))
        else:
            host = f"message {number}"
        kinds: list[str] = []
        kind = draw(ANSWER_KINDS)
        kinds.append(kind)
        if kind == "plain":  # the tool runs, the model answers again
            kinds.append(draw(st.sampled_from(["text", "approval"])))
        pending = {"approval": 1, "two_approvals": 2}.get(kinds[-1], 0)
        runs.append((host, kinds))
    return runs


def _replies(runs: list[tuple[Any, list[str]]], engine: str) -> list[Any]:
    replies: list[Any] = []
    counter = 0

    def call(name: str, **arguments: Any) -> Any:
        nonlocal counter
        counter += 1
        call_id = f"c{counter}"
        if engine == "loopsim":
            return FunctionCallContent(call_id=call_id, name=name, arguments=arguments)
        return af.Content.from_function_call(call_id=call_id, name=name, arguments=arguments)

    def message(contents: list[Any]) -> Any:
        if engine == "loopsim":
            return Message("assistant", contents)
        return af.Message(role="assistant", contents=contents)

    for number, (_, kinds) in enumerate(runs):
        for kind in kinds:
            if kind == "text":
                replies.append(f"reply {number}")
            elif kind == "plain":
                replies.append(message([call("add", a=number, b=1)]))
            elif kind == "approval":
                replies.append(message([call("delete", path=f"/{number}")]))
            else:
                replies.append(
                    message(
                        [call("delete", path=f"/{number}a"), call("delete", path=f"/{number}b")]
                    )
                )
    return replies


def _program(runs: list[tuple[Any, list[str]]], engine: str) -> list[Any]:
    replies = _replies(runs, engine)
    if engine == "loopsim":
        client: Any = ScriptedChatClient(replies)
        agent: Any = loopsim.Agent(
            client,
            name="ops",
            tools=[loopsim.tool(delete, approval_mode="always_require"), loopsim.tool(add)],
        )
    else:
        client = FakeAFChatClient(replies)
        agent = af.Agent(
            client=client,
            name="ops",
            tools=[af.tool(delete, approval_mode="always_require"), af.tool(add)],
        )

    async def main() -> None:
        session = agent.create_session()
        last: Any = None
        for host, _ in runs:
            if isinstance(host, list):
                requests = [
                    c
                    for m in last.messages
                    for c in m.contents
                    if c.type == "function_approval_request"
                ]
                if engine == "loopsim":
                    message: Any = Message(
                        "user",
                        [r.create_response(yes) for r, yes in zip(requests, host, strict=True)],
                    )
                else:
                    message = af.Message(
                        role="user",
                        contents=[
                            r.to_function_approval_response(yes)
                            for r, yes in zip(requests, host, strict=True)
                        ],
                    )
            else:
                message = host
            last = await agent.run(message, session=session)

    loopsim.simulate(main)
    return [r.messages if engine == "loopsim" else r[0] for r in client.requests]


@settings(max_examples=25, deadline=None)
@given(runs=conversations())
def test_every_model_request_of_an_approval_flow_has_upstreamsshape(
    runs: list[tuple[Any, list[str]]],
) -> None:
    ours = _program(runs, "loopsim")
    theirs = _program(runs, "agent_framework")
    assert [shape(r) for r in ours] == [shape(r) for r in theirs]
    for mine, other in zip(ours, theirs, strict=True):
        assert all(
            agrees(a, b) or a == b for a, b in zip(results(mine), results(other), strict=True)
        )
