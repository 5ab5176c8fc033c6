"""Service-side sessions on both engines: one program, the same requests and sessions.

A client whose answer carries a ``conversation_id`` makes the session service-backed;
later requests carry that id, and only the new messages when the service keeps the
history (a client that stores by default). ``get_session(service_session_id)`` sends the
id. Each test runs one program on loopsim's Agent and on agent_framework's.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient, af_call

import loopsim
from loopsim import ChatResponse, FunctionCallContent, Message, ScriptedChatClient
from loopsim.agent_framework import as_chat_client

ENGINES = ("loopsim", "agent_framework")
pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Fake:
    """One scripted model for either engine: (text or call, conversation id) per answer."""

    def __init__(self, engine: str, answers: list[tuple[Any, str | None]], *, stores: bool):
        self.engine = engine
        if engine == "loopsim":
            self.client: Any = ScriptedChatClient([_ls_answer(a, c) for a, c in answers])
        else:
            self.client = FakeAFChatClient([_af_answer(a, c) for a, c in answers])
        if stores:
            self.client.STORES_BY_DEFAULT = True

    def agent(self, **kwargs: Any) -> Any:
        if self.engine == "loopsim":
            return loopsim.Agent(self.client, tools=[add], **kwargs)
        return af.Agent(client=self.client, tools=[af.tool(add)], **kwargs)

    def sent(self) -> list[tuple[list[tuple[str, str]], str | None]]:
        """Each request: its messages (role, text or content types) and conversation id."""
        out = []
        for request in self.client.requests:
            if self.engine == "loopsim":
                messages, conversation_id = request.messages, request.options.conversation_id
            else:
                messages, conversation_id = request[0], request[1].get("conversation_id")
            out.append(([_shown(m) for m in messages], conversation_id))
        return out


def _shown(message: Any) -> tuple[str, str]:
    return str(message.role), message.text or ",".join(str(c.type) for c in message.contents)


def _ls_answer(answer: Any, conversation_id: str | None) -> ChatResponse:
    if isinstance(answer, tuple):
        call = FunctionCallContent(call_id=answer[0], name="add", arguments=answer[1])
        message = Message("assistant", [call])
    else:
        message = Message.assistant(answer)
    return ChatResponse([message], conversation_id=conversation_id)


def _af_answer(answer: Any, conversation_id: str | None) -> af.ChatResponse[Any]:
    if isinstance(answer, tuple):
        message = af_call(answer[0], "add", **answer[1])
    else:
        message = af.Message(role="assistant", contents=[answer])
    return af.ChatResponse(messages=[message], conversation_id=conversation_id)


def _sessions(engine: str, *, stores: bool, stream: bool) -> tuple[list[Any], list[Any]]:
    answers: list[tuple[Any, str | None]] = [
        ("one", "conv-A"),
        ("two", "conv-A"),
        ("three", "conv-A"),
        ("four", None),
    ]
    fake = Fake(engine, answers, stores=stores)
    agent = fake.agent(name="a")

    async def run(text: str, session: Any) -> None:
        if stream:
            async for _ in agent.run(text, session=session, stream=True):
                pass
        else:
            await agent.run(text, session=session)

    async def main() -> list[Any]:
        ids = []
        first = agent.create_session()
        await run("hi", first)
        ids.append(first.service_session_id)
        await run("again", first)
        ids.append(first.service_session_id)
        given = agent.get_session("conv-B")
        await run("third", given)
        ids.append(given.service_session_id)
        fresh = agent.create_session()
        await run("fourth", fresh)
        ids.append(fresh.service_session_id)
        return ids

    return loopsim.simulate(main), fake.sent()


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("stores", [False, True], ids=["local-history", "service-stores"])
def test_an_answers_conversation_id_makes_the_session_service_backed(
    stores: bool, stream: bool
) -> None:
    ours = _sessions("loopsim", stores=stores, stream=stream)
    theirs = _sessions("agent_framework", stores=stores, stream=stream)
    assert ours == theirs
    ids, sent = ours
    # the answer's id is the session's; get_session's id is sent, then the answer's wins
    assert ids == ["conv-A", "conv-A", "conv-A", None]
    assert [conversation for _, conversation in sent] == [None, "conv-A", "conv-B", None]
    if stores:  # the service keeps the history: only the new messages
        assert [messages for messages, _ in sent] == [
            [("user", "hi")],
            [("user", "again")],
            [("user", "third")],
            [("user", "fourth")],
        ]
    else:  # upstream keeps a local history too once it had one, and replays it
        assert sent[1][0] == [("user", "hi"), ("assistant", "one"), ("user", "again")]


class Context(loopsim.ContextProvider):
    async def before_run(self, *, agent: Any, session: Any, context: Any, state: Any) -> None:
        context.extend_messages(self, [Message.user("CTX")])


class AFContext(af.ContextProvider):
    async def before_run(self, *, agent: Any, session: Any, context: Any, state: Any) -> None:
        context.extend_messages(self, [af.Message(role="user", contents=["CTX"])])


def _tool_loop(engine: str, *, stream: bool) -> tuple[Any, ...]:
    answers: list[tuple[Any, str | None]] = [
        (("c1", {"a": 1, "b": 2}), "resp-1"),
        ("3", "resp-2"),
        ("again", "resp-3"),
    ]
    fake = Fake(engine, answers, stores=True)
    provider = Context(source_id="cp") if engine == "loopsim" else AFContext(source_id="cp")
    agent = fake.agent(name="a", instructions="INS", context_providers=[provider])

    async def main() -> tuple[Any, ...]:
        session = agent.create_session()
        if stream:
            async for _ in agent.run("hi", session=session, stream=True):
                pass
        else:
            await agent.run("hi", session=session)
        after_first = session.service_session_id
        response = await agent.run("more", session=session)
        state = {k: v for k, v in session.state.items() if k != "history_store"}
        return after_first, session.service_session_id, response.text, state

    return (*loopsim.simulate(main), fake.sent())


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_a_tool_round_of_a_service_backed_run_sends_only_its_results(stream: bool) -> None:
    ours = _tool_loop("loopsim", stream=stream)
    theirs = _tool_loop("agent_framework", stream=stream)
    assert ours == theirs
    assert ours[:4] == ("resp-2", "resp-3", "again", {"cp": {}})  # no local history kept
    assert ours[4] == [
        ([("user", "CTX"), ("user", "hi")], None),
        ([("tool", "function_result")], "resp-1"),
        ([("user", "CTX"), ("user", "more")], "resp-2"),
    ]


def _simulated_service(engine: str, kind: Any) -> tuple[list[Any], list[Any]]:
    """loopsim's simulated service in front of one scripted model, on either engine."""
    model = ScriptedChatClient(["one", "two", "three"])
    service = loopsim.ServiceChatClient(model, kind=kind)
    agent: Any = (
        loopsim.Agent(service, name="a")
        if engine == "loopsim"
        else af.Agent(client=as_chat_client(service), name="a")
    )

    async def main() -> list[Any]:
        session = agent.create_session()
        await agent.run("hi", session=session)
        first = session.service_session_id
        await agent.run("again", session=session)
        fork = agent.get_session(first)  # a response chain forks from an older answer
        await agent.run("other", session=fork)
        return [first, session.service_session_id, fork.service_session_id]

    ids = loopsim.simulate(main)
    seen = [[m.text for m in r.messages] for r in model.requests]
    received = [([m.text for m in r.messages], r.options.conversation_id) for r in service.requests]
    return ids, [seen, received]


@pytest.mark.parametrize("kind", ["conversation", "response_chain"])
def test_the_simulated_service_keeps_the_history_on_both_engines(kind: Any) -> None:
    ours = _simulated_service("loopsim", kind)
    theirs = _simulated_service("agent_framework", kind)
    assert ours == theirs
    ids, (seen, received) = ours
    assert [r[0] for r in received] == [["hi"], ["again"], ["other"]]
    if kind == "conversation":  # one conversation: every turn appended to it
        assert ids == ["conv-0001"] * 3
        assert seen[2] == ["hi", "one", "again", "two", "other"]
    else:  # a chain: a new response each answer; continuing the first one forks
        assert ids[0] != ids[1]
        assert ids[2] not in ids[:2]
        assert seen[2] == ["hi", "one", "other"]
