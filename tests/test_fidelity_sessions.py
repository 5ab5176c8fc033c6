"""Sessions on both engines: ids, service ids, and the saved dict shape both ways."""

from __future__ import annotations

import json
from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient, af_call

import loopsim
from loopsim import AgentSession, FunctionResultContent, Message, ScriptedChatClient

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_create_session_and_get_session_take_upstreams_arguments_on_both_engines() -> None:
    ours = loopsim.Agent(ScriptedChatClient([]))
    theirs = af.Agent(client=FakeAFChatClient([]))

    def probe(agent: Any) -> tuple[Any, ...]:
        made = agent.create_session(session_id="mine")
        bound = agent.get_session("svc-7", session_id="other")
        return made.session_id, made.service_session_id, bound.session_id, bound.service_session_id

    expected = ("mine", None, "other", "svc-7")
    assert loopsim.simulate(lambda: _now(probe(ours))) == expected
    assert loopsim.simulate(lambda: _now(probe(theirs))) == expected
    assert (
        loopsim.LoopAgent(ours, loopsim.DelegateLoopEvaluator(lambda c: None))
        .create_session(session_id="via-loop")
        .session_id
        == "via-loop"
    )


async def _now(value: Any) -> Any:
    return value


@pytest.mark.parametrize("how", ["dict", "agent"])
def test_service_session_id_survives_serialization_of_an_in_memory_session(how: str) -> None:
    ours = loopsim.Agent(ScriptedChatClient([]))
    theirs = af.Agent(client=FakeAFChatClient([]))

    def round_trip(agent: Any, session_type: Any) -> Any:
        session = agent.get_session("conv-42")
        if how == "dict":
            restored = session_type.from_dict(json.loads(json.dumps(session.to_dict())))
        else:
            data = json.loads(json.dumps(_serialize(agent, session)))
            restored = _deserialize(agent, data)
        return restored.service_session_id

    assert loopsim.simulate(lambda: _now(round_trip(ours, AgentSession))) == "conv-42"
    assert loopsim.simulate(lambda: _now(round_trip(theirs, af.AgentSession))) == "conv-42"


def _serialize(agent: Any, session: Any) -> Any:
    if isinstance(agent, af.Agent):
        return session.to_dict()
    return agent.serialize_session(session)


def _deserialize(agent: Any, data: Any) -> Any:
    if isinstance(agent, af.Agent):
        return af.AgentSession.from_dict(data)
    return agent.deserialize_session(data)


def test_service_session_id_survives_a_fresh_context_reset_on_both_engines() -> None:
    seen: dict[str, list[Any]] = {"ours": [], "theirs": []}

    def recorder(key: str) -> Any:
        def should_continue(*, iteration: int, session: Any, **_: Any) -> bool:
            seen[key].append(session.service_session_id)
            return iteration < 2

        return should_continue

    ours = loopsim.Agent(
        ScriptedChatClient(["one", "two"]),
        middleware=[loopsim.AgentLoopMiddleware(recorder("ours"), fresh_context=True)],
    )
    theirs = af.Agent(
        client=FakeAFChatClient(["one", "two"]),
        middleware=[af.AgentLoopMiddleware(recorder("theirs"), fresh_context=True)],
    )

    async def run(agent: Any) -> Any:
        session = agent.get_session("conv-9")
        await agent.run("task", session=session)
        return session.service_session_id

    assert loopsim.simulate(run, ours) == loopsim.simulate(run, theirs) == "conv-9"
    assert seen["ours"] == seen["theirs"] == ["conv-9", "conv-9"]


def test_a_session_saved_by_agent_framework_restores_in_loopsim() -> None:
    af_agent = af.Agent(
        client=FakeAFChatClient([af_call("c1", "add", a=2, b=3), "five"]), tools=[af.tool(add)]
    )

    async def save() -> dict[str, Any]:
        session = af_agent.create_session(session_id="shared")
        await af_agent.run("2+3?", session=session)
        return session.to_dict()

    saved = json.loads(json.dumps(loopsim.simulate(save)))
    client = ScriptedChatClient(["still five"])
    agent = loopsim.Agent(client, tools=[add])

    async def resume() -> AgentSession:
        session = agent.deserialize_session(saved)
        await agent.run("and again?", session=session)
        return session

    session = loopsim.simulate(resume)
    assert session.session_id == "shared"
    sent = client.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert [m.text for m in sent] == ["2+3?", "", "", "five", "and again?"]
    result = sent[2].contents[0]
    assert isinstance(result, FunctionResultContent)
    assert (result.call_id, str(result.result)) == ("c1", "5")


def test_a_session_saved_by_loopsim_restores_in_agent_framework() -> None:
    agent = loopsim.Agent(
        ScriptedChatClient(
            [
                loopsim.Message(
                    "assistant",
                    [
                        loopsim.FunctionCallContent(
                            call_id="c1", name="add", arguments={"a": 2, "b": 3}
                        )
                    ],
                ),
                "five",
            ]
        ),
        tools=[add],
    )

    async def save() -> dict[str, Any]:
        session = agent.create_session(session_id="shared")
        await agent.run("2+3?", session=session)
        return agent.serialize_session(session)

    saved = json.loads(json.dumps(loopsim.simulate(save)))
    assert saved["type"] == "session"
    client = FakeAFChatClient(["still five"])
    af_agent = af.Agent(client=client, tools=[af.tool(add)])

    async def resume() -> Any:
        session = af.AgentSession.from_dict(saved)
        await af_agent.run("and again?", session=session)
        return session

    session = loopsim.simulate(resume)
    assert session.session_id == "shared"
    sent = client.requests[0][0]
    assert [str(m.role) for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[2].contents[0].call_id == "c1"
    assert [m.text for m in sent][-2:] == ["five", "and again?"]


def test_a_loopsim_snapshot_of_the_earlier_format_still_restores() -> None:
    old = {
        "type": "loopsim.session",
        "session_id": "s-old",
        "history_store": "in_memory",
        "state": {"p": {"k": 1}},
        "messages": [{"role": "user", "contents": [{"type": "text", "text": "hi"}]}],
    }
    session = AgentSession.from_dict(old)
    assert (session.session_id, session.state["p"], [m.text for m in session.history()]) == (
        "s-old",
        {"k": 1},
        ["hi"],
    )
    assert session.state["in_memory"]["messages"] == list(session.history())  # live


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"type": "other", "session_id": "x"}, "not a serialized session"),
        ({"type": "session"}, "not a serialized session"),
        ({"type": "session", "session_id": "x", "state": []}, "state must be a dict"),
        (
            {
                "type": "session",
                "session_id": "x",
                "state": {
                    "in_memory": {
                        "messages": [{"role": "user", "contents": [{"type": "hologram"}]}]
                    }
                },
            },
            r"contents\[0\]: content type 'hologram'",
        ),
    ],
)
def test_a_bad_snapshot_is_a_located_value_error(data: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        AgentSession.from_dict(data)


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
def test_live_session_state_holds_the_history_where_upstream_keeps_it(engine: str) -> None:
    if engine == "loopsim":
        client: Any = ScriptedChatClient(["one", "two"])
        agent: Any = loopsim.Agent(client)
    else:
        client = FakeAFChatClient(["one", "two"])
        agent = af.Agent(client=client)

    async def main() -> list[list[str]]:
        session = agent.create_session()
        seen = []
        for text in ("hi", "again"):
            await agent.run(text, session=session)
            # read live, between turns, without to_dict
            seen.append([m.text for m in session.state["in_memory"]["messages"]])
        return seen

    assert loopsim.simulate(main) == [["hi", "one"], ["hi", "one", "again", "two"]]


def test_the_live_history_is_the_sessions_own_list_not_a_copy() -> None:
    session = loopsim.AgentSession()
    assert "in_memory" not in session.state  # as upstream: no history, no key
    session.add_messages([Message.user("a")])
    held = session.state["in_memory"]["messages"]
    session.add_messages([Message.user("b")])
    assert session.state["in_memory"]["messages"] is held
    assert [m.text for m in held] == ["a", "b"]
    # assigning a restored session's state brings its history, as upstream's does
    restored = loopsim.AgentSession.from_dict(session.to_dict())
    other = loopsim.AgentSession()
    other.state = restored.state
    assert [m.text for m in other.history()] == ["a", "b"]
