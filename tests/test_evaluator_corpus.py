"""A score to keep: buggy evaluators people really write, each in both forms (a
LoopEvaluator and an agent_framework should_continue predicate), all caught by
check_evaluator; correct ones pass."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

import loopsim
from loopsim.testing import check_evaluator

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

Stop = loopsim.LoopEvaluation.stop
Again = loopsim.LoopEvaluation.continue_with_feedback


def _text(context: loopsim.LoopContext) -> str:
    return context.last_response.text


def _last(kwargs: dict[str, Any]) -> str:
    return str(kwargs["last_result"].text or "")


async def _is_done(text: str) -> bool:
    return "DONE" in text


# -- LoopEvaluator form ---------------------------------------------------------------------


class StopsImmediately(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        return Stop()  # an early return left in


class ForgetsAwait(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        if _is_done(_text(context)):  # type: ignore[truthy-bool]  # the bug
            return Stop()
        return Again("go on")


class WallClock(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        if "DONE" in _text(context) or dt.datetime.now(dt.UTC).second >= 30:
            return Stop()
        return Again("go on")


class WrongCase(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        if "done" in _text(context).lower():
            return Stop()
        return Again("go on")


class RandomStop(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        if "DONE" in _text(context) and random.random() < 0.5:  # noqa: S311 - the bug
            return Stop()
        return Again("go on")


class StateOnSelf(loopsim.LoopEvaluator):
    def __init__(self) -> None:
        self.seen = 0

    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        self.seen += 1
        if "DONE" in _text(context) or self.seen > 2:
            return Stop()
        return Again("go on")


class Mutates(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        context.session.state["checked"] = True
        return Stop() if "DONE" in _text(context) else Again("go on")


class FirstMessage(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        text = context.last_response.messages[0].text  # raises on an empty response
        return Stop() if "DONE" in text else Again("go on")


class NeverStops(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        return Again("go on")


# -- should_continue form -------------------------------------------------------------------


def p_stops_immediately(**kwargs: Any) -> bool:
    return False


def p_forgets_await(**kwargs: Any) -> bool:
    return not _is_done(_last(kwargs))  # type: ignore[truthy-bool]  # the bug


def p_wall_clock(**kwargs: Any) -> bool:
    late = dt.datetime.now(dt.UTC).second >= 30
    return "DONE" not in _last(kwargs) and not late


def p_wrong_case(**kwargs: Any) -> bool:
    return "done" not in _last(kwargs).lower()


def p_random(**kwargs: Any) -> bool:
    return "DONE" not in _last(kwargs) or random.random() < 0.5  # noqa: S311


_SEEN: list[int] = []


def p_state_on_module(**kwargs: Any) -> bool:
    _SEEN.append(1)
    return "DONE" not in _last(kwargs) and len(_SEEN) % 3 != 0


def p_mutates(**kwargs: Any) -> bool:
    kwargs["session"].state["checked"] = True
    return "DONE" not in _last(kwargs)


def p_first_message(**kwargs: Any) -> bool:
    return "DONE" not in kwargs["last_result"].messages[0].text


def p_never_stops(**kwargs: Any) -> bool:
    return True


# -- the tenth kind: ignores pending background tasks (checked with a background rule) ---


class IgnoresBackground(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        return Stop() if "DONE" in _text(context) else Again("go on")  # tasks never asked


def p_ignores_background(**kwargs: Any) -> bool:
    return "DONE" not in _last(kwargs)


BUGGY: list[tuple[str, Any, Any, str]] = [
    ("stops-immediately", StopsImmediately, p_stops_immediately, "keeps_going"),
    ("forgets-await", ForgetsAwait, p_forgets_await, "returns_evaluation"),
    ("wall-clock", WallClock, p_wall_clock, "deterministic"),
    ("wrong-case", WrongCase, p_wrong_case, "keeps_going"),
    ("random", RandomStop, p_random, "deterministic"),
    ("state-on-self", StateOnSelf, p_state_on_module, "deterministic"),
    ("mutates", Mutates, p_mutates, "no_mutation"),
    ("first-message", FirstMessage, p_first_message, "odd_responses"),
    ("never-stops", NeverStops, p_never_stops, "lets_loop_stop"),
    ("ignores-background", IgnoresBackground, p_ignores_background, "waits_for_background"),
]
#: the rule a kind is checked under (the user says it: --background-rule)
RULES = {"ignores-background": "wait-for-running"}


@pytest.mark.parametrize("form", ["evaluator", "predicate"])
@pytest.mark.parametrize(
    ("kind", "evaluator", "predicate", "check"), BUGGY, ids=[b[0] for b in BUGGY]
)
def test_every_buggy_evaluator_is_caught(
    form: str, kind: str, evaluator: Any, predicate: Any, check: str
) -> None:
    target = evaluator if form == "evaluator" else predicate
    # only the check that should catch it: the same code as a full run, at a fraction of
    # the time (the correct ones below run every check)
    rule = RULES.get(kind, "none")
    report = check_evaluator(target, max_examples=15, background_rule=rule, checks=[check])
    assert [c.name for c in report.failed] == [check], report.render()
    if form == "predicate":
        assert "LoopEvaluation" not in (report[check].problem or ""), report.render()


# -- correct ones ---------------------------------------------------------------------------


class Marker(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        return Stop() if "DONE" in _text(context) else Again("say DONE when done")


class AwaitsHelper(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        return Stop() if await _is_done(_text(context)) else Again("go on")


class CountsInContext(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        seen = context.additional_properties.setdefault("seen", 0)
        context.additional_properties["seen"] = seen + 1
        return Stop() if "DONE" in _text(context) else Again(f"pass {context.iteration}")


def p_marker(**kwargs: Any) -> bool:
    return "DONE" not in _last(kwargs)


async def p_async_marker(**kwargs: Any) -> tuple[bool, str | None]:
    done = await _is_done(_last(kwargs))
    return (not done, None if done else "say DONE when done")


def p_marker_words(last_result: Any, **_: Any) -> bool:
    return "DONE" not in str(last_result.text or "").split()


CORRECT = [Marker, AwaitsHelper, CountsInContext, p_marker, p_async_marker, p_marker_words]


@pytest.mark.parametrize("target", CORRECT, ids=lambda t: t.__name__)
def test_correct_evaluators_pass(target: Any) -> None:
    check_evaluator(target, max_examples=15).assert_ok()


# -- correct background-aware ones, under each rule -----------------------------------------


class MarkerAndTasks(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        provider = context.agent.get_service(loopsim.BackgroundAgentsProvider)
        if provider is not None and provider.incomplete_tasks(context.session):
            return Again("wait for your background tasks")
        return Stop() if "DONE" in _text(context) else Again("say DONE when done")


def p_marker_and_tasks(**kwargs: Any) -> bool:
    import agent_framework as af

    return af.background_tasks_running()(**kwargs) or "DONE" not in _last(kwargs)


def _af_tasks_running() -> Any:
    import agent_framework as af

    return af.background_tasks_running()


BACKGROUND_CORRECT: list[tuple[str, Any, str]] = [
    ("marker-and-tasks", MarkerAndTasks, "wait-for-running"),
    ("p-marker-and-tasks", p_marker_and_tasks, "wait-for-running"),
    ("builtin", loopsim.BackgroundTaskCompletionLoopEvaluator, "same-as-builtin"),
    ("af-background-tasks-running", _af_tasks_running(), "same-as-builtin"),
]


@pytest.mark.parametrize(
    ("target", "rule"),
    [b[1:] for b in BACKGROUND_CORRECT],
    ids=[b[0] for b in BACKGROUND_CORRECT],
)
def test_correct_background_evaluators_pass(target: Any, rule: str) -> None:
    report = check_evaluator(target, max_examples=15, background_rule=rule)
    report.assert_ok()
    assert "waits_for_background" in {c.name for c in report.checks}


def test_same_as_builtin_flags_going_on_without_running_tasks() -> None:
    # a marker-and-tasks evaluator is correct under wait-for-running, but goes on for a
    # reply without the marker when no task runs: not the built-in's rule
    report = check_evaluator(
        MarkerAndTasks,
        max_examples=15,
        background_rule="same-as-builtin",
        checks=["waits_for_background"],
    )
    (found,) = report.failed
    assert "no background task is running" in (found.problem or ""), report.render()
