"""Host steps at a virtual instant (during a call in flight), and steps that changed nothing."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import loopsim
from loopsim._scenario import load_scenario, load_scenario_text, run_scenario

STORY = Path(__file__).resolve().parent.parent / "scenarios" / "research_coordinator.loopsim.yaml"


def _run(text: str, backend: str = "asyncio") -> loopsim.ScenarioResult:
    loaded = load_scenario_text(textwrap.dedent(text), path="x.loopsim.yaml")
    return run_scenario(loaded, backend=backend)  # type: ignore[arg-type] # a backend name


def _rendered(result: loopsim.ScenarioResult) -> list[str]:
    return [f.render(result.path) for f in result.failures]


def test_the_story_is_short_and_passes_on_both_backends(backend: str) -> None:
    text = STORY.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 50  # its expectations state every run's end too
    result = run_scenario(load_scenario(STORY), backend=backend)  # type: ignore[arg-type]
    assert result.passed, result.report()
    assert result.warnings == []
    assert result.tasks == {1: "cleared", 2: "cleared", 3: "cleared"}


def test_the_story_fails_without_its_restart(tmp_path: Path) -> None:
    text = STORY.read_text(encoding="utf-8")
    without = re.sub(r"\n  - restart: \{at: 600\}[^\n]*", "", text)
    assert without != text
    path = tmp_path / "story.loopsim.yaml"
    path.write_text(without, encoding="utf-8")
    result = run_scenario(load_scenario(path))
    failing = {f.location for f in result.failures}
    assert {
        "expect.task_history[1]",
        "expect.task_history[3]",
        "expect.events[0].count",
        "expect.calls.web_search",
        "expect.elapsed",
    } <= failing


def test_a_restart_too_late_to_hit_anything_is_an_error_under_strict(tmp_path: Path) -> None:
    # The "natural first attempt": web-search was done before the restart.
    text = STORY.read_text(encoding="utf-8").replace("restart: {at: 600}", "restart: {at: 1500}")
    path = tmp_path / "late.loopsim.yaml"
    path.write_text(text, encoding="utf-8")
    result = run_scenario(load_scenario(path))
    strict = [f for f in result.failures if f.kind == "strict"]
    assert [f.render(path) for f in strict] == [
        (
            f"{path}:23: steps[1]: the restart at t=1500s found nothing running: no host call in "
            "flight and no background task running, so nothing was lost (the last host call had "
            "returned at t=1200s) (strict: true makes this an error)"
        )
    ]
    lenient = text.replace("strict: true", "strict: false")
    path.write_text(lenient, encoding="utf-8")
    result = run_scenario(load_scenario(path))
    assert [w.kind for w in result.warnings] == ["warning"]
    assert "found nothing running" in result.report()
    assert not any(f.kind == "strict" for f in result.failures)


DETACHED = """\
version: 1
agents:
  boss: {policy: {coordinator: {detach: true}}}
  worker: {policy: {echo: {delay: 100}}}
parent: {agent: boss, background_agents: [worker]}
steps:
"""


@pytest.mark.parametrize(
    ("steps", "warning"),
    [
        (
            "  - run: go\n  - advance: 200\n  - run: collect\n  - release_session",
            "nothing to release",
        ),
        ("  - run: go\n  - advance: 0", "advance: 0 lets no virtual time pass"),
        ("  - run: go\n  - advance: 150\n  - advance: {until: 100}", "already at t=150s"),
        ("  - run: go\n  - approve: true", "no approval request was pending"),
        ("  - run: go\n  - advance: 200\n  - run: collect\n  - restart", "found nothing running"),
    ],
    ids=["release", "advance-0", "advance-until-past", "approve", "restart"],
)
def test_a_step_that_changed_nothing_is_a_warning_and_strict_makes_it_fail(
    steps: str, warning: str
) -> None:
    text = DETACHED + steps + "\nexpect: {unused_turns: true}\n"
    result = _run(text)
    assert result.passed, result.report()
    assert len(result.warnings) == 1
    assert warning in result.warnings[0].message
    strict = _run("strict: true\n" + text)
    # the step's warning becomes a failure (so do the weak expectations, at `expect`, and
    # the other steps no expectation checks: tests/test_steps_matter.py)
    said = [f for f in strict.failures if warning in f.message]
    assert [f.kind for f in said] == ["strict"]
    assert said[0].location.startswith("steps")


def test_steps_that_change_something_give_no_warning() -> None:
    text = DETACHED + "  - run: go\n  - advance: 50\n  - restart\n  - release_session\n"
    result = _run(text + "expect: {tasks: {1: lost}}\n")
    assert result.passed, result.report()
    assert result.warnings == []


def test_release_session_at_an_instant_cancels_the_task_the_call_waits_for(backend: str) -> None:
    text = textwrap.dedent(
        """\
        version: 1
        agents:
          boss: {policy: coordinator}
          worker: {policy: {echo: {delay: 1000}}}
        parent: {agent: boss, background_agents: [worker], wait_timeout: 60}
        steps:
          - run: go
          - release_session: {at: 90}
        expect:
          elapsed: {max: 120}
          task_history: {1: [running, failed]}
        """
    )
    result = _run(text, backend)
    assert result.passed, result.report()
    assert result.warnings == []


def test_advance_until_waits_to_an_instant_while_a_call_runs(backend: str) -> None:
    text = DETACHED + textwrap.dedent(
        """\
          - run: go
          - advance: {until: 40}
          - restart
          - run: collect
        expect:
          elapsed: 40
          task_history: {1: [running, lost, cleared]}
        """
    )
    result = _run(text, backend)
    assert result.passed, result.report()


def test_a_restart_during_a_call_interrupts_it_and_the_host_calls_again() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        agents:
          boss: {policy: {coordinator: {restart_lost: true}}}
          worker: {policy: {echo: {delay: 100}}}
        parent: {agent: boss, background_agents: [worker]}
        steps:
          - run: go
            expect:
              response: {contains: "task 2 (worker): echo: go"}
              task_history: {1: [running, lost, cleared], 2: [running, completed, cleared]}
          - restart: {at: 30}
        expect:
          elapsed: 130
          events:
            - {kind: process_restart, where: {at: 30, interrupted: true}, count: 1}
            - {kind: loop_stop, count: 0}
        """
    )
    result = _run(text)
    assert result.passed, result.report()


def test_instants_must_come_in_time_order() -> None:
    text = DETACHED + "  - run: go\n  - restart: {at: 50}\n  - release_session: {at: 20}\n"
    with pytest.raises(loopsim.ScenarioError) as info:
        load_scenario_text(text, path="x.loopsim.yaml")
    assert info.value.line == 9
    assert "before step 2 at t=50s" in str(info.value)


def test_a_failed_call_stops_the_steps_scheduled_during_it() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        agents:
          boss: {script: [{failure: model down, delay: 10}]}
          worker: {policy: echo}
        parent: {agent: boss, background_agents: [worker]}
        steps:
          - run: go
          - release_session: {at: 50}
        expect: {error: model down}
        """
    )
    result = _run(text)
    assert result.passed, result.report()
    assert result.elapsed == 10


def test_the_docs_tell_the_story_with_the_shipped_file() -> None:
    docs = (STORY.parent.parent / "docs" / "scenarios.md").read_text(encoding="utf-8")
    section = docs.split("## A worked example", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    assert blocks[-1] == STORY.read_text(encoding="utf-8")
    shipped = STORY.read_text(encoding="utf-8")
    for block in blocks[:-1]:  # every piece built up is part of the final file
        for line in block.strip().splitlines():
            assert line in shipped, line
