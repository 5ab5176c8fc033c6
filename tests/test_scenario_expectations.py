"""Expectation forms: none checks nothing, each can fail, each failure names its line."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

import loopsim
from loopsim._scenario import load_scenario_text, run_scenario

BACKGROUND = """\
version: 1
agents:
  boss: {policy: coordinator}
  worker: {policy: {echo: {delay: 10}}}
parent: {agent: boss, background_agents: [worker]}
steps:
  - run: go
"""

WRITER = """\
version: 1
agents:
  writer:
    script:
      - reply: draft 1
      - reply: draft 2 DONE
parent: {agent: writer}
loop:
  evaluators: [completion_marker]
steps:
  - run: write
"""


def _load(text: str) -> loopsim.LoadedScenario:
    return load_scenario_text(textwrap.dedent(text), path="x.loopsim.yaml")


def _failures(text: str) -> list[str]:
    result = run_scenario(_load(text))
    return [f.render(result.path) for f in result.failures]


@pytest.mark.parametrize(
    ("block", "location", "said"),
    [
        ("tasks: {}", "expect.tasks", "task_counts: {running: 0}"),
        ("calls: {}", "expect.calls", "checks nothing"),
        ("task_counts: {}", "expect.task_counts", "checks nothing"),
        ("task_history: {}", "expect.task_history", "checks nothing"),
        ("task_history: {1: []}", "expect.task_history", "empty history"),
        ("events: []", "expect.events", "checks nothing"),
        ("response: {}", "expect.response", "checks nothing"),
        ("response: {contains: []}", "expect.response.contains", "checks nothing"),
        ("response: {not_contains: []}", "expect.response.not_contains", "checks nothing"),
        ("surfaced: {}", "expect.surfaced", "checks nothing"),
        ("elapsed: {}", "expect.elapsed", "checks nothing"),
        ("elapsed: {min: 60, max: 10}", "expect.elapsed", "can never hold"),
        ("events: [{kind: task_stauts, count: 0}]", "expect.events[0]", "unknown event kind"),
        (
            "events: [{kind: task_status, where: {stauts: lost}, count: 0}]",
            "expect.events[0]",
            "no field",
        ),
    ],
)
def test_a_form_that_would_check_nothing_is_a_located_error(
    block: str, location: str, said: str
) -> None:
    with pytest.raises(loopsim.ScenarioError) as info:
        _load(BACKGROUND + "expect:\n  " + block + "\n")
    error = info.value
    assert error.line == 9
    assert error.location is not None
    assert error.location.startswith(location)
    assert said in str(error)


def test_cleared_is_a_status_and_tasks_compare_final_statuses() -> None:
    assert _failures(BACKGROUND + "expect:\n  tasks: {1: cleared}\n") == []
    assert _failures(BACKGROUND + "expect:\n  tasks: {1: completed}\n") == [
        "x.loopsim.yaml:9: expect.tasks[1]: expected task 1 completed, got cleared"
    ]
    assert _failures(BACKGROUND + "expect:\n  tasks: {2: cleared}\n") == [
        "x.loopsim.yaml:9: expect.tasks[2]: expected task 2 cleared, got no such task"
    ]


def test_task_counts_say_that_nothing_is_left_running() -> None:
    assert _failures(BACKGROUND + "expect:\n  task_counts: {running: 0, cleared: 1}\n") == []
    left_running = BACKGROUND.replace(
        "policy: coordinator", "policy: {coordinator: {detach: true}}"
    )
    assert _failures(left_running + "expect:\n  task_counts: {running: 0}\n") == [
        "x.loopsim.yaml:9: expect.task_counts.running: expected 0 task(s) running, got 1 (task 1)"
    ]


def test_task_history_lists_each_status_in_order() -> None:
    good = BACKGROUND + "expect:\n  task_history: {1: [running, completed, cleared]}\n"
    assert _failures(good) == []
    wrong = BACKGROUND + "expect:\n  task_history: {1: [running, lost]}\n"
    assert _failures(wrong) == [
        (
            "x.loopsim.yaml:9: expect.task_history[1]: expected task 1 to go running → lost, "
            "got running → completed → cleared"
        )
    ]


@pytest.mark.parametrize(
    ("count", "holds"),
    [("1", True), ("2", False), ("0", False), ("{min: 1}", True), ("{max: 0}", False)],
)
def test_event_counts_by_kind_and_field(count: str, holds: bool) -> None:
    text = BACKGROUND + (
        "expect:\n  events:\n"
        f"    - {{kind: task_status, where: {{status: completed, task_id: 1}}, count: {count}}}\n"
    )
    failures = _failures(text)
    assert (failures == []) is holds
    if not holds:
        (failure,) = failures
        assert failure.startswith("x.loopsim.yaml:10: expect.events[0].count: expected ")
        assert "task_status event(s) with status='completed', task_id=1, got 1" in failure


def test_event_field_matching_is_exact_about_booleans_and_numbers() -> None:
    text = BACKGROUND + (
        "expect:\n  events:\n    - {kind: task_status, where: {task_id: true}, count: 0}\n"
    )
    assert _failures(text) == []  # task id 1 is not `true`


def test_response_is_the_answer_without_the_loops_feedback_and_surfaced_has_it() -> None:
    # The case: feedback between the drafts made `not_contains` fail and the
    # drafts ran together.
    text = WRITER + textwrap.dedent(
        """\
        expect:
          response: {equals: "draft 1\\ndraft 2 DONE", not_contains: not finished}
          surfaced: {contains: [draft 1, DONE, draft 2]}
        """
    )
    assert _failures(text) == []
    result = run_scenario(_load(text))
    assert result.response_text == "draft 1\ndraft 2 DONE"
    wrong = WRITER + 'expect:\n  surfaced: {equals: "draft 1\\ndraft 2 DONE"}\n'
    (failure,) = _failures(wrong)
    assert failure.startswith("x.loopsim.yaml:13: expect.surfaced.equals: expected the surfaced")


def test_a_step_can_have_its_own_expectations() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        agents:
          boss: {policy: {coordinator: {detach: true}}}
          worker: {policy: {echo: {delay: 100}}}
        parent: {agent: boss, background_agents: [worker]}
        steps:
          - run: start
            expect:
              tasks: {1: running}
              elapsed: 0
              response: {contains: Started 1}
              calls: {worker: 0}             # counted when the step ended
          - advance: 100
          - run: collect
            expect:
              tasks: {1: cleared}
              elapsed: 100
              response: {contains: "echo: start"}
              calls: {worker: 1}
        """
    )
    assert _failures(text) == []
    wrong = text.replace("tasks: {1: running}", "tasks: {1: completed}").replace(
        "elapsed: 100", "elapsed: 50"
    )
    assert _failures(wrong) == [
        "x.loopsim.yaml:9: steps[0].expect.tasks[1]: expected task 1 completed, got running",
        "x.loopsim.yaml:17: steps[2].expect.elapsed: expected 50s of virtual time, got 100s",
    ]


def test_a_steps_iterations_are_those_of_its_own_call() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        agents:
          writer: {script: [one, two DONE, three DONE]}
        parent: {agent: writer}
        loop: {evaluators: [completion_marker]}
        steps:
          - run: first
            expect: {iterations: 2, response: {equals: "one\\ntwo DONE"}}
          - run: second
            expect: {iterations: 1, stop_reason: evaluators_stopped}
        """
    )
    assert _failures(text) == []
    assert _failures(text.replace("iterations: 1,", "iterations: 2,")) == [
        "x.loopsim.yaml:10: steps[1].expect.iterations: expected 2 iteration(s), got 1"
    ]


def test_a_step_can_expect_its_own_error() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        agents:
          writer: {script: [{failure: model overloaded}]}
        parent: {agent: writer}
        steps:
          - run: go
            expect: {error: model overloaded}
        """
    )
    assert _failures(text) == []
    assert _failures(text.replace("expect: {error: model overloaded}", "expect: {error: other}"))


def test_step_expectations_reject_end_only_keys() -> None:
    text = WRITER.replace("  - run: write\n", "  - run: write\n    expect: {invariants: false}\n")
    with pytest.raises(loopsim.ScenarioError, match="invariants"):
        _load(text)


def test_the_same_text_sent_twice_is_two_messages_for_invariant_2() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        agents:
          writer: {script: [draft DONE, more DONE]}
        parent: {agent: writer}
        loop: {evaluators: [completion_marker]}
        steps:
          - run: Continue.
          - run: Continue.
        """
    )
    assert _failures(text) == []


def test_invariant_2_is_reported_at_the_step_that_broke_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # A loop that sends the caller's message twice: the check names the second step.
    from loopsim._loop import _agent as loop_agent  # the seam we break

    original = loop_agent.LoopAgent.run
    calls = {"n": 0}

    async def doubling(self: Any, messages: Any = None, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            message = loopsim.Message("user", ["Continue."], message_id="same")
            messages = [message, message]
        return await original(self, messages, **kwargs)

    monkeypatch.setattr(loop_agent.LoopAgent, "run", doubling)
    text = textwrap.dedent(
        """\
        version: 1
        agents:
          writer: {script: [draft DONE, more DONE]}
        parent: {agent: writer}
        loop: {evaluators: [completion_marker]}
        steps:
          - run: Start.
          - run: Continue.
        """
    )
    (failure,) = _failures(text)
    assert failure.startswith(
        "x.loopsim.yaml:8: invariants (steps[1]): invariant 2: iteration 1 of loop 'writer' "
        "sent the caller's initial message 2 times"
    )
