"""Expectations know their vocabulary: ``events.where`` values that can occur, and keys
that ``expect:`` and ``always:`` set against each other.

A misspelt value (``reason: max-iterations``, ``status: Lost``) matches no event, so
``count: 0`` on it would pass on any run: it is a located error with the closest name,
found when the file loads.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from .._clients._faults import FAULT_KINDS
from .._errors import ScenarioError
from ._schema import Scenario, StepExpect, describe
from ._source import Loc, Located

#: the tools a parent with background agents offers (names as upstream's provider has them)
BACKGROUND_TOOLS = (
    "background_agents_start_task",
    "background_agents_wait_for_first_completion",
    "background_agents_get_task_results",
    "background_agents_get_all_tasks",
    "background_agents_continue_task",
    "background_agents_clear_completed_task",
)

__all__ = ["conflict_errors", "vocabulary_errors"]

_STOP_REASONS = ("evaluators_stopped", "max_iterations", "approval_pending", "error", "cancelled")
_TASK_STATUSES = ("running", "completed", "failed", "lost", "cleared")
_OUTCOMES = ("completed", "failed", "cancelled")
_DECISIONS = ("continue", "stop")
#: (kind or None for every kind, field) → the values that can occur
_FIXED: dict[tuple[str | None, str], tuple[str, ...]] = {
    ("loop_stop", "reason"): _STOP_REASONS,
    ("task_status", "status"): _TASK_STATUSES,
    ("task_finished", "outcome"): _OUTCOMES,
    ("evaluator_decision", "decision"): _DECISIONS,
    ("fault", "fault"): FAULT_KINDS,
}
#: kinds whose ``agent`` is a scenario agent's name as loopsim labels it
_AGENT_KINDS = frozenset(
    {
        "model_request",
        "model_response",
        "model_error",
        "tool_call",
        "tool_result",
        "tool_round_limit",
        "session_created",
        "session_restored",
        "fault",
    }
)
#: kinds whose ``agent`` is a background agent's name as the model typed it (any case)
_TASK_KINDS = frozenset({"task_status", "task_finished"})
_TOOL_FIELDS = frozenset({("tool_call", "name"), ("tool_result", "name"), ("fault", "tool")})


def _closest(value: str, choices: tuple[str, ...] | list[str]) -> str:
    folded = {c.casefold(): c for c in choices}
    if value.casefold() in folded:
        return f"; did you mean {describe(folded[value.casefold()])}?"
    near = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.5)
    if not near:
        near = difflib.get_close_matches(value.replace("-", "_"), list(choices), n=1)
    return f"; did you mean {describe(near[0])}?" if near else ""


def _tools(scenario: Scenario) -> list[str] | None:
    """Every tool name a run can call, or None when code decides (factory, real model)."""
    names: list[str] = []
    for agent in scenario.agents.values():
        if agent.factory is not None or agent.model is not None:
            return None
        names.extend(agent.tools)
    if scenario.parent.background_agents:
        names.extend(BACKGROUND_TOOLS)
    return sorted(set(names))


#: the finish reasons upstream names (``FinishReasonLiteral``); a script may set others
_FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter")


def _answer_values(scenario: Scenario, name: str) -> list[str] | None:
    """Every ``name`` (``finish_reason``, ``model``) a run's answers can set, or None when
    something other than the file's scripts answers (factory, real model) or a ``vary:``
    draw may change them."""
    if scenario.vary:
        return None
    values = list(_FINISH_REASONS) if name == "finish_reason" else []
    for agent in scenario.agents.values():
        if agent.factory is not None or agent.model is not None:
            return None
        values.extend(getattr(turn, name) for turn in agent.script or () if getattr(turn, name))
    return sorted(set(values))


def vocabulary_errors(
    scenario: Scenario, loc: Loc, expect: StepExpect, where: Located
) -> Iterator[ScenarioError]:
    """A located error for each ``events[i].where`` value that no event can carry."""
    agents = [*scenario.agents, "judge"]
    children = list(scenario.parent.background_agents)
    tools = _tools(scenario)
    for index, counted in enumerate(expect.events or ()):
        for name, value in counted.where.items():
            if not isinstance(value, str):
                continue
            choices: tuple[str, ...] | list[str] | None = _FIXED.get((counted.kind, name))
            what = f"a {name} of {counted.kind} events"
            if name == "agent" and counted.kind in _AGENT_KINDS:
                choices, what = agents, "an agent of this scenario"
            elif name == "agent" and counted.kind in _TASK_KINDS:
                if value.casefold() in {c.casefold() for c in children}:
                    continue  # the model may type a background agent's name in any case
                choices, what = children, "a background agent of this scenario"
            elif (counted.kind, name) in _TOOL_FIELDS:
                choices, what = tools, "a tool of this scenario"
            elif counted.kind == "model_response" and name in ("finish_reason", "model"):
                choices = _answer_values(scenario, name)
                what = f"a {name} that an answer of this scenario can have"
            if choices is None or value in choices:
                continue
            shown = ", ".join(choices) if choices else "none"
            yield where.error(
                (*loc, "events", index, "where", name),
                f"{describe(value)} is not {what}, so no event matches it and a count of "
                f"it checks nothing{_closest(value, choices)} (it can be: {shown})",
                expected=f"one of: {shown}",
            )


#: keys whose one value holds for the whole run: set in both blocks, they must agree
_SCALARS = ("iterations", "stop_reason", "error", "elapsed", "unused_turns", "invariants")
_MAPPINGS = ("calls", "tasks", "task_counts")


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    dump = getattr(value, "model_dump", None)
    return str(dump(exclude_none=True)) if callable(dump) else str(value)


def _disagree(key: str, mine: Any, theirs: Any) -> bool:
    if key != "elapsed":
        return _shown(mine) != _shown(theirs)
    # a time and a range (or two ranges) agree when some elapsed time meets both
    low = max(_bound(mine, "min", 0.0), _bound(theirs, "min", 0.0))
    high = min(_bound(mine, "max", float("inf")), _bound(theirs, "max", float("inf")))
    return low > high + 1e-6


def _bound(value: Any, side: str, default: float) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    found = getattr(value, side, None)
    return default if found is None else float(found)


def conflict_errors(scenario: Scenario, where: Located) -> Iterator[ScenarioError]:
    """A located error for each key ``expect:`` and ``always:`` both set, differently.

    Both blocks hold for the file's own run, so two values of one key cannot both pass
    (and of the flags only one would take effect, silently).
    """
    expect, always = scenario.expect, scenario.always
    if expect is None or always is None:
        return
    both = expect.model_fields_set & always.model_fields_set
    for key in _SCALARS:
        mine, theirs = getattr(expect, key), getattr(always, key)
        if key in both and _disagree(key, mine, theirs):
            yield where.error(
                ("always", key),
                f"always.{key} is {_shown(theirs)} but expect.{key} is {_shown(mine)}: both "
                "blocks hold for the file's own run, so they cannot both be meant",
                expected=f"one value of {key} (or the key in one block only)",
            )
    for key in _MAPPINGS:
        if key not in both:
            continue
        mine, theirs = getattr(expect, key) or {}, getattr(always, key) or {}
        for name in [n for n in theirs if n in mine and mine[n] != theirs[n]]:
            yield where.error(
                ("always", key, name),
                f"always.{key}.{name} is {theirs[name]} but expect.{key}.{name} is "
                f"{mine[name]}: both blocks hold for the file's own run",
                expected=f"one value of {key}.{name}",
            )
