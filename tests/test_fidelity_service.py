"""Service-side sessions on both engines: one program, the same requests and sessions.

A client whose answer carries a ``conversation_id`` makes the session service-backed;
later requests carry that id, and only the new messages when the service keeps the
history (a client that stores by default). Within a run, the tool loop's request after
an answer naming a conversation holds only the tool results, whatever the session keeps.
``get_session(service_session_id)`` sends the id. Each test runs one program on loopsim's
Agent and on agent_framework's.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient, af_call, approval_answer, run_agent
from test_fidelity_streaming import AF_HARNESS_OFF

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


def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


C, T = ("assistant", "function_call"), ("tool", "function_result")
ASK = "function_approval_request"
ADD_1 = ("c1", "add", {"a": 1, "b": 2})
ADD_2 = ("c2", "add", {"a": 3, "b": 4})
MUL_3 = ("c3", "mul", {"a": 5, "b": 6})
#: a tool-loop run's answers, each naming a conversation or not; then its requests past
#: the first ("first": as the run's first request was; C, T: a call and its results)
IN_A_RUN: dict[str, tuple[list[tuple[Any, str | None]], list[tuple[Any, str | None]]]] = {
    "one-round": ([(ADD_1, "conv-A"), ("3", None)], [([T], "conv-A")]),
    "first-only": (
        [(ADD_1, "conv-A"), (ADD_2, None), ("done", None)],
        [([T], "conv-A"), ([T, C, T], "conv-A")],
    ),
    "both": (
        [(ADD_1, "conv-A"), (ADD_2, "conv-A"), ("done", "conv-A")],
        [([T], "conv-A"), ([T], "conv-A")],
    ),
    "another-id": (
        [(ADD_1, "conv-A"), (ADD_2, "conv-B"), ("done", None)],
        [([T], "conv-A"), ([T], "conv-B")],
    ),
    "second-only": (
        [(ADD_1, None), (ADD_2, "conv-A"), ("done", None)],
        [(["first", C, T], None), ([T], "conv-A")],
    ),
}


class Model:
    """A scripted model for either engine, answering a text or a call, naming a
    conversation or not; the agent has ``add`` (asking approval if ``gated``) and ``mul``."""

    def __init__(self, engine: str, answers: list[tuple[Any, str | None]], *, stores: bool):
        self.engine = engine
        if engine == "loopsim":
            self.client: Any = ScriptedChatClient([_ls_reply(a, c) for a, c in answers])
        else:
            self.client = FakeAFChatClient([_af_reply(a, c) for a, c in answers])
        if stores:
            self.client.STORES_BY_DEFAULT = True

    def agent(self, *, harness: bool, gated: bool) -> Any:
        mode = "always_require" if gated else "never_require"
        if self.engine == "loopsim":
            tools: list[Any] = [loopsim.tool(add, approval_mode=mode), loopsim.tool(mul)]
            if harness:
                return loopsim.create_harness_agent(self.client, name="a", tools=tools)
            return loopsim.Agent(self.client, name="a", tools=tools)
        tools = [af.tool(add, approval_mode=mode), af.tool(mul)]
        if harness:
            return af.create_harness_agent(self.client, name="a", tools=tools, **AF_HARNESS_OFF)
        return af.Agent(client=self.client, name="a", tools=tools)

    sent = Fake.sent


def _ls_reply(answer: Any, conversation_id: str | None) -> ChatResponse:
    if isinstance(answer, tuple):
        call = FunctionCallContent(call_id=answer[0], name=answer[1], arguments=answer[2])
        message = Message("assistant", [call])
    else:
        message = Message.assistant(answer)
    return ChatResponse([message], conversation_id=conversation_id)


def _af_reply(answer: Any, conversation_id: str | None) -> af.ChatResponse[Any]:
    if isinstance(answer, tuple):
        message = af_call(answer[0], answer[1], **answer[2])
    else:
        message = af.Message(role="assistant", contents=[answer])
    return af.ChatResponse(messages=[message], conversation_id=conversation_id)


APPROVE = "<approve>"  # a run answering the open approval request (yes)


def _conversation_in_a_run(
    engine: str,
    answers: list[tuple[Any, str | None]],
    inputs: tuple[str, ...] = ("hi", "add", "more"),
    *,
    stores: bool = False,
    stream: bool = False,
    harness: bool = False,
    gated: bool = False,
) -> tuple[Any, ...]:
    """Runs on one session, each given an input (or answering an approval): the session's
    service id after each run, and every request (messages, conversation id)."""
    model = Model(engine, [("one", None), *answers, ("later", None)], stores=stores)
    agent = model.agent(harness=harness, gated=gated)

    async def run(message: Any, session: Any) -> Any:
        return await run_agent(agent, message, session, stream=stream)

    async def main() -> list[str | None]:
        session = agent.create_session()
        ids, response = [], None
        for text in inputs:
            message: Any = text
            if text == APPROVE:
                assert response is not None
                request = next(c for m in response.messages for c in m.contents if c.type == ASK)
                message = approval_answer(engine, request, True)
            response = await run(message, session)
            ids.append(session.service_session_id)
        return ids

    return loopsim.simulate(main), model.sent()


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("stores", [False, True], ids=["local-history", "service-stores"])
@pytest.mark.parametrize("case", list(IN_A_RUN))
def test_an_answer_naming_a_conversation_trims_the_next_request_of_the_run(
    case: str, stores: bool, stream: bool
) -> None:
    answers, later = IN_A_RUN[case]
    ours = _conversation_in_a_run("loopsim", answers, stores=stores, stream=stream)
    theirs = _conversation_in_a_run("agent_framework", answers, stores=stores, stream=stream)
    assert ours == theirs
    ids, sent = ours
    named = next(c for _, c in reversed(later) if c is not None)
    assert ids == [None, named, named]  # the session takes the answer's conversation
    # the service keeps the history, or the run sends the local one first
    first = [("user", "add")] if stores else [("user", "hi"), ("assistant", "one"), ("user", "add")]
    assert sent[1] == (first, None)
    # after an answer naming a conversation: its tool results only, then as usual
    assert sent[2:-1] == [
        ([m for part in messages for m in (first if part == "first" else [part])], c)
        for messages, c in later
    ]
    # the next run: the conversation named; a local history (each round's call and
    # results kept) sent again
    more = [("user", "more")]
    if not stores:
        more = [*first, *[C, T] * len(later), ("assistant", answers[-1][0]), *more]
    assert sent[-1] == (more, named)


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("harness", [False, True], ids=["agent", "harness"])
def test_a_harness_trims_the_next_request_as_an_agent_does(harness: bool, stream: bool) -> None:
    # a harness keeps its history per model call: upstream allows an answer naming a
    # conversation only when the service keeps the history
    answers, later = IN_A_RUN["first-only"]
    kwargs: dict[str, Any] = {"stream": stream, "harness": harness, "stores": True}
    ours = _conversation_in_a_run("loopsim", answers, **kwargs)
    theirs = _conversation_in_a_run("agent_framework", answers, **kwargs)
    assert ours == theirs
    ids, sent = ours
    assert ids == [None, "conv-A", "conv-A"]
    assert sent[2:-1] == later


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("harness", [False, True], ids=["agent", "harness"])
def test_a_run_answering_an_approval_trims_after_an_answer_naming_a_conversation(
    harness: bool, stream: bool
) -> None:
    # "add" asks approval: its run ends at the call (whose answer names conv-A); the next
    # run answers it, add runs, then mul runs in a round whose answer names conv-B
    answers: list[tuple[Any, str | None]] = [(ADD_1, "conv-A"), (MUL_3, "conv-B"), ("done", None)]
    inputs = ("hi", "add", APPROVE, "more")
    # (a harness only where the service keeps the history, as above)
    kwargs: dict[str, Any] = {"stream": stream, "harness": harness, "stores": harness}
    kwargs["gated"] = True
    ours = _conversation_in_a_run("loopsim", answers, inputs, **kwargs)
    theirs = _conversation_in_a_run("agent_framework", answers, inputs, **kwargs)
    assert ours == theirs
    ids, sent = ours
    assert ids == [None, "conv-A", "conv-B", "conv-B"]
    # the answering run's first request continues conv-A (the session's); past mul's
    # round, whose answer names conv-B, only its results
    assert sent[2][1] == "conv-A"
    assert sent[3] == ([T], "conv-B")


# -- a harness keeps its history per model call: a conversation the service keeps cannot
# -- be one of them unless the service stores the history -----------------------------------

#: what each engine raises: (for a run asked to join a conversation, for an answer naming one)
HARNESS_REFUSALS = {
    "loopsim": (loopsim.AgentRequestError, loopsim.ChatResponseError),
    "agent_framework": (
        af.exceptions.AgentInvalidRequestException,
        af.exceptions.ChatClientInvalidResponseException,
    ),
}


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_harness_refuses_an_answer_naming_a_conversation_the_service_does_not_store(
    engine: str, stream: bool
) -> None:
    model = Model(engine, [("done", "conv-A")], stores=False)
    agent = model.agent(harness=True, gated=False)

    async def main() -> Any:
        return await run_agent(agent, "hi", agent.create_session(), stream=stream)

    with pytest.raises(HARNESS_REFUSALS[engine][1]):
        loopsim.simulate(main)
    # the answer was made (and is recorded) before the run failed
    assert len(model.client.requests) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_harness_refuses_to_join_a_conversation_the_service_does_not_store(
    engine: str,
) -> None:
    model = Model(engine, [("done", None)], stores=False)
    agent = model.agent(harness=True, gated=False)

    async def main() -> Any:
        options = {"conversation_id": "conv-A"}
        session = agent.create_session()
        return await agent.run("hi", session=session, options=options)

    with pytest.raises(HARNESS_REFUSALS[engine][0]):
        loopsim.simulate(main)
    assert model.client.requests == []  # refused before any model call


@pytest.mark.parametrize("engine", ENGINES)
def test_a_harness_takes_a_conversation_when_the_run_stores_it(engine: str) -> None:
    model = Model(engine, [("done", "conv-A")], stores=False)
    agent = model.agent(harness=True, gated=False)

    async def main() -> Any:
        session = agent.create_session()
        return await agent.run("hi", session=session, options={"store": True})

    assert loopsim.simulate(main).text == "done"
