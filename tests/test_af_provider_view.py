"""A bare ``as_agent(af_agent)`` offers its real BackgroundAgentsProvider to loopsim's evaluators.

loopsim's ``BackgroundTaskCompletionLoopEvaluator`` finds the provider through
``get_service(loopsim.BackgroundAgentsProvider)``; on an agent_framework agent that is a
view of the package's own provider (its task records, refreshed as its tools refresh them).
"""

from __future__ import annotations

import warnings
from typing import Any

import agent_framework as af
import pytest
from af_anchor import START, WAIT, call

import loopsim
from loopsim import ScriptedChatClient, Turn
from loopsim.agent_framework import as_agent, as_chat_client

LOOP_KINDS = ("loop_iteration_start", "evaluator_decision", "loop_stop")

#: The parent starts one child (2 s), answers, is sent back while it runs, then waits.
PARENT = [
    call(START, "p1", agent_name="slow", input="dig", description="digging"),
    "started the dig",
    call(WAIT, "p2", task_ids=[1]),
    "the dig is done",
]


def real_parent(with_provider: bool = True) -> Any:
    child = af.Agent(
        client=as_chat_client(ScriptedChatClient([Turn("found it", delay=2)], name="slow-model")),
        name="slow",
        description="Digs slowly.",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # upstream's "[HARNESS]" feature notice
        providers = [af.BackgroundAgentsProvider([child], wait_timeout_seconds=10)]
    return af.Agent(
        client=as_chat_client(ScriptedChatClient(PARENT, name="parent-model")),
        name="boss",
        context_providers=providers if with_provider else [],
    )


def builtin_parent() -> loopsim.Agent:
    child = loopsim.Agent(
        ScriptedChatClient([Turn("found it", delay=2)], name="slow-model"),
        name="slow",
        description="Digs slowly.",
    )
    provider = loopsim.BackgroundAgentsProvider([child], wait_timeout_seconds=10)
    return loopsim.Agent(
        ScriptedChatClient(PARENT, name="parent-model"), name="boss", context_providers=[provider]
    )


def looped(inner: Any) -> loopsim.LoopAgent:
    return loopsim.LoopAgent(inner, loopsim.BackgroundTaskCompletionLoopEvaluator())


def test_get_service_finds_a_view_of_the_real_provider() -> None:
    agent = as_agent(real_parent())
    view = agent.get_service(loopsim.BackgroundAgentsProvider)
    assert view is not None
    assert callable(getattr(view, "incomplete_tasks", None))
    assert (
        as_agent(real_parent(with_provider=False)).get_service(loopsim.BackgroundAgentsProvider)
        is None
    )


def test_the_view_lists_the_running_tasks_of_the_session() -> None:
    async def main() -> list[list[tuple[int, str, str]]]:
        agent = as_agent(real_parent())
        view = agent.get_service(loopsim.BackgroundAgentsProvider)
        assert view is not None
        session = agent.create_session()
        seen = [[(t.task_id, t.agent_name, t.description) for t in view.incomplete_tasks(session)]]
        await agent.run("go", session=session)  # starts the child and answers
        seen.append(
            [(t.task_id, t.agent_name, t.description) for t in view.incomplete_tasks(session)]
        )
        await agent.run("wait for it", session=session)
        seen.append(
            [(t.task_id, t.agent_name, t.description) for t in view.incomplete_tasks(session)]
        )
        return seen

    assert loopsim.simulate(main) == [[], [(1, "slow", "digging")], []]


def test_background_completion_evaluator_loops_a_bare_as_agent_like_the_built_in_engine() -> None:
    async def run(top: loopsim.LoopAgent) -> str:
        session = top.create_session()
        return (await top.run("dig it up", session=session)).text

    real_text, real = loopsim.record(run, looped(as_agent(real_parent())))
    builtin_text, builtin = loopsim.record(run, looped(builtin_parent()))
    assert real_text.endswith("the dig is done")
    assert builtin_text.endswith("the dig is done")
    real_loop = [(e.time, e.kind, e.data) for e in real.events if e.kind in LOOP_KINDS]
    builtin_loop = [(e.time, e.kind, e.data) for e in builtin.events if e.kind in LOOP_KINDS]
    decisions = [d["decision"] for _, k, d in real_loop if k == "evaluator_decision"]
    assert decisions == ["continue", "stop"]
    assert real_loop[-1][0] == 2.0  # the second iteration waited on virtual time
    assert real_loop == builtin_loop  # the same feedback too: "- #1 (slow): digging"


def test_without_a_provider_the_evaluator_says_what_is_missing() -> None:
    top = looped(as_agent(real_parent(with_provider=False)))
    with pytest.raises(RuntimeError, match=r"get_service\(BackgroundAgentsProvider\) found none"):
        loopsim.simulate(top.run, "dig it up")
