"""Weak expectations are flagged: a scenario that would pass for a run that called no tool,
or that answered anything at all, gets a warning naming what is unchecked; ``strict:``
makes it an error."""

from __future__ import annotations

from pathlib import Path

import pytest

import loopsim

TOOLS = """
version: 1
{strict}agents:
  boss: {{policy: coordinator}}
  web: {{policy: {{echo: {{delay: 5}}}}}}
parent: {{agent: boss, background_agents: [web]}}
steps:
  - run: go
expect:
{expect}
"""


def run(tmp_path: Path, expect: str, *, strict: bool = False) -> loopsim.ScenarioResult:
    path = tmp_path / "s.loopsim.yaml"
    text = TOOLS.format(strict="strict: true\n" if strict else "", expect=expect)
    path.write_text(text, encoding="utf-8")
    return loopsim.run_scenario(loopsim.load_scenario(path))


def messages(result: loopsim.ScenarioResult) -> list[str]:
    return [w.message for w in result.weak]


def test_tools_no_expectation_looks_at_are_named(tmp_path: Path) -> None:
    result = run(tmp_path, '  elapsed: 5\n  response: {contains: "task 1 (web)"}')
    assert result.passed
    (warning,) = messages(result)
    assert warning.startswith("nothing checks which tools the run called")
    assert "background_agents_start_task" in warning
    assert result.weak[0].location == "expect"
    assert result.warnings == []  # the steps' own warnings are another list


def test_an_answer_no_expectation_looks_at_is_named(tmp_path: Path) -> None:
    result = run(tmp_path, "  elapsed: 5\n  tasks: {1: cleared}")
    assert result.passed
    (warning,) = messages(result)
    assert warning.startswith("nothing checks what the agent answered")


@pytest.mark.parametrize(
    "expect",
    [
        '  tasks: {1: cleared}\n  response: {contains: "task 1"}',
        '  calls: {web: 1}\n  response: {contains: "task 1"}',
        (
            "  events: [{kind: tool_call, where: {name: background_agents_start_task}, count: 1}]\n"
            '  response: {contains: "task 1"}'
        ),
        (
            "  trajectory:\n    steps:\n      - {tool: background_agents_start_task}\n"
            '      - {says: {contains: "task 1"}}'
        ),
    ],
    ids=["tasks", "child-calls", "events", "trajectory"],
)
def test_expectations_that_look_at_both_give_no_warning(tmp_path: Path, expect: str) -> None:
    result = run(tmp_path, expect)
    assert result.passed, result.report()
    assert messages(result) == []


def test_strict_makes_a_weak_expectation_an_error(tmp_path: Path) -> None:
    result = run(tmp_path, "  elapsed: 5\n  tasks: {1: cleared}", strict=True)
    assert not result.passed
    (failure,) = result.failures
    assert failure.kind == "strict"
    assert "nothing checks what the agent answered" in failure.message


def test_a_run_without_tools_or_text_has_nothing_to_flag(tmp_path: Path) -> None:
    plain = tmp_path / "p.loopsim.yaml"
    plain.write_text(
        "version: 1\nagents:\n  a: {script: ['']}\nparent: {agent: a}\n"
        "steps:\n  - run: hi\nexpect:\n  calls: {a: 1}\n",
        encoding="utf-8",
    )
    result = loopsim.run_scenario(loopsim.load_scenario(plain))
    assert result.passed, result.report()
    assert messages(result) == []


def test_loopsim_run_lists_weak_expectations_in_its_summary(tmp_path: Path) -> None:
    from _cli import loopsim_cli

    (tmp_path / "w.loopsim.yaml").write_text(
        "version: 1\nagents:\n  a: {script: [hello]}\nparent: {agent: a}\n"
        "steps:\n  - run: hi\nexpect:\n  calls: {a: 1}\n",
        encoding="utf-8",
    )
    done = loopsim_cli("run", ".", "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "loopsim: 1 weak expectation(s) (strict: true makes them failures):" in done.stdout
    assert "w.loopsim.yaml:7: expect: nothing checks what the agent answered" in done.stdout
