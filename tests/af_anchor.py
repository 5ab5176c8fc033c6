"""The anchor program of the agent_framework engine tests, written against the real package.

A parent ``agent_framework.Agent`` with a ``BackgroundAgentsProvider`` (children of 0.5 s
and 2 s, ``wait_timeout_seconds=1``) under ``AgentLoopMiddleware(background_tasks_running())``;
every model is a loopsim ScriptedChatClient behind ``as_chat_client``.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af

import loopsim
from loopsim import FunctionCallContent, Message, Turn
from loopsim.agent_framework import as_chat_client, instrument

START = "background_agents_start_task"
WAIT = "background_agents_wait_for_first_completion"
RESULTS = "background_agents_get_task_results"


def call(name: str, call_id: str, **arguments: Any) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=call_id, name=name, arguments=arguments)]
    )


def parent_script() -> list[Any]:
    return [
        call(START, "p1", agent_name="web", input="search X", description="search"),
        call(START, "p2", agent_name="code", input="analyse X", description="analyse"),
        call(WAIT, "p3", task_ids=[1, 2]),
        call(RESULTS, "p4", task_id=1),
        "web is done, code still running",
        call(WAIT, "p5", task_ids=[2]),
        "still waiting for code",
        call(WAIT, "p6", task_ids=[2]),
        call(RESULTS, "p7", task_id=2),
        "all done",
    ]


def build(
    parent_turns: list[Any] | None = None, *, traced: bool = True
) -> tuple[af.Agent, loopsim.ScriptedChatClient]:
    """The parent agent (instrumented unless ``traced=False``) and its scripted model."""
    web = af.Agent(
        client=as_chat_client(
            loopsim.ScriptedChatClient([Turn("3 sources", delay=0.5)], name="web-model")
        ),
        name="web",
        description="Searches the web.",
    )
    code = af.Agent(
        client=as_chat_client(
            loopsim.ScriptedChatClient([Turn("4 modules", delay=2)], name="code-model")
        ),
        name="code",
        description="Analyses code.",
    )
    provider = af.BackgroundAgentsProvider([web, code], wait_timeout_seconds=1)
    model = loopsim.ScriptedChatClient(
        parent_script() if parent_turns is None else parent_turns, name="parent-model"
    )
    parent = af.Agent(
        client=as_chat_client(model),
        name="coordinator",
        context_providers=[provider],
        middleware=[
            af.AgentLoopMiddleware(
                af.background_tasks_running(),
                next_message=af.background_tasks_running_message,
                max_iterations=5,
            )
        ],
    )
    return (instrument(parent) if traced else parent), model


async def run_anchor() -> str:
    parent, _ = build()
    session = parent.create_session()
    result = await parent.run("Research X.", session=session)
    return result.text
