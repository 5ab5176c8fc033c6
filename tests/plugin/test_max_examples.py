"""``--loopsim-max-examples=N`` caps the draws of every ``vary:`` scenario."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

VARY = """\
version: 1
agents:
  boss: {{policy: coordinator}}
  worker: {{policy: {{echo: {{delay: 5}}}}}}
parent: {{agent: boss, background_agents: [worker]}}
steps:
  - run: go
vary:
  agents.worker.policy.echo.delay: {{between: [0, 600]}}
{settings}always:
  elapsed: {{max: 600}}
"""


def _write(pytester: pytest.Pytester, name: str, max_examples: int | None) -> None:
    settings = "" if max_examples is None else f"vary_settings: {{max_examples: {max_examples}}}\n"
    text = VARY.format(settings=settings)
    (pytester.path / f"{name}.loopsim.yaml").write_text(text, encoding="utf-8")


def _draws(result: pytest.RunResult, name: str) -> str:
    line = next(
        line for line in result.stdout.lines if line.startswith(f"passed  {name}.loopsim.yaml::")
    )
    return line.split("virtual  ")[1]


def test_the_cap_lowers_the_files_own_count_and_the_profiles(pytester: pytest.Pytester) -> None:
    _write(pytester, "many", 30)
    _write(pytester, "profile", None)  # the hypothesis profile decides: more than 3
    _write(pytester, "few", 2)
    capped = pytester.runpytest("--loopsim-max-examples=3")
    capped.assert_outcomes(passed=3)
    assert _draws(capped, "many") == "vary 3/3 draws"
    assert _draws(capped, "profile") == "vary 3/3 draws"
    assert _draws(capped, "few") == "vary 2/2 draws"  # a cap, never more than the file asks
    free = pytester.runpytest("-k", "many or few")
    assert _draws(free, "many") == "vary 30/30 draws"
    assert _draws(free, "few") == "vary 2/2 draws"


@pytest.mark.parametrize("value", ["0", "-2", "lots"])
def test_a_bad_count_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    _write(pytester, "many", 30)
    result = pytester.runpytest(f"--loopsim-max-examples={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"argument --loopsim-max-examples: expected a whole number >= 1, got '{value}'"
        in result.stderr.str()
    )
