"""A tool that raises fails the scenario unless the scenario declares it (issue 21, item 9).

Both engines turn a tool's exception into an error result for the model and go on, so a
broken tool used to pass unseen (a captured log line at most). Each test runs on both
engines in the same test: the built-in Agent and agent_framework's function layer.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import ScenarioError, ToolErrorInfo
from loopsim._scenario import ENGINES, load_scenario_text, run_scenario
from loopsim._transcript import read_transcript, render_text, write_transcript

ROOT = Path(__file__).resolve().parent.parent

#: An agent whose get_quote raises once (after 30 virtual seconds of thinking), then works.
FLAKY = """\
version: 1
agents:
  trader:
    script:
      - tool_call: {{name: get_quote, arguments: {{symbol: MSFT}}}}
        delay: 30
      - tool_call: {{name: get_quote, arguments: {{symbol: MSFT}}}}
      - reply: MSFT is trading at 420.50.
    tools:
      get_quote:
        result: 420.5
        faults:
          - {{fault: error, message: quote service down, times: {times}}}
      get_news: {{result: none}}
parent: {{agent: trader}}
steps:
  - run: What is MSFT trading at?
expect:
  response: {{contains: "420.50"}}
{declared}"""


def flaky(declared: str = "", times: int = 1) -> str:
    """The scenario; ``times`` of get_quote's calls raise (0: none, no fault rule)."""
    text = FLAKY.format(declared=declared, times=max(times, 1))
    if times == 0:
        text = re.sub(r"        faults:\n.*\n", "", text)
    return text


def run(text: str, engine: str) -> loopsim.ScenarioResult:
    return run_scenario(load_scenario_text(text, path="flaky.loopsim.yaml"), engine=engine)


def problems(result: loopsim.ScenarioResult) -> list[str]:
    return [f.render(result.path) for f in result.failures]


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


# -- undeclared -------------------------------------------------------------------------------


def test_an_undeclared_tool_error_fails_naming_tool_arguments_exception_and_time() -> None:
    text = flaky()
    for engine in ENGINES:
        result = run(text, engine)
        (failure,) = result.failures
        assert failure.kind == "tool_error"
        assert failure.render(result.path) == (
            f"flaky.loopsim.yaml:{line_of(text, '- run:')}: steps[0]: tool get_quote raised "
            'ToolFaultError: quote service down (agent trader, arguments {"symbol": "MSFT"}, '
            "at t=30s): a tool that raises fails the scenario unless it is declared; if it is "
            "meant to, add `tool_errors: [{tool: get_quote, error: ToolFaultError}]` under "
            "expect: (or the step's expect:)"
        ), engine


def test_the_result_carries_tool_errors_as_data_alike_on_both_engines() -> None:
    seen = {}
    for engine in ENGINES:
        result = run(flaky("  tool_errors: 1\n"), engine)
        assert result.passed, result.report()
        (error,) = result.tool_errors
        assert isinstance(error, ToolErrorInfo)
        seen[engine] = (
            error.agent,
            error.tool,
            error.arguments,
            error.error,
            error.message,
            error.time,
            error.text,
        )
    assert (
        seen["loopsim"]
        == seen["agent_framework"]
        == (
            "trader",
            "get_quote",
            {"symbol": "MSFT"},
            "ToolFaultError",
            "quote service down",
            30.0,
            "ToolFaultError: quote service down",
        )
    )


def test_no_tool_error_no_failure_and_an_empty_list() -> None:
    for engine in ENGINES:
        result = run(flaky(times=0), engine)
        assert result.passed, result.report()
        assert result.tool_errors == []


def test_a_refused_call_is_not_a_tool_error_the_tool_never_ran() -> None:
    text = """\
version: 1
agents:
  ops:
    script:
      - fault: malformed_tool_call
        name: fetch
        arguments: {bogus: 1}
      - reply: done
    tools:
      fetch: {parameters: [url]}
parent: {agent: ops}
steps:
  - run: go
expect:
  response: {contains: done}
  events: [{kind: tool_result, where: {name: fetch}, count: 1}]
"""
    for engine in ENGINES:
        result = run(text, engine)
        assert result.passed, result.report()
        assert result.tool_errors == []


def test_a_childs_tool_error_is_seen_too() -> None:
    text = """\
version: 1
agents:
  boss:
    script:
      - tool_call:
          name: background_agents_start_task
          arguments: {agent_name: helper, input: look it up, description: lookup}
      - tool_call: {name: background_agents_wait_for_first_completion, arguments: {task_ids: [1]}}
      - reply: done
  helper:
    script:
      - tool_call: {name: lookup, arguments: {q: x}}
      - reply: found nothing
    tools:
      lookup: {error: index offline}
parent: {agent: boss, background_agents: [helper]}
steps:
  - run: go
expect:
  response: {contains: done}
  tasks: {1: completed}
"""
    for engine in ENGINES:
        result = run(text, engine)
        (failure,) = result.failures
        assert "tool lookup raised ScriptedFailure: index offline (agent helper" in (
            failure.message
        ), engine
        declared = text + "  tool_errors: [{tool: lookup, agent: helper}]\n"
        assert run(declared, engine).passed, engine
        wrong_agent = text + "  tool_errors: [{tool: lookup, agent: boss}]\n"
        assert len(run(wrong_agent, engine).failures) == 2, engine


# -- declared ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "declared",
    [
        "  tool_errors: 1\n",
        "  tool_errors: [get_quote]\n",
        "  tool_errors: [{tool: get_quote, error: ToolFaultError}]\n",
        "  tool_errors: [{error: service down, count: 1}]\n",
        "  tool_errors: [{tool: get_quote, count: {min: 1, max: 2}}]\n",
    ],
    ids=["count", "short", "type", "substring", "range"],
)
def test_a_declared_tool_error_passes(declared: str) -> None:
    for engine in ENGINES:
        result = run(flaky(declared), engine)
        assert result.passed, result.report()


@pytest.mark.parametrize(
    ("declared", "needle", "message"),
    [
        (
            "  tool_errors: [{tool: get_news}]\n",
            "{tool: get_news}",
            (
                "expected at least 1 tool error(s) of tool get_news, got 0 (the tool errors "
                "there were: tool get_quote raised ToolFaultError: quote service down"
            ),
        ),
        (
            "  tool_errors: [{tool: get_quote, count: 2}]\n",
            "count: 2",
            "expected 2 tool error(s) of tool get_quote, got 1: tool get_quote raised",
        ),
        (
            "  tool_errors: 2\n",
            "tool_errors: 2",
            "expected 2 tool error(s), got 1: tool get_quote raised",
        ),
        (
            "  tool_errors: 0\n",
            "tool_errors: 0",
            "expected 0 tool error(s), got 1: tool get_quote raised",
        ),
        (
            "  tool_errors: [{tool: get_quote, error: TimeoutError}]\n",
            "TimeoutError",
            "expected at least 1 tool error(s) of tool get_quote raising 'TimeoutError', got 0",
        ),
    ],
    ids=["other-tool", "count", "total", "none", "other-error"],
)
def test_a_declaration_that_does_not_hold_fails_at_its_line(
    declared: str, needle: str, message: str
) -> None:
    text = flaky(declared)
    for engine in ENGINES:
        result = run(text, engine)
        first = result.failures[0]
        assert first.line == line_of(text, needle), engine
        assert first.message.startswith(message), (engine, first.message)
        assert first.location is not None
        assert first.location.startswith("expect.tool_errors")


def test_an_error_no_item_declares_fails_beside_the_item_that_matched_nothing() -> None:
    result = run(flaky("  tool_errors: [{tool: get_quote, error: TimeoutError}]\n"), "loopsim")
    assert len(result.failures) == 2
    assert "and no item of tool_errors declares it" in result.failures[1].message


def test_a_declared_tool_error_that_did_not_happen_fails() -> None:
    for engine in ENGINES:
        result = run(flaky("  tool_errors: [get_quote]\n", times=0), engine)
        (failure,) = result.failures
        assert failure.message == "expected at least 1 tool error(s) of tool get_quote, got 0"


# -- per step ---------------------------------------------------------------------------------

TWO_STEPS = """\
version: 1
agents:
  ops:
    script:
      - reply: nothing to fetch yet
      - tool_call: {{name: fetch, arguments: {{url: b}}}}
      - reply: done
    tools:
      fetch: {{error: gone}}
parent: {{agent: ops}}
steps:
  - run: first
{first}  - run: second
{second}expect:
  response: {{contains: done}}
"""


def test_a_step_declares_the_tool_errors_of_its_own_call() -> None:
    own = "    expect: {tool_errors: [fetch]}\n"
    for engine in ENGINES:
        result = run(TWO_STEPS.format(first="", second=own), engine)
        assert result.passed, result.report()


def test_a_step_that_declares_them_does_not_cover_another_steps_errors() -> None:
    own = "    expect: {tool_errors: [fetch]}\n"
    text = TWO_STEPS.format(first=own, second="")
    for engine in ENGINES:
        result = run(text, engine)
        lines = sorted((f.line, f.location, f.kind) for f in result.failures)
        assert lines == [
            (
                line_of(text, "tool_errors: [fetch]"),
                "steps[0].expect.tool_errors[0]",
                "expectation",
            ),
            (line_of(text, "- run: second"), "steps[1]", "tool_error"),
        ], engine


def test_a_vary_draw_checks_its_always_block() -> None:
    text = """\
version: 1
agents:
  ops:
    script:
      - tool_call: {name: fetch, arguments: {url: a}}
      - reply: done
    tools:
      fetch: {result: page}
parent: {agent: ops}
steps:
  - run: go
expect:
  response: {contains: done}
vary:
  agents.ops.tools.fetch.faults:
    fault_set: {kinds: [error], calls: [1, 1], max_faults: 1}
vary_settings: {max_examples: 10}
always:
  response: {contains: done}
  tool_errors: [{tool: fetch, count: {max: 1}}]
"""
    loaded = load_scenario_text(text, path="vary.loopsim.yaml")
    assert loopsim._scenario.run_vary(loaded).result.passed
    undeclared = load_scenario_text(
        text.replace("  tool_errors: [{tool: fetch, count: {max: 1}}]\n", ""),
        path="vary.loopsim.yaml",
    )
    failed = loopsim._scenario.run_vary(undeclared).result
    assert not failed.passed
    assert "tool fetch raised ToolFaultError" in failed.report()


# -- the file format --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "needle", "message"),
    [
        ("  tool_errors: []\n", "tool_errors", "an empty list of tool errors declares nothing"),
        ("  tool_errors: [{}]\n", "tool_errors", "an empty tool error declares nothing"),
        (
            "  tool_errors: [{tool: get_qoute}]\n",
            "get_qoute",
            'no agent offers a tool "get_qoute"; did you mean "get_quote"?',
        ),
        (
            "  tool_errors: [{tool: get_quote, agent: tradr}]\n",
            "tradr",
            'unknown agent "tradr"; did you mean "trader"?',
        ),
        (
            "  tool_errors: [{tool: get_quote, count: {min: 3, max: 1}}]\n",
            "count",
            "inverted range",
        ),
        ("  tool_errors: [{tool: get_quote, kind: x}]\n", "kind", 'unknown key "kind"'),
    ],
    ids=["empty-list", "empty-item", "unknown-tool", "unknown-agent", "inverted", "unknown-key"],
)
def test_a_bad_declaration_is_a_located_load_error(
    declared: str, needle: str, message: str
) -> None:
    text = flaky(declared)
    with pytest.raises(ScenarioError) as caught:
        load_scenario_text(text, path="flaky.loopsim.yaml")
    assert caught.value.line == line_of(text, needle)
    assert message in caught.value.problem


# -- the transcript ---------------------------------------------------------------------------


def test_the_transcript_records_the_error_the_same_way_every_run(tmp_path: Path) -> None:
    for engine in ENGINES:
        texts = []
        for attempt in range(2):
            result = run(flaky("  tool_errors: 1\n"), engine)
            assert result.transcript is not None
            path = write_transcript(
                tmp_path / f"{engine}{attempt}.transcript.json", result.transcript
            )
            texts.append(path.read_bytes())
        assert texts[0] == texts[1], engine
        back = read_transcript(tmp_path / f"{engine}0.transcript.json")
        (raised,) = [
            e.data for e in back.events if e.kind == "tool_result" and "error_type" in e.data
        ]
        assert (raised["error_type"], raised["error"], raised["result"]) == (
            "ToolFaultError",
            "quote service down",
            None,
        )
        assert re.search(
            r"tool_result .* get_quote #\S+ raised ToolFaultError \"quote service down\"",
            render_text(back),
        )


def test_events_can_count_tool_results_by_error_type() -> None:
    text = flaky(
        "  tool_errors: 1\n  events:\n"
        "    - {kind: tool_result, where: {error_type: ToolFaultError}, count: 1}\n"
    )
    for engine in ENGINES:
        assert run(text, engine).passed, engine
    assert not run(text.replace("count: 1}\n", "count: 2}\n"), "loopsim").passed


def test_a_python_agent_records_what_its_tool_raised() -> None:
    def explode(city: str) -> str:
        raise LookupError(f"no weather for {city}")

    agent = loopsim.Agent(
        loopsim.ScriptedChatClient(
            [
                loopsim.Message(
                    "assistant",
                    [
                        loopsim.FunctionCallContent(
                            call_id="c1", name="explode", arguments={"city": "Oslo"}
                        )
                    ],
                ),
                "sorry",
            ]
        ),
        name="a",
        tools=[loopsim.FunctionTool(explode)],
    )
    response, transcript = loopsim.record(agent.run, "weather?")
    assert response.text == "sorry"
    (result,) = [e.data for e in transcript.events if e.kind == "tool_result"]
    assert (result["error_type"], result["error"]) == ("LookupError", "no weather for Oslo")


def test_agent_framework_refusal_seam_exists() -> None:
    from loopsim.agent_framework._upstream import ARGUMENT_ERROR, is_argument_error

    module, name = ARGUMENT_ERROR
    refused = getattr(__import__(module, fromlist=[name]), name)
    assert is_argument_error(refused("bad"))
    assert not is_argument_error(ValueError("bad"))


# -- a space of inputs ------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    raised=st.integers(min_value=0, max_value=2),
    declared=st.integers(min_value=0, max_value=2),
    form=st.sampled_from(["total", "item"]),
)
def test_a_declaration_passes_exactly_when_it_says_how_many_raised(
    raised: int, declared: int, form: str
) -> None:
    spec = (
        f"  tool_errors: {declared}\n"
        if form == "total"
        else f"  tool_errors: [{{tool: get_quote, count: {declared}}}]\n"
    )
    result = run(flaky(spec, times=raised), "loopsim")
    assert result.passed == (raised == declared), result.report()
    assert len(result.tool_errors) == raised


# -- shipped scenario and docs ----------------------------------------------------------------


def test_the_shipped_scenario_fails_without_its_declaration() -> None:
    path = ROOT / "scenarios" / "tool_errors.loopsim.yaml"
    text = path.read_text(encoding="utf-8")
    assert run_scenario(loopsim.load_scenario(path), engine="both").passed
    start = text.index("  tool_errors:")
    end = text.index("  events:")
    stripped = text[:start] + text[end:]
    result = run_scenario(load_scenario_text(stripped, path=path), engine="both")
    assert [f.kind for f in result.failures] == ["tool_error", "tool_error"]


def test_the_docs_example_runs_on_both_engines(tmp_path: Path) -> None:
    docs = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    section = docs[docs.index("### Tool errors") :]
    (yaml_text,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.DOTALL)[:1]
    path = tmp_path / "docs_tool_errors.loopsim.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    result = run_scenario(loopsim.load_scenario(path), engine="both")
    assert result.passed, result.report()
    broken = yaml_text.replace("count: 2", "count: 1")
    assert broken != yaml_text
    assert not run_scenario(load_scenario_text(broken, path=path), engine="loopsim").passed
