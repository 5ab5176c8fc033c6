"""A parent built by a factory may have background agents, on both engines.

loopsim finds the BackgroundAgentsProvider the factory's agent already has (a factory
that takes ``background_agents`` gets the children loopsim built), or adds one when the
agent has none; a provider that does not know a declared child is a located error.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import loopsim

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"

FACTORIES = """
import agent_framework as af
import loopsim

seen = {}


def af_own(client, name, background_agents):
    seen["children"] = [a.name for a in background_agents]
    return af.Agent(client=client, name=name, context_providers=[
        af.BackgroundAgentsProvider(background_agents, wait_timeout_seconds=120)])


def af_bare(client, name):
    return af.Agent(client=client, name=name)


def af_stranger(client, name):
    other = af.Agent(client=client, name="other", description="not declared")
    return af.Agent(client=client, name=name, context_providers=[
        af.BackgroundAgentsProvider([other])])


def lo_own(client, name, background_agents):
    seen["children"] = [a.name for a in background_agents]
    return loopsim.Agent(client, name=name, context_providers=[
        loopsim.BackgroundAgentsProvider(background_agents, wait_timeout_seconds=120)])


def lo_bare(client, name):
    return loopsim.Agent(client, name=name)


def lo_stranger(client, name):
    other = loopsim.Agent(client, name="other", description="not declared")
    return loopsim.Agent(client, name=name, context_providers=[
        loopsim.BackgroundAgentsProvider([other])])
"""

SCENARIO = """
version: 1
engine: {engine}
agents:
  boss:
    factory: team_factories:{factory}
    policy: coordinator
  slow: {{description: Slow., policy: {{echo: {{delay: 60}}}}}}
  fast: {{description: Fast., policy: {{echo: {{delay: 5}}}}}}
parent:
  agent: boss
  background_agents: [slow, fast]
steps:
  - run: research cats
expect:
  calls: {{slow: 1, fast: 1}}
  tasks: {{1: cleared, 2: cleared}}
  task_history: {{1: [running, completed, cleared], 2: [running, completed, cleared]}}
  elapsed: 60
  response:
    contains: ["task 2 (fast)", "task 1 (slow)"]
"""

ENGINES = {"agent_framework": "af", "loopsim": "lo"}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "team_factories.py").write_text(FACTORIES, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "team_factories", raising=False)
    return tmp_path


def scenario(folder: Path, engine: str, form: str) -> Path:
    path = folder / f"{form}_{engine}.loopsim.yaml"
    text = SCENARIO.format(engine=engine, factory=f"{ENGINES[engine]}_{form}")
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_factory_that_takes_the_children_gives_them_to_its_own_provider(
    folder: Path, engine: str
) -> None:
    result = loopsim.run_scenario(loopsim.load_scenario(scenario(folder, engine, "own")))
    assert result.passed, result.report()
    import team_factories

    assert team_factories.seen["children"] == ["slow", "fast"]


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_factory_agent_without_a_provider_gets_one(folder: Path, engine: str) -> None:
    result = loopsim.run_scenario(loopsim.load_scenario(scenario(folder, engine, "bare")))
    assert result.passed, result.report()
    statuses = [e.data["status"] for e in result.events if e.kind == "task_status"]
    assert statuses.count("completed") == 2


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_provider_that_does_not_know_a_declared_child_is_a_located_error(
    folder: Path, engine: str
) -> None:
    path = scenario(folder, engine, "stranger")
    result = loopsim.run_scenario(loopsim.load_scenario(path))
    assert not result.passed
    error = result.error
    assert isinstance(error, loopsim.ScenarioError), result.report()
    assert error.location == "parent.background_agents[0]"
    assert error.line == 12
    assert "does not know 'slow'" in str(error)
    assert "it knows: other" in str(error)


def test_the_docs_example_runs_the_teams_coordinator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    result = loopsim.run_scenario(loopsim.load_scenario(EXAMPLES / "coordinator.loopsim.yaml"))
    assert result.passed, result.report()
    results = [e.data["result"] for e in result.events if e.kind == "tool_result"]
    assert "[LOOPS-2026]" in results  # the child built by a factory ran its own tool
