"""Checks across a validated scenario: names that must exist, tools offered, imports."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._imports import UserCodeError, check_options, import_object
from ._schema import (
    AgentSpec,
    ApprovalStep,
    CoordinatorPolicy,
    CustomEvaluatorSpec,
    ReleaseStep,
    RunStep,
    Scenario,
    StepExpect,
    describe,
)
from ._source import Loc, Located, format_location

__all__ = ["BACKGROUND_TOOLS", "check_references"]

BACKGROUND_TOOLS = (
    "background_agents_start_task",
    "background_agents_wait_for_first_completion",
    "background_agents_get_task_results",
    "background_agents_get_all_tasks",
    "background_agents_continue_task",
    "background_agents_clear_completed_task",
)


def check_references(scenario: Scenario, where: Located, folders: Sequence[Path] = ()) -> None:
    names = list(scenario.agents)
    seen: dict[str, str] = {}
    for name in names:
        folded = name.casefold()
        if folded in seen:
            raise where.error(
                ("agents", name),
                f"duplicate agent name {describe(name)}: names are compared case-insensitively "
                f"and {describe(seen[folded])} is already defined",
                expected="unique agent names",
            )
        seen[folded] = name

    def known(name: str, loc: Loc) -> None:
        if name not in scenario.agents:
            hint = difflib.get_close_matches(name, names, n=1)
            more = f"; did you mean {describe(hint[0])}?" if hint else ""
            raise where.error(
                loc,
                f"unknown agent {describe(name)}{more} (defined agents: {', '.join(names)})",
                expected="the name of an agent under `agents`",
            )

    parent = scenario.parent
    known(parent.agent, ("parent", "agent"))
    children_seen: dict[str, int] = {}
    for index, child in enumerate(parent.background_agents):
        loc: Loc = ("parent", "background_agents", index)
        known(child, loc)
        if child == parent.agent:
            raise where.error(
                loc,
                f"the parent {describe(child)} cannot be its own background agent",
                expected="a different agent",
            )
        if child.casefold() in children_seen:
            raise where.error(
                loc,
                f"duplicate background agent {describe(child)} (names are compared "
                "case-insensitively)",
                expected="each background agent once",
            )
        children_seen[child.casefold()] = index

    has_background = bool(parent.background_agents)
    if parent.harness and scenario.agents[parent.agent].function_invocation_configuration:
        raise where.error(
            ("agents", parent.agent, "function_invocation_configuration"),
            "the harness parent keeps the default tool loop; this setting would be ignored",
            expected="function_invocation_configuration on non-harness agents only",
        )
    for name, agent in scenario.agents.items():
        _check_agent(name, agent, scenario, where, is_parent=name == parent.agent)

    if scenario.loop is not None:
        for index, evaluator in enumerate(scenario.loop.evaluators):
            chosen = evaluator.chosen
            loc = ("loop", "evaluators", index)
            if chosen.kind == "background_task_completion" and not has_background:
                raise where.error(
                    loc,
                    "background_task_completion needs background agents: list them in "
                    "parent.background_agents",
                    expected="parent.background_agents to be non-empty",
                )
            if isinstance(chosen, CustomEvaluatorSpec):
                _check_import(
                    chosen.import_path,
                    chosen.options,
                    (*loc, chosen.import_path),
                    where,
                    folders,
                )

    if scenario.loop is not None and scenario.loop.should_continue and not parent.harness:
        raise where.error(
            ("loop", "should_continue"),
            "should_continue is the harness's predicate loop: set parent.harness: true",
            expected="parent.harness: true",
        )
    if scenario.loop is not None and scenario.loop.should_continue and not has_background:
        raise where.error(
            ("loop", "should_continue"),
            "background_tasks_running needs background agents (parent.background_agents)",
            expected="parent.background_agents to be non-empty",
        )
    for index, step in enumerate(scenario.steps):
        if isinstance(step, ReleaseStep) and not has_background:
            raise where.error(
                ("steps", index),
                "release_session needs background agents (parent.background_agents)",
                expected="parent.background_agents to be non-empty",
            )
    if not any(type(step).__name__ == "RunStep" for step in scenario.steps):
        raise where.error(
            ("steps",), "the steps never run the parent", expected="at least one `run:` step"
        )

    blocks: list[tuple[Loc, StepExpect]] = [
        ((key,), getattr(scenario, key))
        for key in ("expect", "always")
        if getattr(scenario, key) is not None
    ]
    blocks.extend(
        (("steps", index, "expect"), step.expect)
        for index, step in enumerate(scenario.steps)
        if isinstance(step, (RunStep, ApprovalStep)) and step.expect is not None
    )
    for loc, expect in blocks:
        _check_expect(scenario, loc, expect, known, where)
    _check_instants(scenario, where)
    if scenario.always is not None and scenario.always.transcript is not None:
        raise where.error(
            ("always", "transcript"),
            "a transcript snapshot is one run's transcript, and `always:` holds for every draw",
            expected="`transcript: snapshot` under `expect:` (the file as written)",
        )


def _check_expect(
    scenario: Scenario, loc: Loc, expect: StepExpect, known: Any, where: Located
) -> None:
    label = format_location(loc)
    for name in expect.calls or {}:
        if name not in scenario.agents and name != "judge":
            known(name, (*loc, "calls", name))
    for key, what in (
        ("iterations", "iterations are counted by a loop"),
        ("stop_reason", "a stop reason is reported by a loop"),
    ):
        if getattr(expect, key) is not None and scenario.loop is None:
            raise where.error(
                (*loc, key),
                f"{what}, and this scenario has no `loop`",
                expected=f"a `loop:` section, or no `{label}.{key}`",
            )
    if not scenario.parent.background_agents:
        for key in ("tasks", "task_counts", "task_history"):
            if getattr(expect, key) is not None:
                raise where.error(
                    (*loc, key),
                    "task statuses need background agents (parent.background_agents)",
                    expected="parent.background_agents to be non-empty",
                )


def _check_instants(scenario: Scenario, where: Located) -> None:
    """Steps with an instant (``at:`` / ``until:``) come in time order."""
    latest: tuple[float, int] | None = None
    for index, step in enumerate(scenario.steps):
        at = getattr(step, "at", None)
        if at is None:
            continue
        if latest is not None and at < latest[0]:
            raise where.error(
                ("steps", index),
                f"this step happens at t={at:g}s, before step {latest[1] + 1} at "
                f"t={latest[0]:g}s: steps with an instant must come in time order",
                expected=f"an instant >= {latest[0]:g}",
            )
        latest = (at, index)


def _check_agent(
    name: str, agent: AgentSpec, scenario: Scenario, where: Located, *, is_parent: bool
) -> None:
    parent = scenario.parent
    if agent.policy is not None:
        chosen = agent.policy.chosen
        if isinstance(chosen, CoordinatorPolicy):
            if not is_parent or not parent.background_agents:
                raise where.error(
                    ("agents", name, "policy"),
                    "the coordinator policy is for the parent agent, and needs "
                    "parent.background_agents",
                    expected="this agent to be parent.agent, with background agents",
                )
            for index, child in enumerate(chosen.children or ()):
                if child not in parent.background_agents:
                    raise where.error(
                        ("agents", name, "policy", "coordinator", "children", index),
                        f"unknown background agent {describe(child)}; the parent's background "
                        f"agents are: {', '.join(parent.background_agents)}",
                        expected="a name from parent.background_agents",
                    )
    offered = set(agent.tools)
    if is_parent and parent.background_agents:
        offered |= set(BACKGROUND_TOOLS)
    for index, turn in enumerate(agent.script or ()):
        for call_index, call in enumerate(turn.calls):
            if turn.kind == "approval_request":
                call_loc: Loc = ("agents", name, "script", index, "approval_request", "name")
                if call.name in agent.tools and not agent.tools[call.name].approval_required:
                    raise where.error(
                        call_loc,
                        f"tool {describe(call.name)} does not require approval, so the agent "
                        "would run it instead of asking",
                        expected=f"approval_required: true on tools.{call.name}",
                    )
                continue
            many = isinstance(turn.tool_call, list)
            call_loc = ("agents", name, "script", index, "tool_call")
            if many:
                call_loc = (*call_loc, call_index)
            if call.name not in offered and agent.factory is None:  # a factory has its own
                choices = sorted(offered)
                hint = difflib.get_close_matches(call.name, choices, n=1)
                more = f"; did you mean {describe(hint[0])}?" if hint else ""
                raise where.error(
                    (*call_loc, "name"),
                    f"unknown tool {describe(call.name)}{more} (tools of agent {name}: "
                    f"{', '.join(choices) or 'none'})",
                    expected=f"a tool declared under agents.{name}.tools"
                    + (" or a background_agents_* tool" if is_parent else ""),
                )


def _check_import(
    import_path: str, options: dict[str, Any], loc: Loc, where: Located, folders: Sequence[Path]
) -> None:
    from .._loop import LoopEvaluator  # noqa: PLC0415 - the loop layer is only needed here

    try:
        target = import_object(import_path, folders)
    except UserCodeError as exc:
        raise where.error(
            loc,
            str(exc),
            expected="module:Class naming an importable LoopEvaluator subclass",
        ) from None
    if not (isinstance(target, type) and issubclass(target, LoopEvaluator)):
        raise where.error(
            loc,
            f"{import_path} is not a LoopEvaluator subclass",
            expected="module:Class naming a LoopEvaluator subclass",
        )
    problem = check_options(target, options)
    if problem is not None:
        key, message = problem
        raise where.error(
            loc if key is None else (*loc, key),
            f"{import_path}: {message}",
            expected=f"keyword arguments {target.__name__} accepts",
        )
