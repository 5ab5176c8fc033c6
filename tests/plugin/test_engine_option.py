"""--loopsim-engine (and `loopsim run --engine`): pick the engine, or compare both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _cli import loopsim_cli

import loopsim

ROOT = Path(__file__).parent.parent.parent
SCENARIOS = ROOT / "scenarios"

pytest_plugins = ["pytester"]

ONE_REPLY = """\
version: 1
agents:
  writer: {script: [hello]}
parent: {agent: writer}
steps: [{run: hi}]
expect: {response: {equals: hello}}
"""


def _write(pytester: pytest.Pytester, name: str, text: str) -> Path:
    path = pytester.path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework", "both"])
def test_each_engine_choice_runs_the_scenario(pytester: pytest.Pytester, engine: str) -> None:
    _write(pytester, "one.loopsim.yaml", ONE_REPLY)
    result = pytester.runpytest(f"--loopsim-engine={engine}")
    result.assert_outcomes(passed=1)


def test_both_fails_on_a_failed_expectation_and_names_the_engine(pytester: pytest.Pytester) -> None:
    _write(pytester, "one.loopsim.yaml", ONE_REPLY.replace("equals: hello", "equals: bye"))
    result = pytester.runpytest("--loopsim-engine=both")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]engine loopsim] expected the response*"])
    result.stdout.fnmatch_lines(["*[[]engine agent_framework] expected the response*"])


def test_both_skips_with_the_reason_when_one_engine_cannot_build_it(
    pytester: pytest.Pytester,
) -> None:
    _write(
        pytester,
        "trio.loopsim.yaml",
        ONE_REPLY.replace("version: 1\n", "version: 1\nbackend: trio\n"),
    )
    result = pytester.runpytest("--loopsim-engine=both", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*engines not compared: engine agent_framework: *asyncio only*"])


def test_an_unbuildable_engine_fails_with_a_located_error(pytester: pytest.Pytester) -> None:
    _write(
        pytester,
        "trio.loopsim.yaml",
        ONE_REPLY.replace("version: 1\n", "version: 1\nbackend: trio\n"),
    )
    result = pytester.runpytest("--loopsim-engine=agent_framework")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*trio.loopsim.yaml:2: backend: engine agent_framework:*"])


def test_loopsim_run_takes_engine(tmp_path: Path) -> None:
    path = tmp_path / "one.loopsim.yaml"
    path.write_text(ONE_REPLY, encoding="utf-8")
    done = loopsim_cli("run", "--engine", "both", str(path), "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "loopsim: 1 scenario: 1 passed" in done.stdout


def _known() -> dict[str, str]:
    out = {}
    for path in sorted(SCENARIOS.glob("*.loopsim.yaml")):
        reason = loopsim.load_scenario(path).scenario.known_divergence
        if reason is not None:
            out[path.name] = reason
    return out


def test_docs_list_every_known_divergence_with_its_reason() -> None:
    page = (ROOT / "docs" / "engines.md").read_text(encoding="utf-8")
    block = re.search(
        r"<!-- known-divergences:start -->\n(.*?)<!-- known-divergences:end -->", page, re.DOTALL
    )
    assert block is not None
    listed = dict(re.findall(r"^\* `([^`]+)`: (.*)$", block.group(1), flags=re.MULTILINE))
    assert listed == _known()
    if not listed:
        assert "None: every shipped scenario" in block.group(1)
