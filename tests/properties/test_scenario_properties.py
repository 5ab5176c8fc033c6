"""Properties over generated scenario files (``loopsim.testing.scenarios``), run end to end.

test_loop_properties.py drives LoopAgent with evaluators written in code; here every
example is a whole scenario (scripts with tool calls, failing tools, approvals, delays,
usage; completion marker and scripted delegate evaluators in any order; caps; fresh
context; history stores; coordinators with children, wait timeouts, restarts, releases)
built by the strategies users get, loaded from its YAML and run by ``run_scenario``:

* every generated scenario passes (its expectations and the global invariants);
* evaluator ordering: per iteration the evaluators are asked in order, none after the
  first that continues, each delegate evaluator consumes its scripted decisions in
  order, and the loop stops as evaluators_stopped exactly when all said stop;
* MaxIterations: never more iterations than the cap, and a run that reaches the cap
  without all evaluators stopping reports max_iterations;
* approval: an iteration whose response asks for approval is the last of its run, its
  stop reason is approval_pending and no evaluator is asked in it;
* streaming and non-streaming runs agree on decisions, stops and the final text.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given

import loopsim
from loopsim import FunctionCallContent, Message
from loopsim._scenario._schema import DelegateSpec
from loopsim.testing import loaded, scenario_yaml, scenarios


def run(scenario: loopsim.Scenario, **overrides: Any) -> loopsim.ScenarioResult:
    if overrides:
        scenario = scenario.model_copy(update=overrides)
    return loopsim.run_scenario(loaded(scenario))


def problems(result: loopsim.ScenarioResult) -> list[str]:
    return [f.message for f in result.failures]


def loop_runs(events: list[Any]) -> list[list[Any]]:
    """The events of each loop run (iteration 1 start .. loop_stop)."""
    runs: list[list[Any]] = []
    current: list[Any] | None = None
    for event in events:
        if event.kind == "loop_iteration_start" and event.data["iteration"] == 1:
            current = []
            runs.append(current)
        if current is not None:
            current.append(event)
        if event.kind == "loop_stop":
            current = None
    return runs


def has_approval(event: Any) -> bool:
    """The model called the approval-required tool (the agent turns it into a request)."""
    return any(
        isinstance(c, FunctionCallContent) and c.name == "deploy"
        for m in event.data.get("messages") or ()
        if isinstance(m, Message)
        for c in m.contents
    )


@given(scenarios())
def test_every_generated_scenario_passes(scenario: loopsim.Scenario) -> None:
    result = run(scenario)
    assert not problems(result), result.report() + "\n" + scenario_yaml(scenario)


@given(scenarios(kinds=("loop",)))
def test_evaluator_order_caps_and_approvals(scenario: loopsim.Scenario) -> None:
    result = run(scenario)
    assert not problems(result), result.report()
    loop = scenario.loop
    assert loop is not None
    cap = loop.max_iterations
    assert cap is not None
    count = len(loop.evaluators)
    scripted = {
        index: list(e.chosen.decisions)
        for index, e in enumerate(loop.evaluators)
        if isinstance(e.chosen, DelegateSpec)
    }
    used = dict.fromkeys(scripted, 0)
    runs = loop_runs(result.events)
    assert runs, "the loop never ran"
    for events in runs:
        stop = events[-1]
        assert stop.kind == "loop_stop"
        iterations = [e for e in events if e.kind == "loop_iteration_start"]
        assert len(iterations) == stop.data["iterations"] <= cap
        by_iteration: dict[int, list[Any]] = {}
        current = 0
        for event in events:
            if event.kind == "loop_iteration_start":
                current = event.data["iteration"]
            by_iteration.setdefault(current, []).append(event)
        last = max(by_iteration)
        for number, items in sorted(by_iteration.items()):
            decisions = [e.data for e in items if e.kind == "evaluator_decision"]
            approval = any(
                e.kind == "model_response" and e.data["agent"] == "worker" and has_approval(e)
                for e in items
            )
            if approval:
                # the pending approval ends the run; nobody is asked
                assert number == last
                assert stop.data["reason"] == "approval_pending"
                assert decisions == []
                continue
            if number == cap:
                assert decisions == []  # the capped iteration asks nobody
                assert stop.data["reason"] == "max_iterations"
                continue
            assert [d["index"] for d in decisions] == list(range(len(decisions)))
            assert all(d["decision"] == "stop" for d in decisions[:-1])
            for d in decisions:
                if d["index"] in scripted:
                    spec = scripted[d["index"]][used[d["index"]]]
                    used[d["index"]] += 1
                    want = "stop" if spec == "stop" else "continue"
                    assert d["decision"] == want
                    if isinstance(spec, dict):
                        assert d["feedback"] == spec["continue"].strip()
            all_stop = len(decisions) == count and all(d["decision"] == "stop" for d in decisions)
            assert all_stop == (number == last), (number, decisions)
            if all_stop:
                assert stop.data["reason"] == "evaluators_stopped"


@given(scenarios(kinds=("loop", "background"), streaming=False))
def test_streaming_and_non_streaming_scenarios_agree(scenario: loopsim.Scenario) -> None:
    plain = run(scenario)
    streamed = run(scenario, streaming=True)

    def decisions(result: loopsim.ScenarioResult) -> list[tuple[Any, ...]]:
        return [
            (e.data["iteration"], e.data["index"], e.data["decision"], e.data["feedback"])
            for e in result.events
            if e.kind == "evaluator_decision"
        ]

    def stops(result: loopsim.ScenarioResult) -> list[dict[str, Any]]:
        return [e.data for e in result.events if e.kind == "loop_stop"]

    assert decisions(plain) == decisions(streamed)
    assert stops(plain) == stops(streamed)
    assert plain.calls == streamed.calls
    assert plain.tasks == streamed.tasks
    assert plain.elapsed == streamed.elapsed
    assert plain.response_text == streamed.response_text
    assert problems(plain) == problems(streamed) == []
