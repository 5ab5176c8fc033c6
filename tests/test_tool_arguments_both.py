"""Refused tool arguments compared across engines (`--engine both`).

A call whose arguments do not fit the tool (the ``malformed_tool_call`` fault) is answered
on each engine with an error result in the engine's own words. The comparison holds the
engines to the facts: an error result for the same call id, no result in the tool's
record (it never ran), and beside it a text that names the same tool and the same
refused arguments, in order (:func:`loopsim._wording.agrees`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

import loopsim
from loopsim._agents import _tools
from loopsim._scenario import ENGINES, load_scenario, load_scenario_text, run_scenario
from loopsim._wording import WORDING, agrees, refused_arguments

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "scenarios" / "bad_tool_arguments.loopsim.yaml"
DISAGREE = "the engines disagree"


def flow(value: Any) -> str:
    """``value`` as one line of YAML: PyYAML escapes what a YAML file may not hold raw."""
    return yaml.safe_dump(
        value, default_flow_style=True, default_style='"', allow_unicode=True, width=float("inf")
    ).strip()


def scenario(arguments: dict[str, Any]) -> str:
    return f"""\
version: 1
agents:
  reader:
    script:
      - fault: malformed_tool_call
        name: fetch
        arguments: {flow(arguments)}
      - reply: done
    tools:
      fetch: {{parameters: [url], result: hello}}
parent: {{agent: reader}}
steps:
  - run: go
expect:
  response: {{contains: done}}
"""


def both(text: str) -> loopsim.ScenarioResult:
    return run_scenario(load_scenario_text(text, path="bad.loopsim.yaml"), engine="both")


def messages(result: loopsim.ScenarioResult) -> list[str]:
    return [f.render(result.path) for f in result.failures]


def refusal(result: loopsim.ScenarioResult) -> dict[str, Any]:
    (record,) = [e.data for e in result.transcript.events if e.kind == "tool_result"]
    return record


def test_the_shipped_scenario_agrees_on_both_engines() -> None:
    result = run_scenario(load_scenario(SHIPPED), engine="both")
    assert result.passed, result.report()
    assert result.warnings == []
    assert result.other is not None
    for side in (result, result.other):  # the built-in engine's run, then upstream's
        first = next(e.data for e in side.transcript.events if e.kind == "tool_result")
        assert first["call_id"] == "fault-call-0001"
        assert first["result"] is None  # the tool never ran
        assert "'fetch'" in first["error"]
        assert "address" in first["error"]
        assert "error_type" not in first  # refused, not raised: not a tool error


# names the tool does not take, and values of every JSON kind
EXTRA = st.dictionaries(
    st.from_regex(r"[a-z][a-z0-9_]{0,9}", fullmatch=True).filter(lambda n: n != "url"),
    st.one_of(st.integers(), st.text(max_size=8), st.booleans(), st.none()),
    min_size=1,
    max_size=3,
)


@settings(max_examples=12, deadline=None)
@given(extra=EXTRA, url=st.one_of(st.none(), st.just("https://example.com")))
@example(extra={"a": "\x7f", "b": "x\ny"}, url=None)  # what a YAML file may not hold raw
def test_any_refused_arguments_agree_on_both_engines(
    extra: dict[str, Any], url: str | None
) -> None:
    arguments = {**extra} if url is None else {"url": url, **extra}
    result = both(scenario(arguments))
    assert result.passed, result.report()
    assert result.other is not None
    for side in (result, result.other):
        record = refusal(side)
        assert record["result"] is None
        assert agrees(refusal(result)["error"], record["error"])
        assert all(name in record["error"] for name in extra)


# -- a planted difference is a divergence --------------------------------------------------


def test_a_refusal_without_the_error_prefix_diverges(monkeypatch: pytest.MonkeyPatch) -> None:
    text = WORDING["agent.tool.bad_arguments"].removeprefix("Error: ")
    monkeypatch.setitem(WORDING, "agent.tool.bad_arguments", text)
    result = both(scenario({"bogus": 1}))
    (problem,) = messages(result)
    assert DISAGREE in problem
    assert ".result" in problem  # the result the model reads


def test_running_the_tool_anyway_diverges(monkeypatch: pytest.MonkeyPatch) -> None:
    invoke = _tools.FunctionTool.invoke

    async def lenient(self: _tools.FunctionTool, arguments: Any = None, **kwargs: Any) -> Any:
        try:
            return await invoke(self, arguments, **kwargs)
        except _tools.ToolArgumentError:
            return await invoke(self, {})  # the arguments dropped: the tool runs

    monkeypatch.setattr(_tools.FunctionTool, "invoke", lenient)
    result = both(scenario({"bogus": 1}))
    (problem,) = messages(result)
    assert DISAGREE in problem
    assert refusal(result)["result"] == "hello"


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param(lambda tool, problems: refused_arguments("get", problems), id="other-tool"),
        pytest.param(
            lambda tool, problems: refused_arguments(tool, [("url", "Field required")]),
            id="other-argument",
        ),
        pytest.param(
            lambda tool, problems: refused_arguments(tool, [*problems, ("depth", "too deep")]),
            id="one-argument-more",
        ),
    ],
)
def test_a_refusal_naming_other_facts_diverges(monkeypatch: pytest.MonkeyPatch, plant: Any) -> None:
    monkeypatch.setattr(_tools, "refused_arguments", plant)
    result = both(scenario({"bogus": 1}))
    (problem,) = messages(result)
    assert DISAGREE in problem
    assert ".error" in problem or "error:" in problem


def test_on_each_engine_alone_the_refusal_is_not_a_tool_error() -> None:
    # the same text on one engine at a time: no failure, nothing in tool_errors
    for engine in ENGINES:
        result = run_scenario(load_scenario_text(scenario({"bogus": 1})), engine=engine)
        assert result.passed, result.report()
        assert result.tool_errors == []


# -- agrees() on the facts of refused arguments ----------------------------------------------

# words no one of which is inside another, or inside the fixed text around them
WORDS = ["alpha", "bravo", "charlie", "delta", "kilo"]


def other_engine(tool: str, paths: list[str], prefix: str = "") -> str:
    """A refusal in other words: the tool, a count, then one argument per line."""
    listed = "".join(f"\n{p}\n  missing" for p in paths)
    return f"{prefix}Bad call of '{tool}': {len(paths)} problem(s){listed}"


@given(
    tool=st.sampled_from(["fetch", "search", "write"]),
    paths=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True),
)
def test_agrees_needs_the_tool_and_each_argument_in_order(tool: str, paths: list[str]) -> None:
    ours = refused_arguments(tool, [(p, "Field required") for p in paths])
    assert agrees(ours, other_engine(tool, paths))
    assert not agrees(ours, other_engine(tool, paths, prefix="Error: "))  # error or not
    assert not agrees(ours, other_engine("other", paths))  # another tool
    assert not agrees(ours, other_engine(tool, paths[:-1]))  # an argument left out
    if len(paths) > 1:
        assert not agrees(ours, other_engine(tool, paths[::-1]))  # another order
