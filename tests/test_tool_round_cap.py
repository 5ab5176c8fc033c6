"""The tool-round cap: upstream's name and default, settable, visible in the transcript."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from agent_framework import Agent as UpstreamAgent
from agent_framework import BaseChatClient, ChatResponse, Content
from agent_framework import Message as UpstreamMessage
from agent_framework import tool as upstream_tool
from agent_framework._tools import DEFAULT_MAX_ITERATIONS, FunctionInvocationLayer

import loopsim
from loopsim import Agent, FunctionCallContent, Message, ScriptedChatClient
from loopsim._scenario import load_scenario_text, run_scenario


def _call(index: int) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=f"c{index}", name="add", arguments={"a": 1})]
    )


@loopsim.tool
def add(a: int) -> int:
    """Add one."""
    return a + 1


class _Insisting(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """An upstream chat client whose model asks for a tool on every turn."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tool_choices: list[Any] = []

    async def _inner_get_response(  # type: ignore[override] # the documented override shape
        self, *, messages: Any, stream: bool, options: Any, **kwargs: Any
    ) -> ChatResponse[Any]:
        self.tool_choices.append(options.get("tool_choice"))
        number = len(self.tool_choices)
        call = Content.from_function_call(call_id=f"c{number}", name="add", arguments={"a": 1})
        return ChatResponse(messages=[UpstreamMessage(role="assistant", contents=[call])])


@upstream_tool(name="add")
def upstream_add(a: int) -> int:
    """Add one."""
    return a + 1


def test_the_default_is_upstreams() -> None:
    assert loopsim.Agent(ScriptedChatClient([])).max_tool_rounds == DEFAULT_MAX_ITERATIONS == 40


@pytest.mark.parametrize("cap", [1, 3])
def test_both_engines_stop_offering_tools_after_max_iterations(cap: int, backend: str) -> None:
    config = {"max_iterations": cap}
    ours = ScriptedChatClient([_call(i) for i in range(cap + 1)])
    agent = Agent(ours, name="a", tools=[add], function_invocation_configuration=config)
    loopsim.simulate(lambda: agent.run("go"), backend=backend)
    offered = [r.options.tool_choice != "none" for r in ours.requests]
    assert all(r.options.tool_names == ["add"] for r in ours.requests)  # listed throughout

    upstream = _Insisting(function_invocation_configuration=config)
    theirs_agent = UpstreamAgent(client=upstream, tools=[upstream_add])
    anyio.run(lambda: theirs_agent.run("go"), backend="asyncio")  # upstream needs asyncio
    theirs = [choice != "none" for choice in upstream.tool_choices]
    assert offered == theirs == [True] * cap + [False]


def test_bad_configurations_name_the_setting() -> None:
    with pytest.raises(ValueError, match="max_iterations must be >= 1"):
        Agent(ScriptedChatClient([]), function_invocation_configuration={"max_iterations": 0})
    with pytest.raises(
        ValueError, match="supports max_iterations, max_consecutive_errors_per_request only"
    ):
        Agent(ScriptedChatClient([]), function_invocation_configuration={"max_function_calls": 2})


SCENARIO = """\
version: 1
agents:
  worker:
    tools: {add: {}}
    function_invocation_configuration: {max_iterations: 2}
    script:
      - tool_call: {name: add, arguments: {a: 1}}
      - tool_call: {name: add, arguments: {a: 2}}
      - reply: gave up
parent: {agent: worker}
steps:
  - run: go
expect:
  response: {equals: gave up}
  events: [{kind: tool_round_limit, where: {agent: worker, max_iterations: 2}, count: 1}]
"""


def test_a_scenario_sets_the_cap_and_sees_it_reached(backend: str) -> None:
    loaded = load_scenario_text(SCENARIO, path="x.loopsim.yaml")
    result = run_scenario(loaded, backend=backend)  # type: ignore[arg-type] # a backend name
    assert result.passed, result.report()
    assert result.tool_round_limits == [("worker", 2, 0.0)]
    # not reached when the cap is higher: the count expectation fails
    higher = SCENARIO.replace("{max_iterations: 2}", "{max_iterations: 5}", 1)
    failed = run_scenario(load_scenario_text(higher, path="x.loopsim.yaml"))
    assert [f.location for f in failed.failures] == ["expect.events[0].count"]
    assert failed.tool_round_limits == []


def test_reaching_the_cap_shows_in_the_failure_report() -> None:
    text = SCENARIO.replace("response: {equals: gave up}", "response: {equals: DONE}")
    result = run_scenario(load_scenario_text(text, path="x.loopsim.yaml"))
    assert not result.passed
    report = result.report()
    assert (
        "note: agent 'worker' reached its tool-round limit at t=0s "
        "(function_invocation_configuration.max_iterations = 2)"
    ) in report


def test_a_bad_cap_in_a_file_is_located() -> None:
    text = SCENARIO.replace("{max_iterations: 2}", "{max_iterations: 0}")
    with pytest.raises(loopsim.ScenarioError) as info:
        load_scenario_text(text, path="x.loopsim.yaml")
    assert info.value.line == 5
    assert info.value.location == "agents.worker.function_invocation_configuration.max_iterations"
