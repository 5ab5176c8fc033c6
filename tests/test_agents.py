"""Agent: tool loop, approvals, providers, middleware, streaming, delegation."""

from __future__ import annotations

from typing import Any

import pytest

import loopsim
from loopsim import (
    Agent,
    AgentResponse,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ScriptedChatClient,
    Usage,
)
from loopsim._wording import WORDING, match


def call(name: str, call_id: str = "c1", **arguments: Any) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=call_id, name=name, arguments=arguments)]
    )


@loopsim.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@loopsim.tool
async def fail(reason: str) -> str:
    raise RuntimeError(reason)


@loopsim.tool(approval_mode="always_require")
def delete(path: str) -> str:
    return f"deleted {path}"


def run(agent: Agent, messages: Any, backend: str = "asyncio", **kw: Any) -> AgentResponse:
    return loopsim.simulate(lambda: agent.run(messages, **kw), backend=backend)


def test_tool_calls_run_and_results_go_back_to_the_model(backend: str) -> None:
    client = ScriptedChatClient([call("add", a=2, b=3), "5"])
    agent = Agent(client, name="calc", tools=[add])
    response = run(agent, "2+3?", backend)
    assert response.text == "5"
    assert [m.role for m in response.messages] == ["assistant", "tool", "assistant"]
    result = client.requests[1].messages[-1].contents[0]
    assert isinstance(result, FunctionResultContent)
    assert (result.call_id, result.result, result.error) == (
        "c1",
        "5",
        None,
    )  # the text the model reads
    assert client.requests[0].options.tool_names == ["add"]


@pytest.mark.parametrize(
    ("reply", "expected_error"),
    [
        pytest.param(call("fail", reason="disk full"), "disk full", id="tool-raises"),
        pytest.param(
            call("nope"),
            "unknown tool 'nope'; tools offered this turn: add, fail",
            id="unknown-tool",
        ),
        pytest.param(
            call("add", a=1, b="two"), "invalid arguments for tool 'add': b:", id="bad-arguments"
        ),
        pytest.param(
            call("add", a=1),
            "invalid arguments for tool 'add': b: Field required",
            id="missing-argument",
        ),
    ],
)
def test_tool_problems_become_error_results_the_model_sees(
    reply: Message, expected_error: str
) -> None:
    client = ScriptedChatClient([reply, "recovered"])
    agent = Agent(client, tools=[add, fail])
    assert run(agent, "go").text == "recovered"
    result = client.requests[1].messages[-1].contents[0]
    assert isinstance(result, FunctionResultContent)
    assert result.error is not None
    assert expected_error in result.error
    # upstream's shape: a fixed error text is the result the model reads
    assert isinstance(result.result, str)
    assert result.result.startswith("Error:")
    assert match(result.result) is not None


def test_approval_required_tool_stops_with_a_request_and_runs_after_approval(backend: str) -> None:
    client = ScriptedChatClient([call("delete", path="/tmp/x"), "done"])
    agent = Agent(client, tools=[delete])

    async def main() -> tuple[AgentResponse, AgentResponse]:
        session = agent.create_session()
        first = await agent.run("clean up", session=session)
        (request,) = [
            c
            for m in first.messages
            for c in m.contents
            if isinstance(c, FunctionApprovalRequestContent)
        ]
        answer = Message("user", [request.create_response(True)])
        return first, await agent.run(answer, session=session)

    first, second = loopsim.simulate(main, backend=backend)
    assert len(client.requests) == 2
    assert second.text == "done"
    tool_result = second.messages[0].contents[0]
    assert isinstance(tool_result, FunctionResultContent)
    assert tool_result.result == "deleted /tmp/x"
    assert first.text == ""


def test_rejected_approval_gives_the_model_an_error_result() -> None:
    client = ScriptedChatClient(["ok, not deleting"])
    agent = Agent(client, tools=[delete])
    fc = FunctionCallContent(call_id="c1", name="delete", arguments={"path": "/x"})
    answer = Message(
        "user", [FunctionApprovalResponseContent(id="c1", approved=False, function_call=fc)]
    )
    response = run(agent, answer)
    rejected = response.messages[0].contents[0]
    assert isinstance(rejected, FunctionResultContent)
    assert (rejected.result, rejected.error) == (WORDING["agent.tool.rejected"], None)


def test_history_is_kept_in_the_session_across_runs(backend: str) -> None:
    client = ScriptedChatClient(["first answer", "second answer"])
    agent = Agent(client, instructions="be nice")

    async def main() -> None:
        session = agent.create_session()
        await agent.run("q1", session=session)
        await agent.run("q2", session=session)

    loopsim.simulate(main, backend=backend)
    assert [m.text for m in client.requests[1].messages] == ["q1", "first answer", "q2"]
    assert client.requests[1].options.instructions == "be nice"


def test_request_history_is_a_snapshot_not_a_live_list() -> None:
    client = ScriptedChatClient(["a", "b"])
    agent = Agent(client)

    async def main() -> None:
        session = agent.create_session()
        await agent.run("q1", session=session)
        await agent.run("q2", session=session)

    loopsim.simulate(main)
    assert [m.text for m in client.requests[0].messages] == ["q1"]


def test_usage_is_summed_over_model_turns() -> None:
    client = ScriptedChatClient(
        [
            loopsim.Turn(call("add", a=1, b=1), usage=Usage(input_tokens=2)),
            loopsim.Turn("2", usage=Usage(input_tokens=3)),
        ]
    )
    assert run(Agent(client, tools=[add]), "1+1").usage == Usage(input_tokens=5)


class NotesProvider(loopsim.ContextProvider):
    def __init__(self) -> None:
        super().__init__("notes")
        self.after: list[str] = []

    async def before_run(
        self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]
    ) -> None:
        state["runs"] = state.get("runs", 0) + 1
        context.extend_instructions(self.source_id, [f"run number {state['runs']}"])
        context.extend_tools(self.source_id, [add])
        context.extend_messages(self.source_id, [Message.user("(context note)")])

    async def after_run(
        self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]
    ) -> None:
        self.after.append(context.response.text)


class HistoryPeekProvider(loopsim.ContextProvider):
    """Reads the session's history after each run (the only reader of a run's own session)."""

    def __init__(self) -> None:
        super().__init__("peek")
        self.seen: list[list[str]] = []

    async def after_run(
        self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]
    ) -> None:
        self.seen.append([m.text for m in session.history()])


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("looped", [False, True], ids=["plain", "middleware"])
def test_a_provider_reads_the_history_of_a_session_the_run_made(
    backend: str, stream: bool, looped: bool
) -> None:
    # a run given no session stores nothing only when nobody could read it: a provider can
    client = ScriptedChatClient(["one", "two"])
    provider = HistoryPeekProvider()
    middleware = [loopsim.AgentLoopMiddleware(lambda iteration, **_: iteration < 2)]
    agent = Agent(client, context_providers=[provider], middleware=middleware if looped else [])

    async def main() -> None:
        if stream:
            async for _ in agent.run_stream("go"):
                pass
        else:
            await agent.run("go")

    loopsim.simulate(main, backend=backend)
    # each iteration's session is its own: what the model was sent, then its answer
    expected = [
        [*(m.text for m in r.messages), a]
        for r, a in zip(client.requests, ["one", "two"], strict=False)
    ]
    assert expected[0] == ["go", "one"]
    assert provider.seen == expected


def test_context_provider_adds_instructions_tools_and_messages_with_session_state(
    backend: str,
) -> None:
    client = ScriptedChatClient(["one", "two"])
    provider = NotesProvider()
    agent = Agent(client, instructions="base", context_providers=[provider])

    async def main() -> dict[str, Any]:
        session = agent.create_session()
        await agent.run("a", session=session)
        await agent.run("b", session=session)
        return session.state

    state = loopsim.simulate(main, backend=backend)
    assert {k: v for k, v in state.items() if k != "in_memory"} == {"notes": {"runs": 2}}
    assert client.requests[1].options.instructions == "base\nrun number 2"
    assert client.requests[1].options.tool_names == ["add"]
    # upstream's order: context messages first, then history, then the input; not stored
    assert [m.text for m in client.requests[1].messages] == ["(context note)", "a", "one", "b"]
    assert provider.after == ["one", "two"]
    assert agent.get_service(NotesProvider) is provider
    assert agent.get_service(Agent) is agent
    assert agent.get_service(int) is None


class CountingMiddleware(loopsim.AgentMiddleware):
    def __init__(self) -> None:
        self.calls = 0

    async def process(self, context: loopsim.AgentRunContext, call_next: Any) -> None:
        context.messages = [*context.messages, Message.user("(twice)")]
        await call_next()
        first = context.result
        await call_next()
        self.calls += 1
        assert isinstance(first, AgentResponse)
        assert isinstance(context.result, AgentResponse)
        context.result = AgentResponse([*first.messages, *context.result.messages])


def test_middleware_can_change_input_and_call_next_repeatedly(backend: str) -> None:
    client = ScriptedChatClient(["x", "y"])
    middleware = CountingMiddleware()
    agent = Agent(client, middleware=[middleware])
    assert run(agent, "hi", backend).text == "xy"
    assert middleware.calls == 1
    assert [m.text for m in client.requests[0].messages] == ["hi", "(twice)"]


@pytest.mark.parametrize("with_tool_call", [False, True], ids=["text", "tool-call"])
def test_run_and_run_stream_agree_on_final_messages(backend: str, with_tool_call: bool) -> None:
    def script() -> list[Any]:
        items: list[Any] = [call("add", a=1, b=2)] if with_tool_call else []
        return [*items, loopsim.Turn("the answer is three", usage=Usage(output_tokens=4))]

    plain = run(Agent(ScriptedChatClient(script()), tools=[add]), "q", backend)
    streaming_agent = Agent(ScriptedChatClient(script()), tools=[add])

    async def stream() -> tuple[list[loopsim.AgentResponseUpdate], AgentResponse]:
        s = streaming_agent.run_stream("q")
        updates = [u async for u in s]
        return updates, await s.get_final_response()

    updates, final = loopsim.simulate(stream, backend=backend)
    assert len(updates) > 1
    assert final.model_dump() == plain.model_dump()
    merged = AgentResponse.from_updates(updates)
    assert [m.contents for m in merged.messages] == [m.contents for m in plain.messages]
    assert merged.usage == plain.usage


def test_streamed_approval_request_follows_its_call() -> None:
    agent = Agent(
        ScriptedChatClient([Message("assistant", ["sure ", *call("delete", path="/p").contents])]),
        tools=[delete],
    )

    async def main() -> list[str]:
        return [c.type for u in [u async for u in agent.run_stream("rm")] for c in u.contents]

    kinds = loopsim.simulate(main)
    # upstream's shape: the call is kept and its approval request comes right after it
    assert kinds[-2:] == ["function_call", "function_approval_request"]
    assert kinds.count("function_call") == 1


def test_client_errors_propagate_with_a_note_naming_agent_and_turn() -> None:
    agent = Agent(ScriptedChatClient([], name="writer"), name="writer")
    with pytest.raises(loopsim.ScriptExhaustedError) as info:
        run(agent, "hello")
    assert any("agent 'writer'" in note and "model turn 1" in note for note in info.value.__notes__)


def test_constructor_misuse_names_the_argument() -> None:
    with pytest.raises(TypeError, match="client must be a chat client"):
        Agent(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tool_rounds"):
        Agent(ScriptedChatClient([]), max_tool_rounds=0)
    with pytest.raises(ValueError, match="history_store must be one of"):
        loopsim.AgentSession(history_store="disk")  # type: ignore[arg-type]


def test_past_the_tool_round_limit_one_last_request_lets_no_tool_be_called(backend: str) -> None:
    # Upstream: after max rounds, a final request with tool_choice "none" (the tools still
    # listed); calls it still makes are dropped and, when nothing visible is left, a
    # fallback text says why.
    insisting = ScriptedChatClient([call("add", call_id=f"c{i}", a=1, b=1) for i in range(4)])
    response = run(Agent(insisting, tools=[add], max_tool_rounds=3), "loop forever", backend)
    assert len(insisting.requests) == 4
    assert [r.options.tool_names for r in insisting.requests] == [["add"]] * 4
    assert [r.options.tool_choice for r in insisting.requests] == ["auto"] * 3 + ["none"]
    assert response.messages[-1].role == "assistant"
    assert response.text == WORDING["agent.tool.limit_reached"]
    assert "function_call" not in {c.type for c in response.messages[-1].contents}

    giving_up = ScriptedChatClient(
        [*(call("add", call_id=f"c{i}", a=1, b=1) for i in range(2)), "here is what I have"]
    )
    answer = run(Agent(giving_up, tools=[add], max_tool_rounds=2), "loop", backend)
    assert answer.messages[-1].text == "here is what I have"
    assert giving_up.requests[-1].options.tool_choice == "none"


@pytest.mark.parametrize("with_tool_call", [False, True], ids=["first-turn", "after-a-tool"])
def test_a_failed_model_call_is_reported_as_an_event(backend: str, with_tool_call: bool) -> None:
    script: list[Any] = [call("add", a=1, b=1)] if with_tool_call else []
    client = ScriptedChatClient([*script, ConnectionError("model overloaded")])
    agent = Agent(client, name="flaky", tools=[add])
    events: list[Any] = []

    async def main() -> None:
        loopsim._trace.current().subscribe(events.append)
        await agent.run("go")

    with pytest.raises(ConnectionError, match="model overloaded"):
        loopsim.simulate(main, backend=backend)
    (error,) = [e for e in events if e.kind == "model_error"]
    assert error.data["agent"] == "flaky"
    assert (error.data["error"], error.data["message"]) == ("ConnectionError", "model overloaded")


class Echo(loopsim.BaseAgent):
    async def _run(self, messages: list[Message], session: Any, options: Any) -> AgentResponse:
        return AgentResponse(Message.assistant("echo: " + messages[-1].text), response_id="r1")


def test_base_agent_gives_custom_agents_sessions_and_streaming(backend: str) -> None:
    agent = Echo(name="echo", description="repeats")

    async def main() -> tuple[str, str, dict[str, Any]]:
        response = await agent.run("hi")
        streamed = await agent.run_stream("there").get_final_response()
        session = agent.create_session()
        session.state["k"] = [1]
        data = agent.serialize_session(session)
        return response.text, streamed.text, agent.deserialize_session(data).state

    assert loopsim.simulate(main, backend=backend) == ("echo: hi", "echo: there", {"k": [1]})
    assert (agent.name, agent.id, agent.description) == ("echo", "echo", "repeats")
    assert isinstance(agent, loopsim.SupportsAgentRun)


def test_delegating_agent_forwards_everything() -> None:
    inner = Agent(
        ScriptedChatClient(["inner says hi"]),
        name="inner",
        description="d",
        context_providers=[NotesProvider()],
    )
    outer = loopsim.DelegatingAgent(inner)
    assert (outer.name, outer.id, outer.description) == ("inner", "inner", "d")
    assert run(outer, "x").text == "inner says hi"  # type: ignore[arg-type]
    assert isinstance(outer.get_service(NotesProvider), NotesProvider)
    assert outer.get_service(loopsim.DelegatingAgent) is outer
    assert isinstance(outer, loopsim.SupportsAgentRun)


def test_requests_say_which_agent_and_session_ask() -> None:
    client = ScriptedChatClient(["a", "b"])
    agent = Agent(client, name="asker")

    async def main() -> str:
        session = agent.create_session()
        await agent.run("one", session=session)
        await agent.run("two")  # a throwaway session of its own
        return session.session_id

    session_id = loopsim.simulate(main)
    first, second = (r.options for r in client.requests)
    assert (first.agent_name, first.session_id) == ("asker", session_id)
    assert second.agent_name == "asker"
    assert second.session_id not in (None, session_id)
