"""Streamed looped runs of real agent_framework code are traced as non-streamed ones are.

Upstream's ``AgentLoopMiddleware`` runs a streamed loop while the caller iterates the
stream it returns (after every middleware returned); loopsim observes it through the
stream's pull and cleanup hooks. These tests run the same looped program streamed and
not, and the built-in engine beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import agent_framework as af
import pytest
from af_anchor import build
from test_af_tracing import loopsim_anchor, summary

import loopsim
from loopsim import ScriptedChatClient
from loopsim._scenario import load_scenario, run_scenario
from loopsim._scenario._compare import _divergences, _streams
from loopsim.agent_framework import as_chat_client, instrument

LOOP_KINDS = ("loop_iteration_start", "evaluator_decision", "loop_stop")
SCENARIOS = Path(__file__).parent.parent / "scenarios"


def events(transcript: loopsim.Transcript) -> list[tuple[float, str, dict[str, Any]]]:
    return [(e.time, e.kind, e.data) for e in transcript.events if e.kind != "clock_jump"]


def loop_events(transcript: loopsim.Transcript) -> list[tuple[float, str, dict[str, Any]]]:
    return [row for row in events(transcript) if row[1] in LOOP_KINDS]


async def consume(agent: Any, message: str, *, stream: bool, session: Any = None) -> str:
    """One run of ``agent``, streamed (every update read, then the final response) or not."""
    if not stream:
        return str((await agent.run(message, session=session)).text)
    response = agent.run(message, session=session, stream=True)
    async for _ in response:
        pass
    return str((await response.get_final_response()).text)


async def anchor(stream: bool) -> str:
    parent, _ = build()
    return await consume(parent, "Research X.", stream=stream, session=parent.create_session())


def test_the_streamed_anchor_program_is_traced_exactly_like_the_plain_one() -> None:
    _, plain = loopsim.record(anchor, False)
    _, streamed = loopsim.record(anchor, True)
    # the loop's own events, and where they sit among the model calls, tools and tasks
    assert [k for _, k, _ in loop_events(streamed)].count("loop_iteration_start") == 3
    assert loop_events(streamed) == loop_events(plain)
    assert events(streamed) == events(plain)


def test_model_and_tool_events_of_a_streamed_loop_name_the_asking_agent() -> None:
    _, streamed = loopsim.record(anchor, True)
    asking = {e.data["agent"] for e in streamed.events if e.kind in ("model_request", "tool_call")}
    assert asking == {"coordinator", "web", "code"}
    assert any(e.kind == "task_status" for e in streamed.events)


def writer(
    replies: list[str], predicate: Callable[..., Any], **loop_options: Any
) -> tuple[af.Agent, ScriptedChatClient]:
    model = ScriptedChatClient(replies, name="writer-model")
    agent = af.Agent(
        client=as_chat_client(model),
        name="writer",
        middleware=[af.AgentLoopMiddleware(predicate, **loop_options)],
    )
    return instrument(agent), model


def not_done(*, last_result: Any, **_: Any) -> bool:
    return "DONE" not in last_result.text


@pytest.mark.parametrize(
    ("replies", "options", "reason", "iterations"),
    [
        (["draft", "more", "final DONE"], {}, "evaluators_stopped", 3),
        (["draft", "more", "again", "never"], {"max_iterations": 2}, "max_iterations", 2),
    ],
)
def test_a_streamed_loop_stops_for_the_same_reason_as_a_plain_one(
    replies: list[str], options: dict[str, Any], reason: str, iterations: int
) -> None:
    async def main(stream: bool) -> str:
        agent, _ = writer(replies, not_done, **options)
        return await consume(agent, "write", stream=stream)

    _, plain = loopsim.record(main, False)
    _, streamed = loopsim.record(main, True)
    assert loop_events(streamed) == loop_events(plain)
    stop = loop_events(streamed)[-1]
    assert stop[1] == "loop_stop"
    assert stop[2] == {"loop": "writer", "reason": reason, "iterations": iterations}


def test_a_predicate_failing_in_a_streamed_loop_is_an_error_and_its_own_exception() -> None:
    def broken(**_: Any) -> bool:
        raise KeyError("predicate broke")

    async def main(stream: bool) -> str:
        agent, _ = writer(["draft", "final"], broken)
        return await consume(agent, "write", stream=stream)

    traces = []
    for stream in (False, True):
        recorder = loopsim.Recorder()
        with pytest.raises(KeyError, match="predicate broke"):
            loopsim.simulate(main, stream, trace=recorder.trace)
        traces.append(loop_events(recorder.transcript))
    assert traces[0] == traces[1]
    assert traces[1][-1][2] == {"loop": "writer", "reason": "error", "iterations": 1}


def test_a_stream_closed_early_stops_the_loop_as_cancelled_on_both_engines() -> None:
    async def real() -> None:
        agent, _ = writer(["draft", "more", "final DONE"], not_done)
        async with agent.run("write", stream=True) as response:
            async for update in response:
                if update.text:
                    break  # the caller walks away during the first iteration

    async def builtin() -> None:
        agent = loopsim.Agent(
            ScriptedChatClient(["draft", "more", "final DONE"]),
            name="writer",
            middleware=[loopsim.AgentLoopMiddleware(not_done)],
        )
        stream = agent.run_stream("write")
        async for update in stream:
            if update.text:
                break
        await stream.aclose()  # type: ignore[attr-defined] # an async generator

    stops = []
    for main in (real, builtin):
        _, transcript = loopsim.record(main)
        stops.append([d for _, k, d in loop_events(transcript) if k == "loop_stop"])
    assert stops[0] == [{"loop": "writer", "reason": "cancelled", "iterations": 0}]
    assert stops[0] == stops[1]


def test_the_streamed_anchor_agrees_with_the_built_in_engine_streamed() -> None:
    _, real = loopsim.record(anchor, True)
    _, builtin = loopsim.record(loopsim_anchor(stream=True))
    assert len(summary(real)) > 15
    assert summary(real) == summary(builtin)
    assert loop_events(real) == loop_events(builtin)


def _loop_and_task_divergences(engine_runs: dict[str, loopsim.Transcript]) -> list[str]:
    found = _divergences(_streams(engine_runs["loopsim"]), _streams(engine_runs["agent_framework"]))
    return [str(d) for d in found if d.stream.startswith(("loop", "task"))]


def test_the_streamed_harness_scenario_loops_alike_on_both_engines() -> None:
    loaded = load_scenario(SCENARIOS / "harness_predicate_streaming.loopsim.yaml")
    assert loaded.scenario.streaming
    runs: dict[str, loopsim.Transcript] = {}
    for engine in ("loopsim", "agent_framework"):
        result = run_scenario(loaded, engine=engine, compare=False)
        assert result.passed, result.report()
        assert result.transcript is not None
        runs[engine] = result.transcript
    real_loop = loop_events(runs["agent_framework"])
    assert [k for _, k, _ in real_loop] == [
        "loop_iteration_start",
        "evaluator_decision",
        "loop_iteration_start",
        "evaluator_decision",
        "loop_stop",
    ]
    assert _loop_and_task_divergences(runs) == []
    # and streamed or not, the package's run loops the same way
    plain = load_scenario(SCENARIOS / "harness_predicate.loopsim.yaml")
    plain_run = run_scenario(plain, engine="agent_framework", compare=False).transcript
    assert plain_run is not None
    assert loop_events(plain_run) == real_loop


def test_a_streamed_loop_stopped_by_a_pending_approval_says_so() -> None:
    def delete(path: str) -> str:
        return f"deleted {path}"

    async def main(stream: bool) -> str:
        turn = loopsim.Message(
            "assistant",
            [loopsim.FunctionCallContent(call_id="c1", name="delete", arguments={"path": "/x"})],
        )
        agent = instrument(
            af.Agent(
                client=as_chat_client(ScriptedChatClient([turn, "ok"])),
                name="ops",
                tools=[af.tool(delete, approval_mode="always_require")],
                middleware=[af.AgentLoopMiddleware(lambda **_: True, max_iterations=3)],
            )
        )
        return await consume(agent, "go", stream=stream)

    _, plain = loopsim.record(main, False)
    _, streamed = loopsim.record(main, True)
    assert loop_events(streamed) == loop_events(plain)
    assert loop_events(streamed)[-1][2] == {
        "loop": "ops",
        "reason": "approval_pending",
        "iterations": 1,
    }
