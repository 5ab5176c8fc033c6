"""The terminal summary: one line per scenario (outcome, iterations, stop reason, virtual
time, and the draws of a ``vary:`` file), sorted by node id, also under xdist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent
SCENARIOS = ROOT / "scenarios"
CORPUS = ROOT / "tests" / "data" / "invalid_scenarios"

pytest_plugins = ["pytester"]

VARY = """\
version: 1
agents:
  boss: {policy: coordinator}
  worker: {policy: {echo: {delay: 5}}}
parent: {agent: boss, background_agents: [worker]}
steps:
  - run: go
vary:
  agents.worker.policy.echo.delay: {between: [0, 50]}
vary_settings: {max_examples: 4}
always:
  elapsed: {max: 50}
"""


def _suite(pytester: pytest.Pytester) -> None:
    shipped = (SCENARIOS / "max_iterations_cap.loopsim.yaml").read_text(encoding="utf-8")
    (pytester.path / "a_cap.loopsim.yaml").write_text(shipped, encoding="utf-8")
    (pytester.path / "b_wrong.loopsim.yaml").write_text(
        shipped.replace("iterations: 3\n  stop", "iterations: 4\n  stop"), encoding="utf-8"
    )
    (pytester.path / "c_broken.loopsim.yaml").write_text(
        (CORPUS / "negative_delay.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (pytester.path / "d_vary.loopsim.yaml").write_text(VARY, encoding="utf-8")
    (pytester.path / "e_as_written.loopsim.yaml").write_text(
        VARY + "expect:\n  elapsed: 6\n", encoding="utf-8"
    )
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")


EXPECTED = [
    "passed   a_cap.loopsim.yaml::a_cap                3 iterations  max_iterations  0s virtual",
    "failed   b_wrong.loopsim.yaml::b_wrong            3 iterations  max_iterations  0s virtual",
    "invalid  c_broken.loopsim.yaml::c_broken          the file did not load (see the failure above)",
    "passed   d_vary.loopsim.yaml::d_vary              -             -               5s virtual  vary 4/4 draws",
    "failed   e_as_written.loopsim.yaml::e_as_written  -             -               5s virtual  vary: no draws (the file as written failed)",
]


def _section(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if "loopsim: 5 scenarios" in line)
    return lines[start + 1 : start + 6]


def test_one_line_per_scenario_and_none_for_plain_tests(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, failed=3)
    assert _section(result.stdout.lines) == EXPECTED
    assert "test_plain" not in "\n".join(_section(result.stdout.lines))


def test_xdist_gives_the_same_lines_in_the_same_order(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    result = pytester.runpytest("-n", "2")
    result.assert_outcomes(passed=3, failed=3)
    assert _section(result.stdout.lines) == EXPECTED


def test_q_leaves_the_summary_out(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=3, failed=3)
    assert "loopsim: 5 scenarios" not in result.stdout.str()
    assert "a_cap.loopsim.yaml::a_cap " not in result.stdout.str()


def test_one_scenario_is_singular(pytester: pytest.Pytester) -> None:
    shipped = (SCENARIOS / "completion_marker.loopsim.yaml").read_text(encoding="utf-8")
    (pytester.path / "marker.loopsim.yaml").write_text(
        re.sub(r"  transcript: snapshot.*\n", "", shipped), encoding="utf-8"
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*= loopsim: 1 scenario =*",
            "passed  marker.loopsim.yaml::marker  2 iterations  evaluators_stopped  50s virtual",
        ]
    )
