"""A child run's end is recorded at the instant it happens, on both engines.

The task record in the parent session catches up later (upstream finalizes it lazily,
when the parent next looks): ``task_status`` keeps that time, ``task_finished`` has the
run's own. Pictures draw the run's end where it happened.
"""

from __future__ import annotations

from typing import Any

import pytest

import loopsim
from loopsim import FunctionCallContent, Message, ScriptedChatClient, Turn

START = "background_agents_start_task"
WAIT = "background_agents_wait_for_first_completion"
ALL = "background_agents_get_all_tasks"
ENGINES = ["loopsim", "agent_framework"]


def call(name: str, call_id: str, **arguments: Any) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=call_id, name=name, arguments=arguments)]
    )


def program(engine: str, child: list[Any], parent: list[Any]) -> Any:
    """A parent with one background child ``web``; both engines build the same program."""

    async def main() -> str:
        if engine == "loopsim":
            web = loopsim.Agent(ScriptedChatClient(child), name="web", description="Searches.")
            provider: Any = loopsim.BackgroundAgentsProvider([web], wait_timeout_seconds=300)
            agent: Any = loopsim.Agent(
                ScriptedChatClient(parent), name="boss", context_providers=[provider]
            )
        else:
            import agent_framework as af

            from loopsim.agent_framework import as_chat_client

            web = af.Agent(
                client=as_chat_client(ScriptedChatClient(child)), name="web", description="S."
            )
            provider = af.BackgroundAgentsProvider([web], wait_timeout_seconds=300)
            agent = af.Agent(
                client=as_chat_client(ScriptedChatClient(parent)),
                name="boss",
                context_providers=[provider],
            )
        return (await agent.run("go", session=agent.create_session())).text

    return main


def late_look(engine: str, child_turn: Any) -> loopsim.Transcript:
    """The child ends at t=3600; the parent next looks at t=3665."""
    main = program(
        engine,
        [child_turn],
        [
            call(START, "c1", agent_name="web", input="find", description="search"),
            Turn(call(ALL, "c2"), delay=3665),
            "done",
        ],
    )
    return loopsim.record(main)[1]


def task_events(transcript: loopsim.Transcript) -> list[tuple[float, str, str]]:
    return [
        (e.time, e.kind, str(e.data.get("outcome") or e.data.get("status")))
        for e in transcript.events
        if e.kind in ("task_status", "task_finished")
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_completion_is_recorded_when_it_happens_not_when_the_parent_looks(engine: str) -> None:
    transcript = late_look(engine, Turn("3 sources", delay=3600))
    assert task_events(transcript) == [
        (0.0, "task_status", "running"),
        (3600.0, "task_finished", "completed"),
        (3665.0, "task_status", "completed"),
    ]
    (finished,) = (e for e in transcript.events if e.kind == "task_finished")
    assert finished.data["result"] == "3 sources"
    assert finished.data["agent"] == "web"
    assert finished.data["description"] == "search"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failure_is_recorded_when_it_happens(engine: str) -> None:
    transcript = late_look(engine, Turn(RuntimeError("quota"), delay=100))
    assert task_events(transcript) == [
        (0.0, "task_status", "running"),
        (100.0, "task_finished", "failed"),
        (3665.0, "task_status", "failed"),
    ]
    (finished,) = (e for e in transcript.events if e.kind == "task_finished")
    assert finished.data["error"] == "quota"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_still_going_when_the_program_ends_is_not_reported_finished(engine: str) -> None:
    main = program(
        engine,
        [Turn("late", delay=10_000)],
        [call(START, "c1", agent_name="web", input="find", description="search"), "bye"],
    )
    transcript = loopsim.record(main)[1]
    assert task_events(transcript) == [(0.0, "task_status", "running")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_wait_reports_the_end_after_it_happened(engine: str) -> None:
    main = program(
        engine,
        [Turn("3 sources", delay=50)],
        [
            call(START, "c1", agent_name="web", input="find", description="search"),
            call(WAIT, "c2", task_ids=[1]),
            "done",
        ],
    )
    transcript = loopsim.record(main)[1]
    order = [(e.kind, e.data.get("name")) for e in transcript.events]
    assert order.index(("task_finished", None)) < order.index(("tool_result", WAIT))
    diagram = loopsim.render_mermaid(transcript).splitlines()
    drawn = [i for i, line in enumerate(diagram) if "task 1 completed" in line]
    answer = next(i for i, line in enumerate(diagram) if line.strip().startswith("P1-->>A1: t=50"))
    assert len(drawn) == 1  # drawn once, at the run's end; the record's update is not drawn
    assert drawn[0] < answer


def test_the_timeline_bar_ends_when_the_run_ended() -> None:
    timeline = loopsim.render_timeline(late_look("loopsim", Turn("3 sources", delay=3600)))
    (bar,) = (line for line in timeline.splitlines() if "task 1 completed" in line)
    assert bar.strip().endswith(", 0, 3600000")


def test_the_engines_agree_on_when_runs_end() -> None:
    for child in (Turn("3 sources", delay=3600), Turn(RuntimeError("quota"), delay=100)):
        sides = [task_events(late_look(engine, child)) for engine in ENGINES]
        assert sides[0] == sides[1]
