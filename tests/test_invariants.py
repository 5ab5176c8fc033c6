"""The eight global invariants, each broken by a hand-made event list (and one run that
satisfies all of them)."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from loopsim import FunctionApprovalRequestContent, FunctionCallContent, Message
from loopsim._invariants import (
    check_approval_is_last,
    check_background_evaluator,
    check_evaluator_order,
    check_ids_and_time,
    check_initial_messages,
    check_invariants,
    check_max_iterations,
    check_restart,
    check_waits,
)
from loopsim._scenario import load_scenario_text, run_scenario
from loopsim._trace import Event

LOOP = "writer"
HI = Message.user("hi")
WAIT = "background_agents_wait_for_first_completion"


class Events:
    """Builds an event list the way a trace numbers it: seq from 1, time set per event."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.now = 0.0

    def at(self, time: float) -> Events:
        self.now = time
        return self

    def add(self, kind: str, marks: frozenset[str] = frozenset(), **data: Any) -> Events:
        self.events.append(Event(len(self.events) + 1, self.now, kind, data, marks))
        return self

    def iteration(self, number: int) -> Events:
        return self.add("loop_iteration_start", loop=LOOP, iteration=number)

    def request(self, *messages: Message) -> Events:
        return self.add("model_request", agent=LOOP, session="s1", messages=list(messages))

    def response(self, message: Message, response_id: str | None = None) -> Events:
        return self.add(
            "model_response",
            agent=LOOP,
            session="s1",
            messages=[message],
            response_id=response_id,
        )

    def decision(
        self, iteration: int, index: int, decision: str, evaluator: str = "Delegate"
    ) -> Events:
        # the loop marks the built-in's decisions by identity (invariant 6 reads the mark)
        builtin = evaluator == "BackgroundTaskCompletionLoopEvaluator"
        return self.add(
            "evaluator_decision",
            frozenset({"background_completion"}) if builtin else frozenset(),
            loop=LOOP,
            iteration=iteration,
            index=index,
            evaluator=evaluator,
            decision=decision,
            feedback=None,
        )

    def stop(self, reason: str, iterations: int) -> Events:
        return self.add("loop_stop", loop=LOOP, reason=reason, iterations=iterations)

    def task(self, task_id: int, status: str) -> Events:
        return self.add("task_status", session="s1", task_id=task_id, status=status)


def _reply(text: str, message_id: str) -> Message:
    return Message.assistant(text).model_copy(update={"message_id": message_id})


def _good_run() -> list[Event]:
    """Two iterations, two evaluators, a background task, a wait within its timeout."""
    first, second = _reply("draft", "msg-0001"), _reply("final DONE", "msg-0002")
    background = "BackgroundTaskCompletionLoopEvaluator"
    return (
        Events()
        .add("session_created", agent=LOOP, session="s1")
        .iteration(1)
        .request(HI)
        .task(1, "running")
        .response(first, "resp-0001")
        .decision(1, 0, "continue", evaluator=background)
        .iteration(2)
        .request(HI, first, Message.user("go on"))
        .add("tool_call", name=WAIT, call_id="c1", session="s1", arguments={"task_ids": [1]})
        .at(10.0)
        .add("clock_jump", **{"from": 0.0, "to": 10.0})
        .task(1, "completed")
        .add(
            "tool_result",
            name=WAIT,
            call_id="c1",
            session="s1",
            result="Task 1 ended with status: completed.",
        )
        .response(second, "resp-0002")
        .decision(2, 0, "stop", evaluator=background)
        .decision(2, 1, "stop")
        .stop("evaluators_stopped", 2)
        .events
    )


def test_a_good_run_satisfies_all_eight() -> None:
    events = _good_run()
    assert check_invariants(events, max_iterations=2, wait_timeout=300.0, evaluator_count=2) == []
    # the same run with a tighter cap is caught, so the check above is not vacuous
    assert check_invariants(events, max_iterations=1, wait_timeout=5.0, evaluator_count=3) == [
        "invariant 1: loop 'writer' ran 2 iterations, more than max_iterations=1",
        (
            "invariant 3: loop 'writer' stopped as evaluators_stopped in iteration 2, but only "
            "evaluators [0, 1] of 3 said stop"
        ),
        "invariant 5: a wait returned after 10s, later than its timeout of 5s",
    ]


def test_1_more_iterations_than_the_cap() -> None:
    events = Events().iteration(1).iteration(2).iteration(3).stop("max_iterations", 3).events
    assert check_max_iterations(events, 3) == []
    assert check_max_iterations(events, 2) == [
        "invariant 1: loop 'writer' ran 3 iterations, more than max_iterations=2"
    ]


def test_2_initial_message_sent_twice() -> None:
    events = (
        Events()
        .iteration(1)
        .request(HI)
        .response(Message.assistant("draft"))
        .iteration(2)
        .request(HI, Message.assistant("draft"), HI)
        .stop("max_iterations", 2)
        .events
    )
    assert check_initial_messages(events, fresh_context=False) == [
        (
            "invariant 2: iteration 2 of loop 'writer' sent the caller's initial message 2 times "
            "(expected exactly once)"
        )
    ]


def test_2_fresh_context_iteration_without_the_initial_message() -> None:
    events = (
        Events()
        .iteration(1)
        .request(HI)
        .iteration(2)
        .request(Message.user("go on"))
        .stop("max_iterations", 2)
        .events
    )
    assert check_initial_messages(events, fresh_context=False) == [
        (
            "invariant 2: iteration 2 of loop 'writer' sent the caller's initial message 0 times "
            "(expected exactly once)"
        )
    ]
    assert check_initial_messages(events, fresh_context=True) == [
        (
            "invariant 2: with fresh context, iteration 2 of loop 'writer' did not start with the "
            "caller's initial messages"
        )
    ]


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        pytest.param(
            [(1, "stop"), (0, "stop")],
            "invariant 3: iteration 1 of loop 'writer' asked evaluators in the order [1, 0] "
            "(the loop has 2)",
            id="out-of-order",
        ),
        pytest.param(
            [(0, "continue"), (1, "stop")],
            "invariant 3: iteration 1 of loop 'writer' asked evaluator 1 after evaluator 0 "
            "continued",
            id="asked-after-continue",
        ),
    ],
)
def test_3_evaluators_asked_out_of_order(decisions: list[tuple[int, str]], expected: str) -> None:
    builder = Events().iteration(1)
    for index, decision in decisions:
        builder.decision(1, index, decision)
    events = builder.iteration(2).stop("max_iterations", 2).events
    assert expected in check_evaluator_order(events, 2)


def test_3_loop_went_on_after_all_stopped() -> None:
    events = (
        Events()
        .iteration(1)
        .decision(1, 0, "stop")
        .iteration(2)
        .decision(2, 0, "stop")
        .stop("evaluators_stopped", 2)
        .events
    )
    assert check_evaluator_order(events, 1) == [
        "invariant 3: loop 'writer' went on after every evaluator stopped in iteration 1"
    ]


def test_3_stopped_before_every_evaluator_said_stop() -> None:
    # two evaluators; the loop stops after only the first one was asked
    events = Events().iteration(1).decision(1, 0, "stop").stop("evaluators_stopped", 1).events
    assert check_evaluator_order(events, 2) == [
        (
            "invariant 3: loop 'writer' stopped as evaluators_stopped in iteration 1, but only "
            "evaluators [0] of 2 said stop"
        )
    ]
    # without the count, an evaluator that was never asked cannot be noticed
    assert check_evaluator_order(events) == []


def test_3_count_read_from_the_indices_seen() -> None:
    events = (
        Events()
        .iteration(1)
        .decision(1, 0, "stop")
        .decision(1, 1, "continue")
        .iteration(2)
        .decision(2, 0, "stop")
        .stop("evaluators_stopped", 2)
        .events
    )
    assert check_evaluator_order(events) == [
        (
            "invariant 3: loop 'writer' stopped as evaluators_stopped in iteration 2, but only "
            "evaluators [0] of 2 said stop"
        )
    ]


def test_4_evaluator_asked_after_a_pending_approval() -> None:
    call = FunctionCallContent(call_id="c1", name="pay", arguments={})
    approval = Message("assistant", [FunctionApprovalRequestContent(id="a1", function_call=call)])
    events = (
        Events()
        .iteration(1)
        .request(HI)
        .response(approval)
        .decision(1, 0, "continue")
        .iteration(2)
        .stop("max_iterations", 2)
        .events
    )
    assert check_approval_is_last(events) == [
        (
            "invariant 4: loop 'writer' asked an evaluator after a pending approval request in "
            "iteration 1"
        ),
        (
            "invariant 4: loop 'writer' ran another iteration after a pending approval request in "
            "iteration 1"
        ),
    ]


def test_5_wait_returned_after_its_timeout() -> None:
    events = (
        Events()
        .add("tool_call", name=WAIT, call_id="c1", session="s1", arguments={})
        .at(400.0)
        .add(
            "tool_result",
            name=WAIT,
            call_id="c1",
            session="s1",
            result="Task 1 ended with status: completed.",
        )
        .events
    )
    assert check_waits(events, 400.0) == []
    assert check_waits(events, 300.0) == [
        "invariant 5: a wait returned after 400s, later than its timeout of 300s"
    ]


def test_5_timed_out_wait_finished_its_task() -> None:
    events = (
        Events()
        .task(1, "running")
        .add("tool_call", name=WAIT, call_id="c1", session="s1", arguments={"task_ids": [1]})
        .at(300.0)
        .task(1, "failed")
        .add(
            "tool_result",
            name=WAIT,
            call_id="c1",
            session="s1",
            result="Waited 300 seconds and no background task finished.",
        )
        .events
    )
    assert check_waits(events, 300.0) == [
        (
            "invariant 5: a wait that timed out left task 1 failed "
            "(it was running when the wait began and must stay running)"
        )
    ]


def test_5_a_task_finalized_as_the_wait_begins_is_not_a_violation() -> None:
    # Task 2 had finished before the wait: the wait's first refresh finalizes it at the
    # call's instant and waits on task 3 alone, which then times out (upstream behaviour).
    events = (
        Events()
        .task(2, "running")
        .task(3, "running")
        .add("tool_call", name=WAIT, call_id="c1", session="s1", arguments={"task_ids": [2, 3]})
        .task(2, "completed")
        .at(1.0)
        .add(
            "tool_result",
            name=WAIT,
            call_id="c1",
            session="s1",
            result="Waited 1 seconds and no background task finished.",
        )
        .events
    )
    assert check_waits(events, 1.0) == []


def test_6_background_evaluator_continued_with_nothing_running() -> None:
    events = (
        Events()
        .task(1, "running")
        .iteration(1)
        .decision(1, 0, "continue", evaluator="BackgroundTaskCompletionLoopEvaluator")
        .task(1, "completed")
        .iteration(2)
        .decision(2, 0, "continue", evaluator="BackgroundTaskCompletionLoopEvaluator")
        .events
    )
    assert check_background_evaluator(events) == [
        (
            "invariant 6: the background-completion evaluator continued iteration 2 with no task "
            "running"
        )
    ]


def test_6_knows_the_built_in_by_identity_not_by_a_name() -> None:
    # a user's evaluator whose name contains BackgroundTask has its own rule: no finding
    events = (
        Events()
        .iteration(1)
        .decision(1, 0, "continue", evaluator="BackgroundTaskCompletionLikeThing")
        .events
    )
    assert check_background_evaluator(events) == []


def test_7_restart_finished_a_running_task_and_lost_a_finished_one() -> None:
    events = (
        Events()
        .task(1, "running")
        .task(2, "completed")
        .add("process_restart")
        .task(1, "completed")
        .task(2, "lost")
        .events
    )
    assert check_restart(events) == [
        (
            "invariant 7: task 1 was recorded running before the restart but became completed "
            "after it (expected lost)"
        ),
        "invariant 7: task 2 was recorded completed before the restart and was lost after it",
    ]


def test_7_restart_that_loses_running_tasks_is_fine() -> None:
    events = Events().task(1, "running").add("process_restart").task(1, "lost").events
    assert check_restart(events) == []


def test_8_time_goes_back() -> None:
    events = Events().at(5.0).add("session_created").at(4.0).add("session_created").events
    assert check_ids_and_time(events) == [
        "invariant 8: time went back from 5s to 4s at event 2 (session_created)"
    ]


def test_8_clock_jumps_back_and_events_out_of_order() -> None:
    events = Events().add("clock_jump", **{"from": 4.0, "to": 3.0}).events
    events.append(Event(1, 0.0, "session_created", {}))
    assert check_ids_and_time(events) == [
        "invariant 8: the clock jumped back from 4.0 to 3.0",
        "invariant 8: event 1 (session_created) is out of order",
    ]


def test_8_ids_used_twice() -> None:
    reply = _reply("x", "msg-0001")
    events = Events().response(reply, "resp-0001").response(reply, "resp-0001").events
    assert check_ids_and_time(events) == [
        "invariant 8: response id resp-0001 was used twice",
        "invariant 8: message id msg-0001 was used twice",
    ]


LOOP_NAMING_A_CONVERSATION = """\
version: 1
agents:
  writer:
    script:
      - tool_call: {name: add, arguments: {a: 2, b: 3}}
        conversation_id: conv-1
      - tool_call: {name: add, arguments: {a: 1, b: 1}}
      - reply: a first draft
      - tool_call: {name: add, arguments: {a: 2, b: 3}}
        conversation_id: conv-1
      - reply: the final text DONE
    tools:
      add: {result: 5}
parent: {agent: writer}
loop:
  evaluators:
    - completion_marker: DONE
steps:
  - run: write
expect:
  iterations: 2
"""


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
def test_2_requests_after_an_answer_naming_a_conversation_hold_no_input(
    engine: Literal["loopsim", "agent_framework"],
) -> None:
    # Within each run, the requests after the answer naming conv-1 hold only the tool
    # results and what follows them (upstream's tool loop), the second one too although
    # its answer names no conversation: none of them is counted as sending the input.
    loaded = load_scenario_text(LOOP_NAMING_A_CONVERSATION, path="x.loopsim.yaml")
    result = run_scenario(loaded, engine=engine)
    assert [f.render(result.path) for f in result.failures] == []
    requests = [e for e in result.transcript.events if e.kind == "model_request"]
    assert [len(e.data["messages"]) for e in requests] == [1, 1, 3, 7, 1]
    assert check_initial_messages(result.transcript.events, fresh_context=False) == []
