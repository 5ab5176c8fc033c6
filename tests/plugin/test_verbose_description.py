"""``-v`` shows each scenario's description under its result line (under xdist: see
test_output_subprocess.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

SCENARIOS = Path(__file__).parent.parent.parent / "scenarios"
CAP_DESCRIPTION = "A loop that never satisfies its evaluator stops at max_iterations."

pytest_plugins = ["pytester"]


def _copy(
    pytester: pytest.Pytester, name: str, shipped: str, edit: tuple[str, str] = ("", "")
) -> None:
    text = (SCENARIOS / shipped).read_text(encoding="utf-8")
    (pytester.path / name).write_text(text.replace(*edit) if edit[0] else text, encoding="utf-8")


def test_v_shows_the_description_under_the_result(pytester: pytest.Pytester) -> None:
    _copy(pytester, "cap.loopsim.yaml", "max_iterations_cap.loopsim.yaml")
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1)
    lines = result.stdout.lines
    at = next(i for i, line in enumerate(lines) if line.startswith("cap.loopsim.yaml::cap PASSED"))
    assert lines[at + 1] == f"    {CAP_DESCRIPTION}"


def test_a_failing_scenario_shows_its_description_too(pytester: pytest.Pytester) -> None:
    _copy(
        pytester,
        "cap.loopsim.yaml",
        "max_iterations_cap.loopsim.yaml",
        ("iterations: 3\n  stop", "iterations: 4\n  stop"),
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["cap.loopsim.yaml::cap FAILED*", f"    {CAP_DESCRIPTION}"])


def test_a_folded_description_is_one_line(pytester: pytest.Pytester) -> None:
    _copy(
        pytester,
        "delays.loopsim.yaml",
        "vary_coordinator_delays.loopsim.yaml",
        ("max_examples: 20", "max_examples: 2"),
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "delays.loopsim.yaml::delays PASSED*",
            (
                "    Whatever the children's delays (ties included), the coordinator collects and "
                "clears every result, and the run lasts as long as the slowest child."
            ),
        ]
    )


def test_without_v_no_description_and_none_for_a_file_without_one(
    pytester: pytest.Pytester,
) -> None:
    _copy(pytester, "cap.loopsim.yaml", "max_iterations_cap.loopsim.yaml")
    _copy(
        pytester,
        "plain.loopsim.yaml",
        "max_iterations_cap.loopsim.yaml",
        (f"description: {CAP_DESCRIPTION}\n", ""),
    )
    quiet = pytester.runpytest()
    quiet.assert_outcomes(passed=2)
    assert CAP_DESCRIPTION not in quiet.stdout.str()
    verbose = pytester.runpytest("-v")
    lines = verbose.stdout.lines
    at = next(
        i for i, line in enumerate(lines) if line.startswith("plain.loopsim.yaml::plain PASSED")
    )
    assert not lines[at + 1].startswith("    ")
    assert verbose.stdout.str().count(CAP_DESCRIPTION) == 1
