"""docs/testing_agent_framework.md, section 6 (hosted tools), is true: its Python example
runs, and its scenario is the shipped file, passing on both engines."""

from __future__ import annotations

import re
from pathlib import Path

import loopsim

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "testing_agent_framework.md").read_text(encoding="utf-8")
SECTION = PAGE[PAGE.index("## 6. Hosted tools") :]
SHIPPED = ROOT / "scenarios" / "hosted_web_search.loopsim.yaml"


def _block(language: str) -> str:
    (block,) = re.findall(rf"```{language}\n(.*?)```", SECTION, flags=re.DOTALL)
    return block


def test_the_hosted_tools_example_runs() -> None:
    code = compile(_block("python"), "docs/testing_agent_framework.md", "exec")
    exec(code, {"__name__": "docs"})  # noqa: S102 - the page's own example


def test_the_hosted_tools_scenario_is_the_shipped_one_and_passes_on_both_engines() -> None:
    assert _block("yaml") == SHIPPED.read_text(encoding="utf-8")
    result = loopsim.run_scenario(loopsim.load_scenario(SHIPPED), engine="both")
    assert result.passed, result.report()
