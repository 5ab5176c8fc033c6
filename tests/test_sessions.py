"""Sessions and the three history stores (seed 001: what a restored clone sees)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim import Agent, AgentSession, Message, ScriptedChatClient

STORES = ["in_memory", "service_conversation", "service_response_chain"]


def texts(request: loopsim.ChatRequest) -> list[str]:
    return [m.text for m in request.messages]


@pytest.mark.parametrize(
    ("store", "clone_sees"),
    [
        # in-memory: the snapshot holds the messages, the clone starts from it
        ("in_memory", ["q1", "a1", "clone q"]),
        # conversation: the snapshot holds only an id; the clone sees everything since
        ("service_conversation", ["q1", "a1", "q2", "a2", "clone q"]),
        # response chain: the snapshot holds the last response id; the clone forks there
        ("service_response_chain", ["q1", "a1", "clone q"]),
    ],
)
def test_restored_clone_sees_what_its_store_keeps(
    backend: str, store: str, clone_sees: list[str]
) -> None:
    client = ScriptedChatClient(["a1", "a2", "clone a", "orig a"])
    agent = Agent(client, history_store=store)  # type: ignore[arg-type]

    async def main() -> None:
        session = agent.create_session()
        await agent.run("q1", session=session)
        snapshot = agent.serialize_session(session)
        json.dumps(snapshot)  # JSON-safe
        await agent.run("q2", session=session)
        clone = agent.deserialize_session(snapshot)
        assert clone.session_id == session.session_id
        assert clone is not session
        await agent.run("clone q", session=clone)
        await agent.run("orig q", session=session)

    loopsim.simulate(main, backend=backend)
    assert texts(client.requests[2]) == clone_sees
    original_after = texts(client.requests[3])
    if store == "service_conversation":
        assert original_after == ["q1", "a1", "q2", "a2", "clone q", "clone a", "orig q"]
    else:  # the clone's turn did not leak into the original
        assert original_after == ["q1", "a1", "q2", "a2", "orig q"]


@pytest.mark.parametrize("store", STORES)
def test_serialized_session_keeps_state_and_id(store: str) -> None:
    async def main() -> tuple[AgentSession, AgentSession]:
        session = AgentSession(history_store=store)  # type: ignore[arg-type]
        session.state["provider"] = {"tasks": [{"id": 1}], "next": 2}
        restored = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())))
        session.state["provider"]["next"] = 99
        return session, restored

    session, restored = loopsim.simulate(main)
    assert restored.session_id == session.session_id
    assert restored.history_store == store
    assert restored.state == {"provider": {"tasks": [{"id": 1}], "next": 2}}


def test_from_dict_rejects_foreign_data() -> None:
    with pytest.raises(ValueError, match="not a serialized session"):
        AgentSession.from_dict({"session_id": "x"})


json_state = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    state=st.dictionaries(st.text(max_size=6), json_state, max_size=3),
    texts_=st.lists(st.text(max_size=12), max_size=4),
)
def test_in_memory_session_round_trips_through_json(
    state: dict[str, Any], texts_: list[str]
) -> None:
    async def main() -> tuple[AgentSession, AgentSession]:
        session = AgentSession(state=state)
        session.add_messages([Message.user(t) for t in texts_])
        return session, AgentSession.from_dict(json.loads(json.dumps(session.to_dict())))

    session, restored = loopsim.simulate(main)
    assert restored.to_dict() == session.to_dict()
    assert list(restored.history()) == list(session.history())


def test_session_ids_are_deterministic_per_simulation() -> None:
    def ids() -> list[str]:
        async def main() -> list[str]:
            return [AgentSession().session_id for _ in range(3)]

        return loopsim.simulate(main)

    assert ids() == ids() == ["session-0001", "session-0002", "session-0003"]


def test_history_view_is_a_read_only_sequence() -> None:
    from loopsim._agents import MessageView

    base = [Message.user("a"), Message.user("b")]
    view = MessageView(base, 1, [Message.user("c")])
    base.append(Message.user("later"))
    assert [m.text for m in view] == ["a", "c"]
    assert view[-1].text == "c"
    assert [m.text for m in view[0:2]] == ["a", "c"]
    assert len(view) == 2
    with pytest.raises(IndexError):
        view[2]
