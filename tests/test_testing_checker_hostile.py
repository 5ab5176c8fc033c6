# Evaluators that misbehave on purpose (busy loops, blocking sleeps, BaseExceptions).
# ruff: noqa: ASYNC110, ASYNC115, ASYNC251
"""check_evaluator and ``loopsim check-evaluator`` against hostile evaluators (issue 14,
items 5 and 6): a BaseException from ``evaluate`` is a named finding, never the end of
the process or an exit 0; a slow or busy evaluator ends the checks within a bound and the
report never says "passed" for a check that did not run.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from _cli import loopsim_cli

import loopsim
from loopsim.testing import CHECKS, EvaluatorReport, check_evaluator

_REAL = (time.perf_counter,)


class Exits(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        sys.exit(0)


class Interrupts(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        raise KeyboardInterrupt


class Cancels(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        raise asyncio.CancelledError


class Spins(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        while True:
            await anyio.sleep(0)


class Blocks(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        time.sleep(0.4)  # blocks the event loop: virtual time cannot see it
        return loopsim.LoopEvaluation.stop()


class Sluggish(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        time.sleep(0.01)  # under the per-call limit, but many calls add up
        if "DONE" in context.last_response.text:
            return loopsim.LoopEvaluation.stop()
        return loopsim.LoopEvaluation.continue_with_feedback("go on")


def timed_check(
    factory: type[loopsim.LoopEvaluator], **limits: float
) -> tuple[EvaluatorReport, float]:
    began = _REAL[0]()
    report = check_evaluator(factory, max_examples=10, **limits)
    return report, _REAL[0]() - began


@pytest.mark.parametrize(
    ("factory", "shown"),
    [
        (Exits, "SystemExit(0)"),
        (Interrupts, "KeyboardInterrupt()"),
        (Cancels, "CancelledError()"),
    ],
    ids=["SystemExit", "KeyboardInterrupt", "CancelledError"],
)
def test_a_base_exception_from_evaluate_is_a_named_finding(
    factory: type[loopsim.LoopEvaluator], shown: str
) -> None:
    report = check_evaluator(factory, max_examples=5)

    assert not report.passed
    where = f"test_testing_checker_hostile.py:{factory.evaluate.__code__.co_firstlineno + 1}"
    for name in ("returns_evaluation", "odd_responses"):
        problem = report[name].problem or ""
        assert f"user code raised {shown} at {where} in {factory.__name__}.evaluate" in problem
    assert f"{factory.__name__}.evaluate" in (report["lets_loop_stop"].problem or "")
    assert "check(s) failed" in report.render()


def test_a_blocking_evaluator_ends_the_checks_after_one_slow_call() -> None:
    report, took = timed_check(Blocks, call_time_limit=0.2)

    assert not report.passed
    budget = report["within_budget"]
    assert (budget.ran, budget.passed) == (True, False)
    assert "took 0.4 real seconds, more than call_time_limit=0.2 s" in budget.problem
    assert budget.counterexample  # the context of the slow call
    others = [c for c in report.checks if c.name != "within_budget"]
    assert [c.name for c in others] == [c for c in CHECKS if c != "within_budget"]
    assert all(not c.ran and not c.passed for c in others)
    assert all("not run: an earlier call was too slow" in (c.problem or "") for c in others)
    rendered = report.render()
    assert "1 check(s) failed, 6 did not run" in rendered
    assert rendered.count("[NOT RUN]") == 6
    assert took < 5  # one slow call, not hundreds (15 minutes before)


def test_a_busy_evaluator_is_stopped_by_the_watchdog() -> None:
    report, took = timed_check(Spins, call_time_limit=0.3)

    budget = report["within_budget"]
    assert not budget.passed
    assert "keeps the loop busy" in budget.problem
    assert "call_time_limit=0.3 s" in budget.problem
    assert not report.passed
    assert took < 8


def test_the_checks_share_a_time_limit() -> None:
    report, took = timed_check(Sluggish, time_limit=0.5)

    not_run = [c for c in report.checks if not c.ran]
    assert not_run, "a 0.5 s limit cannot cover ~700 calls of 10 ms"
    assert not report.passed
    assert all("time limit (time_limit=0.5 s)" in (c.problem or "") for c in not_run)
    assert took < 5


def test_the_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="call_time_limit must be > 0"):
        check_evaluator(Exits, call_time_limit=0)
    with pytest.raises(ValueError, match="time_limit must be > 0"):
        check_evaluator(Exits, time_limit=-1)


HOSTILE_MODULE = textwrap.dedent(
    """\
    import sys
    import loopsim

    class Exits(loopsim.LoopEvaluator):
        async def evaluate(self, context):
            raise SystemExit(0)

    class Interrupts(loopsim.LoopEvaluator):
        async def evaluate(self, context):
            raise KeyboardInterrupt

    class QuitsEarly(loopsim.LoopEvaluator):
        def __init__(self):
            sys.exit(0)

        async def evaluate(self, context):
            return loopsim.LoopEvaluation.stop()
    """
)


def run_cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "hostile_evals.py").write_text(HOSTILE_MODULE, encoding="utf-8")
    return loopsim_cli("check-evaluator", *argv, cwd=tmp_path)


@pytest.mark.parametrize(
    ("target", "shown"),
    [("Exits", "SystemExit(0)"), ("Interrupts", "KeyboardInterrupt()")],
)
def test_the_command_never_exits_0_for_a_base_exception(
    tmp_path: Path, target: str, shown: str
) -> None:
    done = run_cli(tmp_path, f"hostile_evals:{target}", "--max-examples", "3")

    assert done.returncode == 1, done.stderr
    assert f"check-evaluator hostile_evals:{target}: 3 check(s) failed" in done.stdout
    assert f"user code raised {shown} at hostile_evals.py:" in done.stdout
    assert f"in {target}.evaluate" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_constructor_that_exits_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "hostile_evals:QuitsEarly")

    assert done.returncode == 2
    assert "cannot build hostile_evals:QuitsEarly" in done.stderr
    assert "SystemExit(0) at hostile_evals.py:14 in QuitsEarly.__init__" in done.stderr
