"""Stage 5, before the checks: what a scenario's expectations leave unchecked of a run.

Reported as warnings in loopsim's summary (``ScenarioResult.weak``); ``strict: true``
makes them failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._trace import Event
from ._schema import Scenario, StepExpect

__all__ = ["weak_expectations"]


_TOOL_EVENTS = frozenset({"tool_call", "tool_result", "tool_round_limit", "fault"})


def _blocks(scenario: Scenario) -> list[StepExpect]:
    blocks: list[StepExpect] = [scenario.expect]
    if scenario.always is not None:
        blocks.append(scenario.always)
    for step in scenario.steps:
        own = getattr(step, "expect", None)
        if isinstance(own, StepExpect):
            blocks.append(own)
    return blocks


def _pattern_steps(block: StepExpect) -> list[Any]:
    specs = [*([block.trajectory] if block.trajectory else []), *(block.trajectories or ())]
    return [*(step for spec in specs for step in spec.steps), *(block.never or ())]


def weak_expectations(scenario: Scenario, events: Sequence[Event]) -> list[str]:
    """What a run did that no expectation of ``scenario`` looks at (issue: weak checks).

    A scenario whose expectations would pass for a run that called no tool, or that
    answered anything at all, says so: each finding names what is unchecked and how to
    check it. A transcript snapshot checks everything.
    """
    blocks = _blocks(scenario)
    if any(getattr(b, "transcript", None) is not None for b in blocks):
        return []
    found: list[str] = []
    tools = sorted({str(e.data.get("name")) for e in events if e.kind == "tool_call"})
    # a task exists only if a tool started it: checking tasks checks that tools ran
    children = {name.casefold() for name in scenario.parent.background_agents}
    checks_tools = any(
        b.safety
        or b.tool_errors  # a declared tool error happened only if that tool was called
        or any(name.casefold() in children for name in b.calls or {})
        or b.tasks
        or b.task_history
        or any(e.kind in _TOOL_EVENTS or e.kind.startswith("task_") for e in b.events or ())
        or any(
            step.tool is not None or getattr(step, "task", None) is not None
            for step in _pattern_steps(b)
        )
        for b in blocks
    )
    if tools and not checks_tools:
        found.append(
            f"nothing checks which tools the run called ({', '.join(tools)}): the same "
            "expectations pass for a run that calls none; add a trajectory with tool steps, "
            "never:, or events: of kind tool_call"
        )
    answered = any(
        getattr(content, "type", None) == "text" and getattr(content, "text", "")
        for e in events
        if e.kind == "model_response"
        for message in e.data.get("messages") or ()
        for content in getattr(message, "contents", ())
    )
    checks_text = any(
        b.response is not None
        or b.surfaced is not None
        or b.error is not None
        or any(step.says is not None for step in _pattern_steps(b))
        for b in blocks
    )
    if answered and not checks_text:
        found.append(
            "nothing checks what the agent answered: the same expectations pass whatever "
            "it says; add response:, surfaced: or a trajectory step with says:"
        )
    return found


#: the host steps whose removal must make some expectation fail (the others run the
#: parent, and a `run:` that changed nothing is reported apart)
STEP_WORDS = {
    "AdvanceStep": "advance",
    "ApprovalStep": "approval",
    "RestartStep": "restart",
    "ReleaseStep": "release_session",
}
