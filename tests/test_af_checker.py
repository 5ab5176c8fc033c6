"""check_evaluator and check-evaluator on agent_framework-style loops (real AgentLoopMiddleware)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import agent_framework as af
import anyio
import pytest
import yaml

import loopsim
from loopsim.testing import CHECKS, check_evaluator
from loopsim.testing._commands import add_check_evaluator_parser, cmd_check_evaluator

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
sys.path.insert(0, str(EXAMPLES))

import af_loops  # noqa: E402
from keyword_evaluator import KeywordEvaluator  # noqa: E402

FEW = 5


def test_a_predicate_with_next_message_passes_every_check() -> None:
    report = check_evaluator(af_loops.until_done, next_message=af_loops.nudge, max_examples=FEW)
    assert [c.name for c in report.checks] == list(CHECKS)
    report.assert_ok()
    assert report.evaluator == "af_loops:until_done"


def test_a_with_judge_setup_passes_every_check() -> None:
    check_evaluator(af_loops.judged_loop, max_examples=FEW).assert_ok()


def test_an_agent_loop_middleware_instance_is_checkable() -> None:
    middleware = af.AgentLoopMiddleware(af_loops.until_done, next_message=af_loops.nudge)
    check_evaluator(middleware, max_examples=FEW, import_path="mine:loop").assert_ok()


def test_a_predicate_that_never_stops_is_caught_by_the_real_loop() -> None:
    def forever(**kwargs: Any) -> bool:
        return True

    report = check_evaluator(forever, max_examples=FEW)
    assert [c.name for c in report.failed] == ["lets_loop_stop"]
    check = report["lets_loop_stop"]
    assert "ran all" in (check.problem or "")
    case = yaml.safe_load(check.counterexample or "")
    assert case["engine"] == "agent_framework"
    assert case["max_iterations"] == len(case["agent"]["script"])  # shrunk: done from the start
    assert case["max_iterations"] == 3


def test_the_buggy_example_is_caught_on_odd_responses() -> None:
    report = check_evaluator(af_loops.first_reply_only, max_examples=FEW)
    assert {c.name for c in report.failed} == {"odd_responses"}
    assert "IndexError" in (report["odd_responses"].problem or "")
    context = yaml.safe_load(report["odd_responses"].counterexample or "")
    assert context["last_response"]["messages"] == []


def test_state_kept_between_calls_is_caught() -> None:
    calls: list[int] = []

    def flaky(*, last_result: Any, **kwargs: Any) -> bool:
        calls.append(1)
        return len(calls) % 2 == 0

    report = check_evaluator(flaky, max_examples=FEW)
    assert "deterministic" in {c.name for c in report.failed}


def test_changing_the_loop_keywords_is_caught() -> None:
    def meddling(*, last_result: Any, session: Any, original_messages: Any, **kwargs: Any) -> bool:
        session.state["seen"] = True
        return "DONE" not in last_result.text

    report = check_evaluator(meddling, max_examples=FEW)
    assert "no_mutation" in {c.name for c in report.failed}
    assert "session_state" in (report["no_mutation"].problem or "")

    def rewriting(*, original_messages: Any, **kwargs: Any) -> bool:
        original_messages.clear()
        return False

    report = check_evaluator(rewriting, max_examples=FEW)
    assert "initial_messages" in (report["no_mutation"].problem or "")


def test_a_predicate_returning_the_wrong_type_is_caught() -> None:
    def sloppy(**kwargs: Any) -> Any:
        return None

    report = check_evaluator(sloppy, max_examples=FEW)
    assert "returns_evaluation" in {c.name for c in report.failed}
    assert "expected a bool" in (report["returns_evaluation"].problem or "")


def test_a_predicate_that_blocks_is_caught() -> None:
    async def slow(**kwargs: Any) -> bool:
        await anyio.sleep(3600)
        return False

    report = check_evaluator(slow, max_examples=FEW, budget=10)
    assert "within_budget" in {c.name for c in report.failed}


def test_loop_evaluators_stay_checkable_on_either_engine() -> None:
    for engine in ("loopsim", "agent_framework"):
        check_evaluator(
            KeywordEvaluator, options={"keyword": "DONE"}, max_examples=FEW, engine=engine
        ).assert_ok()

    class Never(loopsim.LoopEvaluator):
        async def evaluate(self, context: Any) -> loopsim.LoopEvaluation:
            return loopsim.LoopEvaluation.continue_with_feedback("again")

    report = check_evaluator(Never, max_examples=FEW, engine="agent_framework")
    assert [c.name for c in report.failed] == ["lets_loop_stop"]


def test_misuse_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="next_message belongs"):
        check_evaluator(KeywordEvaluator, next_message=af_loops.nudge)
    with pytest.raises(TypeError, match="not for a predicate"):
        check_evaluator(af_loops.until_done, options={"x": 1})
    with pytest.raises(TypeError, match="returned int"):
        check_evaluator(lambda: 3)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="loopsim")
    add_check_evaluator_parser(parser.add_subparsers())
    return parser.parse_args(["check-evaluator", *argv])


def test_the_cli_checks_a_predicate_by_import_path(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse("af_loops:until_done", "--next-message", "af_loops:nudge", "--max-examples", "5")
    assert cmd_check_evaluator(args) == 0
    assert "all checks passed" in capsys.readouterr().out
    assert cmd_check_evaluator(parse("af_loops:judged_loop", "--max-examples", "5")) == 0
    capsys.readouterr()
    assert cmd_check_evaluator(parse("af_loops:first_reply_only", "--max-examples", "5")) == 1
    assert "[FAIL] odd_responses" in capsys.readouterr().out


def test_the_cli_runs_a_loop_evaluator_on_the_agent_framework_engine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = parse(
        "keyword_evaluator:KeywordEvaluator", "--engine", "agent_framework", "--max-examples", "5"
    )
    assert cmd_check_evaluator(args) == 0
    assert "all checks passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["af_loops:AgentLoopMiddleware"], "is not a LoopEvaluator subclass"),
        (["af_loops:until_done", "--next-message", "af_loops:nope"], "has no attribute"),
        (["af_loops:until_done", "--options", '{"a": 1}'], "cannot build"),
    ],
    ids=["a-class", "bad-next-message", "options-for-a-predicate"],
)
def test_the_cli_refuses_bad_targets(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cmd_check_evaluator(parse(*argv)) == 2
    assert message in capsys.readouterr().err
