"""Background tasks across their life: release_session, lost tasks, restarts, loop helpers.

A simulated process restart is: serialize the parent session, then deserialize it into
a *new* provider (and parent agent). Running handles do not survive it; records do.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from test_background_provider import Child, Tools, call, records, run_timed, stubborn

import loopsim
from loopsim import (
    AgentResponse,
    AgentSession,
    BackgroundAgentsProvider,
    BackgroundTaskCompletionLoopEvaluator,
    BackgroundTaskCompletionLoopEvaluatorOptions,
    BackgroundTaskStatus,
    LoopContext,
    Message,
    background_tasks_running,
    background_tasks_running_message,
)
from loopsim._wording import say

# -- release_session -------------------------------------------------------------------


def test_release_cancels_running_children_and_closes_the_tools(backend: str) -> None:
    worker = Child("worker", delay=100)
    provider = BackgroundAgentsProvider([worker, Child("fast")])

    async def main() -> tuple[list[str], float, AgentSession]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        await tools.start("fast")
        await tools.wait(2)
        await anyio.sleep(1)
        await provider.release_session(session)
        released_at = anyio.current_time()
        replies = [
            await tools.start("worker"),
            await tools.wait(1),
            await tools.cont(2),
            await tools.clear(2),
            await tools.results(1),
            await tools.all(),
        ]
        return replies, released_at, session

    (replies, released_at, session), _, _ = run_timed(main, backend)
    assert released_at == 1.0  # a child that honours cancellation stops at once
    assert worker.cancelled == 1
    assert replies == [
        "Error: this session is being released, so no new task can start.",
        "Error: this session is being released, so there is nothing to wait for.",
        "Error: this session is being released, so no task can be continued.",
        "Error: this session is being released, so no task can be cleared.",
        "The task was lost: its run is no longer reachable.",
        "Background tasks:\n- Task 1 [lost] (worker): job\n- Task 2 [completed] (fast): job",
    ]
    assert [r["status"] for r in records(session)] == ["lost", "completed"]


def test_after_release_the_next_run_sees_lost_tasks_and_can_start_again(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", delay=100)])

    async def main() -> tuple[list[str], str, AgentSession]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        await provider.release_session(session)
        assert records(session)[0]["status"] == "running"  # records are not touched
        fresh = await Tools.open(provider, session)
        status = [m.text for m in fresh.context.context_messages]
        restarted = await fresh.start("worker")
        assert [r["id"] for r in records(session)] == [1, 2]
        return status, restarted

    status, restarted = loopsim.simulate(main, backend=backend)
    assert status == ["### Background tasks right now\n- Task 1 [lost] (worker): job"]
    assert restarted == "Started background task 2 on agent 'worker'."


def test_release_without_cancelling_refuses_while_tasks_run(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", "finished", delay=10)])

    async def main() -> tuple[str, list[str]]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        with pytest.raises(RuntimeError, match="tasks still running") as raised:
            await provider.release_session(session, cancel_running=False)
        replies = [await tools.wait(1), await tools.results(1)]
        await provider.release_session(session, cancel_running=False)  # nothing runs now
        return str(raised.value), replies

    message, replies = loopsim.simulate(main, backend=backend)
    assert message.startswith("Cannot release session session-")
    assert message.endswith(": 1 tasks still running.")
    assert replies == ["Task 1 ended with status: completed.", "finished"]


def test_release_is_idempotent_and_per_session(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", "b's result", delay=10)])

    async def main() -> list[str]:
        a, b = AgentSession(), AgentSession()
        await provider.release_session(a)  # unknown session: fine
        tools_a = await Tools.open(provider, a)
        tools_b = await Tools.open(provider, b)
        await tools_a.start("worker")
        await tools_b.start("worker")
        await provider.release_session(a)
        await provider.release_session(a)  # twice: fine
        return [await tools_b.wait(1), await tools_b.results(1), await tools_a.results(1)]

    assert loopsim.simulate(main, backend=backend) == [
        "Task 1 ended with status: completed.",
        "b's result",
        "The task was lost: its run is no longer reachable.",
    ]


def test_release_returns_after_its_timeout_when_a_child_ignores_cancellation(
    backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    provider = BackgroundAgentsProvider([Child("stubborn", stubborn)])

    async def main() -> float:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("stubborn")
        await anyio.sleep(1)
        await provider.release_session(session, timeout=5)
        return anyio.current_time()

    with caplog.at_level(logging.WARNING, logger="loopsim.background"):
        released_at, _, real = run_timed(main, backend)
    assert released_at == 6.0
    assert real < 2.0
    assert "abandoning 1 background task(s)" in caplog.text


@pytest.mark.parametrize("timeout", [0, -1], ids=["zero", "negative"])
def test_release_with_no_time_left_does_not_wait(backend: str, timeout: float) -> None:
    provider = BackgroundAgentsProvider([Child("stubborn", stubborn)])

    async def main() -> float:
        session = AgentSession()
        await (await Tools.open(provider, session)).start("stubborn")
        await anyio.sleep(1)
        await provider.release_session(session, timeout=timeout)
        return anyio.current_time()

    assert loopsim.simulate(main, backend=backend) == 1.0


def test_release_without_timeout_waits_until_the_children_stop(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("stubborn", stubborn)])

    async def main() -> float:
        session = AgentSession()
        await (await Tools.open(provider, session)).start("stubborn")
        await provider.release_session(session, timeout=None)
        return anyio.current_time()

    assert loopsim.simulate(main, backend=backend) == 1000.0


def test_a_finished_but_uncollected_run_is_lost_after_release(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", "never collected", delay=1)])

    async def main() -> str:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        await anyio.sleep(5)  # finished, but nothing refreshed it into the session
        await provider.release_session(session)
        return await (await Tools.open(provider, session)).results(1)

    assert (
        loopsim.simulate(main, backend=backend)
        == "The task was lost: its run is no longer reachable."
    )


def test_a_wait_blocked_during_release_saves_the_cancellation(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", delay=100)])

    async def main() -> tuple[str, list[dict[str, Any]], str]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        replies: list[str] = []
        async with anyio.create_task_group() as group:

            async def waiter() -> None:
                replies.append(await tools.wait(1))

            group.start_soon(waiter)
            await anyio.sleep(1)
            await provider.release_session(session)
        after = await (await Tools.open(provider, session)).results(1)
        return replies[0], records(session), after

    reply, saved, after = loopsim.simulate(main, backend=backend)
    assert reply == "Task 1 ended with status: failed."
    assert saved[0]["status"] == "failed"
    assert saved[0]["error_text"] == "The task was cancelled before it finished."
    assert after == "The task failed: The task was cancelled before it finished."


def test_a_runtime_made_during_a_release_survives_it(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("stubborn", stubborn), Child("quick", "new work")])

    async def main() -> list[str]:
        session = AgentSession()
        await (await Tools.open(provider, session)).start("stubborn")
        replies: list[str] = []
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: provider.release_session(session, timeout=10))
            await anyio.sleep(1)  # the release is draining the stubborn child now
            tools = await Tools.open(provider, session)  # the closed runtime is replaced
            replies.append(await tools.start("quick"))
        # The release finished (at t=10) and must have left the new runtime registered:
        # a new run's tools find task 2's run there (else task 2 would be lost).
        tools = await Tools.open(provider, session)
        replies.append(await tools.wait(2))
        replies.append(await tools.results(2))
        replies.append(await tools.results(1))
        return replies

    assert loopsim.simulate(main, backend=backend) == [
        "Started background task 2 on agent 'quick'.",
        "Task 2 is not running any more; its status is completed.",  # finalized by before_run
        "new work",
        "The task was lost: its run is no longer reachable.",
    ]


# -- restart: lost tasks ---------------------------------------------------------------


def parent_with(provider: BackgroundAgentsProvider, turns: list[Any]) -> loopsim.Agent:
    return loopsim.Agent(
        loopsim.ScriptedChatClient(turns), name="coordinator", context_providers=[provider]
    )


def test_restart_end_to_end(backend: str) -> None:
    """run → restart → the parent sees ``lost``, the evaluator stops, work starts again."""

    def children() -> list[Child]:
        return [
            Child("research", "findings", delay=400),
            Child("summarize", "summary", delay=5),
        ]

    start = "background_agents_start_task"
    first = parent_with(
        BackgroundAgentsProvider(children()),
        [
            call(start, agent_name="research", input="dig", description="deep research"),
            call(start, agent_name="summarize", input="sum", description="summary"),
            call("background_agents_wait_for_first_completion", task_ids=[2]),
            "Started the research; a summary is done.",
        ],
    )

    async def before_restart() -> dict[str, Any]:
        session = first.create_session()
        await first.run("go", session=session)
        return first.serialize_session(session)

    snapshot = loopsim.simulate(before_restart, backend=backend)
    assert [r["status"] for r in snapshot["state"]["background_agents"]["tasks"]] == [
        "running",
        "completed",
    ]

    # The new process: new children, new provider, new parent, the session restored.
    research, summarize = children()
    research.reply = "fresh findings"
    provider = BackgroundAgentsProvider([research, summarize], wait_timeout_seconds=600)
    evaluator = BackgroundTaskCompletionLoopEvaluator()
    parent_client = loopsim.ScriptedChatClient(
        [
            call("background_agents_get_task_results", task_id=1),
            call("background_agents_continue_task", task_id=1, text="go on"),
            call("background_agents_get_task_results", task_id=2),
            call("background_agents_continue_task", task_id=2, text="more"),
            call(start, agent_name="research", input="dig again", description="deep research"),
            "Research restarted as task 3.",
            call("background_agents_wait_for_first_completion", task_ids=[3]),
            call("background_agents_get_task_results", task_id=3),
            "Done: fresh findings.",
        ]
    )
    parent = loopsim.Agent(parent_client, name="coordinator", context_providers=[provider])
    looping = loopsim.LoopAgent(parent, evaluator)

    async def after_restart() -> tuple[Any, list[Any]]:
        session = parent.deserialize_session(snapshot)
        decision = await evaluator.evaluate(
            LoopContext(parent, session, [], AgentResponse(Message.assistant("?")))
        )
        response = await looping.run("resume", session=session)
        return decision, [response, provider.tasks(session)]

    decision, (response, tasks) = loopsim.simulate(after_restart, backend=backend)
    assert decision.should_reinvoke is False  # lost does not keep the loop going
    # upstream's order: the status message comes before the restored history
    status_message = parent_client.requests[0].messages[0].text
    assert status_message == (
        "### Background tasks right now\n"
        "- Task 1 [lost] (research): deep research\n"
        "- Task 2 [completed] (summarize): summary"
    )
    tool_results = [r.messages[-1].contents[0].result for r in parent_client.requests[1:6]]
    assert tool_results == [
        "The task was lost: its run is no longer reachable.",
        say("background.continue.lost", task_id=1),
        "summary",  # a finished result survives the restart
        "Error: the session of task 2 does not exist any more.",
        "Started background task 3 on agent 'research'.",
    ]
    # The loop continued while task 3 ran, and stopped when it finished.
    assert response.messages[-1].text == "Done: fresh findings."
    feedback = [m.text for m in response.messages if m.role == "user"]
    assert len(feedback) == 1
    assert feedback[0].startswith("You still have 1 background task(s) running")
    assert "- #3 (research): deep research" in feedback[0]
    assert [(t.task_id, t.status) for t in tasks] == [
        (1, BackgroundTaskStatus.LOST),
        (2, BackgroundTaskStatus.COMPLETED),
        (3, BackgroundTaskStatus.COMPLETED),
    ]
    assert tasks[2].result == "fresh findings"
    assert parent_client.remaining == ()


def test_a_run_finished_but_not_collected_before_a_restart_is_lost(backend: str) -> None:
    old = BackgroundAgentsProvider([Child("worker", "result", delay=1)])

    async def before() -> dict[str, Any]:
        session = AgentSession()
        await (await Tools.open(old, session)).start("worker")
        await anyio.sleep(10)  # finished long ago; no refresh saved it
        return session.to_dict()

    snapshot = loopsim.simulate(before, backend=backend)
    new = BackgroundAgentsProvider([Child("worker")])

    async def after() -> str:
        session = AgentSession.from_dict(snapshot)
        return await (await Tools.open(new, session)).results(1)

    assert (
        loopsim.simulate(after, backend=backend)
        == "The task was lost: its run is no longer reachable."
    )


def test_same_provider_same_simulation_restored_session_keeps_its_tasks(backend: str) -> None:
    """Python upstream: a session restored in the same process and provider is not lost."""
    provider = BackgroundAgentsProvider([Child("worker", "kept", delay=10)])

    async def main() -> list[str]:
        session = AgentSession()
        await (await Tools.open(provider, session)).start("worker")
        restored = AgentSession.from_dict(session.to_dict())  # same session id, new object
        tools = await Tools.open(provider, restored)
        return [await tools.all(), await tools.wait(1), await tools.results(1)]

    assert loopsim.simulate(main, backend=backend) == [
        "Background tasks:\n- Task 1 [running] (worker): job",
        "Task 1 ended with status: completed.",
        "kept",
    ]


def test_a_new_simulation_is_a_new_process_for_the_same_provider(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", delay=100)])
    session = AgentSession()

    async def first() -> None:
        await (await Tools.open(provider, session)).start("worker")

    async def second() -> str:
        return await (await Tools.open(provider, session)).results(1)

    clock = loopsim.VirtualClock()
    clock.run(first, backend=backend)
    assert (
        clock.run(second, backend=backend) == "The task was lost: its run is no longer reachable."
    )


def test_after_the_simulation_the_host_sees_what_the_session_recorded(backend: str) -> None:
    """The ended simulation is an ended process: its runs are gone (as after a restart)."""
    provider = BackgroundAgentsProvider(
        [Child("slow", delay=100), Child("fast", "quick"), Child("late", "unseen", delay=5)]
    )
    session = AgentSession()

    async def main() -> None:
        tools = await Tools.open(provider, session)
        await tools.start("slow")
        await tools.start("fast")
        await anyio.sleep(1)
        await tools.all()  # saves task 2's result
        await tools.start("late")
        await anyio.sleep(10)  # task 3 ends, but nothing saves its result

    loopsim.simulate(main, backend=backend)
    tasks = provider.tasks(session)
    assert [(t.status, t.result) for t in tasks] == [
        (BackgroundTaskStatus.LOST, None),
        (BackgroundTaskStatus.COMPLETED, "quick"),
        (BackgroundTaskStatus.LOST, None),
    ]


# -- BackgroundTaskCompletionLoopEvaluator ---------------------------------------------


def context_for(agent: Any, session: Any) -> LoopContext:
    return LoopContext(agent, session, [], AgentResponse(Message.assistant("ok")))


def test_evaluator_needs_a_provider(backend: str) -> None:
    agent = loopsim.Agent(loopsim.ScriptedChatClient([]), name="plain")

    async def main() -> None:
        await BackgroundTaskCompletionLoopEvaluator().evaluate(context_for(agent, AgentSession()))

    with pytest.raises(RuntimeError, match="needs a BackgroundAgentsProvider"):
        loopsim.simulate(main, backend=backend)


def test_evaluator_continues_only_while_tasks_run(backend: str) -> None:
    provider = BackgroundAgentsProvider(
        [Child("research", delay=10), Child("db", RuntimeError("x"))]
    )
    agent = parent_with(provider, [])
    evaluator = BackgroundTaskCompletionLoopEvaluator()

    async def main() -> list[Any]:
        session = AgentSession()
        empty = await evaluator.evaluate(context_for(agent, session))
        tools = await Tools.open(provider, session)
        await tools.start("db", description="query")
        await tools.start("research", description="find sources")
        await anyio.sleep(1)
        running = await evaluator.evaluate(context_for(agent, session))
        await anyio.sleep(10)
        done = await evaluator.evaluate(context_for(agent, session))
        return [empty, running, done]

    empty, running, done = loopsim.simulate(main, backend=backend)
    assert (empty.should_reinvoke, empty.feedback) == (False, None)
    assert running.should_reinvoke is True
    assert (
        running.feedback
        == BackgroundTaskCompletionLoopEvaluator.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE.replace(
            "{incomplete_task_count}", "1"
        ).replace("{incomplete_tasks}", "- #2 (research): find sources")
    )
    assert "1 background task(s) running" in running.feedback
    assert (done.should_reinvoke, done.feedback) == (False, None)


def test_evaluator_custom_template(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", delay=10)])
    agent = parent_with(provider, [])
    options = BackgroundTaskCompletionLoopEvaluatorOptions(
        feedback_message_template="{incomplete_task_count} left: {incomplete_tasks} {missing}"
    )

    async def main() -> Any:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker", description="a")
        await tools.start("worker", description="b")
        return await BackgroundTaskCompletionLoopEvaluator(options).evaluate(
            context_for(agent, session)
        )

    decision = loopsim.simulate(main, backend=backend)
    assert decision.feedback == "2 left: - #1 (worker): a\n- #2 (worker): b {missing}"


def test_evaluator_treats_a_running_record_without_a_run_as_lost(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker")])
    agent = parent_with(provider, [])
    session = AgentSession(
        state={
            "background_agents": {
                "next_task_id": 2,
                "tasks": [
                    {"id": 1, "agent_name": "worker", "description": "d", "status": "running"}
                ],
            }
        }
    )

    async def main() -> Any:
        return await BackgroundTaskCompletionLoopEvaluator().evaluate(context_for(agent, session))

    assert loopsim.simulate(main, backend=backend).should_reinvoke is False
    assert records(session)[0]["status"] == "lost"


def test_evaluator_constants() -> None:
    assert (
        BackgroundTaskCompletionLoopEvaluator.INCOMPLETE_TASKS_PLACEHOLDER == "{incomplete_tasks}"
    )
    assert (
        BackgroundTaskCompletionLoopEvaluator.INCOMPLETE_TASK_COUNT_PLACEHOLDER
        == "{incomplete_task_count}"
    )
    template = BackgroundTaskCompletionLoopEvaluator.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
    assert "{incomplete_task_count} background task(s) running" in template
    assert ":\n{incomplete_tasks}\n\n" in template


# -- background_tasks_running(_message) ------------------------------------------------


def test_running_predicate_reads_the_persisted_records(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", delay=10)])
    agent = parent_with(provider, [])
    predicate = background_tasks_running()

    async def main() -> list[bool]:
        session = AgentSession()
        seen = [predicate(session=session, agent=agent)]
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        seen.append(predicate(session=session, agent=agent))
        await anyio.sleep(20)
        seen.append(predicate(session=session, agent=agent))  # finished, not refreshed yet
        await tools.all()
        seen.append(predicate(session=session, agent=agent))
        return seen

    assert loopsim.simulate(main, backend=backend) == [False, True, True, False]


def test_running_helpers_need_session_agent_and_provider() -> None:
    provider = BackgroundAgentsProvider([Child("worker")])
    agent = parent_with(provider, [])
    plain = loopsim.Agent(loopsim.ScriptedChatClient([]), name="plain")
    session = AgentSession(
        state={
            "background_agents": {
                "next_task_id": 2,
                "tasks": [
                    {"id": 1, "agent_name": "worker", "description": "d", "status": "running"}
                ],
            }
        }
    )
    predicate = background_tasks_running()
    assert predicate(session=session, agent=agent) is True
    assert predicate(session=session, agent=loopsim.DelegatingAgent(agent)) is True
    for kwargs in (
        {"session": None, "agent": agent},
        {"session": session, "agent": None},
        {"session": session, "agent": plain},
        {"session": AgentSession(), "agent": agent},
    ):
        assert predicate(**kwargs) is False
        assert background_tasks_running_message(**kwargs) is None


def test_running_message_lists_only_running_tasks() -> None:
    provider = BackgroundAgentsProvider([Child("worker")])
    agent = parent_with(provider, [])

    def record(task_id: int, description: str, status: str) -> dict[str, Any]:
        return {"id": task_id, "agent_name": "worker", "description": description, "status": status}

    session = AgentSession(
        state={
            "background_agents": {
                "next_task_id": 4,
                "tasks": [
                    record(1, "first job", "running"),
                    record(2, "second job", "completed"),
                    record(3, "third job", "running"),
                ],
            }
        }
    )
    text = background_tasks_running_message(session=session, agent=agent, iteration=1)
    assert text is not None
    assert "2 background task(s) running" in text
    assert "- #1 (worker): first job\n- #3 (worker): third job\n\n" in text
    assert "second job" not in text
    evaluator_text = BackgroundTaskCompletionLoopEvaluator.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
    assert text == evaluator_text.replace("{incomplete_task_count}", "2").replace(
        "{incomplete_tasks}", "- #1 (worker): first job\n- #3 (worker): third job"
    )
