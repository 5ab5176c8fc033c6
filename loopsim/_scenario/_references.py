"""Checks across a validated scenario: names that must exist, tools offered, imports."""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .._errors import ScenarioError
from ._imports import UserCodeError, check_options, import_object
from ._limits import DEFAULT_LIMITS, ScenarioLimits, listing
from ._model import model_errors
from ._schema import (
    AgentSpec,
    ApprovalStep,
    CoordinatorPolicy,
    CustomEvaluatorSpec,
    RangeSpec,
    ReleaseStep,
    RunStep,
    Scenario,
    StepExpect,
    describe,
)
from ._schema._agents import hosted_name
from ._source import Loc, Located, combine, format_location
from ._vocabulary import BACKGROUND_TOOLS, conflict_errors, vocabulary_errors

__all__ = ["BACKGROUND_TOOLS", "check_references"]


def check_references(
    scenario: Scenario,
    where: Located,
    limits: ScenarioLimits = DEFAULT_LIMITS,
    folders: Sequence[Path] = (),
) -> None:
    """Raise the first cross-reference problem (every one found rides along on it).

    ``folders``: where ``module:Class`` evaluators are imported from (see ``_imports``).
    """
    problems = list(reference_errors(scenario, where, folders))
    if problems:
        raise combine(problems, limits)


def _fold(name: str) -> str:
    """The spelling names are compared by: one Unicode normal form (NFC), any case."""
    return unicodedata.normalize("NFC", name).casefold()


def _did_you_mean(name: str, choices: list[str]) -> str:
    folded = {_fold(c): c for c in choices}
    if _fold(name) in folded:
        same = folded[_fold(name)]
        return (
            f"; did you mean {describe(same)}? (the same letters, in another case or Unicode "
            "spelling)"
        )
    hint = difflib.get_close_matches(name, choices[:1000], n=1)
    return f"; did you mean {describe(hint[0])}?" if hint else ""


def reference_errors(
    scenario: Scenario, where: Located, folders: Sequence[Path] = ()
) -> Iterator[ScenarioError]:
    """Every cross-reference problem of a validated scenario, in document order."""
    names = list(scenario.agents)
    seen: dict[str, str] = {}
    for name in names:
        folded = _fold(name)
        if folded in seen:
            yield where.error(
                ("agents", name),
                f"duplicate agent name {describe(name)}: names are compared without case and "
                f"in one Unicode spelling (NFC), and {describe(seen[folded])} is already defined",
                expected="unique agent names",
            )
        seen[folded] = name

    def known(name: str, loc: Loc) -> Iterator[ScenarioError]:
        if name not in scenario.agents:
            yield where.error(
                loc,
                f"unknown agent {describe(name)}{_did_you_mean(name, names)} (defined agents: "
                f"{listing(names)})",
                expected="the name of an agent under `agents`",
            )

    parent = scenario.parent
    yield from known(parent.agent, ("parent", "agent"))
    children_seen: dict[str, int] = {}
    for index, child in enumerate(parent.background_agents):
        loc: Loc = ("parent", "background_agents", index)
        yield from known(child, loc)
        if child == parent.agent:
            yield where.error(
                loc,
                f"the parent {describe(child)} cannot be its own background agent",
                expected="a different agent",
            )
        if _fold(child) in children_seen:
            yield where.error(
                loc,
                f"duplicate background agent {describe(child)} (names are compared "
                "case-insensitively)",
                expected="each background agent once",
            )
        children_seen[_fold(child)] = index

    has_background = bool(parent.background_agents)
    parent_agent = scenario.agents.get(parent.agent)  # None: reported just above
    if (
        parent.harness
        and parent_agent is not None
        and parent_agent.function_invocation_configuration
    ):
        yield where.error(
            ("agents", parent.agent, "function_invocation_configuration"),
            "the harness parent keeps the default tool loop; this setting would be ignored",
            expected="function_invocation_configuration on non-harness agents only",
        )
    for name, agent in scenario.agents.items():
        yield from _check_agent(name, agent, scenario, where, is_parent=name == parent.agent)
    yield from model_errors(scenario, where, folders)

    if scenario.loop is not None:
        for index, evaluator in enumerate(scenario.loop.evaluators):
            chosen = evaluator.chosen
            loc = ("loop", "evaluators", index)
            if chosen.kind == "background_task_completion" and not has_background:
                yield where.error(
                    loc,
                    "background_task_completion needs background agents: list them in "
                    "parent.background_agents",
                    expected="parent.background_agents to be non-empty",
                )
            if isinstance(chosen, CustomEvaluatorSpec):
                try:
                    _check_import(
                        chosen.import_path,
                        chosen.options,
                        (*loc, chosen.import_path),
                        where,
                        folders,
                    )
                except ScenarioError as exc:
                    yield exc

    if scenario.loop is not None and scenario.loop.should_continue and not parent.harness:
        yield where.error(
            ("loop", "should_continue"),
            "should_continue is the harness's predicate loop: set parent.harness: true",
            expected="parent.harness: true",
        )
    if scenario.loop is not None and scenario.loop.should_continue and not has_background:
        yield where.error(
            ("loop", "should_continue"),
            "background_tasks_running needs background agents (parent.background_agents)",
            expected="parent.background_agents to be non-empty",
        )
    for index, step in enumerate(scenario.steps):
        if isinstance(step, ReleaseStep) and not has_background:
            yield where.error(
                ("steps", index),
                "release_session needs background agents (parent.background_agents)",
                expected="parent.background_agents to be non-empty",
            )
    if not any(type(step).__name__ == "RunStep" for step in scenario.steps):
        yield where.error(
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
        yield from _expect_errors(scenario, loc, expect, known, where)
        yield from vocabulary_errors(scenario, loc, expect, where)
    yield from conflict_errors(scenario, where)
    yield from _instant_errors(scenario, where)
    for key in ("expect", "always"):
        expect = getattr(scenario, key)
        elapsed = None if expect is None else expect.elapsed
        if (
            isinstance(elapsed, RangeSpec)
            and elapsed.min is not None
            and elapsed.max is not None
            and elapsed.min > elapsed.max
        ):
            yield where.error(
                (key, "elapsed"),
                f"inverted range: min {elapsed.min:g} > max {elapsed.max:g}, so no run can meet it",
                expected="min <= max",
            )
    if scenario.vary_settings is not None and not scenario.vary:
        yield where.error(
            ("vary_settings",),
            "vary_settings tune the draws of `vary:`, and this scenario varies nothing",
            expected="a `vary:` section, or no `vary_settings`",
        )
    if scenario.always is not None and scenario.always.transcript is not None:
        yield where.error(
            ("always", "transcript"),
            "a transcript snapshot is one run's transcript, and `always:` holds for every draw",
            expected="`transcript: snapshot` under `expect:` (the file as written)",
        )


def _expect_errors(
    scenario: Scenario, loc: Loc, expect: StepExpect, known: Any, where: Located
) -> Iterator[ScenarioError]:
    label = format_location(loc)
    for name in expect.calls or {}:
        if name not in scenario.agents and name != "judge":
            yield from known(name, (*loc, "calls", name))
    for key, what in (
        ("iterations", "iterations are counted by a loop"),
        ("stop_reason", "a stop reason is reported by a loop"),
    ):
        if getattr(expect, key) is not None and scenario.loop is None:
            yield where.error(
                (*loc, key),
                f"{what}, and this scenario has no `loop`",
                expected=f"a `loop:` section, or no `{label}.{key}`",
            )
    yield from _tool_error_names(scenario, loc, expect, known, where)
    if not scenario.parent.background_agents:
        for key in ("tasks", "task_counts", "task_history"):
            if getattr(expect, key) is not None:
                yield where.error(
                    (*loc, key),
                    "task statuses need background agents (parent.background_agents)",
                    expected="parent.background_agents to be non-empty",
                )


def _tool_error_names(
    scenario: Scenario, loc: Loc, expect: StepExpect, known: Any, where: Located
) -> Iterator[ScenarioError]:
    """The agents and tools a ``tool_errors`` item names exist (a factory's or a real
    model's agent has tools of its own: its names are not checked here)."""
    if not isinstance(expect.tool_errors, list):
        return
    tools = {name for agent in scenario.agents.values() for name in agent.tools}
    if scenario.parent.background_agents:
        tools |= set(BACKGROUND_TOOLS)
    own_tools = any(a.factory is not None or a.model is not None for a in scenario.agents.values())
    for index, item in enumerate(expect.tool_errors):
        if item.agent is not None:
            yield from known(item.agent, (*loc, "tool_errors", index, "agent"))
        if item.tool is not None and item.tool not in tools and not own_tools:
            choices = sorted(tools)
            yield where.error(
                (*loc, "tool_errors", index, "tool"),
                f"no agent offers a tool {describe(item.tool)}"
                f"{_did_you_mean(item.tool, choices)} (tools: {listing(choices) or 'none'})",
                expected="a tool declared under agents.<name>.tools",
            )


def _instant_errors(scenario: Scenario, where: Located) -> Iterator[ScenarioError]:
    """Steps with an instant (``at:`` / ``until:``) come in time order."""
    latest: tuple[float, int] | None = None
    for index, step in enumerate(scenario.steps):
        at = getattr(step, "at", None)
        if at is None:
            continue
        if latest is not None and at < latest[0]:
            yield where.error(
                ("steps", index),
                f"this step happens at t={at:g}s, before step {latest[1] + 1} at "
                f"t={latest[0]:g}s: steps with an instant must come in time order",
                expected=f"an instant >= {latest[0]:g}",
            )
            continue
        latest = (at, index)


def _check_agent(
    name: str, agent: AgentSpec, scenario: Scenario, where: Located, *, is_parent: bool
) -> Iterator[ScenarioError]:
    parent = scenario.parent
    if agent.policy is not None:
        chosen = agent.policy.chosen
        if isinstance(chosen, CoordinatorPolicy):
            if not is_parent or not parent.background_agents:
                yield where.error(
                    ("agents", name, "policy"),
                    "the coordinator policy is for the parent agent, and needs "
                    "parent.background_agents",
                    expected="this agent to be parent.agent, with background agents",
                )
            for index, child in enumerate(chosen.children or ()):
                if child not in parent.background_agents:
                    yield where.error(
                        ("agents", name, "policy", "coordinator", "children", index),
                        f"unknown background agent {describe(child)}; the parent's background "
                        f"agents are: {listing(parent.background_agents)}",
                        expected="a name from parent.background_agents",
                    )
    offered = set(agent.tools)
    if is_parent and parent.background_agents:
        offered |= set(BACKGROUND_TOOLS)
    yield from _hosted_references(name, agent, where, harness=is_parent and parent.harness)
    for index, turn in enumerate(agent.script or ()):
        for call_index, call in enumerate(turn.calls):
            if turn.kind == "approval_request":
                call_loc: Loc = ("agents", name, "script", index, "approval_request", "name")
                if call.name in agent.tools and not agent.tools[call.name].approval_required:
                    yield where.error(
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
                yield where.error(
                    (*call_loc, "name"),
                    f"unknown tool {describe(call.name)}{_did_you_mean(call.name, choices)} "
                    f"(tools of agent {name}: {listing(choices) or 'none'})",
                    expected=f"a tool declared under agents.{name}.tools"
                    + (" or a background_agents_* tool" if is_parent else ""),
                )


def _hosted_references(
    name: str, agent: AgentSpec, where: Located, *, harness: bool
) -> Iterator[ScenarioError]:
    """Each scripted hosted call names a hosted tool the agent offers (a harness parent
    offers web_search, as upstream's harness does)."""
    if agent.factory is not None:  # a factory's agent has its own tools
        return
    hosted = [hosted_name(d) for d in agent.hosted_tools]
    if harness:
        hosted.append("web_search")
    for index, turn in enumerate(agent.script or ()):
        many = isinstance(turn.hosted_call, list)
        for call_index, call in enumerate(turn.hosted_calls):
            if call.tool in hosted:
                continue
            loc: Loc = ("agents", name, "script", index, "hosted_call")
            if many:
                loc = (*loc, call_index)
            choices = sorted(set(hosted))
            yield where.error(
                (*loc, "tool"),
                f"agent {name} offers no hosted tool {describe(call.tool)}"
                f"{_did_you_mean(call.tool, choices)} (its hosted tools: "
                f"{listing(choices) or 'none'})",
                expected=f"a hosted tool listed under agents.{name}.hosted_tools",
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
