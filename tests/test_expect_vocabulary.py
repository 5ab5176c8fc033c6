"""Expectations know their vocabulary: events.where values, expect/always conflicts, and
the usage: key (both engines)."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim._scenario import load_scenario_text, run_scenario

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

CAPPED = """\
version: 1
agents:
  helper: {policy: {echo: {delay: 10}}}
  writer:
    tools:
      lookup: {result: found}
    script:
      - tool_call: {name: lookup}
        usage: {input_tokens: 10, output_tokens: 3}
      - reply: draft
        usage: {input_tokens: 14, output_tokens: 5}
      - reply: draft again
        usage: {input_tokens: 20, output_tokens: 4}
parent: {agent: writer}
loop:
  evaluators: [completion_marker]
  max_iterations: 2
steps:
  - run: write
expect:
  stop_reason: max_iterations
  response: {contains: draft again}
"""


def _load(text: str) -> loopsim.LoadedScenario:
    return load_scenario_text(textwrap.dedent(text), path="x.loopsim.yaml")


def _with_event(kind: str, field: str, value: str, count: int = 0) -> str:
    return CAPPED + (
        f"  events:\n    - kind: {kind}\n      where: {{{field}: {value!r}}}\n"
        f"      count: {count}\n"
    )


def _error(text: str) -> loopsim.ScenarioError:
    with pytest.raises(loopsim.ScenarioError) as info:
        _load(text)
    return info.value


@pytest.mark.parametrize(
    ("kind", "field", "value", "suggested"),
    [
        ("loop_stop", "reason", "max-iterations", "max_iterations"),
        ("task_status", "status", "Lost", "lost"),
        ("task_finished", "outcome", "canceled", "cancelled"),
        ("evaluator_decision", "decision", "Stop", "stop"),
        ("fault", "fault", "rate-limit", "rate_limit"),
        ("model_request", "agent", "Writer", "writer"),
        ("tool_call", "name", "lookpu", "lookup"),
        ("task_status", "agent", "helpr", "helper"),
    ],
)
def test_a_misspelt_value_is_a_located_error(
    kind: str, field: str, value: str, suggested: str
) -> None:
    text = _with_event(kind, field, value)
    if kind.startswith("task_"):
        text = text.replace(
            "parent: {agent: writer}", "parent: {agent: writer, background_agents: [helper]}"
        )
    error = _error(text)
    assert error.location == f"expect.events[0].where.{field}"
    assert error.line == text.splitlines().index(f"      where: {{{field}: {value!r}}}") + 1
    assert f'did you mean "{suggested}"?' in str(error)
    assert "checks nothing" in str(error)


def test_count_zero_on_a_misspelling_used_to_pass_and_now_the_right_name_fails() -> None:
    # the right spelling with count 0 fails on a capped run: the count is real
    result = run_scenario(_load(_with_event("loop_stop", "reason", "max_iterations")))
    assert not result.passed
    assert any("expected 0 loop_stop" in f.message for f in result.failures)
    # and count 1 passes: the value occurs
    assert run_scenario(_load(_with_event("loop_stop", "reason", "max_iterations", 1))).passed


_FIXED = {
    ("loop_stop", "reason"): [
        "evaluators_stopped",
        "max_iterations",
        "approval_pending",
        "error",
        "cancelled",
    ],
    ("evaluator_decision", "decision"): ["continue", "stop"],
    ("task_finished", "outcome"): ["completed", "failed", "cancelled"],
}


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(sorted(_FIXED)).flatmap(
        lambda key: st.tuples(st.just(key), st.text("abcdefghijklmnopqrstuvwxyz_-", max_size=12))
    )
)
def test_only_values_that_can_occur_load(case: tuple[tuple[str, str], str]) -> None:
    (kind, field), value = case
    text = _with_event(kind, field, value)
    if value in _FIXED[kind, field]:
        _load(text)
    else:
        assert _error(text).location == f"expect.events[0].where.{field}"


def test_the_vocabulary_is_what_runs_record() -> None:
    # every stop reason, decision and tool the list allows shows up in real runs
    loaded = _load(CAPPED)
    result = run_scenario(loaded)
    seen = {(e.kind, str(e.data.get(k))) for e in result.events for k in ("reason", "decision")}
    assert ("loop_stop", "max_iterations") in seen
    assert ("evaluator_decision", "continue") in seen


@pytest.mark.parametrize(
    ("expect", "always", "location"),
    [
        ("unused_turns: false", "unused_turns: true", "always.unused_turns"),
        ("iterations: 2", "iterations: 3", "always.iterations"),
        ("calls: {writer: 3}", "calls: {writer: 2}", "always.calls.writer"),
        ("invariants: true", "invariants: false", "always.invariants"),
        ("elapsed: 0", "elapsed: {min: 5}", "always.elapsed"),
    ],
)
def test_expect_and_always_that_disagree_is_a_located_error(
    expect: str, always: str, location: str
) -> None:
    text = CAPPED + f"  {expect}\nalways:\n  {always}\n"
    error = _error(text)
    assert error.location == location
    assert error.line == len(text.splitlines())
    assert "cannot both" in str(error) or "both blocks" in str(error)


def test_expect_and_always_that_agree_load() -> None:
    _load(
        CAPPED + "  unused_turns: true\n  elapsed: 0\nalways:\n  unused_turns: true\n"
        "  iterations: 2\n  elapsed: {max: 10}\n"
    )


# -- usage ------------------------------------------------------------------------------------

USAGE_OK = """\
  usage:
    input_tokens: 44
    output_tokens: {max: 12}
    agents:
      writer: {input_tokens: 44, output_tokens: 12}
"""


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
@pytest.mark.parametrize(
    ("block", "location"),
    [
        (USAGE_OK, None),
        (
            USAGE_OK.replace("input_tokens: 44\n", "input_tokens: 45\n", 1),
            "expect.usage.input_tokens",
        ),
        (USAGE_OK.replace("{max: 12}", "{max: 11}"), "expect.usage.output_tokens"),
        (
            USAGE_OK.replace("output_tokens: 12}", "output_tokens: 13}"),
            "expect.usage.agents.writer.output_tokens",
        ),
        (USAGE_OK.replace("writer:", "helper:"), "expect.usage.agents.helper"),
    ],
)
def test_usage_can_pass_and_fail(engine: str, block: str, location: str | None) -> None:
    # 10+14 in the first run's two calls, 20 in the second; the host's response is the
    # loop's, summed over its iterations
    text = CAPPED + block
    result = run_scenario(_load(text), engine=engine)  # type: ignore[arg-type] # a literal
    usage = [f for f in result.failures if f.location.startswith("expect.usage")]
    if location is None:
        assert not usage, [f.message for f in result.failures]
    else:
        assert {
            f.location.rsplit(".", 1)[0] if location.endswith("helper") else f.location
            for f in usage
        } == {location}, [f.message for f in result.failures]


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ("usage: {}", "checks nothing"),
        ("usage: {agents: {}}", "checks nothing"),
        ("usage: {input_tokens: {}}", "checks nothing"),
        ("usage: {inputs: 3}", "inputs"),
    ],
)
def test_usage_that_checks_nothing_is_an_error(block: str, said: str) -> None:
    error = _error(CAPPED + f"  {block}\n")
    assert (error.location or "").startswith("expect.usage")
    assert said in str(error)
