"""docs/testing_agent_framework.md ("Testing your agent_framework agents") is true: its files are
the shipped example files, the example scenario passes on the real package, and its
Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import loopsim

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
PAGE = (ROOT / "docs" / "testing_agent_framework.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, flags=re.DOTALL)


def test_the_page_shows_the_shipped_files_verbatim() -> None:
    python, yaml = _blocks("python")[0], _blocks("yaml")[0]
    assert python == (EXAMPLES / "research_agents.py").read_text(encoding="utf-8")
    assert yaml == (EXAMPLES / "researcher.loopsim.yaml").read_text(encoding="utf-8")


def test_the_example_scenario_runs_the_teams_own_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import research_agents  # the example's own module, as the scenario imports it

    before = research_agents.CountRuns.runs
    result = loopsim.run_scenario(loopsim.load_scenario(EXAMPLES / "researcher.loopsim.yaml"))
    assert result.passed, result.report()
    assert result.engine == "agent_framework"
    assert research_agents.CountRuns.runs == before + 1  # the team's middleware really ran
    results = [e.data["result"] for e in result.events if e.kind == "tool_result"]
    assert results == ["[LOOPS-2026]"]  # and the team's tool


def test_the_coordinator_section_shows_the_shipped_files_verbatim() -> None:
    assert _blocks("python")[2] == (EXAMPLES / "coordinator_agents.py").read_text(encoding="utf-8")
    assert _blocks("yaml")[1] == (EXAMPLES / "coordinator.loopsim.yaml").read_text(encoding="utf-8")


def test_the_python_example_runs() -> None:
    code = _blocks("python")[1]
    exec(compile(code, "docs/testing_agent_framework.md", "exec"), {"__name__": "docs"})  # noqa: S102 - the page's own example
