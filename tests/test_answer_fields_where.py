"""``expect.events`` ``where:`` matches a model answer's fields (issue 21).

``{kind: model_response, where: {finish_reason: length}}`` counts the answers that set
that finish reason, on both engines; a misspelt field name is a located load error with
the closest name, and a count that does not hold is a failure located at its ``where``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import loopsim
from loopsim._scenario import load_scenario, load_scenario_text, run_scenario

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.mark.parametrize(
    ("where", "field", "hint"),
    [
        ("{finish_reason: lenght}", "finish_reason", 'did you mean "length"?'),
        ("{finish_reason: Stop}", "finish_reason", 'did you mean "stop"?'),
        ("{model: model-2026-1}", "model", 'did you mean "model-2026-01"?'),
    ],
)
def test_a_value_no_answer_can_have_is_a_located_error(where: str, field: str, hint: str) -> None:
    with pytest.raises(loopsim.ScenarioError) as info:
        load_scenario_text(SCENARIO % (where, "0"))  # count 0 would pass on any run
    assert info.value.line == 18
    assert info.value.location == f"expect.events[0].where.{field}"
    assert hint in str(info.value)


def test_upstreams_finish_reasons_and_a_scripts_own_are_all_allowed() -> None:
    for reason in ("stop", "length", "tool_calls", "content_filter"):
        load_scenario_text(SCENARIO % (f"{{finish_reason: {reason}}}", "0"))
    own = SCENARIO.replace("finish_reason: stop", "finish_reason: max_output")
    assert _run_text(own % ("{finish_reason: max_output}", "1")).passed


def test_a_real_models_answers_may_have_any_model_or_finish_reason(tmp_path: Path) -> None:
    # the shipped recorded-model example: its cassette's answers name "fake-model"
    for name in ("recorded_model.loopsim.yaml", "recorded_model.py"):
        shutil.copy(ROOT / "scenarios" / name, tmp_path)
    (tmp_path / "cassettes").mkdir()
    shutil.copy(ROOT / "scenarios/cassettes/recorded_model.transcript.json", tmp_path / "cassettes")
    path = tmp_path / "recorded_model.loopsim.yaml"
    text = path.read_text(encoding="utf-8")
    counted = "    - {kind: tool_call, where: {name: add}, count: 1}\n"
    added = (
        "    - {kind: model_response, where: {model: fake-model, finish_reason: eos}, count: 0}\n"
    )
    path.write_text(text.replace(counted, counted + added), encoding="utf-8")
    assert load_scenario(path).scenario.expect is not None  # loads: no vocabulary to check


def _run_text(text: str) -> loopsim.ScenarioResult:
    return run_scenario(load_scenario_text(text))
