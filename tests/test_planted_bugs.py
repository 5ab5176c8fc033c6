"""Planted bugs: each is a small edit of loopsim's own loop, evaluator, middleware, agent or
background code, and the shipped scenario (``scenarios/``) that must catch it.

The shipped scenarios are the executable spec: a bug a user could observe must fail one
of them, not only a unit test. Each row below names the function it edits (the source is
recompiled with one snippet replaced, the way a mutation tester works), the scenario and
the expectation key that catches it. A row whose scenario is None is a known survivor,
with the reason; the catch rate must stay at nine in ten or better.
"""

from __future__ import annotations

import importlib
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopsim._scenario import load_scenario
from loopsim._scenario._result import run_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


@dataclass(frozen=True)
class Bug:
    """One planted bug: in ``target`` (``module:Qualified.name``) ``old`` becomes ``new``;
    ``value`` instead replaces an attribute. ``scenario`` and ``key`` say what catches it."""

    name: str
    target: str
    old: str = ""
    new: str = ""
    value: Any = None
    scenario: str | None = None
    key: str = ""
    survives_because: str = ""


L = "loopsim._loop._agent"
E = "loopsim._loop._engine"
M = "loopsim._loop._middleware"
V = "loopsim._loop._evaluators"
A = "loopsim._agents._agent"
R = "loopsim._agents._run_state"
P = "loopsim._background._provider"
C = "loopsim._background._completion"

BUGS = (
    # -- the survivors the issue listed first ----------------------------------------------
    Bug(
        "default cap is 11, not 10",
        f"{L}:LoopAgent.DEFAULT_MAX_ITERATIONS",
        value=11,
        scenario="default_cap",
        key="expect.stop_reason",
    ),
    Bug(
        "the middleware ignores its max_iterations",
        f"{M}:AgentLoopMiddleware.process",
        "max_iterations=self.max_iterations,",
        "max_iterations=None,",
        scenario="predicate_cap",
        key="expect.trajectory",
    ),
    Bug(
        "a running task may be continued",
        f"{P}:BackgroundAgentsProvider._continue_task",
        "if status == _RUNNING:",
        "if False:",
        scenario="running_task_refusals",
        key="expect.trajectory",
    ),
    Bug(
        "a running task may be cleared",
        f"{P}:BackgroundAgentsProvider._clear_task",
        'if record["status"] == _RUNNING:',
        "if False:",
        scenario="running_task_refusals",
        key="expect.trajectory",
    ),
    Bug(
        "usage of a run's model calls is not summed (the last one wins)",
        f"{R}:RunState.received",
        "self.usage = usage if self.usage is None else self.usage + usage",
        "self.usage = usage",
        scenario="tool_calls",
        key="expect.usage.input_tokens",
    ),
    Bug(
        "the completion marker is not filled into the feedback",
        f"{V}:CompletionMarkerLoopEvaluator.__init__",
        "template.replace(\n        self.COMPLETION_MARKER_PLACEHOLDER, completion_marker\n    )",
        "template",
        scenario="completion_marker",
        key="expect.trajectory",
    ),
    Bug(
        "the nudge and the background feedback miscount the running tasks",
        f"{C}:_render",
        "str(len(tasks))",
        "str(len(tasks) + 1)",
        scenario="harness_predicate",
        key="expect.trajectories[0]",
    ),
    Bug(
        "the background feedback swaps a task's agent and description",
        f"{C}:_render",
        "({agent}): {description}",
        "({description}): {agent}",
        scenario="background_loop_evaluator",
        key="expect.trajectory",
    ),
    Bug(
        "feedback is not written on behalf of the named author",
        f"{L}:_EvaluatorPolicy._authored",
        "self.agent.on_behalf_of_author_name",
        "None",
        scenario="on_behalf_of",
        key="expect.trajectory",
    ),
    Bug(
        "fresh context: the new session is not put in place",
        f"{L}:_EvaluatorPolicy.step",
        "        run.session = session\n",
        "",
        scenario="fresh_context_in_memory",
        key="expect.trajectory",
    ),
    # -- the loop and its evaluators -------------------------------------------------------
    Bug(
        "the cap lets one iteration more run",
        f"{E}:LoopRun.complete",
        "self.iteration >= self.max_iterations",
        "self.iteration > self.max_iterations",
        scenario="max_iterations_cap",
        key="expect.stop_reason",
    ),
    Bug(
        "evaluators after the first that continues are asked too",
        f"{L}:_EvaluatorPolicy.step",
        "            winner = evaluation\n            break\n",
        "            winner = winner or evaluation\n",
        scenario="evaluator_ordering",
        key="invariants",
    ),
    Bug(
        "the judge's gap analysis is left out of its feedback",
        f"{V}:AIJudgeLoopEvaluator.evaluate",
        "self.GAP_ANALYSIS_PLACEHOLDER, gap",
        'self.GAP_ANALYSIS_PLACEHOLDER, ""',
        scenario="ai_judge",
        key="expect.trajectory",
    ),
    Bug(
        "the judge's verdict is read the wrong way round",
        f"{V}:AIJudgeLoopEvaluator.evaluate",
        "answered = verdict.answered",
        "answered = not verdict.answered",
        scenario="ai_judge",
        key="expect.trajectory",
    ),
    # -- the agent's tool loop -------------------------------------------------------------
    Bug(
        "a tool that needs approval runs without it",
        f"{A}:Agent._requires_approval",
        'return found is not None and found.approval_mode == "always_require"',
        "return False",
        scenario="approval_never_bypassed",
        key="expect.never[0]",
    ),
    Bug(
        "a model turn's tool calls run last first",
        f"{A}:Agent._run_tools",
        "for call in calls]",
        "for call in reversed(calls)]",
        scenario="background_fast_first",
        key="expect.trajectory",
    ),
    # -- background agents -----------------------------------------------------------------
    Bug(
        "task ids skip a number",
        f"{P}:BackgroundAgentsProvider._start_task",
        'state["next_task_id"] = task_id + 1',
        'state["next_task_id"] = task_id + 2',
        scenario="background_fast_first",
        key="expect.trajectory",
    ),
    Bug(
        "a wait gives up after twice its timeout",
        f"{P}:BackgroundAgentsProvider._wait",
        "anyio.move_on_after(self._wait_timeout_seconds)",
        "anyio.move_on_after(2 * self._wait_timeout_seconds)",
        scenario="wait_timeout",
        key="expect.trajectory",
    ),
    Bug(
        "a task whose run died with the process stays running instead of lost",
        f"{P}:BackgroundAgentsProvider._refresh",
        "            if run is None:\n                self._set_status(session, record, _LOST)\n",
        "            if run is None:\n                continue\n",
        scenario="restart_lost_recovery",
        key="expect.trajectory",
    ),
    Bug(
        "a tool's exception is answered but not recorded as one it raised",
        f"{A}:Agent._call_tool",
        "raised = type(exc).__name__",
        "raised = None",
        scenario="tool_errors",
        key="expect.tool_errors[0].count",
    ),
)


def _owner_and_name(target: str) -> tuple[Any, str, Any]:
    module_name, qualified = target.split(":")
    module = importlib.import_module(module_name)
    owner: Any = module
    *path, name = qualified.split(".")
    for part in path:
        owner = getattr(owner, part)
    return module, name, owner


def _mutant(bug: Bug) -> tuple[Any, str, Any]:
    """(where, name, the planted value): the edited function, recompiled in its module.

    Snippets are matched in the dedented source (a method's body is indented 4 spaces)."""
    module, name, owner = _owner_and_name(bug.target)
    if bug.value is not None:
        return owner, name, bug.value
    original = inspect.getattr_static(owner, name)
    function = original.__func__ if isinstance(original, (staticmethod, classmethod)) else original
    source = textwrap.dedent(inspect.getsource(function))
    assert source.count(bug.old) == 1, f"{bug.name}: the snippet must occur once in {bug.target}"
    code = compile(source.replace(bug.old, bug.new), inspect.getsourcefile(function) or "?", "exec")
    namespace = dict(vars(module))
    exec(code, namespace)  # noqa: S102 - our own source, edited by this table
    return owner, name, namespace[name]


def _locations(scenario: str) -> list[str]:
    loaded = load_scenario(SCENARIOS / f"{scenario}.loopsim.yaml")
    result = run_scenario(loaded, engine="loopsim")
    return [f.location or "" for f in result.failures]


@pytest.mark.parametrize("bug", [b for b in BUGS if b.scenario is not None], ids=lambda b: b.name)
def test_a_shipped_scenario_catches_the_planted_bug(
    bug: Bug, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert bug.scenario is not None
    assert _locations(bug.scenario) == [], "the scenario passes on the code as it is"
    owner, name, planted = _mutant(bug)
    monkeypatch.setattr(owner, name, planted)
    caught = _locations(bug.scenario)
    assert any(
        loc == bug.key or loc.startswith((f"{bug.key} ", f"{bug.key}.")) for loc in caught
    ), f"{bug.scenario} did not catch {bug.name!r} at {bug.key} (failures at: {caught})"


@pytest.mark.parametrize("bug", [b for b in BUGS if b.scenario is None], ids=lambda b: b.name)
def test_a_known_survivor_says_why_and_still_survives(
    bug: Bug, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A survivor that a shipped scenario starts to catch should move up into the table.
    assert bug.survives_because
    owner, name, planted = _mutant(bug)
    monkeypatch.setattr(owner, name, planted)
    caught = {
        path.name: _locations(path.name.removesuffix(".loopsim.yaml"))
        for path in sorted(SCENARIOS.glob("*.loopsim.yaml"))
        if not path.name.startswith("vary_")
    }
    assert not any(caught.values()), f"now caught: {[k for k, v in caught.items() if v]}"


def test_nine_in_ten_planted_bugs_are_caught() -> None:
    caught = sum(1 for bug in BUGS if bug.scenario is not None)
    assert len(BUGS) >= 15
    assert caught / len(BUGS) >= 0.9
