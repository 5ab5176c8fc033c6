"""The Python samples of seed 003, unchanged, on the real agent_framework package.

The same samples as tests/test_seed_samples.py, but with their
``from agent_framework import ...`` lines left exactly as the guide prints them: the agent
code comes from agent_framework itself. Only the names the guide leaves to the reader
(``client``, ``web_search_agent``, ``code_analysis_agent``) are loopsim fakes, behind
:func:`loopsim.agent_framework.as_chat_client`, and everything runs under
``loopsim.simulate`` so child work takes virtual time.
"""

from __future__ import annotations

import textwrap
from typing import Any

import agent_framework as af
from test_seed_samples import HARNESS, MANUAL_SETUP, MIDDLEWARE_LOOP, RELEASE, delegate_and_collect

import loopsim
from loopsim import Turn
from loopsim.agent_framework import as_chat_client

FINAL = "X: 3 sources, used in 4 modules."


async def run_unchanged(sample: str, namespace: dict[str, Any]) -> None:
    """Run a sample exactly as printed (it may ``await``); keep the names it defines."""
    code = textwrap.dedent(sample).strip("\n")
    assert "from agent_framework import" in code or "await" in code
    body = textwrap.indent(code, "    ")
    source = f"async def __sample__():\n{body}\n    return locals()\n"
    exec(compile(source, "<seed 003 sample>", "exec"), namespace)  # noqa: S102 - the samples are ours
    namespace.update(await namespace["__sample__"]())


def world(parent_turns: list[Any], *, web_delay: float = 25) -> dict[str, Any]:
    """The guide's assumed names: a chat client and two child agents, all real upstream agents."""
    parent_model = loopsim.ScriptedChatClient(parent_turns, name="parent-model")
    return {
        "parent_model": parent_model,
        "client": as_chat_client(parent_model),
        "web_search_agent": af.Agent(
            client=as_chat_client(
                loopsim.ScriptedChatClient([Turn("3 sources on X", delay=web_delay)])
            ),
            name="web_search",
            description="Searches the web.",
        ),
        "code_analysis_agent": af.Agent(
            client=as_chat_client(
                loopsim.ScriptedChatClient([Turn("X is used in 4 modules", delay=10)])
            ),
            name="code_analysis",
            description="Analyzes a code base.",
        ),
    }


def tool_results(client: loopsim.ScriptedChatClient) -> list[Any]:
    return [
        content.result
        for request in client.requests
        for content in request.messages[-1].contents
        if request.messages[-1].role == "tool"
    ]


def run_timed(main: Any) -> tuple[Any, float]:
    clock = loopsim.VirtualClock(wall_clock=False)
    return clock.run(main), clock.elapsed


def test_manual_provider_with_agent_loop_middleware_runs_on_the_real_package() -> None:
    namespace = world(delegate_and_collect(FINAL))

    async def main() -> str:
        await run_unchanged(MANUAL_SETUP, namespace)
        await run_unchanged(MIDDLEWARE_LOOP, namespace)
        parent = namespace["parent_agent"]
        session = parent.create_session()
        response = await parent.run("Research X.", session=session)
        assert session.state["background_agents"]["tasks"] == []  # both collected and cleared
        return str(response.messages[-1].text)

    text, elapsed = run_timed(main)
    # the code came from agent_framework, not from loopsim
    assert namespace["Agent"] is af.Agent
    assert namespace["AgentLoopMiddleware"] is af.AgentLoopMiddleware
    assert isinstance(namespace["parent_agent"], af.Agent)
    assert isinstance(namespace["background_provider"], af.BackgroundAgentsProvider)
    assert text == FINAL
    assert elapsed == 25.0  # the 25 s web search, waited for in virtual time
    model = namespace["parent_model"]
    assert model.remaining == ()
    results = tool_results(model)
    assert "X is used in 4 modules" in results
    assert "3 sources on X" in results


def test_manual_setup_and_release_on_the_real_package() -> None:
    namespace = world(
        [
            loopsim.Message(
                "assistant",
                [
                    loopsim.FunctionCallContent(
                        call_id="s1",
                        name="background_agents_start_task",
                        arguments={
                            "agent_name": "web_search",
                            "input": "find X",
                            "description": "d",
                        },
                    )
                ],
            ),
            "Started; I will check back later.",
        ]
    )

    async def main() -> list[str]:
        await run_unchanged(MANUAL_SETUP, namespace)
        await run_unchanged(RELEASE, namespace)
        session = namespace["session"]
        return [t["status"] for t in session.state["background_agents"]["tasks"]]

    statuses, elapsed = run_timed(main)
    # upstream cancels the child and leaves the session's record as it was ("running"
    # until a later refresh); loopsim's built-in engine records "lost" at once
    assert statuses == ["running"]
    assert elapsed == 0.0
    assert namespace["background_provider"]._wait_timeout_seconds == 30  # upstream keeps it private


def test_create_harness_agent_with_background_agents_and_a_loop_on_the_real_package() -> None:
    namespace = world(delegate_and_collect(FINAL))

    async def main() -> str:
        await run_unchanged(HARNESS, namespace)
        parent = namespace["parent_agent"]
        response = await parent.run("Research X.", session=namespace["session"])
        return str(response.messages[-1].text)

    text, elapsed = run_timed(main)
    assert namespace["create_harness_agent"] is af.create_harness_agent
    assert type(namespace["parent_agent"]).__module__.startswith("agent_framework")
    assert text == FINAL
    assert elapsed == 25.0
    assert namespace["parent_model"].remaining == ()


def test_the_harness_loop_keeps_going_while_a_task_runs() -> None:
    # The model answers before the web search is done: the loop's predicate sees a
    # running task and nudges the agent with the running-tasks message.
    turns = [
        loopsim.Message(
            "assistant",
            [
                loopsim.FunctionCallContent(
                    call_id="s1",
                    name="background_agents_start_task",
                    arguments={"agent_name": "web_search", "input": "find X", "description": "d"},
                )
            ],
        ),
        "Started.",
        loopsim.Message(
            "assistant",
            [
                loopsim.FunctionCallContent(
                    call_id="w1",
                    name="background_agents_wait_for_first_completion",
                    arguments={"task_ids": [1]},
                )
            ],
        ),
        "Done waiting.",
    ]
    namespace = world(turns, web_delay=20)

    async def main() -> str:
        await run_unchanged(HARNESS, namespace)
        parent = namespace["parent_agent"]
        response = await parent.run("Research X.", session=namespace["session"])
        return str(response.messages[-1].text)

    text, elapsed = run_timed(main)
    assert text == "Done waiting."
    assert elapsed == 20.0
    nudge = namespace["parent_model"].requests[2].messages[-1]
    assert nudge.role == "user"
    assert "#1 (web_search)" in nudge.text
