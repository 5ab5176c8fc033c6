"""The public strategies of loopsim.testing draw what they promise, and scenarios round-trip."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim.testing import (
    child_delays,
    evaluator_decisions,
    failures,
    loaded,
    messages,
    restart_points,
    scenario_yaml,
    scenarios,
    scripts,
)


@given(messages(roles=["user"]))
def test_messages_round_trip(message: loopsim.Message) -> None:
    assert message.role == "user"
    assert loopsim.Message.model_validate_json(message.model_dump_json()) == message


@given(
    scripts(
        tool_names=["lookup"], approval_tool_names=["deploy"], include_failures=True, final="DONE"
    ),
)
def test_scripts_are_accepted_and_end_as_asked(script: list[object]) -> None:
    client = loopsim.ScriptedChatClient(script)  # type: ignore[arg-type]
    assert len(client.remaining) == len(script) >= 1
    last = script[-1]
    item = last.item if isinstance(last, loopsim.Turn) else last
    assert isinstance(item, str)
    assert item.endswith("DONE")


@given(scripts(final="DONE", tool_names=["lookup"]), st.sampled_from(["asyncio", "trio"]))
def test_a_script_ending_done_stops_a_marker_loop(script: list[object], backend: str) -> None:
    @loopsim.tool
    def lookup(q: str | None = None, n: str | None = None) -> str:
        return "found"

    client = loopsim.ScriptedChatClient(script)  # type: ignore[arg-type]
    agent = loopsim.Agent(client, name="w", tools=[lookup])
    loop = loopsim.LoopAgent(
        agent,
        loopsim.CompletionMarkerLoopEvaluator("DONE"),
        loopsim.LoopAgentOptions(max_iterations=10),
    )
    response = loopsim.simulate(loop.run, "go", backend=backend)
    assert response.messages[-1].text.endswith("DONE")
    assert client.remaining == ()


@given(evaluator_decisions(3, min_size=2, max_size=4))
def test_decision_tables_have_one_row_per_evaluator(table: list[list[object]]) -> None:
    assert len(table) == 3
    assert len({len(row) for row in table}) == 1
    assert 2 <= len(table[0]) <= 4
    for row in table:
        for decision in row:
            assert decision in ("stop", "continue") or set(decision) == {"continue"}  # type: ignore[arg-type]


@given(child_delays(max_delay=50.0), failures(), restart_points(4, max_restarts=2))
def test_small_strategies(delay: float, failure: BaseException, points: list[int]) -> None:
    assert 0.0 <= delay <= 50.0
    assert "scripted failure" in str(failure)
    assert points == sorted(set(points))
    assert len(points) <= 2
    assert all(1 <= p <= 4 for p in points)


@given(scenarios())
def test_scenarios_round_trip_through_yaml(scenario: loopsim.Scenario) -> None:
    assert loaded(scenario).scenario == scenario
    assert scenario_yaml(loaded(scenario).scenario) == scenario_yaml(scenario)
