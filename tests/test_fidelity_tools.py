"""The Agent's tool loop on both engines: the same program, the same observable outcome.

Each test runs one program on loopsim's built-in ``Agent`` and on the real
``agent_framework.Agent`` (behind a minimal fake chat client), and compares what a user
or a model can see: how many model calls, which calls ran, the shape of results and
of the final response. Texts are compared through ``loopsim._wording``.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient, af_call
from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim import FunctionCallContent, FunctionResultContent, Message, ScriptedChatClient
from loopsim._wording import WORDING, agrees, match, say

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def ls_call(name: str, call_id: str = "c1", **arguments: Any) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=call_id, name=name, arguments=arguments)]
    )


def kinds(messages: Any) -> list[tuple[str, list[str]]]:
    return [(str(m.role), [str(c.type) for c in m.contents]) for m in messages]


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def boom(self, x: int) -> int:
        """Always fails."""
        self.calls += 1
        msg = "bad thing"
        raise ValueError(msg)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_three_failing_rounds_in_a_row_end_the_tool_loop_on_both_engines() -> None:
    ours, theirs = Counter(), Counter()
    ls_client = ScriptedChatClient([ls_call("boom", f"c{i}", x=1) for i in range(6)])
    ls_agent = loopsim.Agent(ls_client, tools=[loopsim.tool(ours.boom, name="boom")])
    af_client = FakeAFChatClient([af_call(f"c{i}", "boom", x=1) for i in range(6)])
    af_agent = af.Agent(client=af_client, tools=[af.tool(theirs.boom, name="boom")])

    ls_response = loopsim.simulate(ls_agent.run, "go")
    af_response = loopsim.simulate(af_agent.run, "go")

    # three failing rounds, then one last request; the call in its answer never runs
    assert len(ls_client.requests) == len(af_client.requests) == 4
    assert ours.calls == theirs.calls == 3
    shape = [("assistant", ["function_call"]), ("tool", ["function_result"])] * 3
    assert kinds(ls_response.messages) == kinds(af_response.messages)
    assert kinds(ls_response.messages) == [*shape, ("assistant", ["text"])]
    assert ls_response.text == WORDING["agent.tool.limit_reached"]
    assert af_response.text  # upstream's fallback text: its words, same place
    assert len(ls_client.remaining) == len(af_client.replies) == 2


def test_a_successful_round_resets_the_count_of_failing_rounds() -> None:
    replies: list[tuple[str, dict[str, Any]]] = [
        ("boom", {"x": 1}),
        ("boom", {"x": 1}),
        ("add", {"a": 1, "b": 1}),
        ("boom", {"x": 1}),
        ("boom", {"x": 1}),
    ]
    ours, theirs = Counter(), Counter()
    ls_client = ScriptedChatClient(
        [*(ls_call(n, f"c{i}", **a) for i, (n, a) in enumerate(replies)), "done"]
    )
    ls_agent = loopsim.Agent(ls_client, tools=[loopsim.tool(ours.boom, name="boom"), add])
    af_client = FakeAFChatClient(
        [*(af_call(f"c{i}", n, **a) for i, (n, a) in enumerate(replies)), "done"]
    )
    af_agent = af.Agent(client=af_client, tools=[af.tool(theirs.boom, name="boom"), af.tool(add)])

    assert loopsim.simulate(ls_agent.run, "go").text == "done"
    assert loopsim.simulate(af_agent.run, "go").text == "done"
    assert ours.calls == theirs.calls == 4
    assert len(ls_client.requests) == len(af_client.requests) == 6


def test_a_raising_tool_reaches_the_model_as_an_error_result_on_both_engines() -> None:
    ls_client = ScriptedChatClient([ls_call("boom", x=1), "recovered"])
    ls_agent = loopsim.Agent(ls_client, tools=[loopsim.tool(Counter().boom, name="boom")])
    af_client = FakeAFChatClient([af_call("c1", "boom", x=1), "recovered"])
    af_agent = af.Agent(client=af_client, tools=[af.tool(Counter().boom, name="boom")])

    ls_response = loopsim.simulate(ls_agent.run, "go")
    af_response = loopsim.simulate(af_agent.run, "go")

    ours = ls_response.messages[1].contents[0]
    theirs = af_response.messages[1].contents[0]
    assert isinstance(ours, FunctionResultContent)
    # the model reads a fixed error text as the result; the exception's text is beside it
    assert ours.result == WORDING["agent.tool.failed"]
    assert agrees(ours.result, str(theirs.result))
    assert ours.error == theirs.exception == "bad thing"
    # what the model is sent back is that same result
    sent = ls_client.requests[1].messages[-1].contents[0]
    assert isinstance(sent, FunctionResultContent)
    assert sent.result == ours.result


def test_an_unknown_tool_is_an_error_result_on_both_engines() -> None:
    ls_client = ScriptedChatClient([ls_call("nope"), "ok"])
    af_client = FakeAFChatClient([af_call("c1", "nope"), "ok"])
    ls_response = loopsim.simulate(loopsim.Agent(ls_client, tools=[add]).run, "go")
    af_response = loopsim.simulate(af.Agent(client=af_client, tools=[af.tool(add)]).run, "go")
    ours = ls_response.messages[1].contents[0]
    theirs = af_response.messages[1].contents[0]
    assert isinstance(ours, FunctionResultContent)
    assert match(str(ours.result)) == ("agent.tool.unknown", {"name": "nope"})
    assert agrees(str(ours.result), str(theirs.result))
    assert ours.error is not None
    assert theirs.exception is not None


def test_an_extra_argument_is_ignored_on_both_engines() -> None:
    ls_client = ScriptedChatClient([ls_call("add", a=1, b=2, extra=5), "ok"])
    af_client = FakeAFChatClient([af_call("c1", "add", a=1, b=2, extra=5), "ok"])
    ls_response = loopsim.simulate(loopsim.Agent(ls_client, tools=[add]).run, "go")
    af_response = loopsim.simulate(af.Agent(client=af_client, tools=[af.tool(add)]).run, "go")
    ours = ls_response.messages[1].contents[0]
    theirs = af_response.messages[1].contents[0]
    assert isinstance(ours, FunctionResultContent)
    assert (ours.result, ours.error) == ("3", None)  # as upstream: the text the model reads
    assert (theirs.result, theirs.exception) == ("3", None)


def test_a_missing_argument_is_an_error_result_on_both_engines() -> None:
    ls_client = ScriptedChatClient([ls_call("add", a=1), "ok"])
    af_client = FakeAFChatClient([af_call("c1", "add", a=1), "ok"])
    ls_response = loopsim.simulate(loopsim.Agent(ls_client, tools=[add]).run, "go")
    af_response = loopsim.simulate(af.Agent(client=af_client, tools=[af.tool(add)]).run, "go")
    ours = ls_response.messages[1].contents[0]
    theirs = af_response.messages[1].contents[0]
    assert isinstance(ours, FunctionResultContent)
    assert ours.result == WORDING["agent.tool.bad_arguments"]
    assert agrees(ours.result, str(theirs.result))
    assert ours.error is not None
    assert theirs.exception is not None


def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_an_approval_request_follows_its_kept_call_on_both_engines(stream: bool) -> None:
    ls_agent = loopsim.Agent(
        ScriptedChatClient([ls_call("delete", path="/x")]),
        tools=[loopsim.tool(delete, approval_mode="always_require")],
    )
    af_agent = af.Agent(
        client=FakeAFChatClient([af_call("c1", "delete", path="/x")]),
        tools=[af.tool(delete, approval_mode="always_require")],
    )

    async def ls_main() -> Any:
        session = ls_agent.create_session()
        if stream:
            return await ls_agent.run_stream("rm", session=session).get_final_response()
        return await ls_agent.run("rm", session=session)

    async def af_main() -> Any:
        session = af_agent.create_session()
        if stream:
            return await af_agent.run("rm", session=session, stream=True).get_final_response()
        return await af_agent.run("rm", session=session)

    ours = loopsim.simulate(ls_main)
    theirs = loopsim.simulate(af_main)
    expected = [("assistant", ["function_call", "function_approval_request"])]
    assert kinds(ours.messages) == kinds(theirs.messages) == expected
    for response in (ours, theirs):
        function_call, request = response.messages[0].contents
        assert request.function_call.call_id == function_call.call_id == "c1"
        assert request.id != function_call.call_id  # its own id


class Notes(loopsim.ContextProvider):
    async def before_run(self, *, agent: Any, session: Any, context: Any, state: Any) -> None:
        context.extend_instructions(self.source_id, ["from the provider", "and more"])
        context.extend_messages(self.source_id, [Message.user("(context note)")])


class AFNotes(af.ContextProvider):
    async def before_run(self, *, agent: Any, session: Any, context: Any, state: Any) -> None:
        context.extend_instructions(self.source_id, ["from the provider", "and more"])
        context.extend_messages(
            self.source_id, [af.Message(role="user", contents=["(context note)"])]
        )


def test_instructions_and_context_messages_are_ordered_as_upstream_orders_them() -> None:
    ls_client = ScriptedChatClient(["one", "two"])
    ls_agent = loopsim.Agent(ls_client, instructions="base", context_providers=[Notes("notes")])
    af_client = FakeAFChatClient(["one", "two"])
    af_agent = af.Agent(client=af_client, instructions="base", context_providers=[AFNotes("notes")])

    async def ls_main() -> None:
        session = ls_agent.create_session()
        await ls_agent.run("a", session=session, options={"instructions": "run"})
        await ls_agent.run("b", session=session)

    async def af_main() -> None:
        session = af_agent.create_session()
        await af_agent.run("a", session=session, options={"instructions": "run"})
        await af_agent.run("b", session=session)

    loopsim.simulate(ls_main)
    loopsim.simulate(af_main)
    af_instructions = af_client.requests[0][1]["instructions"]
    assert ls_client.requests[0].options.instructions == af_instructions
    assert af_instructions == "base\nfrom the provider\nand more\nrun"
    ls_texts = [m.text for m in ls_client.requests[1].messages]
    af_texts = [m.text for m in af_client.requests[1][0]]
    assert ls_texts == af_texts == ["(context note)", "a", "one", "b"]


@pytest.mark.parametrize("limit", ["errors", "rounds"])
def test_past_a_tool_loop_limit_the_last_request_lists_the_tools_with_tool_choice_none(
    limit: str,
) -> None:
    config = (
        {"max_consecutive_errors_per_request": 2} if limit == "errors" else {"max_iterations": 2}
    )
    name = "boom" if limit == "errors" else "add"
    ours, theirs = Counter(), Counter()
    ls_client = ScriptedChatClient([ls_call(name, f"c{i}", x=1, a=1, b=2) for i in range(4)])
    ls_agent = loopsim.Agent(
        ls_client,
        tools=[loopsim.tool(ours.boom, name="boom"), add],
        function_invocation_configuration=config,
    )
    af_client = FakeAFChatClient(
        [af_call(f"c{i}", name, x=1, a=1, b=2) for i in range(4)],
        function_invocation_configuration=config,
    )
    af_agent = af.Agent(client=af_client, tools=[af.tool(theirs.boom, name="boom"), af.tool(add)])

    loopsim.simulate(ls_agent.run, "go")
    loopsim.simulate(af_agent.run, "go")

    ls_choices = [r.options.tool_choice for r in ls_client.requests]
    af_choices = [r[1].get("tool_choice") for r in af_client.requests]
    assert ls_choices == af_choices == ["auto", "auto", "none"]
    ls_tools = [r.options.tool_names for r in ls_client.requests]
    af_tools = [[t.name for t in r[1]["tools"]] for r in af_client.requests]
    assert ls_tools == af_tools == [["boom", "add"]] * 3


def _two_calls(first: str) -> Message:
    calls = [
        FunctionCallContent(call_id="c-nope", name="nope", arguments={"x": 1}),
        FunctionCallContent(call_id="c-add", name="add", arguments={"a": 1, "b": 2}),
    ]
    return Message("assistant", calls if first == "nope" else calls[::-1])


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("first", ["nope", "add"])
def test_a_call_of_an_unknown_tool_is_recorded_alike_on_both_engines(
    first: str, stream: bool
) -> None:
    # upstream's function layer answers it without running function middleware, so
    # loopsim's tool tracing records it where that answer is made
    from _af_fake import run_agent

    from loopsim._scenario._compare import compare_engines
    from loopsim.agent_framework import as_chat_client

    def script() -> ScriptedChatClient:
        return ScriptedChatClient([_two_calls(first), "ok"])

    agents = [
        loopsim.Agent(script(), tools=[loopsim.tool(add)], name="a"),
        af.Agent(client=as_chat_client(script()), tools=[af.tool(add)], name="a"),
    ]
    transcripts = []
    for agent in agents:

        async def main(agent: Any = agent) -> Any:
            return await run_agent(agent, "go", agent.create_session(), stream=stream)

        transcripts.append(loopsim.record(main)[1])
    order = ["c-nope", "c-add"] if first == "nope" else ["c-add", "c-nope"]
    for transcript in transcripts:
        calls = [e.data for e in transcript.events if e.kind == "tool_call"]
        assert [c["call_id"] for c in calls] == order
        unknown = next(c for c in calls if c["name"] == "nope")
        assert unknown["arguments"] == {"x": 1}
        results = {e.data["call_id"]: e.data for e in transcript.events if e.kind == "tool_result"}
        assert results["c-add"]["error"] is None
        assert "nope" in str(results["c-nope"]["error"])
        assert str(results["c-nope"]["result"]).startswith("Error:")
    assert compare_engines(*transcripts) is None


def test_an_unknown_tool_is_not_recorded_where_no_tool_is_traced() -> None:
    # a client of the user's own, without loopsim's tool tracing: neither the known nor the
    # unknown tool's call is recorded (one rule for both)
    client = FakeAFChatClient(
        [
            af.Message(
                role="assistant",
                contents=[
                    af.Content.from_function_call(call_id="c1", name="nope", arguments={}),
                    af.Content.from_function_call(
                        call_id="c2", name="add", arguments={"a": 1, "b": 2}
                    ),
                ],
            ),
            "ok",
        ]
    )
    agent = af.Agent(client=client, tools=[af.tool(add)], name="a")
    response, transcript = loopsim.record(agent.run, "go")
    assert response.text == "ok"
    assert [e.kind for e in transcript.events if e.kind.startswith("tool_")] == []


@given(
    name=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    other=st.from_regex(r"[A-Z]{1,12}", fullmatch=True),
    offered=st.lists(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), max_size=3),
)
def test_an_unknown_tool_error_agrees_by_the_tool_name_only(
    name: str, other: str, offered: list[str]
) -> None:
    # the tools offered are loopsim's own detail; upstream's text names the tool only
    ours = say("agent.tool.unknown_detail", name=name, offered=", ".join(offered) or "none")
    assert agrees(ours, f"'Function \"{name}\" not found.'")
    assert not agrees(ours, f"'Function \"{other}\" not found.'")
    assert not agrees(ours, f'Error: Function "{name}" not found.')  # an error result
