"""The built-in background evaluator is known by identity: a user class named like it has
no false alarm, in a scenario run and in check_evaluator."""

from __future__ import annotations

from pathlib import Path

from _lookalike import BackgroundTaskCompletionLikeThing

from loopsim._scenario import load_scenario_text, run_scenario

SCENARIO = """
version: 1
agents:
  boss: {script: ["first pass", "second pass"]}
  worker: {policy: {echo: {delay: 45}}}
parent: {agent: boss, background_agents: [worker]}
loop:
  evaluators: ["_lookalike:BackgroundTaskCompletionLikeThing"]
steps:
  - run: research
expect:
  iterations: 2
  stop_reason: evaluators_stopped
"""


def test_a_user_class_named_like_the_built_in_is_no_invariant_6_finding() -> None:
    root = Path(__file__).parent
    result = run_scenario(load_scenario_text(SCENARIO, rootdir=root))
    assert result.passed, result.report()


def test_check_evaluator_has_no_false_alarm_on_the_look_alike() -> None:
    from loopsim.testing import check_evaluator

    report = check_evaluator(BackgroundTaskCompletionLikeThing, max_examples=10)
    assert "invariant 6" not in report.render()
