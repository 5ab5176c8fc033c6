"""loopsim.agent_framework adapters: loopsim clients behind the real Agent, and the reverse."""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest

import loopsim
from loopsim import FunctionCallContent, FunctionResultContent, Message, ScriptedChatClient, Turn
from loopsim.agent_framework import (
    AgentFrameworkAgent,
    EngineBackendError,
    LoopsimChatClient,
    as_agent,
    as_chat_client,
    check_backend,
    from_chat_client,
    instrument,
)


def call(name: str, call_id: str = "c1", **arguments: Any) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=call_id, name=name, arguments=arguments)]
    )


@af.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_the_real_agent_uses_a_scripted_client_as_its_model() -> None:
    scripted = ScriptedChatClient(["Hello there"], name="model")
    client = as_chat_client(scripted)
    assert isinstance(client, af.BaseChatClient)
    agent = af.Agent(client=client, name="greeter", instructions="Be kind.")
    result = loopsim.simulate(agent.run, "hi")
    assert isinstance(result, af.AgentResponse)
    assert result.text == "Hello there"
    (request,) = scripted.requests
    assert [(m.role, m.text) for m in request.messages] == [("user", "hi")]
    assert request.options.instructions == "Be kind."
    assert scripted.remaining == ()


def test_upstream_function_invocation_runs_tools_and_the_client_sees_the_result() -> None:
    scripted = ScriptedChatClient([call("add", a=2, b=3), "It is 5."])
    agent = af.Agent(client=as_chat_client(scripted), name="calc", tools=[add])
    assert loopsim.simulate(agent.run, "2+3?").text == "It is 5."
    first, second = scripted.requests
    assert first.options.tool_names == ["add"]
    last = second.messages[-1]
    assert last.role == "tool"
    assert last.contents == [FunctionResultContent(call_id="c1", result="5")]
    assert second.messages[-2].contents[0] == FunctionCallContent(
        call_id="c1", name="add", arguments={"a": 2, "b": 3}
    )


def test_scripted_delays_take_virtual_time_under_the_real_agent() -> None:
    scripted = ScriptedChatClient([Turn("slow answer", delay=3600)])
    agent = af.Agent(client=as_chat_client(scripted), name="slow")
    clock = loopsim.VirtualClock(wall_clock=False)
    assert clock.run(agent.run, "go").text == "slow answer"
    assert clock.elapsed == 3600.0


def test_streaming_through_the_real_agent() -> None:
    scripted = ScriptedChatClient([Turn("one two three", usage=loopsim.Usage(input_tokens=4))])
    agent = af.Agent(client=as_chat_client(scripted), name="streamer")

    async def main() -> tuple[list[str], af.AgentResponse[Any]]:
        stream = agent.run("go", stream=True)
        texts = [update.text async for update in stream]
        return texts, await stream.get_final_response()

    texts, final = loopsim.simulate(main)
    assert [t for t in texts if t] == ["one ", "two ", "three"]
    assert final.text == "one two three"
    assert final.usage_details is not None
    assert final.usage_details["input_token_count"] == 4


def test_usage_and_ids_reach_the_upstream_response() -> None:
    scripted = ScriptedChatClient(
        [Turn("ok", usage=loopsim.Usage(input_tokens=2, output_tokens=1))]
    )
    agent = af.Agent(client=as_chat_client(scripted), name="a")
    result = loopsim.simulate(agent.run, "hi")
    assert result.usage_details is not None
    assert result.usage_details["input_token_count"] == 2
    assert result.usage_details["output_token_count"] == 1
    assert result.messages[0].message_id == "msg-0001"


def test_a_function_client_and_a_recording_client_work_behind_the_adapter() -> None:
    seen: list[str] = []

    def answer(messages: Any, options: Any) -> str:
        seen.append(messages[-1].text)
        return f"echo {messages[-1].text}"

    function_client = loopsim.FunctionChatClient(answer, name="echo")
    recording = loopsim.RecordingChatClient(function_client)
    agent = af.Agent(client=as_chat_client(recording), name="echoer")
    assert loopsim.simulate(agent.run, "ping").text == "echo ping"
    assert seen == ["ping"]
    assert len(recording.turns) == 1
    assert recording.turns[0].response[0]["contents"][0]["text"] == "echo ping"


def test_a_replay_client_behind_the_adapter_replays_a_recorded_run() -> None:
    def build(client: Any) -> Any:
        return instrument(af.Agent(client=as_chat_client(client), name="a", tools=[add]))

    recorded_agent = build(ScriptedChatClient([call("add", a=1, b=1), "two"]))
    result, transcript = loopsim.record(recorded_agent.run, "1+1")
    assert result.text == "two"
    replay = loopsim.ReplayChatClient(transcript, "a")
    assert loopsim.simulate(build(replay).run, "1+1").text == "two"


def test_chat_middleware_given_to_the_adapter_sees_every_model_call() -> None:
    calls: list[int] = []

    class Counting(af.ChatMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            calls.append(len(context.messages))
            await call_next()

    scripted = ScriptedChatClient([call("add", a=1, b=2), "3"])
    client = as_chat_client(scripted, middleware=[Counting()])
    agent = af.Agent(client=client, name="calc", tools=[add])
    assert loopsim.simulate(agent.run, "1+2").text == "3"
    assert calls == [1, 3]


@pytest.mark.parametrize("traced", [False, True], ids=["plain", "recorded"])
def test_function_middleware_given_to_the_adapter_runs_with_and_without_a_transcript(
    traced: bool,
) -> None:
    seen: list[str] = []

    class Watching(af.FunctionMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            seen.append(context.function.name)
            await call_next()

    scripted = ScriptedChatClient([call("add", a=1, b=2), "3"])
    agent = af.Agent(
        client=as_chat_client(scripted, middleware=[Watching()]), name="calc", tools=[add]
    )
    if traced:
        result, transcript = loopsim.record(agent.run, "1+2")
        kinds = [e.kind for e in transcript.events]
        assert kinds.count("tool_call") == kinds.count("tool_result") == 1
    else:
        result = loopsim.simulate(agent.run, "1+2")
    assert result.text == "3"
    assert seen == ["add"]


def test_from_chat_client_puts_a_recording_client_in_front_of_an_upstream_client() -> None:
    inner = ScriptedChatClient([call("double", x=4), "8"])

    @loopsim.tool
    def double(x: int) -> int:
        """Double x."""
        return 2 * x

    upstream = as_chat_client(inner)  # stands in for a vendor's agent_framework client
    recording = loopsim.RecordingChatClient(from_chat_client(upstream, name="vendor"))
    agent = loopsim.Agent(recording, name="doubler", tools=[double])
    assert loopsim.simulate(agent.run, "double 4").text == "8"
    # loopsim's Agent ran the tool (the upstream layer only saw a declaration)
    assert inner.requests[1].messages[-1].contents == [
        FunctionResultContent(call_id="c1", result="8")
    ]
    assert [t.agent for t in recording.turns] == ["doubler", "doubler"]
    assert recording.turns[0].tools == ["double"]


def test_from_chat_client_streams() -> None:
    client = from_chat_client(as_chat_client(ScriptedChatClient(["a b c"])))

    async def main() -> str:
        updates = [u async for u in client.get_streaming_response([Message.user("go")])]
        return loopsim.ChatResponse.from_updates(updates).text

    assert loopsim.simulate(main) == "a b c"


def test_as_agent_lets_loopsims_loop_agent_loop_a_real_agent() -> None:
    scripted = ScriptedChatClient(["draft", "still going", "finished DONE"])
    inner = as_agent(af.Agent(client=as_chat_client(scripted), name="writer"))
    assert isinstance(inner, loopsim.SupportsAgentRun)
    looped = loopsim.LoopAgent(
        inner,
        loopsim.CompletionMarkerLoopEvaluator("DONE"),
        loopsim.LoopAgentOptions(non_streaming_returns_last_response_only=True),
    )
    result = loopsim.simulate(looped.run, "write it")
    assert isinstance(result, loopsim.AgentResponse)
    assert result.text == "finished DONE"
    assert len(scripted.requests) == 3
    # the loop's feedback reached the real agent as a user message
    assert scripted.requests[1].messages[-1].role == "user"
    assert "DONE" in scripted.requests[1].messages[-1].text


def test_as_agent_sessions_serialize_and_restore_with_history() -> None:
    scripted = ScriptedChatClient(["first", "second"])
    agent = as_agent(af.Agent(client=as_chat_client(scripted), name="memory"))

    async def main() -> dict[str, Any]:
        session = agent.create_session()
        await agent.run("one", session=session)
        data = agent.serialize_session(session)
        restored = agent.deserialize_session(data)
        await agent.run("two", session=restored)
        return data

    data = loopsim.simulate(main)
    assert isinstance(data, dict)
    assert [m.text for m in scripted.requests[1].messages] == ["one", "first", "two"]


def test_as_agent_streams_and_finds_its_context_providers() -> None:
    child = af.Agent(client=as_chat_client(ScriptedChatClient([])), name="child", description="c")
    provider = af.BackgroundAgentsProvider([child])
    agent = as_agent(
        af.Agent(
            client=as_chat_client(ScriptedChatClient(["x y"])),
            name="p",
            context_providers=[provider],
        )
    )
    assert agent.get_service(af.BackgroundAgentsProvider) is provider
    assert agent.get_service(af.Agent) is agent.af_agent
    view = agent.get_service(loopsim.BackgroundAgentsProvider)  # loopsim's evaluators' view
    assert view is not None
    assert view.provider is provider  # type: ignore[attr-defined] # a ProviderView
    assert (agent.name, agent.description) == ("p", None)

    async def main() -> list[loopsim.AgentResponseUpdate]:
        return [u async for u in agent.run_stream("go")]

    updates = loopsim.simulate(main)
    assert all(isinstance(u, loopsim.AgentResponseUpdate) for u in updates)
    assert loopsim.AgentResponse.from_updates(updates).text == "x y"


class BoomError(Exception):
    pass


@pytest.mark.parametrize("via", ["af-agent", "as-agent", "streaming"])
def test_an_exception_inside_a_run_reaches_the_caller_unchanged(via: str) -> None:
    agent = af.Agent(client=as_chat_client(ScriptedChatClient([BoomError("model down")])), name="a")

    async def main() -> Any:
        if via == "af-agent":
            return await agent.run("hi")
        if via == "as-agent":
            return await as_agent(agent).run("hi")
        return [u async for u in agent.run("hi", stream=True)]

    with pytest.raises(BoomError, match="model down"):
        loopsim.simulate(main)


def test_a_script_running_out_is_loopsims_error_unchanged() -> None:
    agent = af.Agent(client=as_chat_client(ScriptedChatClient([], name="empty")), name="a")
    with pytest.raises(loopsim.ScriptExhaustedError, match="empty"):
        loopsim.simulate(agent.run, "hi")


def test_trio_is_a_clear_error_on_this_engine() -> None:
    with pytest.raises(EngineBackendError, match="asyncio only") as info:
        check_backend("trio")
    assert isinstance(info.value, loopsim.LoopsimError)
    assert isinstance(info.value, ValueError)
    check_backend("asyncio")
    agent = as_agent(af.Agent(client=as_chat_client(ScriptedChatClient(["x"])), name="a"))
    with pytest.raises(EngineBackendError, match="'trio'"):
        loopsim.simulate(agent.run, "hi", backend="trio")
    client = as_chat_client(ScriptedChatClient(["x"]))

    async def direct() -> Any:
        return await client.get_response([af.Message("user", ["hi"])])

    with pytest.raises(EngineBackendError):
        loopsim.simulate(direct, backend="trio")


def test_misuse_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="loopsim ChatClient"):
        as_chat_client(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="already an agent_framework chat client"):
        as_chat_client(as_chat_client(ScriptedChatClient([])))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="agent_framework chat client"):
        from_chat_client(object())
    with pytest.raises(TypeError, match="agent_framework agent"):
        as_agent(object())
    with pytest.raises(TypeError, match="agent_framework Agent"):
        instrument(object())


def test_reprs_name_what_is_wrapped() -> None:
    client = as_chat_client(ScriptedChatClient([], name="m"))
    assert isinstance(client, LoopsimChatClient)
    assert "m" in repr(client)
    assert client.name == "m"
    agent = as_agent(af.Agent(client=client, name="n"))
    assert isinstance(agent, AgentFrameworkAgent)
    assert repr(agent) == "AgentFrameworkAgent('n')"
    assert "vendor" in repr(from_chat_client(client, name="vendor"))


def test_a_history_message_changed_by_middleware_is_seen_changed() -> None:
    # the adapter reuses conversions of resent messages; a change must still show
    class Rewriting(af.ChatMiddleware):
        calls = 0

        async def process(self, context: Any, call_next: Any) -> None:
            Rewriting.calls += 1
            if Rewriting.calls == 2:
                context.messages[0].contents[0] = af.Content.from_text("rewritten")
            await call_next()

    scripted = ScriptedChatClient([call("add", a=1, b=2), "3"])
    client = as_chat_client(scripted, middleware=[Rewriting()])
    agent = af.Agent(client=client, name="calc", tools=[add])
    loopsim.simulate(agent.run, "1+2")
    assert scripted.requests[0].messages[0].text == "1+2"
    assert scripted.requests[1].messages[0].text == "rewritten"
