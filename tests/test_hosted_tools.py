"""Hosted tools (issue 21 item 5): the vendor clients' factories on ``as_chat_client``
clients, scripted hosted calls answered by the script, the harness's default web search
on both engines, and hosted calls in the transcript."""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from agent_framework_openai import OpenAIChatClient
from hypothesis import given
from hypothesis import strategies as st

import loopsim
import loopsim.testing
from loopsim.agent_framework import _convert as convert
from loopsim.agent_framework import as_chat_client, from_chat_client
from loopsim.agent_framework._hosted import HOSTED_KEY

FACTORIES = (
    "get_web_search_tool",
    "get_file_search_tool",
    "get_code_interpreter_tool",
    "get_image_generation_tool",
    "get_mcp_tool",
)
PROTOCOLS = (
    af.SupportsWebSearchTool,
    af.SupportsFileSearchTool,
    af.SupportsCodeInterpreterTool,
    af.SupportsImageGenerationTool,
    af.SupportsMCPTool,
)


def search_reply(text: str = "High tide is at 06:10.", **call: Any) -> loopsim.Message:
    pair = loopsim.hosted_call(
        call.get("tool", "web_search"),
        {"query": "high tide"},
        result={"sources": ["https://tides.example"]},
        call_id=call.get("call_id", "ws-1"),
    )
    return loopsim.Message("assistant", [*pair, text])


# -- 1. the factories -------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_an_as_chat_client_client_is_a_hosted_tool_client_for_agent_framework(
    protocol: type,
) -> None:
    client = as_chat_client(loopsim.ScriptedChatClient([]))
    assert isinstance(client, protocol)


def test_without_the_factories_the_client_is_not_a_web_search_client() -> None:
    # the check above can fail: a bare agent_framework chat client is not one
    from tests._af_fake import FakeAFChatClient

    assert not isinstance(FakeAFChatClient([]), af.SupportsWebSearchTool)


_text = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=8)
_names = st.lists(_text, min_size=1, max_size=3)

FACTORY_ARGS: dict[str, Any] = {
    "get_web_search_tool": st.fixed_dictionaries(
        {},
        optional={
            "user_location": st.dictionaries(
                st.sampled_from(["city", "country", "region", "timezone"]), _text, max_size=4
            ),
            "search_context_size": st.sampled_from(["low", "medium", "high"]),
            "filters": st.dictionaries(_text, _names, max_size=2),
        },
    ),
    "get_file_search_tool": st.fixed_dictionaries(
        {"vector_store_ids": _names},
        optional={"max_num_results": st.integers(0, 50)},
    ),
    "get_code_interpreter_tool": st.fixed_dictionaries(
        {},
        optional={
            "file_ids": st.lists(_text, max_size=2),
            "container": st.one_of(
                st.just("auto"), st.fixed_dictionaries({"type": st.just("auto")})
            ),
        },
    ),
    "get_image_generation_tool": st.fixed_dictionaries(
        {},
        optional={
            "size": st.sampled_from(["1024x1024", "1536x1024", "auto"]),
            "output_format": st.sampled_from(["png", "jpeg"]),
            "model": st.sampled_from(["gpt-image-1", "gpt-image-1-mini"]),
            "quality": st.sampled_from(["low", "high", "auto"]),
            "partial_images": st.integers(0, 3),
            "background": st.sampled_from(["transparent", "auto"]),
            "moderation": st.sampled_from(["auto", "low"]),
            "output_compression": st.integers(0, 100),
        },
    ),
    "get_mcp_tool": st.fixed_dictionaries(
        {"name": st.text(st.sampled_from("ab "), min_size=1, max_size=6), "url": _text},
        optional={
            "description": _text,
            "approval_mode": st.one_of(
                st.sampled_from(["always_require", "never_require"]),
                st.fixed_dictionaries(
                    {},
                    optional={
                        "always_require_approval": _names,
                        "never_require_approval": _names,
                    },
                ),
            ),
            "allowed_tools": st.lists(_text, max_size=2),
            "headers": st.dictionaries(_text, _text, max_size=2),
        },
    ),
}


@pytest.mark.parametrize("factory", FACTORIES)
@given(data=st.data())
def test_each_factory_returns_what_the_openai_vendor_client_returns(
    factory: str, data: st.DataObject
) -> None:
    kwargs = data.draw(FACTORY_ARGS[factory])
    ours = getattr(as_chat_client(loopsim.ScriptedChatClient([])), factory)(**kwargs)
    theirs = getattr(OpenAIChatClient, factory)(**kwargs)
    assert ours == dict(theirs)
    assert type(ours) is dict  # a plain mapping, as the vendor's TypedDicts are at run time


# -- 2. a scripted model calls a hosted tool ---------------------------------------------------


def test_a_scripted_hosted_call_and_its_result_reach_both_engines_and_come_back() -> None:
    ours = loopsim.ScriptedChatClient([search_reply(), "again"])
    agent = loopsim.Agent(ours, name="desk", tools=[{"type": "web_search"}])
    theirs = loopsim.ScriptedChatClient([search_reply(), "again"])
    client = as_chat_client(theirs)
    af_agent = af.Agent(client=client, name="desk", tools=[client.get_web_search_tool()])

    async def twice(target: Any) -> Any:
        session = target.create_session()
        first = await target.run("when?", session=session)
        await target.run("and tomorrow?", session=session)
        return first

    ls_first = loopsim.simulate(twice, agent)
    af_first = loopsim.simulate(twice, af_agent)
    assert ls_first.text == af_first.text == "High tide is at 06:10."
    assert [c.type for c in ls_first.messages[0].contents] == [
        "hosted_tool_call",
        "hosted_tool_result",
        "text",
    ]
    # agent_framework's own content types for a service's search, with the script's values
    call, result, _ = af_first.messages[0].contents
    assert (call.type, call.tool_name, call.arguments) == (
        "search_tool_call",
        "web_search",
        {"query": "high tide"},
    )
    assert (result.type, result.result) == (
        "search_tool_result",
        {"sources": ["https://tides.example"]},
    )
    # the model's next request holds the hosted pair as it was answered, on both engines
    for scripted in (ours, theirs):
        history = scripted.requests[1].messages
        assert history[1].contents == search_reply().contents
        assert scripted.requests[0].options.tool_names == ["web_search"]


def test_a_streamed_hosted_answer_keeps_the_pair_on_both_engines() -> None:
    ours = loopsim.ScriptedChatClient([search_reply()])
    theirs = loopsim.ScriptedChatClient([search_reply()])
    agent = loopsim.Agent(ours, name="desk", tools=[loopsim.HostedTool({"type": "web_search"})])
    client = as_chat_client(theirs)
    af_agent = af.Agent(client=client, name="desk", tools=[client.get_web_search_tool()])

    async def streamed_ls() -> list[str]:
        return [c.type async for u in agent.run_stream("when?") for c in u.contents]

    async def streamed_af() -> list[str]:
        return [c.type async for u in af_agent.run("when?", stream=True) for c in u.contents]

    assert loopsim.simulate(streamed_ls)[:2] == ["hosted_tool_call", "hosted_tool_result"]
    assert loopsim.simulate(streamed_af)[:2] == ["search_tool_call", "search_tool_result"]


def _engines(reply: loopsim.Message, tools: list[Any]) -> list[Any]:
    """The same scripted reply run by a loopsim Agent and an agent_framework Agent."""
    ours = loopsim.Agent(loopsim.ScriptedChatClient([reply], name="model"), name="desk")
    ours.tools = [loopsim.HostedTool(t) for t in tools]
    theirs = af.Agent(
        client=as_chat_client(loopsim.ScriptedChatClient([reply], name="model")),
        name="desk",
        tools=[dict(t) for t in tools] or None,
    )
    return [ours, theirs]


@pytest.mark.parametrize("engine", [0, 1], ids=["loopsim", "agent_framework"])
def test_a_hosted_call_the_script_never_answers_is_an_error_naming_the_tool(engine: int) -> None:
    reply = loopsim.Message("assistant", [search_reply().contents[0], "06:10"])
    agent = _engines(reply, [{"type": "web_search"}])[engine]
    with pytest.raises(loopsim.HostedToolError, match="never says what") as info:
        loopsim.record(agent.run, "when?")  # recorded: the adapter knows the asking agent
    error = info.value
    assert (error.tool, error.call_id, error.agent, error.client, error.turn) == (
        "web_search",
        "ws-1",
        "desk",
        "model",
        1,
    )
    assert "'web_search'" in str(error)
    assert "agent 'desk'" in str(error)
    assert "turn 1" in str(error)


@pytest.mark.parametrize("engine", [0, 1], ids=["loopsim", "agent_framework"])
def test_a_hosted_call_of_a_tool_not_offered_is_an_error(engine: int) -> None:
    agent = _engines(search_reply(), [{"type": "file_search", "vector_store_ids": ["v"]}])[engine]
    with pytest.raises(loopsim.HostedToolError, match=r"offered: file_search") as info:
        loopsim.simulate(agent.run, "when?")
    assert info.value.tool == "web_search"


@pytest.mark.parametrize("engine", [0, 1], ids=["loopsim", "agent_framework"])
def test_a_hosted_result_without_its_call_is_an_error(engine: int) -> None:
    reply = loopsim.Message("assistant", [search_reply().contents[1], "06:10"])
    agent = _engines(reply, [{"type": "web_search"}])[engine]
    with pytest.raises(loopsim.HostedToolError, match="a hosted result for a call"):
        loopsim.simulate(agent.run, "when?")


def test_two_hosted_calls_of_one_answer_need_their_own_ids() -> None:
    twice = [
        *loopsim.hosted_call("web_search", result=1),
        *loopsim.hosted_call("web_search", result=2),
    ]
    agent = _engines(loopsim.Message("assistant", [*twice, "x"]), [{"type": "web_search"}])[0]
    with pytest.raises(loopsim.HostedToolError, match="share this call id"):
        loopsim.simulate(agent.run, "when?")


def test_a_function_call_of_a_hosted_tools_name_is_an_unknown_tool_not_run() -> None:
    reply = loopsim.Message(
        "assistant", [loopsim.FunctionCallContent(call_id="c1", name="web_search")]
    )
    scripted = loopsim.ScriptedChatClient([reply, "ok"])
    agent = loopsim.Agent(scripted, name="desk", tools=[{"type": "web_search"}])
    assert loopsim.simulate(agent.run, "when?").text == "ok"
    sent = scripted.requests[1].messages[-1].contents[0]
    assert isinstance(sent, loopsim.FunctionResultContent)
    assert sent.error is not None
    assert "unknown tool 'web_search'" in sent.error


def test_hosted_tool_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="hosted tool's 'type'"):
        loopsim.HostedTool({"type": "function", "function": {"name": "f"}})
    with pytest.raises(TypeError, match="a mapping"):
        loopsim.HostedTool("web_search")  # type: ignore[arg-type] # the misuse under test
    with pytest.raises(TypeError, match="hosted tool's name"):
        loopsim.hosted_call("", result=1)
    named = loopsim.HostedTool({"type": "mcp", "server_label": "docs", "server_description": "d"})
    assert (named.name, named.kind, named.description) == ("mcp", "mcp", "d")


# -- conversions ------------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_tools = st.sampled_from(
    ["web_search", "file_search", "code_interpreter", "image_generation", "mcp", "own_search"]
)


@given(
    tool=_tools,
    call_id=_text,
    arguments=st.dictionaries(_text, _json, max_size=3),
    result=_json,
)
def test_hosted_contents_round_trip_through_agent_framework(
    tool: str, call_id: str, arguments: dict[str, Any], result: Any
) -> None:
    pair = loopsim.hosted_call(tool, arguments, result=result, call_id=call_id)
    message = loopsim.Message("assistant", [*pair, "done"])
    af_message = convert.to_af_message(message)
    assert all(c.type in convert.HOSTED_CONTENT_TYPES for c in af_message.contents[:2])
    assert convert.to_loopsim_message(af_message) == message
    # through agent_framework's own serialization (a session saved and restored) too
    restored = af.Message.from_dict(af_message.to_dict())
    assert convert.to_loopsim_message(restored) == message


def test_a_vendor_clients_hosted_contents_are_read_from_their_own_fields() -> None:
    vendor = af.Message(
        role="assistant",
        contents=[
            af.Content.from_search_tool_call("s1", tool_name="web_search", arguments='{"q": 1}'),
            af.Content.from_search_tool_result("s1", tool_name="web_search", result={"n": 2}),
            af.Content.from_code_interpreter_tool_call(
                call_id="c1", inputs=[af.Content.from_text("print(1)")]
            ),
            af.Content.from_code_interpreter_tool_result(
                call_id="c1", outputs=[af.Content.from_text("1\n")]
            ),
            af.Content.from_mcp_server_tool_call("m1", "lookup", server_name="docs", arguments={}),
            af.Content.from_mcp_server_tool_result("m1", output=[af.Content.from_text("hit")]),
            af.Content.from_image_generation_tool_call(image_id="i1"),
            af.Content.from_image_generation_tool_result(
                image_id="i1", outputs=af.Content.from_uri("https://img.example/1.png")
            ),
        ],
    )
    ours = convert.to_loopsim_message(vendor).contents
    assert ours == [
        loopsim.HostedToolCallContent(call_id="s1", tool="web_search", arguments={"q": 1}),
        loopsim.HostedToolResultContent(call_id="s1", tool="web_search", result={"n": 2}),
        loopsim.HostedToolCallContent(
            call_id="c1", tool="code_interpreter", arguments={"code": "print(1)"}
        ),
        loopsim.HostedToolResultContent(call_id="c1", tool="code_interpreter", result="1\n"),
        loopsim.HostedToolCallContent(
            call_id="m1",
            tool="mcp",
            arguments={"server": "docs", "tool": "lookup", "arguments": {}},
        ),
        loopsim.HostedToolResultContent(call_id="m1", tool="mcp", result="hit"),
        loopsim.HostedToolCallContent(call_id="i1", tool="image_generation"),
        loopsim.HostedToolResultContent(
            call_id="i1", tool="image_generation", result="https://img.example/1.png"
        ),
    ]
    assert all(HOSTED_KEY not in (c.additional_properties or {}) for c in vendor.contents)


def test_a_hosted_tool_reaches_a_wrapped_agent_framework_client_as_declared() -> None:
    from tests._af_fake import FakeAFChatClient

    inner = FakeAFChatClient(["ok"])
    declared = {"type": "web_search", "search_context_size": "low"}
    agent = loopsim.Agent(from_chat_client(inner), name="a", tools=[declared])
    assert loopsim.simulate(agent.run, "hi").text == "ok"
    (sent,) = inner.requests[0][1]["tools"]
    assert sent is declared


# -- 3. the harness keeps its default tools ----------------------------------------------------


@pytest.mark.parametrize("disable", [False, True], ids=["default", "disable_web_search"])
def test_the_harness_offers_its_web_search_on_both_engines(disable: bool) -> None:
    @loopsim.tool
    def ping() -> str:
        return "pong"

    ours = loopsim.ScriptedChatClient(["ok"])
    theirs = loopsim.ScriptedChatClient(["ok"])
    loopsim.simulate(
        loopsim.create_harness_agent(ours, name="h", tools=[ping], disable_web_search=disable).run,
        "go",
    )
    off = {
        "disable_tool_auto_approval": True,
        "disable_todo": True,
        "disable_mode": True,
        "disable_file_memory": True,
        "disable_compaction": True,
    }
    harness = af.create_harness_agent(
        as_chat_client(theirs),
        name="h",
        tools=[af.tool(lambda: "pong", name="ping")],
        disable_web_search=disable,
        **off,
    )
    loopsim.simulate(harness.run, "go")
    expected = ["ping"] if disable else ["web_search", "ping"]
    assert ours.requests[0].options.tool_names == expected
    assert theirs.requests[0].options.tool_names == expected
    hosted = [t for t in theirs.requests[0].options.tools if isinstance(t, loopsim.HostedTool)]
    assert [t.config for t in hosted] == ([] if disable else [{"type": "web_search"}])


def test_a_harness_whose_web_search_is_off_cannot_search() -> None:
    # what the scenario build's old disable_web_search=True did, caught: the script's
    # search is refused instead of reaching the model as a call nobody made
    client = loopsim.ScriptedChatClient([search_reply()])
    harness = af.create_harness_agent(
        as_chat_client(client),
        name="h",
        disable_web_search=True,
        disable_tool_auto_approval=True,
        disable_todo=True,
        disable_mode=True,
        disable_file_memory=True,
        disable_compaction=True,
    )
    with pytest.raises(loopsim.HostedToolError, match=r"offered: none"):
        loopsim.simulate(harness.run, "when?")


def test_a_harness_scenario_offers_web_search_on_both_engines(tmp_path: Any) -> None:
    path = tmp_path / "s.loopsim.yaml"
    path.write_text(
        "version: 1\n"
        "agents:\n"
        "  desk:\n"
        "    script:\n"
        "      - reply: six\n"
        "        hosted_call: {tool: web_search, arguments: {query: q}, result: r}\n"
        "parent: {agent: desk, harness: true}\n"
        "steps:\n"
        "  - run: go\n"
        "expect:\n"
        "  events:\n"
        "    - {kind: hosted_tool, where: {name: web_search, result: r}, count: 1}\n"
        "    - {kind: model_request, count: 1}\n",
        encoding="utf-8",
    )
    for engine in ("loopsim", "agent_framework"):
        result = loopsim.run_scenario(loopsim.load_scenario(path), engine=engine)
        assert result.passed, (engine, result.failures)
        (request,) = [e for e in result.transcript.events if e.kind == "model_request"]
        assert request.data["tools"] == ["web_search"]


# -- 4. the transcript -------------------------------------------------------------------------


def _recorded(engine: int) -> loopsim.Transcript:
    agent = _engines(search_reply(), [{"type": "web_search"}])[engine]

    async def main() -> None:
        await agent.run("when?", session=agent.create_session())

    return loopsim.record(main)[1]


def test_the_transcript_shows_the_hosted_call_the_same_on_both_engines() -> None:
    ours, theirs = _recorded(0), _recorded(1)
    for transcript in (ours, theirs):
        kinds = [e.kind for e in transcript.events]
        # the service ran the search before it answered
        assert kinds.index("hosted_tool") == kinds.index("model_response") - 1
        (hosted,) = [e for e in transcript.events if e.kind == "hosted_tool"]
        assert hosted.data == {
            "agent": "desk",
            "session": hosted.data["session"],
            "call_id": "ws-1",
            "name": "web_search",
            "arguments": {"query": "high tide"},
            "result": {"sources": ["https://tides.example"]},
        }
        text = loopsim.render_text(transcript)
        assert 'web_search({"query": "high tide"}) #ws-1 = {"sources"' in text
    assert [e.kind for e in ours.events] == [e.kind for e in theirs.events]


def test_the_hosted_transcript_is_byte_identical_run_after_run() -> None:
    for engine in (0, 1):
        first, second = _recorded(engine), _recorded(engine)
        assert first.to_json() == second.to_json()


def test_a_trajectory_sees_the_hosted_call_before_the_answer() -> None:
    steps = loopsim.testing.steps_of(_recorded(1))
    assert [(s.kind, s.name) for s in steps] == [("tool", "web_search"), ("says", None)]
    assert steps[0].result == {"sources": ["https://tides.example"]}


def test_a_recorded_hosted_run_reads_back_and_replays_byte_identical(tmp_path: Any) -> None:
    def desk(client: Any) -> loopsim.Agent:
        return loopsim.Agent(client, name="desk", tools=[{"type": "web_search"}])

    async def main(agent: loopsim.Agent) -> str:
        return (await agent.run("when?", session=agent.create_session())).text

    _, recorded = loopsim.record(main, desk(loopsim.ScriptedChatClient([search_reply()])))
    path = tmp_path / "hosted.transcript.json"
    loopsim.write_transcript(path, recorded)
    assert loopsim.read_transcript(path).to_json() == recorded.to_json()
    text, replayed = loopsim.record(main, desk(loopsim.ReplayChatClient(recorded, "desk")))
    assert text == "High tide is at 06:10."
    assert replayed.to_json() == recorded.to_json()


def test_upstreams_factory_spelling_builds_the_hosted_pair() -> None:
    call = loopsim.Content.from_search_tool_call("s1", tool_name="web_search", arguments={"q": 1})
    result = loopsim.Content.from_search_tool_result("s1", tool_name="web_search", result=[1])
    assert [call, result] == loopsim.hosted_call("web_search", {"q": 1}, result=[1], call_id="s1")
    assert isinstance(call, loopsim.Content)
