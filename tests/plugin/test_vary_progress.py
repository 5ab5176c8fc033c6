"""Progress of a ``vary:`` file: ``vary done/planned draws`` lines, at most one per
``loopsim_progress_interval`` real seconds; none under ``-q`` or from xdist workers (that
case is in test_output_subprocess.py)."""

from __future__ import annotations

import re

import pytest

from loopsim._pytest_output import VaryProgressLine

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
vary_settings: {{max_examples: {examples}}}
always:
  elapsed: {{max: {limit}}}
"""


def _write(pytester: pytest.Pytester, examples: int = 5, limit: int = 600) -> None:
    text = VARY.format(examples=examples, limit=limit)
    (pytester.path / "delays.loopsim.yaml").write_text(text, encoding="utf-8")


def test_every_draw_is_shown_with_interval_zero_and_the_letter_follows(
    pytester: pytest.Pytester,
) -> None:
    _write(pytester)
    result = pytester.runpytest("-o", "loopsim_progress_interval=0")
    result.assert_outcomes(passed=1)
    shown = [line.rstrip() for line in result.stdout.lines if "vary " in line and "draws" in line]
    assert shown[:5] == [f"delays.loopsim.yaml vary {n}/5 draws" for n in range(1, 5)] + [shown[4]]
    # the file's result letter ends the last progress line, as pytest would write it
    assert re.fullmatch(r"delays\.loopsim\.yaml vary 5/5 draws \.\s+\[100%\]", shown[4])


def test_v_shows_indented_lines_then_the_result(pytester: pytest.Pytester) -> None:
    _write(pytester, examples=3)
    result = pytester.runpytest("-v", "-o", "loopsim_progress_interval=0")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "delays.loopsim.yaml::delays ",
            "  vary 1/3 draws",
            "  vary 2/3 draws",
            "  vary 3/3 draws",
            "delays.loopsim.yaml::delays PASSED*",
        ]
    )


def test_a_failure_shows_its_shrinking(pytester: pytest.Pytester) -> None:
    _write(pytester, examples=40, limit=100)
    result = pytester.runpytest("-v", "--loopsim-seed=3", "-o", "loopsim_progress_interval=0")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines([r"  vary \d+/40 draws, shrinking the failure \(\d+ steps?\)"])


@pytest.mark.parametrize(
    "options",
    [
        pytest.param(("-q", "-o", "loopsim_progress_interval=0"), id="quiet"),
        pytest.param(("-o", "loopsim_progress_interval=-1"), id="off"),
        pytest.param((), id="default-interval-fast-file"),
    ],
)
def test_no_progress_lines(pytester: pytest.Pytester, options: tuple[str, ...]) -> None:
    _write(pytester)
    result = pytester.runpytest(*options)
    result.assert_outcomes(passed=1)
    assert "/5 draws" not in result.stdout.str().replace("vary 5/5 draws", "")
    if "-q" in options:
        assert result.stdout.lines[0].startswith(".")  # the dots line is intact


def test_a_bad_interval_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _write(pytester)
    result = pytester.runpytest("-o", "loopsim_progress_interval=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "loopsim_progress_interval = 'soon': expected a number of seconds" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_lines_are_at_least_an_interval_apart() -> None:
    now = [0.0]
    written: list[str] = []
    line = VaryProgressLine(written.append, 5.0, clock=lambda: now[0])
    for second, draws in [(1, 1), (4.9, 2), (5.0, 3), (7, 4), (9.9, 5), (10.1, 6)]:
        now[0] = second
        line(draws, 10, 0)
    assert written == ["vary 3/10 draws", "vary 6/10 draws"]
    now[0] = 20
    line(7, 10, 2)
    assert written[-1] == "vary 7/10 draws, shrinking the failure (2 steps)"
