"""``loopsim validate`` imports and calls factories, and reports their problems located
(issue 21, item 10).

Before, validate said ``ok`` for a factory that does not exist and for scripted calls of
tool names the factory's agent does not have: only a run found out, and a scripted call
of an unknown tool does not even fail a run (the model gets an error result).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from _cli import loopsim_cli

from loopsim._scenario import load_scenario
from loopsim._scenario._dry_build import factory_problems
from loopsim.cli import main

ROOT = Path(__file__).resolve().parent.parent
_names = itertools.count()

#: Factories for both engines: an agent with one tool, get_quote.
FACTORIES = """\
import agent_framework as af

import loopsim


def get_quote(symbol: str) -> str:
    \"\"\"The last traded price of symbol.\"\"\"
    return "420.50"


def trader(client, name):
    return loopsim.Agent(client, name=name, tools=[loopsim.FunctionTool(get_quote)])


def af_trader(client, name):
    return af.Agent(client=client, name=name, tools=[af.tool(get_quote)])


def not_an_agent(client, name):
    return 42


def broken(client, name):
    raise RuntimeError("no credentials in CI")


def coordinator(client, name):
    child = loopsim.Agent(loopsim.ScriptedChatClient(["hi"]), name="writer", description="w")
    provider = loopsim.BackgroundAgentsProvider([child])
    return loopsim.Agent(client, name=name, context_providers=[provider])


class Shouting(loopsim.ContextProvider):
    pass


def with_other_provider(client, name):
    return loopsim.Agent(client, name=name, context_providers=[Shouting("shouting")])


def slow(client, name):
    import time

    time.sleep(3600)
"""

SCENARIO = """\
version: 1
engine: {engine}
agents:
  trader:
    factory: {factory}
    script:
      - tool_call: {{name: {tool}, arguments: {{symbol: MSFT}}}}
      - reply: MSFT is trading at 420.50.
parent: {{agent: trader}}
steps:
  - run: What is MSFT trading at?
expect:
  response: {{contains: "420.50"}}
"""


def project(
    tmp_path: Path,
    *,
    factory: str = "trader",
    tool: str = "get_quote",
    engine: str = "loopsim",
    text: str | None = None,
) -> Path:
    """A scenario file and its factory module (named afresh: modules are imported once)."""
    module = f"validate_factories_{next(_names)}"
    (tmp_path / f"{module}.py").write_text(FACTORIES, encoding="utf-8")
    path = tmp_path / "s.loopsim.yaml"
    if text is None:
        text = SCENARIO.format(engine=engine, factory=f"{module}:{factory}", tool=tool)
    path.write_text(text.replace("MODULE", module), encoding="utf-8")
    return path


def validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["validate", str(path)])
    return code, capsys.readouterr().out


def line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
def test_a_good_factory_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    factory = "trader" if engine == "loopsim" else "af_trader"
    code, out = validate(project(tmp_path, factory=factory, engine=engine), capsys)
    assert code == 0, out
    assert out.startswith("ok ")


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
def test_a_scripted_call_of_a_tool_the_agent_lacks_names_the_closest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    factory = "trader" if engine == "loopsim" else "af_trader"
    path = project(tmp_path, factory=factory, engine=engine, tool="get_qoute")
    code, out = validate(path, capsys)
    assert code == 2
    line = line_of(path, "get_qoute")
    assert re.search(
        rf"^invalid  {re.escape(str(path))}:{line}: agents\.trader\.script\[0\]\.tool_call\.name: "
        rf"the agent factory validate_factories_\d+:{factory} built offers no tool 'get_qoute'; "
        r'did you mean "get_quote"\? \(its tools: get_quote\)',
        out,
        flags=re.MULTILINE,
    ), out


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("nowhere", r"module \"validate_factories_\d+\" has no attribute \"nowhere\""),
        ("not_an_agent", r"factory validate_factories_\d+:not_an_agent returned int, not an agent"),
        ("broken", r"factory validate_factories_\d+:broken raised RuntimeError: no credentials"),
    ],
    ids=["missing-function", "not-an-agent", "raises"],
)
def test_a_factory_problem_is_located_at_the_factory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], factory: str, message: str
) -> None:
    path = project(tmp_path, factory=factory)
    code, out = validate(path, capsys)
    assert code == 2
    prefix = f"invalid  {path}:{line_of(path, 'factory:')}: agents.trader.factory: "
    assert out.startswith(prefix), out
    assert re.search(message, out), out


def test_a_missing_module_is_located_at_the_factory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.loopsim.yaml"
    path.write_text(
        SCENARIO.format(engine="loopsim", factory="no_such_module_here:trader", tool="x"),
        encoding="utf-8",
    )
    code, out = validate(path, capsys)
    assert code == 2
    assert out.startswith(f"invalid  {path}:5: agents.trader.factory: cannot import module"), out
    assert "no_such_module_here" in out


BACKGROUND = """\
version: 1
agents:
  boss:
    factory: MODULE:coordinator
    script:
      - tool_call:
          name: background_agents_start_task
          arguments: {agent_name: writer, input: draft it, description: draft}
      - reply: started
  {child}:
    script: [a draft]
parent: {{agent: boss, background_agents: [{child}]}}
steps:
  - run: go
expect:
  response: {{contains: started}}
"""


def test_a_child_the_factorys_provider_does_not_know_is_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = BACKGROUND.replace("{child}", "editor").replace("{{", "{").replace("}}", "}")
    path = project(tmp_path, text=text)
    code, out = validate(path, capsys)
    assert code == 2
    line = line_of(path, "background_agents: [editor]")
    assert out.startswith(f"invalid  {path}:{line}: parent.background_agents[0]: "), out
    assert "does not know 'editor' (it knows: writer)" in out


def test_the_background_tools_of_the_factorys_provider_are_offered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = BACKGROUND.replace("{child}", "writer").replace("{{", "{").replace("}}", "}")
    code, out = validate(project(tmp_path, text=text), capsys)
    assert code == 0, out


def test_an_agent_whose_providers_may_add_tools_is_not_second_guessed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a context provider may add tools when the agent runs: validate cannot see them
    path = project(tmp_path, factory="with_other_provider", tool="shout")
    code, out = validate(path, capsys)
    assert code == 0, out


def test_every_problem_of_the_script_is_reported(tmp_path: Path) -> None:
    text = SCENARIO.format(engine="loopsim", factory="MODULE:trader", tool="get_qoute").replace(
        "      - reply:", "      - tool_call: [{name: quote}, {name: get_quote}]\n      - reply:"
    )
    path = project(tmp_path, text=text)
    problems = factory_problems(load_scenario(path))
    assert [p.location for p in problems] == [
        "agents.trader.script[0].tool_call.name",
        "agents.trader.script[1].tool_call[0].name",
    ]


def test_a_factory_that_blocks_is_stopped_at_its_bound(tmp_path: Path) -> None:
    path = project(tmp_path, factory="slow")
    done = loopsim_cli(
        "validate", str(path), env={"LOOPSIM_FACTORY_TIMEOUT": "1"}, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 1
    assert "calling the factory of module validate_factories_" in done.stderr
    assert "LOOPSIM_FACTORY_TIMEOUT" in done.stderr


def test_a_factory_that_exits_the_process_fails_validate(tmp_path: Path) -> None:
    path = project(tmp_path, factory="trader")
    module = path.parent / next(p.name for p in tmp_path.glob("validate_factories_*.py"))
    module.write_text(
        module.read_text(encoding="utf-8").replace(
            "def trader(client, name):\n", "def trader(client, name):\n    import os; os._exit(0)\n"
        ),
        encoding="utf-8",
    )
    done = loopsim_cli("validate", str(path), cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    assert "os._exit(0)" in done.stderr


def test_validate_still_passes_every_shipped_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", str(ROOT / "scenarios")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 invalid" in out


def test_a_scenario_without_factories_builds_nothing() -> None:
    loaded = load_scenario(ROOT / "scenarios" / "tool_calls.loopsim.yaml")
    assert factory_problems(loaded) == []


def test_the_docs_example_reports_the_unknown_tool(capsys: pytest.CaptureFixture[str]) -> None:
    docs = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    section = docs[docs.index("**Factories.**") : docs.index("\n## Expectations\n")]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    exec(compile(code, "docs/scenarios.md", "exec"), {})  # noqa: S102 - the docs' own example
    out = capsys.readouterr().out
    assert "offers no tool 'get_qoute'; did you mean \"get_quote\"?" in out
