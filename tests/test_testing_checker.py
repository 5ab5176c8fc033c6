"""check_evaluator and ``loopsim check-evaluator``: the shipped good evaluator passes, the
buggy one is caught with a readable, shrunk counterexample."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import yaml

import loopsim
from loopsim.testing import CHECKS, check_evaluator, simulate_recorded
from loopsim.testing._commands import add_check_evaluator_parser, cmd_check_evaluator

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
sys.path.insert(0, str(EXAMPLES))

from keyword_evaluator import KeywordEvaluator  # noqa: E402
from patience_evaluator import PatienceEvaluator  # noqa: E402


def test_the_good_example_passes_every_check() -> None:
    report = check_evaluator(KeywordEvaluator, options={"keyword": "DONE"}, max_examples=15)
    assert [c.name for c in report.checks] == list(CHECKS)
    report.assert_ok()
    assert "all checks passed" in report.render()


def test_the_buggy_example_is_caught_with_shrunk_counterexamples() -> None:
    report = check_evaluator(PatienceEvaluator, options={"patience": 2}, max_examples=15)
    assert not report.passed
    assert {c.name for c in report.failed} == {"deterministic", "odd_responses"}
    deterministic = report["deterministic"]
    assert "call 3: stop" in (deterministic.problem or "")
    assert "additional_properties" in (deterministic.problem or "")
    context = yaml.safe_load(deterministic.counterexample or "")
    assert context["iteration"] == 1  # shrunk to the simplest context
    odd = report["odd_responses"]
    assert odd.problem == "evaluate raised IndexError: list index out of range"
    assert yaml.safe_load(odd.counterexample or "")["last_response"] == {"messages": []}
    with pytest.raises(AssertionError, match=r"\[FAIL\] deterministic"):
        report.assert_ok()


class Mutating(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        context.session.state["seen"] = True
        return loopsim.LoopEvaluation.stop()


class Sleepy(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        await anyio.sleep(3600)
        return loopsim.LoopEvaluation.stop()


class Forever(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        return loopsim.LoopEvaluation.continue_with_feedback("again")


class Wrong(loopsim.LoopEvaluator):
    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        return True  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("factory", "check", "problem"),
    [
        (Mutating, "no_mutation", "session_state was {}, became"),
        (Sleepy, "within_budget", "did not return within 60 virtual seconds"),
        (Forever, "lets_loop_stop", "but the loop ran all"),
        (Wrong, "returns_evaluation", "evaluate returned bool"),
    ],
    ids=["mutates-session", "blocks", "never-stops", "wrong-type"],
)
def test_each_check_catches_its_bug(factory: type, check: str, problem: str) -> None:
    report = check_evaluator(factory, max_examples=5)
    assert not report[check].passed
    assert problem in (report[check].problem or "")


def test_lets_loop_stop_counterexample_is_a_scenario_file(tmp_path: Path) -> None:
    report = check_evaluator(Forever, max_examples=5, import_path="mod:Forever")
    text = report["lets_loop_stop"].counterexample or ""
    data = yaml.safe_load(text)
    assert data["loop"]["evaluators"] == ["mod:Forever"]
    assert data["loop"]["max_iterations"] == 3  # shrunk: done at 1, cap done+2
    assert data["agents"]["worker"]["script"][0].endswith("DONE")
    assert loopsim.Scenario.model_validate(data).loop.max_iterations == 3


def test_simulate_recorded_feeds_the_invariants() -> None:
    client = loopsim.ScriptedChatClient(["a", "b DONE"])
    loop = loopsim.LoopAgent(
        loopsim.Agent(client, name="w"), loopsim.CompletionMarkerLoopEvaluator("DONE")
    )
    _, events = simulate_recorded(loop.run, "go", backend="trio")
    assert loopsim.testing.check_invariants(events, max_iterations=10, evaluator_count=1) == []
    assert loopsim.testing.check_max_iterations(events, 1) == [
        "invariant 1: loop 'w' ran 2 iterations, more than max_iterations=1"
    ]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="loopsim")
    add_check_evaluator_parser(parser.add_subparsers())
    return parser.parse_args(["check-evaluator", *argv])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nocolon"], "bad import path"),
        (["no_such_module_xyz:Thing"], "cannot import module"),
        (["keyword_evaluator:Nope"], "has no attribute"),
        (["keyword_evaluator:loopsim"], "is not a LoopEvaluator subclass"),
        (["keyword_evaluator:KeywordEvaluator", "--options", "{bad"], "not valid JSON"),
        (["keyword_evaluator:KeywordEvaluator", "--options", "[1]"], "must be a JSON object"),
        (["keyword_evaluator:KeywordEvaluator", "--options", '{"nope": 1}'], "cannot build"),
        (["keyword_evaluator:KeywordEvaluator", "--max-examples", "0"], "must be >= 1"),
    ],
    ids=[
        "no-colon",
        "no-module",
        "no-attr",
        "not-evaluator",
        "bad-json",
        "not-object",
        "bad-kwarg",
        "zero-examples",
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(*argv)
    assert args.command(args) == 2
    assert message in capsys.readouterr().err


def test_command_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        cmd_check_evaluator(parse("keyword_evaluator:KeywordEvaluator", "--max-examples", "5")) == 0
    )
    assert "all checks passed" in capsys.readouterr().out
    args = parse(
        "patience_evaluator:PatienceEvaluator",
        "--options",
        '{"patience": 1}',
        "--max-examples",
        "5",
    )
    assert cmd_check_evaluator(args) == 1
    out = capsys.readouterr().out
    assert "[FAIL] odd_responses" in out
    assert "IndexError" in out


def test_command_in_a_subprocess_from_the_examples_folder() -> None:
    code = (
        "import sys; from loopsim.testing._commands import add_check_evaluator_parser;"
        "import argparse; p = argparse.ArgumentParser(); add_check_evaluator_parser("
        "p.add_subparsers()); a = p.parse_args(sys.argv[1:]); sys.exit(a.command(a))"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and arguments
        [
            sys.executable,
            "-c",
            code,
            "check-evaluator",
            "patience_evaluator:PatienceEvaluator",
            "--max-examples",
            "5",
        ],
        cwd=EXAMPLES,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "[FAIL] deterministic" in done.stdout
    assert "counterexample:" in done.stdout
