"""The Python samples of seed 003 (background agents guide) run against loopsim.

Each sample is kept verbatim (indentation restored) and run with only its import line
changed from ``agent_framework`` to ``loopsim``. The names the guide leaves to the
reader — ``client``, ``web_search_agent``, ``code_analysis_agent`` — are scripted fakes
here, and child work takes virtual time. The guide's .NET ``LoopAgent`` +
``BackgroundTaskCompletionLoopEvaluator`` samples are translated to the Python API (they
have no Python text of their own) and run the same way.
"""

from __future__ import annotations

import textwrap
from typing import Any

import anyio
from test_background_provider import call, calls, run_timed

import loopsim

MANUAL_SETUP = """
from agent_framework import Agent, BackgroundAgentsProvider

background_provider = BackgroundAgentsProvider(
    [web_search_agent, code_analysis_agent],
    wait_timeout_seconds=30,
)

parent_agent = Agent(
    client=client,
    name="research-coordinator",
    context_providers=[background_provider],
)
session = parent_agent.create_session()
"""

RELEASE = """
session = parent_agent.create_session()
try:
    await parent_agent.run("Coordinate the research.", session=session)
finally:
    await background_provider.release_session(session)
"""

MIDDLEWARE_LOOP = """
from agent_framework import (
    Agent,
    AgentLoopMiddleware,
    background_tasks_running,
    background_tasks_running_message,
)

parent_agent = Agent(
    client=client,
    context_providers=[background_provider],
    middleware=[
        AgentLoopMiddleware(
            background_tasks_running(),
            next_message=background_tasks_running_message,
            max_iterations=10,
        )
    ],
)
"""

HARNESS = """
from agent_framework import (
    background_tasks_running,
    background_tasks_running_message,
    create_harness_agent,
)

parent_agent = create_harness_agent(
    client=client,
    name="research-coordinator",
    background_agents=[web_search_agent, code_analysis_agent],
    background_agents_wait_timeout_seconds=30,
    loop_should_continue=background_tasks_running(),
    loop_next_message=background_tasks_running_message,
    loop_max_iterations=10,
)
session = parent_agent.create_session()
"""

# The .NET samples, translated: `new LoopAgent(parentAgent, new
# BackgroundTaskCompletionLoopEvaluator(), new LoopAgentOptions { MaxIterations = 10 })`
# and `HarnessAgentOptions { BackgroundAgents, LoopEvaluators, LoopAgentOptions }`.
LOOP_AGENT = """
from agent_framework import BackgroundTaskCompletionLoopEvaluator, LoopAgent, LoopAgentOptions

looping_parent = LoopAgent(
    parent_agent,
    BackgroundTaskCompletionLoopEvaluator(),
    LoopAgentOptions(max_iterations=10),
)
"""

HARNESS_WITH_EVALUATOR = """
from agent_framework import BackgroundTaskCompletionLoopEvaluator, LoopAgentOptions, create_harness_agent

parent_agent = create_harness_agent(
    client=client,
    name="research-coordinator",
    background_agents=[web_search_agent, code_analysis_agent],
    loop_evaluators=[BackgroundTaskCompletionLoopEvaluator()],
    loop_options=LoopAgentOptions(max_iterations=10),
)
session = parent_agent.create_session()
"""


def for_loopsim(sample: str) -> str:
    """The sample with its import line pointed at loopsim — the only change made."""
    code = textwrap.dedent(sample).strip("\n")
    imports = code.count("from agent_framework import")
    assert imports <= 1
    changed = code.replace("from agent_framework import", "from loopsim import")
    assert changed.count("from loopsim import") == imports
    assert [a for a, b in zip(code.splitlines(), changed.splitlines(), strict=True) if a != b] == (
        [line for line in code.splitlines() if "agent_framework" in line]
    )
    return changed


async def run_sample(sample: str, namespace: dict[str, Any]) -> None:
    """Run a sample (it may ``await``) with ``namespace`` as its globals; keep its names."""
    body = textwrap.indent(for_loopsim(sample), "    ")
    source = f"async def __sample__():\n{body}\n    return locals()\n"
    exec(compile(source, "<seed 003 sample>", "exec"), namespace)  # noqa: S102 - the samples are ours
    namespace.update(await namespace["__sample__"]())


START = "background_agents_start_task"


def world(parent_turns: list[Any], *, web_delay: float = 25) -> dict[str, Any]:
    """What the guide assumes exists: a chat client and two child agents.

    The children finish within the samples' 30-second wait timeout unless told otherwise.
    """
    return {
        "client": loopsim.ScriptedChatClient(parent_turns, name="parent-model"),
        "web_search_agent": loopsim.Agent(
            loopsim.ScriptedChatClient([loopsim.Turn("3 sources on X", delay=web_delay)]),
            name="web_search",
            description="Searches the web.",
        ),
        "code_analysis_agent": loopsim.Agent(
            loopsim.ScriptedChatClient([loopsim.Turn("X is used in 4 modules", delay=10)]),
            name="code_analysis",
            description="Analyzes a code base.",
        ),
    }


def delegate_and_collect(final: str) -> list[Any]:
    """A coordinator's turns: start both, then wait, collect and clear each, then answer."""
    return [
        calls(
            (START, {"agent_name": "web_search", "input": "find X", "description": "sources"}),
            (START, {"agent_name": "code_analysis", "input": "where is X", "description": "usage"}),
        ),
        "Both tasks are running.",
        call("background_agents_wait_for_first_completion", task_ids=[1, 2]),
        call("background_agents_get_task_results", task_id=2),
        call("background_agents_clear_completed_task", task_id=2),
        "Code analysis done; the web search is still running.",
        call("background_agents_wait_for_first_completion", task_ids=[1]),
        call("background_agents_get_task_results", task_id=1),
        call("background_agents_clear_completed_task", task_id=1),
        final,
    ]


def tool_results(client: loopsim.ScriptedChatClient) -> list[Any]:
    return [
        content.result
        for request in client.requests
        for content in request.messages[-1].contents
        if request.messages[-1].role == "tool"
    ]


def test_manual_setup_and_release(backend: str) -> None:
    namespace = world(
        [
            calls(
                (START, {"agent_name": "web_search", "input": "find X", "description": "sources"}),
                (START, {"agent_name": "code_analysis", "input": "X?", "description": "usage"}),
            ),
            "Started; I will check back later.",
        ]
    )

    async def main() -> list[str]:
        await run_sample(MANUAL_SETUP, namespace)
        provider = namespace["background_provider"]
        assert provider.wait_timeout_seconds == 30
        await run_sample(RELEASE, namespace)
        return [t.status.value for t in provider.tasks(namespace["session"])]

    statuses, elapsed, _ = run_timed(main, backend)
    assert statuses == ["lost", "lost"]  # released while running
    assert elapsed == 0.0  # release cancelled the children; nobody waited for them
    assert tool_results(namespace["client"]) == [
        "Started background task 1 on agent 'web_search'.",
        "Started background task 2 on agent 'code_analysis'.",
    ]


def test_agent_loop_middleware_sample(backend: str) -> None:
    namespace = world(delegate_and_collect("X: 3 sources, used in 4 modules."))

    async def main() -> str:
        await run_sample(MANUAL_SETUP, namespace)
        await run_sample(MIDDLEWARE_LOOP, namespace)
        parent = namespace["parent_agent"]
        session = parent.create_session()
        response = await parent.run("Research X.", session=session)
        assert parent.get_service(loopsim.BackgroundAgentsProvider).tasks(session) == []
        return str(response.messages[-1].text)

    text, elapsed, _ = run_timed(main, backend)
    assert text == "X: 3 sources, used in 4 modules."
    assert elapsed == 25.0
    assert namespace["client"].remaining == ()
    assert "X is used in 4 modules" in tool_results(namespace["client"])
    assert "3 sources on X" in tool_results(namespace["client"])


def test_harness_sample(backend: str) -> None:
    namespace = world(delegate_and_collect("X: 3 sources, used in 4 modules."))

    async def main() -> str:
        await run_sample(HARNESS, namespace)
        parent = namespace["parent_agent"]
        response = await parent.run("Research X.", session=namespace["session"])
        return str(response.messages[-1].text)

    text, elapsed, _ = run_timed(main, backend)
    assert text == "X: 3 sources, used in 4 modules."
    assert elapsed == 25.0
    assert namespace["client"].remaining == ()
    assert isinstance(namespace["parent_agent"], loopsim.HarnessAgent)


def test_loop_agent_with_completion_evaluator_sample(backend: str) -> None:
    namespace = world(delegate_and_collect("X: 3 sources, used in 4 modules."))

    async def main() -> str:
        await run_sample(MANUAL_SETUP, namespace)
        await run_sample(LOOP_AGENT, namespace)
        looping = namespace["looping_parent"]
        response = await looping.run("Research X.", session=namespace["session"])
        return str(response.messages[-1].text)

    text, elapsed, _ = run_timed(main, backend)
    assert text == "X: 3 sources, used in 4 modules."
    assert elapsed == 25.0
    assert namespace["client"].remaining == ()


def test_harness_with_completion_evaluator_sample(backend: str) -> None:
    namespace = world(delegate_and_collect("X: 3 sources, used in 4 modules."))

    async def main() -> str:
        await run_sample(HARNESS_WITH_EVALUATOR, namespace)
        parent = namespace["parent_agent"]
        response = await parent.run("Research X.", session=namespace["session"])
        return str(response.messages[-1].text)

    text, elapsed, _ = run_timed(main, backend)
    assert text == "X: 3 sources, used in 4 modules."
    assert elapsed == 25.0


def test_the_wait_timeout_of_the_samples_bounds_each_wait(backend: str) -> None:
    """``wait_timeout_seconds=30``: a 120 s child needs several waits, each 30 s long."""
    turns = [
        call(START, agent_name="web_search", input="find X", description="sources"),
        *[call("background_agents_wait_for_first_completion", task_ids=[1]) for _ in range(4)],
        call("background_agents_get_task_results", task_id=1),
        "done",
    ]
    namespace = world(turns, web_delay=120)

    async def main() -> float:
        await run_sample(MANUAL_SETUP, namespace)
        await namespace["parent_agent"].run("go", session=namespace["session"])
        return anyio.current_time()

    finished_at, _, _ = run_timed(main, backend)
    assert finished_at == 120.0
    results = tool_results(namespace["client"])
    timed_out = (
        "Waited 30 seconds and no background task finished. "
        "They keep running; call this tool again to wait longer."
    )
    assert results[1:4] == [timed_out] * 3
    assert results[4:] == ["Task 1 ended with status: completed.", "3 sources on X"]
