"""Steps that matter: an advance, approve, restart or release_session step whose removal
leaves every expectation passing is reported (weak, in loopsim's summary; an error under
``strict: true``); no shipped scenario has one."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import loopsim
from loopsim._scenario import load_scenario, load_scenario_text, run_scenario
from loopsim._scenario._result import steps_that_do_not_matter

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
KINDS = ("advance", "approve", "restart", "release_session")

RESTART = """\
version: 1
{strict}agents:
  boss:
    script:
      - tool_call: {{name: background_agents_start_task, arguments: {{agent_name: worker, input: go, description: work}}}}
      - Started.
      - Done.
  worker: {{policy: {{echo: {{delay: 5}}}}}}
parent: {{agent: boss, background_agents: [worker]}}
steps:
  - run: start
  - advance: 10
  - restart
  - run: again
expect:
  response: {{equals: Done.}}
  elapsed: 10
{extra}"""


def _load(strict: str = "", extra: str = "") -> loopsim.LoadedScenario:
    text = RESTART.format(strict=strict, extra=extra)
    return load_scenario_text(textwrap.dedent(text), path="x.loopsim.yaml")


def test_a_restart_nothing_checks_is_named() -> None:
    found = steps_that_do_not_matter(_load())
    assert [index for index, _ in found] == [2]
    assert "nothing checks what this restart changes" in found[0][1]


def test_an_expectation_of_what_the_restart_changes_makes_it_matter() -> None:
    extra = "  events: [{kind: process_restart, count: 1}]\n"
    assert steps_that_do_not_matter(_load(extra=extra)) == []


def test_an_always_expectation_of_what_it_changes_makes_it_matter_too() -> None:
    # each run without a step is checked as a whole run is: `always:` too
    extra = "always:\n  events: [{kind: process_restart, count: 1}]\n"
    assert steps_that_do_not_matter(_load(extra=extra)) == []
    result = run_scenario(_load(extra=extra), check_steps_matter=True)
    assert result.passed
    assert _step_entries(result) == []


def test_under_strict_it_is_a_located_failure() -> None:
    loaded = _load(strict="strict: true\n")
    result = run_scenario(loaded)
    assert not result.passed
    (failure,) = [f for f in result.failures if f.location == "steps[2]"]
    assert "restart changes" in failure.message
    assert failure.line == 14


def test_without_strict_it_is_a_located_weak_expectation() -> None:
    # `loopsim run` and the pytest plugin ask for it; run_scenario() does when told
    result = run_scenario(_load(), check_steps_matter=True)
    assert result.passed
    (weak,) = _step_entries(result)
    assert (weak.location, weak.line) == ("steps[2]", 13)
    assert "nothing checks what this restart changes" in weak.message
    extra = "  events: [{kind: process_restart, count: 1}]\n"
    checked = run_scenario(_load(extra=extra), check_steps_matter=True)
    assert checked.passed
    assert _step_entries(checked) == []
    # without it, no extra runs (vary: draws never ask: the file as written was looked at)
    assert _step_entries(run_scenario(_load())) == []


def _step_entries(result: loopsim.ScenarioResult) -> list[Any]:
    return [w for w in result.weak if w.location and w.location.startswith("steps")]


def test_a_failing_run_is_not_run_again() -> None:
    extra = "  calls: {boss: 99}\n"
    result = run_scenario(_load(extra=extra), check_steps_matter=True)
    assert not result.passed
    assert _step_entries(result) == []


def _with_steps() -> list[Path]:
    found = []
    for path in sorted(SCENARIOS.glob("*.loopsim.yaml")):
        steps = load_scenario(path).scenario.steps
        if any(
            type(s).__name__ in ("AdvanceStep", "ApprovalStep", "RestartStep", "ReleaseStep")
            for s in steps
        ):
            found.append(path)
    return found


def test_every_step_of_every_shipped_scenario_matters() -> None:
    # each shipped scenario with each advance/approve/restart/release step dropped in turn
    # must fail (12 steps in 8 files: about 2 s on an idle machine)
    paths = _with_steps()
    assert len(paths) >= 8
    began = time.monotonic()
    unchecked = {
        path.name: found
        for path in paths
        if (found := steps_that_do_not_matter(load_scenario(path)))
    }
    assert unchecked == {}
    assert time.monotonic() - began < 120  # bounded: one run per such step


def test_loopsim_run_names_a_step_nothing_checks_in_its_summary(tmp_path: Path) -> None:
    from _cli import loopsim_cli

    (tmp_path / "x.loopsim.yaml").write_text(textwrap.dedent(_text()), encoding="utf-8")
    done = loopsim_cli("run", ".", "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "x.loopsim.yaml:13: steps[2]: nothing checks what this restart changes" in done.stdout


def _text(strict: str = "", extra: str = "") -> str:
    return RESTART.format(strict=strict, extra=extra)
