"""Real agent_framework runs under loopsim.record yield the built-in engine's event kinds."""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from af_anchor import RESULTS, START, WAIT, call, parent_script, run_anchor

import loopsim
from loopsim import ScriptedChatClient, Turn
from loopsim.agent_framework import as_chat_client, instrument, process_restart

KINDS = {
    "session_created",
    "model_request",
    "model_response",
    "tool_call",
    "tool_result",
    "loop_iteration_start",
    "evaluator_decision",
    "loop_stop",
    "task_status",
}


def loopsim_anchor(*, stream: bool = False) -> Any:
    """The anchor program on the built-in engine (loopsim's own classes), streamed or not."""
    web = loopsim.Agent(
        ScriptedChatClient([Turn("3 sources", delay=0.5)], name="web-model"),
        name="web",
        description="Searches the web.",
    )
    code = loopsim.Agent(
        ScriptedChatClient([Turn("4 modules", delay=2)], name="code-model"),
        name="code",
        description="Analyses code.",
    )
    provider = loopsim.BackgroundAgentsProvider([web, code], wait_timeout_seconds=1)
    parent = loopsim.Agent(
        ScriptedChatClient(parent_script(), name="parent-model"),
        name="coordinator",
        context_providers=[provider],
        middleware=[
            loopsim.AgentLoopMiddleware(
                loopsim.background_tasks_running(),
                next_message=loopsim.background_tasks_running_message,
                max_iterations=5,
            )
        ],
    )

    async def main() -> str:
        session = parent.create_session()
        if stream:
            return (await parent.run("Research X.", session=session, stream=True)).text
        return (await parent.run("Research X.", session=session)).text

    return main


def test_the_anchor_program_yields_every_event_kind_of_the_built_in_engine() -> None:
    text, transcript = loopsim.record(run_anchor)
    assert text.endswith("all done")
    kinds = {e.kind for e in transcript.events}
    assert kinds >= KINDS
    _, builtin = loopsim.record(loopsim_anchor())
    assert {e.kind for e in builtin.events} - {"clock_jump"} <= kinds


def summary(transcript: loopsim.Transcript) -> list[tuple[Any, ...]]:
    """The loop and task facts of a run: what both engines must agree on."""
    rows: list[tuple[Any, ...]] = []
    for e in transcript.events:
        d = e.data
        if e.kind == "loop_iteration_start":
            rows.append((e.time, "iteration", d["iteration"]))
        elif e.kind == "evaluator_decision":
            rows.append((e.time, "decision", d["iteration"], d["decision"]))
        elif e.kind == "loop_stop":
            rows.append((e.time, "stop", d["reason"], d["iterations"]))
        elif e.kind == "task_status":
            rows.append((e.time, "task", d["task_id"], d["agent"], d["status"], d["result"]))
        elif e.kind == "tool_call":
            rows.append((e.time, "tool", d["name"], d["call_id"]))
    return rows


def test_loop_and_task_events_agree_with_the_built_in_engine() -> None:
    _, real = loopsim.record(run_anchor)
    _, builtin = loopsim.record(loopsim_anchor())
    assert len(summary(real)) > 15
    assert summary(real) == summary(builtin)
    stops = [e.data for e in real.events if e.kind == "loop_stop"]
    assert stops == [{"loop": "coordinator", "reason": "evaluators_stopped", "iterations": 3}]


def test_model_events_name_the_asking_agent_and_its_session() -> None:
    _, transcript = loopsim.record(run_anchor)
    requests = [e.data for e in transcript.events if e.kind == "model_request"]
    assert {r["agent"] for r in requests} == {"coordinator", "web", "code"}
    sessions = {r["agent"]: r["session"] for r in requests}
    assert len(set(sessions.values())) == 3
    assert all(isinstance(s, str) for s in sessions.values())
    first = requests[0]
    assert first["tools"][0] == START
    assert first["messages"][-1]["contents"] == [{"type": "text", "text": "Research X."}]


def loop_agent(decisions: list[Any], *, max_iterations: int = 10) -> tuple[af.Agent, list[Any]]:
    asked: list[Any] = []

    def should_continue(*, iteration: int, **kwargs: Any) -> Any:
        asked.append(iteration)
        return decisions[iteration - 1]

    replies = [f"reply {i}" for i in range(1, 12)]
    agent = af.Agent(
        client=as_chat_client(ScriptedChatClient(replies)),
        name="looper",
        middleware=[af.AgentLoopMiddleware(should_continue, max_iterations=max_iterations)],
    )
    return instrument(agent), asked


def test_decisions_are_the_users_predicate_observed_not_changed() -> None:
    agent, asked = loop_agent([True, (True, "more please"), False])
    result, transcript = loopsim.record(agent.run, "go")
    assert asked == [1, 2, 3]  # called exactly as upstream calls it
    decisions = [e.data for e in transcript.events if e.kind == "evaluator_decision"]
    assert [(d["iteration"], d["decision"], d["feedback"]) for d in decisions] == [
        (1, "continue", None),
        (2, "continue", "more please"),
        (3, "stop", None),
    ]
    assert decisions[0]["evaluator"] == "should_continue"
    assert "reply 3" in result.text


def test_a_capped_loop_stops_for_max_iterations() -> None:
    agent, asked = loop_agent([True] * 5, max_iterations=2)
    _, transcript = loopsim.record(agent.run, "go")
    assert asked == [1]  # upstream does not ask past the cap
    (stop,) = [e.data for e in transcript.events if e.kind == "loop_stop"]
    assert (stop["reason"], stop["iterations"]) == ("max_iterations", 2)
    starts = [e.data["iteration"] for e in transcript.events if e.kind == "loop_iteration_start"]
    assert starts == [1, 2]


class BrokenError(Exception):
    pass


def test_a_failing_predicate_ends_the_loop_with_error_and_its_own_exception() -> None:
    def should_continue(**kwargs: Any) -> bool:
        raise BrokenError("predicate broke")

    agent = instrument(
        af.Agent(
            client=as_chat_client(ScriptedChatClient(["one"])),
            name="looper",
            middleware=[af.AgentLoopMiddleware(should_continue)],
        )
    )
    recorder = loopsim.Recorder()
    with pytest.raises(BrokenError, match="predicate broke"):
        loopsim.simulate(agent.run, "go", trace=recorder.trace)
    (stop,) = [e.data for e in recorder.transcript.events if e.kind == "loop_stop"]
    assert stop["reason"] == "error"


def test_instrument_is_idempotent_and_leaves_behaviour_alone() -> None:
    plain, _ = loop_agent([True, False])
    twice, _ = loop_agent([True, False])
    instrument(twice)
    assert len(twice.middleware) == len(plain.middleware)
    first = loopsim.simulate(plain.run, "go").text
    assert loopsim.simulate(twice.run, "go").text == first


def test_a_failing_tool_is_reported_and_the_model_sees_the_error() -> None:
    @af.tool
    def explode() -> str:
        """Always fails."""
        raise BrokenError("tool broke")

    scripted = ScriptedChatClient([call("explode", "e1"), "recovered"])
    agent = instrument(af.Agent(client=as_chat_client(scripted), name="a", tools=[explode]))
    result, transcript = loopsim.record(agent.run, "go")
    assert result.text == "recovered"
    (tool_result,) = [e.data for e in transcript.events if e.kind == "tool_result"]
    assert (tool_result["error"], tool_result["error_type"]) == ("tool broke", "BrokenError")
    assert tool_result["call_id"] == "e1"


def test_a_model_error_is_reported() -> None:
    agent = instrument(
        af.Agent(client=as_chat_client(ScriptedChatClient([BrokenError("down")])), name="a")
    )
    recorder = loopsim.Recorder()
    with pytest.raises(BrokenError):
        loopsim.simulate(agent.run, "go", trace=recorder.trace)
    (error,) = [e.data for e in recorder.transcript.events if e.kind == "model_error"]
    assert (error["agent"], error["error"], error["message"]) == ("a", "BrokenError", "down")


def test_a_restart_restores_the_real_session_into_new_objects_and_tasks_become_lost() -> None:
    def parent_with(turns: list[Any]) -> af.Agent:
        child = af.Agent(
            client=as_chat_client(ScriptedChatClient([Turn("late", delay=100)])),
            name="slow",
            description="Slow.",
        )
        provider = af.BackgroundAgentsProvider([child], wait_timeout_seconds=1)
        model = ScriptedChatClient(turns)
        return instrument(
            af.Agent(client=as_chat_client(model), name="p", context_providers=[provider])
        )

    async def main() -> list[Any]:
        before = parent_with(
            [call(START, "s1", agent_name="slow", input="x", description="d"), "started"]
        )
        session = before.create_session()
        await before.run("go", session=session)
        data = session.to_dict()
        process_restart()
        after = parent_with(
            [call(WAIT, "w1", task_ids=[1]), call(RESULTS, "r1", task_id=1), "lost it"]
        )
        restored = af.AgentSession.from_dict(data)
        await after.run("check", session=restored)
        return [t["status"] for t in restored.state["background_agents"]["tasks"]]

    recorder = loopsim.Recorder()
    statuses = loopsim.simulate(main, trace=recorder.trace)
    assert statuses == ["lost"]
    kinds = [e.kind for e in recorder.transcript.events]
    assert "process_restart" in kinds
    task_events = [
        (e.data["status"]) for e in recorder.transcript.events if e.kind == "task_status"
    ]
    assert task_events == ["running", "lost"]


def test_as_agent_sessions_are_reported_once_created_and_once_restored() -> None:
    from loopsim.agent_framework import as_agent

    agent = as_agent(af.Agent(client=as_chat_client(ScriptedChatClient(["a", "b"])), name="s"))

    async def main() -> None:
        session = agent.create_session()
        await agent.run("one", session=session)
        restored = agent.deserialize_session(agent.serialize_session(session))
        await agent.run("two", session=restored)

    recorder = loopsim.Recorder()
    loopsim.simulate(main, trace=recorder.trace)
    kinds = [e.kind for e in recorder.transcript.events if e.kind.startswith("session_")]
    assert kinds == ["session_created", "session_restored"]


def _anchor_bytes(main: Any) -> bytes:
    _, transcript = loopsim.record(main, scenario="anchor")
    return transcript.model_dump_json().encode()


def test_agents_built_inside_the_run_are_traced_without_instrument() -> None:
    from af_anchor import build

    async def uninstrumented() -> str:
        parent, _ = build(traced=False)
        return (await parent.run("Research X.", session=parent.create_session())).text

    assert _anchor_bytes(uninstrumented) == _anchor_bytes(run_anchor)


def test_agents_built_before_the_run_are_traced_without_instrument() -> None:
    from af_anchor import build

    def events(main: Any) -> list[tuple[float, str, dict[str, Any]]]:
        _, transcript = loopsim.record(main, scenario="anchor")
        # the ids differ (building inside the run draws the agents' ids from its stream)
        return [
            (e.time, e.kind, {k: v for k, v in e.data.items() if k != "session"})
            for e in transcript.events
        ]

    def outside() -> Any:
        parent, _ = build(traced=False)

        async def main() -> str:
            return (await parent.run("Research X.", session=parent.create_session())).text

        return main, parent

    main, parent = outside()
    assert events(main) == events(run_anchor)
    assert any(isinstance(m, af.AgentMiddleware) for m in parent.middleware)
    assert _anchor_bytes(outside()[0]) == _anchor_bytes(outside()[0])


def test_a_run_nobody_records_leaves_the_agent_as_it_was() -> None:
    from af_anchor import build

    parent, _ = build(traced=False)
    before = list(parent.middleware)

    async def main() -> str:
        return (await parent.run("Research X.", session=parent.create_session())).text

    assert loopsim.simulate(main).endswith("all done")
    assert parent.middleware == before


def test_instrument_after_zero_touch_tracing_adds_nothing() -> None:
    from af_anchor import build

    parent, _ = build(traced=False)

    async def main() -> str:
        return (await parent.run("Research X.", session=parent.create_session())).text

    loopsim.record(main)
    traced = list(parent.middleware)
    assert instrument(parent) is parent
    assert parent.middleware == traced
