"""A scenario step that changed nothing shows in pytest's warnings summary, at its line."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SCENARIO = """\
version: 1
agents:
  boss: {policy: coordinator}
  worker: {policy: {echo: {delay: 10}}}
parent: {agent: boss, background_agents: [worker]}
steps:
  - run: go
  - release_session
"""


def test_a_step_that_changed_nothing_is_a_pytest_warning(pytester: pytest.Pytester) -> None:
    (pytester.path / "idle.loopsim.yaml").write_text(SCENARIO, encoding="utf-8")
    # this suite turns warnings into errors; a user's run shows them in the summary
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "default")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*idle.loopsim.yaml:8: ScenarioStepWarning: steps?1?: release_session at t=10s found*"]
    )


def test_strict_makes_it_a_failure(pytester: pytest.Pytester) -> None:
    (pytester.path / "idle.loopsim.yaml").write_text("strict: true\n" + SCENARIO, encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*idle.loopsim.yaml:9: steps?1?: release_session*(strict: true makes this an error)"]
    )
