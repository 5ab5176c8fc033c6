"""Timeout and restart properties over generated background scenarios (coordinator parents).

test_background_properties.py drives the six tools directly; here the generated
scenarios (``loopsim.testing.scenarios(kinds=("background",))``) run whole: a
coordinator model starts children on generated delays, waits with generated timeouts,
the host restarts the process at generated points and may release the session.

* a wait never returns later than its timeout on the virtual clock; a wait that timed
  out leaves every task it waited on that was running still running, and such a task
  later finishes on its own (unless a restart or a release ends it);
* after any restart point, the tasks the session recorded as running are ``lost``, the
  finished results it recorded are kept, and a finished result is never lost;
* the background-completion evaluator continues only while a task runs, and stops
  looping once the only unfinished tasks are lost.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim._invariants import is_wait_timeout
from loopsim.testing import child_delays, loaded, restart_points, scenarios

WAIT = "background_agents_wait_for_first_completion"


def statuses_over_time(events: list[Any]) -> list[tuple[Any, dict[int, str]]]:
    status: dict[int, str] = {}
    out = []
    for event in events:
        out.append((event, dict(status)))
        if event.kind == "task_status":
            status[event.data["task_id"]] = event.data["status"]
    return out


@given(scenarios(kinds=("background",)))
def test_a_wait_returns_within_its_timeout_and_tasks_keep_running(
    scenario: loopsim.Scenario,
) -> None:
    result = loopsim.run_scenario(loaded(scenario))
    timeout = scenario.parent.wait_timeout
    started: dict[str, tuple[Any, dict[int, str]]] = {}
    timed_out: dict[int, float] = {}  # task id -> when a wait on it timed out
    ended_by_host = False
    for event, status in statuses_over_time(result.events):
        if event.kind == "process_restart":
            ended_by_host = True
        if event.kind == "tool_call" and event.data["name"] == WAIT:
            started[event.data["call_id"]] = (event, status)
        elif event.kind == "tool_result" and event.data["name"] == WAIT:
            call, before = started.pop(event.data["call_id"])
            assert event.time - call.time <= timeout + 1e-9
            if is_wait_timeout(str(event.data["result"])):
                assert event.time - call.time == timeout  # it waited the whole timeout
                for task_id in call.data["arguments"]["task_ids"]:
                    if before.get(task_id) == "running":
                        assert status.get(task_id) == "running", (task_id, status)
                        timed_out.setdefault(task_id, event.time)
    assert not started, "a wait never returned"
    # the timeout cancelled nothing: at the end of the steps such a task is still running
    # or finished on its own (or was collected and cleared), never lost, unless the host
    # restarted the process or released the session
    released = any(type(step).__name__ == "ReleaseStep" for step in scenario.steps)
    if not ended_by_host and not released:
        for task_id in timed_out:
            assert result.tasks.get(task_id, "cleared") in (
                "running",
                "completed",
                "failed",
                "cleared",
            ), (task_id, result.tasks)


@given(scenarios(kinds=("background",)))
def test_after_any_restart_running_tasks_are_lost_and_results_kept(
    scenario: loopsim.Scenario,
) -> None:
    result = loopsim.run_scenario(loaded(scenario))
    recorded: dict[int, str] = {}
    at_restart: dict[int, str] | None = None
    seen_after: set[int] = set()
    for event in result.events:
        if event.kind == "process_restart":
            at_restart = dict(recorded)
            seen_after = set()
            continue
        if event.kind != "task_status":
            continue
        task_id, new = event.data["task_id"], event.data["status"]
        if at_restart is not None and task_id in at_restart and task_id not in seen_after:
            seen_after.add(task_id)
            before = at_restart[task_id]
            if before == "running":
                assert new in ("lost", "cleared"), (task_id, before, new)
            elif before in ("completed", "failed"):
                assert new != "lost", (task_id, before, new)
        if recorded.get(task_id) in ("completed", "failed"):
            assert new != "lost", f"task {task_id} lost its finished result"
        recorded[task_id] = new
    for status in result.tasks.values():
        assert status in ("running", "completed", "failed", "lost", "cleared")


@given(
    delay=child_delays(max_delay=300.0).filter(lambda d: d > 10),
    advance=st.sampled_from([0.0, 5.0, 10.0]),
    cap=st.integers(2, 5),
    points=restart_points(2, max_restarts=2),
    backend=st.sampled_from(["asyncio", "trio"]),
)
def test_completion_evaluator_stops_looping_on_lost_tasks(
    delay: float, advance: float, cap: int, points: list[int], backend: str
) -> None:
    steps: list[Any] = [{"run": "start"}, {"advance": advance}, {"run": "collect"}]
    for offset, point in enumerate(points):
        steps.insert(point + offset, "restart")
    scenario = loopsim.Scenario.model_validate(
        {
            "version": 1,
            "backend": backend,
            "agents": {
                "boss": {"policy": {"coordinator": {"detach": True}}},
                "worker": {"policy": {"echo": {"delay": delay}}},
            },
            "parent": {"agent": "boss", "background_agents": ["worker"]},
            "loop": {"evaluators": ["background_task_completion"], "max_iterations": cap},
            "steps": steps,
        }
    )
    result = loopsim.run_scenario(loaded(scenario))
    assert result.passed, result.report()
    status: dict[int, str] = {}
    for event in result.events:
        if event.kind == "task_status":
            status[event.data["task_id"]] = event.data["status"]
        if event.kind == "evaluator_decision" and event.data["decision"] == "continue":
            assert "running" in status.values(), status
        if event.kind == "loop_stop" and "running" not in status.values():
            # nothing left to wait for (lost tasks included): the evaluators stopped it
            assert event.data["reason"] in ("evaluators_stopped", "max_iterations")
    if points and all(p >= 1 for p in points) and delay > advance:
        # a restart while the task ran: the loop after it ended on a lost task, not the cap
        stops = [e.data for e in result.events if e.kind == "loop_stop"]
        assert stops[-1]["reason"] == "evaluators_stopped", stops
