"""The six background-agent tools: every edge case of the reference, on virtual time.

Each test runs on both anyio backends. Child work takes virtual time; assertions on
``elapsed`` are virtual seconds, and real time stays near zero.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from test_background_provider import Child, Tools, call, calls, records, run_timed

import loopsim
from loopsim import AgentSession, BackgroundAgentsProvider, ToolArgumentError, _trace
from loopsim._wording import WORDING

# -- start -----------------------------------------------------------------------------


def test_start_returns_the_id_and_does_not_block(backend: str) -> None:
    worker = Child("Worker", "result", delay=100)
    provider = BackgroundAgentsProvider([worker])

    async def main() -> tuple[list[str], float]:
        tools = await Tools.open(provider, AgentSession())
        replies = [await tools.start("worker"), await tools.start("WORKER")]
        return replies, anyio.current_time()

    (replies, started_at), _, _ = run_timed(main, backend)
    assert replies == [
        "Started background task 1 on agent 'worker'.",
        "Started background task 2 on agent 'WORKER'.",
    ]
    assert started_at == 0.0  # non-blocking


def test_unknown_agent_is_an_error_text_and_uses_no_id(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("Research"), Child("writer")])

    async def main() -> tuple[str, str, AgentSession]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        error = await tools.start("NonExistent")
        return error, await tools.start("research"), session

    error, started, session = loopsim.simulate(main, backend=backend)
    assert error == (
        "Error: there is no background agent named 'NonExistent'. "
        "These agents exist: Research, writer"
    )
    assert started == "Started background task 1 on agent 'research'."
    assert [r["id"] for r in records(session)] == [1]


def test_each_task_runs_in_its_own_child_session(backend: str) -> None:
    worker = Child("worker", delay=5)
    provider = BackgroundAgentsProvider([worker])

    async def main() -> None:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("worker", input="first")
        await tools.start("worker", input="second")
        await tools.wait(1)
        await tools.wait(2)

    _, elapsed, _ = run_timed(main, backend)
    assert [text for text, _, _ in worker.calls] == ["first", "second"]
    assert worker.calls[0][1] is not worker.calls[1][1]
    assert elapsed == 5.0  # concurrently, not one after the other


def test_a_child_that_cannot_create_a_session_leaves_no_id_or_record(backend: str) -> None:
    class Broken(Child):
        def create_session(self) -> AgentSession:
            raise RuntimeError("no sessions today")

    provider = BackgroundAgentsProvider([Broken("broken"), Child("ok")])
    parent_client = loopsim.ScriptedChatClient(
        [
            call("background_agents_start_task", agent_name="broken", input="x", description="d"),
            call("background_agents_start_task", agent_name="ok", input="x", description="d"),
            "done",
        ]
    )
    parent = loopsim.Agent(parent_client, name="parent", context_providers=[provider])

    async def main() -> AgentSession:
        session = parent.create_session()
        await parent.run("go", session=session)
        return session

    session = loopsim.simulate(main, backend=backend)
    first = parent_client.requests[1].messages[-1].contents[0]
    assert (first.result, first.error) == (WORDING["agent.tool.failed"], "no sessions today")
    second = parent_client.requests[2].messages[-1].contents[0]
    assert second.result == "Started background task 1 on agent 'ok'."
    assert [r["id"] for r in records(session)] == [1]


# -- wait ------------------------------------------------------------------------------


def test_wait_returns_when_the_first_task_finishes(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("slow", delay=100), Child("quick", delay=40)])

    async def main() -> tuple[str, float, str]:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("slow")
        await tools.start("quick")
        reply = await tools.wait(1, 2)
        return reply, anyio.current_time(), await tools.all()

    (reply, when, listing), elapsed, _ = run_timed(main, backend)
    assert reply == "Task 2 ended with status: completed."
    assert when == 40.0
    assert (
        listing
        == "Background tasks:\n- Task 1 [running] (slow): job\n- Task 2 [completed] (quick): job"
    )
    assert elapsed == 40.0  # the simulation ends when main returns; the slow child is cancelled


def test_wait_times_out_on_virtual_time_and_leaves_the_task_running(backend: str) -> None:
    """A 400-second child and a 30-second wait: 30 virtual seconds, ~0 real ones."""
    provider = BackgroundAgentsProvider([Child("slow", "late", delay=400)], wait_timeout_seconds=30)

    async def main() -> tuple[str, str, str, AgentSession]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("slow")
        reply = await tools.wait(1)
        return reply, await tools.results(1), await tools.all(), session

    (reply, results, listing, session), elapsed, real = run_timed(main, backend)
    assert reply == (
        "Waited 30 seconds and no background task finished. "
        "They keep running; call this tool again to wait longer."
    )
    assert elapsed == 30.0
    assert real < 2.0
    assert results == "Task 1 has not finished yet."
    assert listing == "Background tasks:\n- Task 1 [running] (slow): job"
    assert records(session)[0]["status"] == "running"


def test_each_wait_gets_the_full_timeout_again(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("slow", "late", delay=400)], wait_timeout_seconds=30)

    async def main() -> list[tuple[str, float]]:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("slow")
        seen = []
        for _ in range(20):
            reply = await tools.wait(1)
            seen.append((reply, anyio.current_time()))
            if "ended with status" in reply:
                break
        return seen

    seen, elapsed, _ = run_timed(main, backend)
    assert [when for _, when in seen] == [30.0 * i for i in range(1, 14)] + [400.0]
    assert seen[-1][0] == "Task 1 ended with status: completed."
    assert all(
        reply.startswith("Waited 30 seconds and no background task finished.")
        for reply, _ in seen[:-1]
    )
    assert elapsed == 400.0


def test_tasks_finishing_at_the_same_instant_are_chosen_in_requested_order(backend: str) -> None:
    provider = BackgroundAgentsProvider(
        [Child("a", delay=10), Child("b", delay=10), Child("c", delay=10)]
    )

    async def main() -> list[str]:
        tools = await Tools.open(provider, AgentSession())
        for name in "abc":
            await tools.start(name)
        return [await tools.wait(3, 1, 2), await tools.wait(1, 2), await tools.wait(2)]

    replies = loopsim.simulate(main, backend=backend)
    assert replies == [
        "Task 3 ended with status: completed.",
        "Task 1 ended with status: completed.",
        "Task 2 ended with status: completed.",
    ]


def test_a_same_instant_finish_that_takes_a_few_steps_still_counts(backend: str) -> None:
    """Task 2 ends at the same virtual instant as task 1, two scheduler steps later."""

    async def slow_to_wrap_up(text: str, call_number: int) -> str:
        await anyio.sleep(10)
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        return "wrapped up"

    provider = BackgroundAgentsProvider([Child("quick", delay=10), Child("steps", slow_to_wrap_up)])

    async def main() -> tuple[str, float]:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("quick")
        await tools.start("steps")
        return await tools.wait(2, 1), anyio.current_time()

    assert loopsim.simulate(main, backend=backend) == (
        "Task 2 ended with status: completed.",
        10.0,
    )


def test_wait_with_no_ids_is_an_error(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("a")])

    async def main() -> str:
        return await (await Tools.open(provider, AgentSession())).wait()

    assert (
        loopsim.simulate(main, backend=backend) == "Error: give at least one task id to wait for."
    )


def test_wait_on_ids_that_are_not_running(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("a", "x"), Child("b", RuntimeError("nope"))])

    async def main() -> list[str]:
        tools = await Tools.open(provider, AgentSession())
        unknown = await tools.wait(999)
        await tools.start("a")
        await tools.start("b")
        await tools.wait(1)
        await tools.wait(2)
        return [unknown, await tools.wait(999, 2, 1), await tools.wait(1, 999)]

    unknown, both, first = loopsim.simulate(main, backend=backend)
    assert unknown == "Error: none of these task ids belongs to a running task."
    # state order (id order), not the requested order, picks the one reported
    assert both == "Task 1 is not running any more; its status is completed."
    assert first == "Task 1 is not running any more; its status is completed."


def test_wait_skips_unknown_ids_when_one_is_waitable(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("a", delay=3)])

    async def main() -> str:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("a")
        return await tools.wait(999, 1, 1)

    assert loopsim.simulate(main, backend=backend) == "Task 1 ended with status: completed."


def test_wait_reports_a_failed_child(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("db", RuntimeError("Connection failed"), delay=2)])

    async def main() -> list[str]:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("db")
        return [await tools.wait(1), await tools.results(1)]

    assert loopsim.simulate(main, backend=backend) == [
        "Task 1 ended with status: failed.",
        "The task failed: Connection failed",
    ]


# -- results and listing ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param("the answer", "the answer", id="text"),
        pytest.param("", "(the task produced no text)", id="empty-text"),
        pytest.param(
            RuntimeError("Connection failed"), "The task failed: Connection failed", id="raises"
        ),
        pytest.param(
            RuntimeError(),
            "The task failed: no error text was recorded",
            id="raises-without-message",
        ),
    ],
)
def test_results_of_a_finished_task(backend: str, reply: Any, expected: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", reply, delay=1)])

    async def main() -> str:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("worker")
        await anyio.sleep(5)
        return await tools.results(1)  # finalized by the refresh, no wait needed

    assert loopsim.simulate(main, backend=backend) == expected


def test_results_of_running_and_unknown_tasks(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", delay=10)])

    async def main() -> list[str]:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("worker")
        return [await tools.results(1), await tools.results(999)]

    assert loopsim.simulate(main, backend=backend) == [
        "Task 1 has not finished yet.",
        "Error: there is no task with id 999.",
    ]


def test_all_tasks_listing(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("Worker", delay=10), Child("fast")])

    async def main() -> list[str]:
        tools = await Tools.open(provider, AgentSession())
        empty = await tools.all()
        await tools.start("worker", description="long job")
        await tools.start("fast", description="short job")
        await anyio.sleep(1)
        return [empty, await tools.all()]

    assert loopsim.simulate(main, backend=backend) == [
        "There are no background tasks.",
        "Background tasks:\n- Task 1 [running] (worker): long job\n- Task 2 [completed] (fast): short job",
    ]


# -- continue --------------------------------------------------------------------------


def test_continue_reuses_the_child_session(backend: str) -> None:
    async def reply(text: str, call_number: int) -> str:
        return "Initial result" if call_number == 1 else "Elaborated result"

    worker = Child("worker", reply, delay=3)
    provider = BackgroundAgentsProvider([worker])

    async def main() -> list[str]:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("worker", input="research X")
        await tools.wait(1)
        first = await tools.results(1)
        continued = await tools.cont(1, "elaborate")
        running = await tools.results(1)
        await tools.wait(1)
        return [first, continued, running, await tools.results(1)]

    assert loopsim.simulate(main, backend=backend) == [
        "Initial result",
        "Task 1 is running again with the new input.",
        "Task 1 has not finished yet.",
        "Elaborated result",
    ]
    (_, first_session, before_first), (text, second_session, before_second) = worker.calls
    assert second_session is first_session
    assert (before_first, before_second, text) == (0, 2, "elaborate")


def test_continue_a_failed_task_clears_its_error(backend: str) -> None:
    async def reply(text: str, call_number: int) -> str:
        if call_number == 1:
            raise RuntimeError("flaky")
        return "fixed"

    provider = BackgroundAgentsProvider([Child("worker", reply)])

    async def main() -> tuple[list[str], AgentSession]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        await tools.wait(1)
        failed = await tools.results(1)
        await tools.cont(1, "try again")
        assert "error_text" not in records(session)[0]
        await tools.wait(1)
        return [failed, await tools.results(1)], session

    replies, session = loopsim.simulate(main, backend=backend)
    assert replies == ["The task failed: flaky", "fixed"]
    assert records(session)[0] == {
        "id": 1,
        "agent_name": "worker",
        "description": "job",
        "status": "completed",
        "result_text": "fixed",
    }


def test_continue_refuses_running_and_unknown_tasks(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", delay=10)])

    async def main() -> list[str]:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("worker")
        return [await tools.cont(1), await tools.cont(999)]

    assert loopsim.simulate(main, backend=backend) == [
        "Error: task 1 has not finished yet; wait for it before you continue it.",
        "Error: there is no task with id 999.",
    ]


def test_a_stale_waiter_does_not_overwrite_a_continued_run(backend: str) -> None:
    """Two waits on one task: the second continues it; the first must not save over it."""

    async def reply(text: str, call_number: int) -> str:
        return f"answer {call_number}"

    provider = BackgroundAgentsProvider([Child("worker", reply, delay=10)])

    async def main() -> tuple[list[str], AgentSession]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        replies: list[str] = []
        async with anyio.create_task_group() as group:

            async def waiter() -> None:
                replies.append(await tools.wait(1))

            group.start_soon(waiter)
            await anyio.sleep(1)
            # Wakes at t=10 right after the run ends (ties wake in sleep order): the
            # waiter is woken too, but we act first.
            await anyio.sleep(9)
            replies.append(await tools.results(1))
            replies.append(await tools.cont(1, "again"))
        return replies, session

    replies, session = loopsim.simulate(main, backend=backend)
    assert replies == [
        "answer 1",
        "Task 1 is running again with the new input.",
        "Task 1 ended with status: completed.",  # the stale waiter reports its run
    ]
    assert records(session)[0]["status"] == "running"  # the continuation, untouched


# -- clear -----------------------------------------------------------------------------


def test_clear_removes_a_finished_task_and_never_reuses_its_id(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker")])

    async def main() -> list[str]:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("worker")
        await tools.wait(1)
        return [
            await tools.clear(1),
            await tools.all(),
            await tools.results(1),
            await tools.cont(1),
            await tools.clear(1),
            await tools.start("worker"),
        ]

    assert loopsim.simulate(main, backend=backend) == [
        "Removed task 1.",
        "There are no background tasks.",
        "Error: there is no task with id 1.",
        "Error: there is no task with id 1.",
        "Error: there is no task with id 1.",
        "Started background task 2 on agent 'worker'.",
    ]


def test_clear_refuses_a_running_task(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", delay=10)])

    async def main() -> tuple[list[str], AgentSession]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        return [await tools.clear(1), await tools.clear(999)], session

    replies, session = loopsim.simulate(main, backend=backend)
    assert replies == [
        "Error: task 1 has not finished yet; wait for it before you clear it.",
        "Error: there is no task with id 999.",
    ]
    assert [r["status"] for r in records(session)] == ["running"]


def test_clearing_out_of_order_keeps_the_list_in_id_order(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker")])

    async def main() -> AgentSession:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        for _ in range(6):
            await tools.start("worker")
        await anyio.sleep(1)
        for task_id in (4, 1, 6):
            assert await tools.clear(task_id) == f"Removed task {task_id}."
        return session

    session = loopsim.simulate(main, backend=backend)
    assert [r["id"] for r in records(session)] == [2, 3, 5]


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_id", ["three", 1.5, True, None, [1]], ids=["word", "fraction", "bool", "none", "list"]
)
def test_a_non_integer_task_id_is_an_error_text(backend: str, bad_id: Any) -> None:
    provider = BackgroundAgentsProvider([Child("worker")])

    async def main() -> tuple[list[str], list[dict[str, Any]]]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker")
        await tools.wait(1)
        # as every other tool's: the function layer's error (the tool loop makes it an
        # error result that counts toward the error cap), never a reply of the tool's own
        errors: list[str] = []
        for use in (tools.results, tools.cont, tools.clear, tools.wait):
            with pytest.raises(ToolArgumentError) as raised:
                await use(bad_id)
            errors.append(str(raised.value))
        return errors, records(session)

    errors, after = loopsim.simulate(main, backend=backend)
    for error in errors:
        assert error.startswith("invalid arguments for tool 'background_agents_")
    assert after == [
        {
            "id": 1,
            "agent_name": "worker",
            "description": "job",
            "status": "completed",
            "result_text": "done",
        }
    ]


def test_a_numeric_string_id_is_accepted(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", "ok")])

    async def main() -> str:
        tools = await Tools.open(provider, AgentSession())
        await tools.start("worker")
        await tools.wait("1")
        return await tools.results("1")

    assert loopsim.simulate(main, backend=backend) == "ok"


def test_a_parent_model_drives_every_tool_and_sees_only_texts(backend: str) -> None:
    """End to end through an Agent: bad calls become texts, the run goes on."""
    provider = BackgroundAgentsProvider(
        [Child("web", "web findings", delay=60), Child("code", RuntimeError("crashed"), delay=30)]
    )
    start = "background_agents_start_task"
    parent_client = loopsim.ScriptedChatClient(
        [
            calls(
                (start, {"agent_name": "web", "input": "search", "description": "search"}),
                (start, {"agent_name": "code", "input": "analyze", "description": "analyze"}),
                (start, {"agent_name": "nobody", "input": "?", "description": "?"}),
            ),
            calls(
                ("background_agents_wait_for_first_completion", {"task_ids": [1, 2]}),
                ("background_agents_get_task_results", {"task_id": 2}),
                ("background_agents_clear_completed_task", {"task_id": 1}),
                ("background_agents_wait_for_first_completion", {"task_ids": [1]}),
                ("background_agents_get_task_results", {"task_id": 1}),
                ("background_agents_clear_completed_task", {"task_id": 1}),
                ("background_agents_clear_completed_task", {"task_id": 2}),
                ("background_agents_get_all_tasks", {}),
                ("background_agents_get_task_results", {"task_id": "two"}),
            ),
            "Report: web findings; code analysis failed.",
        ]
    )
    parent = loopsim.Agent(parent_client, name="coordinator", context_providers=[provider])

    async def main() -> str:
        session = parent.create_session()
        return (await parent.run("coordinate", session=session)).text

    text, elapsed, _ = run_timed(main, backend)
    assert text == "Report: web findings; code analysis failed."
    assert elapsed == 60.0
    first, second = (request.messages[-1] for request in parent_client.requests[1:])
    assert [c.result for c in first.contents] == [
        "Started background task 1 on agent 'web'.",
        "Started background task 2 on agent 'code'.",
        "Error: there is no background agent named 'nobody'. These agents exist: web, code",
    ]
    results = [c.result for c in second.contents]
    assert results[:8] == [
        "Task 2 ended with status: failed.",
        "The task failed: crashed",
        "Error: task 1 has not finished yet; wait for it before you clear it.",
        "Task 1 ended with status: completed.",
        "web findings",
        "Removed task 1.",
        "Removed task 2.",
        "There are no background tasks.",
    ]
    assert results[8] == WORDING["agent.tool.bad_arguments"]
    assert second.contents[8].error.startswith("invalid arguments for tool")
    assert all(c.error is None for c in (*first.contents, *second.contents[:8]))


# -- status events ---------------------------------------------------------------------


def test_every_persisted_status_change_is_a_task_status_event(backend: str) -> None:
    async def reply(text: str, call_number: int) -> str:
        if call_number == 2:
            raise RuntimeError("second try failed")
        return "ok"

    provider = BackgroundAgentsProvider([Child("worker", reply, delay=5)], source_id="bg")

    async def main() -> tuple[list[_trace.Event], str]:
        events: list[_trace.Event] = []
        _trace.current().subscribe(events.append)
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker", description="job")
        await tools.wait(1)
        await tools.cont(1)
        await anyio.sleep(10)
        await tools.all()  # finalizes through a refresh
        await tools.clear(1)
        return events, session.session_id

    events, session_id = loopsim.simulate(main, backend=backend)
    statuses = [e for e in events if e.kind == "task_status"]
    assert [(e.time, e.data["status"]) for e in statuses] == [
        (0.0, "running"),
        (5.0, "completed"),
        (5.0, "running"),
        (15.0, "failed"),
        (15.0, "cleared"),
    ]
    assert statuses[1].data == {
        "provider": "bg",
        "session": session_id,
        "task_id": 1,
        "agent": "worker",
        "description": "job",
        "status": "completed",
        "result": "ok",
        "error": None,
    }
    assert statuses[3].data["error"] == "second try failed"
    assert statuses[3].data["result"] is None
