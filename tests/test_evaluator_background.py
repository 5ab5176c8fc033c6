"""check_evaluator's background rule: the option, its CLI flag, and --check."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

import loopsim
from loopsim.testing import ALL_CHECKS, BACKGROUND_RULES, CHECKS, check_evaluator
from loopsim.testing._commands import (
    BACKGROUND_RULE_NAMES,
    CHECK_NAMES,
    add_check_evaluator_parser,
    cmd_check_evaluator,
)

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
sys.path.insert(0, str(EXAMPLES))


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="loopsim")
    add_check_evaluator_parser(parser.add_subparsers())
    return parser.parse_args(["check-evaluator", *argv])


def test_the_cli_knows_the_same_names() -> None:
    assert CHECK_NAMES == ALL_CHECKS
    assert ALL_CHECKS[: len(CHECKS)] == CHECKS
    assert BACKGROUND_RULE_NAMES == BACKGROUND_RULES


def test_the_cli_flag_holds_a_marker_evaluator_to_the_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = parse(
        "keyword_evaluator:KeywordEvaluator",
        "--background-rule",
        "wait-for-running",
        "--check",
        "waits_for_background",
        "--max-examples",
        "8",
    )
    assert cmd_check_evaluator(args) == 1
    out = capsys.readouterr().out
    assert "[FAIL] waits_for_background" in out
    assert "status: running" in out  # the counterexample shows the running task
    assert "[PASS]" not in out  # only the check asked for ran


def test_without_a_rule_no_background_check_runs() -> None:
    report = check_evaluator(
        loopsim.CompletionMarkerLoopEvaluator,
        options={"completion_marker": "DONE"},
        checks=["keeps_going"],
        max_examples=5,
    )
    assert [c.name for c in report.checks] == ["keeps_going"]
    with pytest.raises(KeyError):
        report["waits_for_background"]


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"background_rule": "wait"}, "background_rule must be one of"),
        ({"checks": ["keeps_gone"]}, "unknown check(s) keeps_gone"),
    ],
)
def test_bad_options_are_a_clear_error(kwargs: dict[str, object], said: str) -> None:
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")):
        check_evaluator(loopsim.CompletionMarkerLoopEvaluator, **kwargs)  # type: ignore[arg-type]


def test_the_cli_refuses_an_unknown_rule_or_check(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--background-rule", "wait"], ["--check", "nope"]):
        with pytest.raises(SystemExit) as info:
            parse("keyword_evaluator:KeywordEvaluator", *argv)
        assert info.value.code == 2
        assert "invalid choice" in capsys.readouterr().err
