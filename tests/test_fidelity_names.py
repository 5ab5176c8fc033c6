"""Upstream's names for what a user's code touches, and the harness on both engines."""

from __future__ import annotations

import asyncio
from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient, af_call
from pydantic import BaseModel, ValidationError

import loopsim
from loopsim import (
    BackgroundTaskInfo,
    BackgroundTaskStatus,
    ChatResponse,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    NotSimulatedWarning,
    ScriptedChatClient,
    TextContent,
    Usage,
)

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def test_background_task_info_takes_upstreams_names_and_keeps_loopsims() -> None:
    info = BackgroundTaskInfo(
        id=2, agent_name="w", description="d", status="failed", error_text="boom"
    )
    assert (info.id, info.task_id, info.error_text, info.error) == (2, 2, "boom", "boom")
    assert info.status is BackgroundTaskStatus.FAILED
    old = BackgroundTaskInfo(
        task_id=2, agent_name="w", description="d", status="failed", error="boom"
    )
    assert old == info
    theirs = af.BackgroundTaskInfo(
        id=2,
        agent_name="w",
        description="d",
        status=af.BackgroundTaskStatus.FAILED,
        error_text="boom",
    )
    assert info.to_dict() == theirs.to_dict()
    assert BackgroundTaskInfo.from_dict(theirs.to_dict()) == info
    with pytest.raises(TypeError, match="once"):
        BackgroundTaskInfo(id=1, task_id=1, agent_name="w", description="d", status="running")


def test_content_factory_builds_each_kind_under_upstreams_names() -> None:
    call = Content.from_function_call(call_id="c1", name="add", arguments={"a": 1})
    assert call == FunctionCallContent(call_id="c1", name="add", arguments={"a": 1})
    assert Content.from_text("hi") == TextContent(text="hi")
    result = Content.from_function_result(call_id="c1", result="x", exception="bad")
    assert result == FunctionResultContent(call_id="c1", result="x", error="bad")
    request = Content.from_function_approval_request(id="r1", function_call=call)
    assert request.create_response(True) == Content.from_function_approval_response(
        True, id="r1", function_call=call
    )
    assert Content.from_usage(Usage(input_tokens=1)).usage.input_tokens == 1
    assert isinstance(call, Content)
    assert not isinstance("text", Content)
    with pytest.raises(TypeError, match="factory"):
        Content()
    # the same factory calls build the same shapes upstream
    theirs = af.Content.from_function_call(call_id="c1", name="add", arguments={"a": 1})
    assert (theirs.type, theirs.call_id, theirs.name) == (call.type, call.call_id, call.name)


def test_run_with_stream_true_is_run_stream_on_both_engines() -> None:
    ours = loopsim.Agent(ScriptedChatClient(["streamed"]))
    theirs = af.Agent(client=FakeAFChatClient(["streamed"]))

    async def collect(agent: Any) -> tuple[list[str], str, str]:
        stream = agent.run("go", stream=True)
        texts = [update.text async for update in stream]
        final = await stream.get_final_response()
        awaited = await agent.run("go", stream=True) if agent is ours else final
        return texts, final.text, awaited.text

    ours.client = ScriptedChatClient(["streamed", "streamed"])
    assert loopsim.simulate(collect, ours) == (["streamed"], "streamed", "streamed")
    assert loopsim.simulate(collect, theirs)[:2] == (["streamed"], "streamed")


def test_usage_details_is_usage_on_responses() -> None:
    usage = Usage(input_tokens=3, output_tokens=1)
    client = ScriptedChatClient([loopsim.Turn("ok", usage=usage)])
    response = loopsim.simulate(loopsim.Agent(client).run, "go")
    assert response.usage_details == response.usage == usage
    assert ChatResponse("x", usage_details=usage).usage == usage


def test_default_options_are_the_base_of_every_run_on_both_engines() -> None:
    ours = ScriptedChatClient(["a", "b"])
    agent = loopsim.Agent(ours, default_options={"instructions": "from defaults", "temperature": 0})
    loopsim.simulate(agent.run, "go")
    loopsim.simulate(lambda: agent.run("go", options={"temperature": 1}))
    theirs = FakeAFChatClient(["a", "b"])
    af_agent = af.Agent(
        client=theirs, default_options={"instructions": "from defaults", "temperature": 0}
    )
    loopsim.simulate(af_agent.run, "go")
    loopsim.simulate(lambda: af_agent.run("go", options={"temperature": 1}))
    assert [r.options.instructions for r in ours.requests] == ["from defaults"] * 2
    assert [r[1]["instructions"] for r in theirs.requests] == ["from defaults"] * 2
    ours_t = [r.options.additional_properties["temperature"] for r in ours.requests]
    assert ours_t == [r[1]["temperature"] for r in theirs.requests] == [0, 1]


def test_chat_response_takes_upstreams_fields() -> None:
    response = ChatResponse("hi", conversation_id="conv-1", finish_reason="stop")
    theirs = af.ChatResponse(
        messages=[af.Message(role="assistant", contents=["hi"])],
        conversation_id="conv-1",
        finish_reason="stop",
    )
    assert (response.conversation_id, response.finish_reason) == (
        theirs.conversation_id,
        theirs.finish_reason,
    )


class Answer(BaseModel):
    x: int


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_response_format_fills_value_on_both_engines(stream: bool) -> None:
    ours = loopsim.Agent(ScriptedChatClient(['{"x": 4}', "not json"]))
    theirs = af.Agent(client=FakeAFChatClient(['{"x": 4}', "not json"]))

    async def two_runs(agent: Any) -> list[Any]:
        out = []
        for _ in range(2):
            options = {"response_format": Answer}
            if stream:
                out.append(await agent.run("go", stream=True, options=options).get_final_response())
            else:
                out.append(await agent.run("go", options=options))
        return out

    for agent in (ours, theirs):
        good, bad = loopsim.simulate(two_runs, agent)
        assert good.value == Answer(x=4)
        assert bad.text == "not json"  # the run itself succeeds...
        with pytest.raises(ValidationError):
            _ = bad.value  # ...reading the value is what fails


def test_response_format_survives_the_loop_middleware_on_both_engines() -> None:
    def once(**_: Any) -> bool:
        return False

    ours = loopsim.Agent(
        ScriptedChatClient(['{"x": 7}']), middleware=[loopsim.AgentLoopMiddleware(once)]
    )
    theirs = af.Agent(
        client=FakeAFChatClient(['{"x": 7}']), middleware=[af.AgentLoopMiddleware(once)]
    )
    for agent in (ours, theirs):
        response = loopsim.simulate(
            lambda a=agent: a.run("go", options={"response_format": Answer})
        )
        assert response.value == Answer(x=7)


def test_todos_remaining_and_its_message() -> None:
    todos = loopsim.TodoProvider()
    agent = loopsim.Agent(ScriptedChatClient([]), context_providers=[todos])
    session = loopsim.AgentSession()
    keep_going = loopsim.todos_remaining()
    assert keep_going(session=session, agent=agent) is False
    todos.add(session, "write tests")
    assert keep_going(session=session, agent=agent) is True
    message = loopsim.todos_remaining_message(session=session, agent=agent)
    assert message is not None
    assert "- write tests" in message
    todos.complete(session, 1)
    assert keep_going(session=session, agent=agent) is False
    assert loopsim.todos_remaining_message(session=session, agent=agent) is None
    assert keep_going(session=None, agent=agent) is False
    with pytest.raises(ValueError, match="looping_modes"):
        loopsim.todos_remaining(looping_modes=[])
    with pytest.raises(ValueError, match="looping_modes"):
        af.todos_remaining(looping_modes=[])


def test_todos_remaining_only_in_looping_modes() -> None:
    todos, modes = loopsim.TodoProvider(), loopsim.AgentModeProvider(("plan", "execute"))
    agent = loopsim.Agent(ScriptedChatClient([]), context_providers=[todos, modes])
    session = loopsim.AgentSession()
    todos.add(session, "ship")
    keep_going = loopsim.todos_remaining(looping_modes=[" Execute "])
    assert keep_going(session=session, agent=agent) is False  # in plan mode
    modes.set_mode(session, "execute")
    assert keep_going(session=session, agent=agent) is True


def test_harness_agent_shows_its_providers_and_middleware() -> None:
    worker = loopsim.Agent(ScriptedChatClient([]), name="w")
    harness = loopsim.create_harness_agent(
        ScriptedChatClient([]),
        background_agents=[worker],
        loop_should_continue=loopsim.background_tasks_running(),
    )
    assert [type(p).__name__ for p in harness.context_providers] == ["BackgroundAgentsProvider"]
    assert isinstance(harness.middleware[0], loopsim.AgentLoopMiddleware)
    assert harness.context_providers is harness.agent.context_providers


def test_upstreams_other_harness_options_are_accepted_and_warned_about_once() -> None:
    quiet = loopsim.create_harness_agent(
        ScriptedChatClient([]), disable_todo=True, disable_tool_auto_approval=False
    )
    assert quiet.name is None
    with pytest.warns(
        NotSimulatedWarning, match="max_context_window_tokens, todo_provider"
    ) as seen:
        loopsim.create_harness_agent(
            ScriptedChatClient([]), todo_provider=object(), max_context_window_tokens=1000
        )
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("window", "output"), [(0, None), (None, 0), (None, -1), (1000, 1000)], ids=str
)
def test_token_limits_are_checked_as_upstream_checks_them(window: Any, output: Any) -> None:
    with pytest.raises(ValueError, match="max_"):
        loopsim.create_harness_agent(
            ScriptedChatClient([]), max_context_window_tokens=window, max_output_tokens=output
        )
    with pytest.raises(ValueError, match="max_"):
        af.create_harness_agent(
            FakeAFChatClient([]), max_context_window_tokens=window, max_output_tokens=output
        )


def test_max_output_tokens_becomes_the_models_max_tokens_on_both_engines() -> None:
    ours = loopsim.create_harness_agent(ScriptedChatClient([]), max_output_tokens=50)
    theirs = af.create_harness_agent(FakeAFChatClient([]), max_output_tokens=50)
    assert ours.default_options["max_tokens"] == theirs.default_options["max_tokens"] == 50
    assert loopsim.create_harness_agent(ScriptedChatClient([])).default_options == {}


def test_harness_identity_and_sessions_as_upstream() -> None:
    harness = loopsim.create_harness_agent(
        ScriptedChatClient(["Hello"]), id="my-agent-id", name="my-agent", description="A test"
    )
    assert (harness.id, harness.name, harness.description) == ("my-agent-id", "my-agent", "A test")
    assert isinstance(harness, loopsim.SupportsAgentRun)

    async def main() -> Any:
        session = harness.create_session(session_id="custom-id")
        return session.session_id, (await harness.run("hello", session=session)).messages[-1].role

    assert loopsim.simulate(main) == ("custom-id", "assistant")


def test_harness_and_agent_instructions_join_as_upstream_joins_them() -> None:
    client = ScriptedChatClient(["ok"])
    harness = loopsim.create_harness_agent(
        client, harness_instructions="Harness rules.", agent_instructions="Be brief."
    )
    loopsim.simulate(harness.run, "go")
    assert client.requests[0].options.instructions == "Harness rules.\n\nBe brief."


def test_a_harness_sends_the_task_status_message_with_the_first_call_of_a_run_only() -> None:
    start = {"agent_name": "w", "input": "x", "description": "job"}
    turns: list[tuple[str, dict[str, Any]] | str] = [
        ("background_agents_start_task", start),
        "started",
        ("background_agents_get_all_tasks", {}),
        "listed",
    ]

    def ls_turn(i: int, t: Any) -> Any:
        if isinstance(t, str):
            return t
        return Message(
            "assistant", [FunctionCallContent(call_id=f"c{i}", name=t[0], arguments=t[1])]
        )

    def af_turn(i: int, t: Any) -> Any:
        return t if isinstance(t, str) else af_call(f"c{i}", t[0], **t[1])

    ls_parent = ScriptedChatClient([ls_turn(i, t) for i, t in enumerate(turns)])
    ls_harness = loopsim.create_harness_agent(
        ls_parent,
        name="h",
        background_agents=[loopsim.Agent(ScriptedChatClient(["done"]), name="w")],
    )
    af_parent = FakeAFChatClient([af_turn(i, t) for i, t in enumerate(turns)])
    af_harness = af.create_harness_agent(
        af_parent,
        name="h",
        background_agents=[af.Agent(client=FakeAFChatClient(["done"]), name="w")],
        disable_tool_auto_approval=True,
        disable_todo=True,
        disable_mode=True,
        disable_file_memory=True,
        disable_compaction=True,
        disable_web_search=True,
    )

    async def two_turns(harness: Any) -> None:
        session = harness.create_session()
        await harness.run("go", session=session)
        await asyncio.sleep(1)
        await harness.run("again", session=session)

    loopsim.simulate(two_turns, ls_harness)
    loopsim.simulate(two_turns, af_harness)
    ours = [[m.role for m in r.messages] for r in ls_parent.requests]
    theirs = [[str(m.role) for m in r[0]] for r in af_parent.requests]
    assert ours == theirs
    assert ours[2][0] == "user"  # the status message, before the history
    assert len(ours[3]) == len(ours[2]) - 1 + 2  # dropped again; call + result added


@pytest.mark.parametrize("given", [None, "", "Harness rules."], ids=["default", "none", "own"])
def test_the_harness_instructions_come_first_its_default_in_our_words(given: str | None) -> None:
    off = {
        "disable_tool_auto_approval": True,
        "disable_todo": True,
        "disable_mode": True,
        "disable_file_memory": True,
        "disable_compaction": True,
        "disable_web_search": True,
    }
    ours = ScriptedChatClient(["ok"])
    theirs = FakeAFChatClient(["ok"])
    loopsim.simulate(
        loopsim.create_harness_agent(
            ours, harness_instructions=given, agent_instructions="Be brief."
        ).run,
        "go",
    )
    harness = af.create_harness_agent(
        theirs, harness_instructions=given, agent_instructions="Be brief.", **off
    )

    async def run_theirs() -> Any:
        return await harness.run("go", session=harness.create_session())

    loopsim.simulate(run_theirs)
    mine = ours.requests[0].options.instructions
    other = theirs.requests[0][1]["instructions"]
    upstream_default = af._harness._agent.DEFAULT_HARNESS_INSTRUCTIONS
    if given is None:  # each its own default text (one ending in a newline), in one place
        assert mine == f"{loopsim.DEFAULT_HARNESS_INSTRUCTIONS}\n\nBe brief."
        assert other.startswith(f"{upstream_default}\n\nBe brief.")
        assert upstream_default != loopsim.DEFAULT_HARNESS_INSTRUCTIONS  # our own words
    else:
        expected = f"{given}\n\nBe brief.".strip()
        assert mine == expected
        assert other.startswith(expected)
