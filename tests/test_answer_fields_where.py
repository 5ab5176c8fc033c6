"""``expect.events`` ``where:`` matches a model answer's fields (issue 21).

``{kind: model_response, where: {finish_reason: length}}`` counts the answers that set
that finish reason, on both engines; a misspelt field name is a located load error with
the closest name, and a count that does not hold is a failure located at its ``where``.
"""

from __future__ import annotations

import pytest

import loopsim
from loopsim._scenario import load_scenario_text, run_scenario

ENGINES = ("loopsim", "agent_framework")
pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

SCENARIO = """\
version: 1
agents:
  writer:
    script:
      - reply: cut short
        finish_reason: length
        model: model-2026-01
        created_at: "2026-12-02T07:00:00Z"
        conversation_id: conv-9
        continuation_token: {step: 2}
        additional_properties: {region: eu}
      - reply: done
        finish_reason: stop
parent: {agent: writer}
steps: [{run: hi}, {run: again}]
expect:
  events:
    - {kind: model_response, where: %s, count: %s}
"""


def _run(where: str, count: str, engine: str) -> loopsim.ScenarioResult:
    return run_scenario(load_scenario_text(SCENARIO % (where, count)), engine=engine)  # type: ignore[arg-type] # one engine's name


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("where", "count"),
    [
        ("{finish_reason: length}", "1"),
        ("{finish_reason: stop}", "1"),
        ("{agent: writer, model: model-2026-01, created_at: '2026-12-02T07:00:00Z'}", "1"),
        ("{conversation_id: conv-9}", "1"),
        ("{continuation_token: {step: 2}}", "1"),
        ("{continuation_token: null}", "1"),  # the answer that sets none
        ("{additional_properties: {region: eu}}", "1"),
        ("{model: null}", "1"),
        ("{finish_reason: content_filter}", "0"),
    ],
)
def test_where_counts_the_answers_that_set_a_field(where: str, count: str, engine: str) -> None:
    result = _run(where, count, engine)
    assert result.passed, result.report()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_wrong_value_fails_located_at_the_count(engine: str) -> None:
    result = _run("{finish_reason: length}", "2", engine)
    assert not result.passed
    (failure,) = result.failures
    assert failure.line == 18
    assert failure.location == "expect.events[0].count"
    assert failure.message == (
        "expected 2 model_response event(s) with finish_reason='length', got 1"
    )


@pytest.mark.parametrize(
    ("where", "hint"),
    [
        ("{finish_reasn: length}", 'did you mean "finish_reason"?'),
        ("{created: x}", 'did you mean "created_at"?'),
        ("{modle: x}", 'did you mean "model"?'),
    ],
)
def test_a_misspelt_field_name_is_a_located_error_with_the_closest(where: str, hint: str) -> None:
    with pytest.raises(loopsim.ScenarioError) as info:
        load_scenario_text(SCENARIO % (where, "1"))
    assert info.value.line == 18
    assert info.value.location.startswith("expect.events[0]")
    assert hint in str(info.value)
    assert "fields: agent, response_id, finish_reason" in str(info.value)


def test_a_list_is_still_no_value_to_compare_with() -> None:
    with pytest.raises(loopsim.ScenarioError, match="expected a text, number"):
        load_scenario_text(SCENARIO % ("{finish_reason: [stop]}", "1"))
    with pytest.raises(loopsim.ScenarioError, match="expected a text, number"):
        load_scenario_text(SCENARIO % ("{model: {a: 1}}", "1"))
