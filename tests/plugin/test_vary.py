"""The plugin runs ``vary:`` files as property tests and writes reproducers of failures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

FAILING = """\
version: 1
agents:
  boss: {policy: coordinator}
  worker: {policy: {echo: {delay: 5}}}
parent: {agent: boss, background_agents: [worker]}
steps:
  - run: go
vary:
  agents.worker.policy.echo.delay: {between: [0, 600]}
vary_settings: {max_examples: 40}
always:
  elapsed: {max: 100}
"""


def _write(pytester: pytest.Pytester, text: str, name: str = "delayed") -> Path:
    path = pytester.path / f"{name}.loopsim.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_passing_vary_file_is_one_passing_item(pytester: pytest.Pytester) -> None:
    _write(pytester, FAILING.replace("{max: 100}", "{max: 600}"))
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / ".loopsim" / "reproducers").exists()


def test_a_failure_is_shrunk_and_written_as_a_reproducer(pytester: pytest.Pytester) -> None:
    _write(pytester, FAILING)
    result = pytester.runpytest("--loopsim-seed=3")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            (
                "*delayed.loopsim.yaml:12: always.elapsed.max: expected at most 100s of virtual "
                "time, got 101s*"
            ),
            "shrunk draw:",
            "  agents.worker.policy.echo.delay: 101",
            "transcript: *reproducers*delayed.transcript.json",
            "reproducer (the draw as a concrete scenario): *.loopsim*reproducers*delayed.loopsim.yaml",
        ]
    )
    reproducer = pytester.path / ".loopsim" / "reproducers" / "delayed.loopsim.yaml"
    assert reproducer.is_file()
    assert (reproducer.parent / "delayed.transcript.json").is_file()

    alone = pytester.runpytest(str(reproducer))
    alone.assert_outcomes(failed=1)
    alone.stdout.fnmatch_lines(
        [
            "*delayed.loopsim.yaml:*: expect.elapsed.max: expected at most 100s of virtual time, got 101s*"
        ]
    )


def test_reproducers_option_chooses_the_folder(pytester: pytest.Pytester) -> None:
    _write(pytester, FAILING)
    result = pytester.runpytest("--loopsim-seed=0", "--loopsim-reproducers=found")
    result.assert_outcomes(failed=1)
    assert (pytester.path / "found" / "delayed.loopsim.yaml").is_file()
    assert not (pytester.path / ".loopsim" / "reproducers").exists()


def test_loopsim_run_shows_the_shrunk_draw(pytester: pytest.Pytester) -> None:
    path = _write(pytester, FAILING)
    result = pytester.run(sys.executable, "-m", "loopsim", "run", str(path), "--loopsim-seed=0")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["shrunk draw:", "  agents.worker.policy.echo.delay: 101", "reproduce: loopsim run *"]
    )
