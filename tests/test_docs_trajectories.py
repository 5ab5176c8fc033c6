"""docs/trajectories.md is a test: its scenario is the shipped one, its fragments are in
the shipped scenarios, its failure texts are what loopsim prints, its Python runs."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import loopsim
from loopsim._scenario import load_scenario_text

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "trajectories.md").read_text(encoding="utf-8")
SCENARIOS = ROOT / "scenarios"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, flags=re.DOTALL)


def test_the_first_example_is_the_shipped_scenario() -> None:
    shipped = (SCENARIOS / "approval_never_bypassed.loopsim.yaml").read_text(encoding="utf-8")
    assert blocks("yaml")[0] == shipped


def test_the_bypass_fails_as_the_page_shows() -> None:
    # the same file with place_order set up without its approval and the model just calling it
    text = (
        blocks("yaml")[0]
        .replace("approval_request:", "tool_call:")
        .replace(", approval_required: true", "")
        .replace("  - approve: false\n", "")
        .replace("      - {host: approve, approved: false}\n", "")
    )
    loaded = load_scenario_text(text, path="approval_never_bypassed.loopsim.yaml")
    result = loopsim.run_scenario(loaded)
    shown = [f.render(result.path) for f in result.failures]
    assert shown == [blocks("text")[0].rstrip("\n")]


def test_the_fragments_are_in_the_shipped_scenarios() -> None:
    shipped = "".join(p.read_text(encoding="utf-8") for p in SCENARIOS.glob("*.loopsim.yaml"))
    for line in blocks("yaml")[1].splitlines():
        step = line.strip()
        if step.startswith("- {"):
            assert step.split("  #")[0].removeprefix("- ") in shipped, step


def test_the_aligned_failure_is_what_loopsim_prints() -> None:
    text = textwrap.dedent("""\
        version: 1
        agents:
          trader:
            script:
              - tool_call: {name: get_quote, arguments: {symbol: MSFT}}
              - tool_call: {name: get_news, arguments: {symbol: MSFT}}
              - reply: MSFT is 420.50 DONE
            tools:
              get_quote: {result: "420.50"}
              get_news: {result: calm}
        parent: {agent: trader}
        loop:
          evaluators: [completion_marker]
        steps:
          - run: quote MSFT
        expect:
          trajectory: {mode: in_order, steps: [{tool: get_news}, {tool: get_quote}]}
        """)
    result = loopsim.run_scenario(load_scenario_text(text, path="x.loopsim.yaml"))
    (failure,) = result.failures
    assert failure.render(result.path) == blocks("text")[1].rstrip("\n")


@pytest.mark.parametrize("code", blocks("python"), ids=["assert_trajectory", "strategies"])
def test_the_python_examples_run(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, "docs/trajectories.md", "exec"), {"__name__": "docs"})  # noqa: S102
    out = capsys.readouterr().out
    if "Regex" in code:
        assert "trajectory (in_order) does not match" in out
        assert ">> 1. says regex" in out
