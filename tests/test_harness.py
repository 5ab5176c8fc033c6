"""create_harness_agent / HarnessAgent: wiring, validation, and both ways of looping."""

from __future__ import annotations

from typing import Any

import pytest
from test_background_provider import Child, call, calls, run_timed

import loopsim
from loopsim import (
    AgentLoopMiddleware,
    BackgroundAgentsProvider,
    BackgroundTaskCompletionLoopEvaluator,
    HarnessAgent,
    LoopAgent,
    LoopAgentOptions,
    create_harness_agent,
)

START = "background_agents_start_task"
WAIT = "background_agents_wait_for_first_completion"
RESULTS = "background_agents_get_task_results"
CLEAR = "background_agents_clear_completed_task"


def client(turns: list[Any] | None = None) -> loopsim.ScriptedChatClient:
    return loopsim.ScriptedChatClient(turns or [])


def test_no_background_provider_by_default() -> None:
    agent = create_harness_agent(client(), name="h")
    assert isinstance(agent, HarnessAgent)
    assert agent.background_agents_provider is None
    assert agent.get_service(BackgroundAgentsProvider) is None
    assert agent.loop_agent is None
    assert agent.loop_middleware is None
    assert agent.inner is agent.agent
    assert agent.name == "h"


@pytest.mark.parametrize("empty", [[], None, ()], ids=["list", "none", "tuple"])
def test_empty_background_agents_add_no_provider_and_skip_validation(empty: Any) -> None:
    agent = create_harness_agent(
        client(), name="h", background_agents=empty, background_agents_wait_timeout_seconds=0
    )
    assert agent.background_agents_provider is None


def test_background_agents_add_a_provider_with_the_settings() -> None:
    agents = [Child("web", description="searches"), Child("code", description="reads code")]
    agent = create_harness_agent(
        client(),
        name="h",
        background_agents=agents,
        background_agents_wait_timeout_seconds=30,
        background_agents_instructions="Custom instructions with {background_agents}",
    )
    provider = agent.background_agents_provider
    assert provider is not None
    assert agent.get_service(BackgroundAgentsProvider) is provider
    assert agent.agent.context_providers[0] is provider
    assert provider.wait_timeout_seconds == 30
    assert provider.instructions == (
        "Custom instructions with Background agents you can use:\n- web: searches\n- code: reads code"
    )


@pytest.mark.parametrize("bad", [0, -5, True, 2.5], ids=["zero", "negative", "bool", "float"])
def test_the_wait_timeout_is_validated_with_agents(bad: Any) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        create_harness_agent(
            client(),
            name="h",
            background_agents=[Child("a")],
            background_agents_wait_timeout_seconds=bad,
        )


def test_duplicate_agent_names_surface_from_the_provider() -> None:
    with pytest.raises(ValueError, match="Duplicate background agent name"):
        create_harness_agent(client(), name="h", background_agents=[Child("A"), Child("a")])


def test_caller_providers_come_after_the_background_provider() -> None:
    todos = loopsim.TodoProvider()
    agent = create_harness_agent(
        client(), name="h", background_agents=[Child("a")], context_providers=[todos]
    )
    assert agent.agent.context_providers == [agent.background_agents_provider, todos]


def test_the_predicate_loop_is_the_first_middleware() -> None:
    mine = loopsim.AgentMiddleware()
    predicate = loopsim.background_tasks_running()
    agent = create_harness_agent(
        client(),
        name="h",
        loop_should_continue=predicate,
        loop_next_message=loopsim.background_tasks_running_message,
        loop_max_iterations=4,
        middleware=[mine],
    )
    loop = agent.loop_middleware
    assert isinstance(loop, AgentLoopMiddleware)
    assert agent.agent.middleware == [loop, mine]
    assert loop.should_continue is predicate
    assert loop.next_message is loopsim.background_tasks_running_message
    assert loop.max_iterations == 4
    default = create_harness_agent(client(), name="h", loop_should_continue=predicate)
    assert default.loop_middleware is not None
    assert default.loop_middleware.max_iterations == 10


def test_loop_options_are_ignored_without_their_switch() -> None:
    agent = create_harness_agent(
        client(),
        name="h",
        loop_next_message=lambda **kw: "again",
        loop_max_iterations=3,
        loop_options=LoopAgentOptions(max_iterations=2),
    )
    assert agent.agent.middleware == []
    assert agent.loop_agent is None


def test_loop_evaluators_make_a_loop_agent_the_outermost_wrapper() -> None:
    evaluator = BackgroundTaskCompletionLoopEvaluator()
    agent = create_harness_agent(
        client(),
        name="h",
        background_agents=[Child("a")],
        loop_evaluators=[evaluator],
        loop_options=LoopAgentOptions(max_iterations=3),
    )
    assert isinstance(agent.loop_agent, LoopAgent)
    assert agent.inner is agent.loop_agent
    assert agent.loop_agent.inner is agent.agent
    assert agent.loop_agent.evaluators == (evaluator,)
    assert agent.loop_agent.max_iterations == 3
    assert agent.get_service(BackgroundAgentsProvider) is agent.background_agents_provider
    single = create_harness_agent(client(), name="h", loop_evaluators=evaluator)
    assert single.loop_agent is not None
    assert single.loop_agent.evaluators == (evaluator,)


@pytest.mark.parametrize(
    "bad", [loopsim.AgentMiddleware(), "middleware", b"x"], ids=["object", "str", "bytes"]
)
def test_middleware_must_be_a_sequence(bad: Any) -> None:
    with pytest.raises(TypeError, match="middleware must be a non-string sequence"):
        create_harness_agent(client(), name="h", middleware=bad)


def test_name_is_optional_as_upstream_but_unknown_options_are_type_errors() -> None:
    assert create_harness_agent(client()).name is None
    with pytest.raises(TypeError):
        create_harness_agent(client(), no_such_option=True)


def test_instructions_tools_and_description_reach_the_chat_agent(backend: str) -> None:
    @loopsim.tool
    def ping() -> str:
        return "pong"

    scripted = client(["hi"])
    agent = create_harness_agent(
        scripted,
        name="h",
        instructions="Be brief.",
        tools=[ping],
        description="a harness",
        background_agents=[Child("a")],
    )
    assert agent.description == "a harness"

    async def main() -> str:
        return (await agent.run("hello", session=agent.create_session())).text

    assert loopsim.simulate(main, backend=backend) == "hi"
    options = scripted.requests[0].options
    assert options.instructions is not None
    assert options.instructions.startswith(
        f"{loopsim.DEFAULT_HARNESS_INSTRUCTIONS}\n\nBe brief.\n## Background Agents"
    )
    # upstream's default hosted web search first, then the caller's tools, then the six
    assert options.tool_names[:2] == ["web_search", "ping"]
    assert len(options.tool_names) == 8


def coordinator_script(final: str) -> list[Any]:
    """Start two tasks, stop; then wait/collect one per iteration; then answer."""
    return [
        calls(
            (START, {"agent_name": "web", "input": "search", "description": "web search"}),
            (START, {"agent_name": "code", "input": "analyze", "description": "code analysis"}),
        ),
        "Both tasks started.",
        call(WAIT, task_ids=[1, 2]),
        call(RESULTS, task_id=2),
        call(CLEAR, task_id=2),
        "Code analysis is in; waiting for the web search.",
        call(WAIT, task_ids=[1]),
        call(RESULTS, task_id=1),
        call(CLEAR, task_id=1),
        final,
    ]


def children() -> list[Child]:
    return [Child("web", "web facts", delay=200), Child("code", "code facts", delay=100)]


def test_predicate_loop_waits_for_background_tasks(backend: str) -> None:
    scripted = client(coordinator_script("Report: web facts + code facts."))
    agent = create_harness_agent(
        scripted,
        name="coordinator",
        background_agents=children(),
        loop_should_continue=loopsim.background_tasks_running(),
        loop_next_message=loopsim.background_tasks_running_message,
        loop_max_iterations=10,
    )

    async def main() -> Any:
        return await agent.run("Coordinate the research.", session=agent.create_session())

    response, elapsed, real = run_timed(main, backend)
    assert response.messages[-1].text == "Report: web facts + code facts."
    assert elapsed == 200.0
    assert real < 2.0
    assert scripted.remaining == ()
    nudges = [r.messages[-1].text for r in scripted.requests if r.messages[-1].role == "user"]
    assert nudges[0] == "Coordinate the research."
    assert "2 background task(s) running" in nudges[1]
    assert "1 background task(s) running" in nudges[2]


def test_evaluator_loop_waits_for_background_tasks(backend: str) -> None:
    scripted = client(coordinator_script("Report: web facts + code facts."))
    agent = create_harness_agent(
        scripted,
        name="coordinator",
        background_agents=children(),
        loop_evaluators=[BackgroundTaskCompletionLoopEvaluator()],
        loop_options=LoopAgentOptions(max_iterations=10),
    )

    async def main() -> Any:
        return await agent.run("Coordinate the research.", session=agent.create_session())

    response, elapsed, _ = run_timed(main, backend)
    assert response.messages[-1].text == "Report: web facts + code facts."
    assert elapsed == 200.0
    assert scripted.remaining == ()
    feedback = [m.text for m in response.messages if m.role == "user"]
    assert len(feedback) == 2
    assert feedback[0].startswith("You still have 2 background task(s) running")
    assert feedback[1].startswith("You still have 1 background task(s) running")


def test_without_a_loop_delegation_works_but_nothing_reinvokes(backend: str) -> None:
    scripted = client(coordinator_script("unused")[:2])
    agent = create_harness_agent(scripted, name="coordinator", background_agents=children())

    async def main() -> tuple[str, list[Any]]:
        session = agent.create_session()
        response = await agent.run("go", session=session)
        provider = agent.background_agents_provider
        assert provider is not None
        return response.text, provider.tasks(session)

    text, tasks = loopsim.simulate(main, backend=backend)
    assert text == "Both tasks started."
    assert [t.status.value for t in tasks] == ["running", "running"]
