"""docs/faults.md is a test: its Python runs, its scenarios are the shipped ones and pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import loopsim

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "faults.md").read_text(encoding="utf-8")
SCENARIOS = ROOT / "scenarios"

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, flags=re.DOTALL)


@pytest.mark.parametrize("code", blocks("python"), ids=["tenacity", "faulty_tool"])
def test_the_python_examples_run(code: str) -> None:
    exec(compile(code, "docs/faults.md", "exec"), {"__name__": "faults_doc"})  # noqa: S102 - the page's own example


def _shipped(text: str) -> Path:
    for path in sorted(SCENARIOS.glob("*.loopsim.yaml")):
        if path.read_text(encoding="utf-8") == text:
            return path
    raise AssertionError("a scenario on docs/faults.md is not a shipped scenario file as is")


WHOLE = [b for b in blocks("yaml") if b.startswith("# yaml-language-server")]


def test_the_page_shows_both_shipped_examples() -> None:
    assert sorted(_shipped(b).name for b in WHOLE) == [
        "lost_child.loopsim.yaml",
        "retry_storm.loopsim.yaml",
    ]


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
@pytest.mark.parametrize("text", WHOLE, ids=["retry_storm", "lost_child"])
def test_the_pages_scenarios_pass_on_both_engines(text: str, engine: str) -> None:
    result = loopsim.run_scenario(loopsim.load_scenario(_shipped(text)), engine=engine)
    assert result.passed, result.report()


def test_the_vary_fragment_is_the_shipped_vary_scenario_with_server_errors() -> None:
    (fragment,) = [b for b in blocks("yaml") if b.startswith("vary:")]
    shipped = (SCENARIOS / "vary_retry_faults.loopsim.yaml").read_text(encoding="utf-8")
    breaking = shipped.replace("kinds: [rate_limit]", "kinds: [rate_limit, server_error]")
    lines = breaking.splitlines()
    assert all(line in lines for line in fragment.splitlines()), fragment


def test_every_fault_kind_is_in_the_table() -> None:
    from loopsim._clients._faults import FAULT_KINDS

    table = {m.group(1) for m in re.finditer(r"^\| `(\w+)`", PAGE, flags=re.MULTILINE)}
    assert set(FAULT_KINDS) <= table, set(FAULT_KINDS) - table
