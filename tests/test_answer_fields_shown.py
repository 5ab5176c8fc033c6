"""People see a model answer's fields: ``loopsim show`` and the HTML report list the ones
the answer set (``finish_reason``, ``model``...), compactly, and nothing when it set none.

The page itself is checked in headless Chromium in ``tests/browser/test_browser_answer_fields.py``.
"""

from __future__ import annotations

import html
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import loopsim
from loopsim._report import build_report, entry_from_result, entry_from_transcript
from loopsim._scenario import load_scenario_text, run_scenario
from loopsim.cli import main

ENGINES = ("loopsim", "agent_framework")

SCENARIO = textwrap.dedent(
    """\
    version: 1
    agents:
      writer:
        tools: {lookup: {result: found}}
        script:
          - tool_call: {name: lookup}
            finish_reason: tool_calls
          - reply: cut short
            model: gpt-4o-mini
            created_at: 2026-01-01T00:00:00Z
            finish_reason: length
            conversation_id: conv-9
            continuation_token: {response_id: r-1}
            additional_properties: {region: eu}
          - plain answer
    parent: {agent: writer}
    steps: [{run: look it up}, {run: again}]
    """
)
#: what the fields of the second answer look like, shown
SHOWN = (
    "(finish_reason=length conversation_id=conv-9 "
    'continuation_token={"response_id": "r-1"} model=gpt-4o-mini '
    'created_at=2026-01-01T00:00:00Z additional_properties={"region": "eu"})'
)


def _run(engine: str) -> Any:
    result = run_scenario(load_scenario_text(SCENARIO), engine=engine)
    assert result.passed, result.failures
    return result


@pytest.mark.parametrize("engine", ENGINES)
def test_show_lists_the_fields_an_answer_set_and_nothing_else(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _run(engine).write_transcript(tmp_path)
    assert path is not None
    assert main(["show", str(path)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "model_response" in line]
    assert len(lines) == 3
    first, second, third = lines
    assert first.endswith("(finish_reason=tool_calls)")
    assert second.endswith(SHOWN)
    assert third.endswith('assistant: "plain answer"')  # no field set: no parentheses
    assert "(" not in third


def test_a_text_with_spaces_or_quotes_is_json_in_the_line() -> None:
    turn = loopsim.Turn("hi", model='my "big" model', finish_reason="stop")
    agent = loopsim.Agent(loopsim.ScriptedChatClient([turn]), name="a")
    transcript = loopsim.record(agent.run, "hello")[1]
    line = loopsim.render_text(transcript).splitlines()[-1]
    assert line.endswith('(finish_reason=stop model="my \\"big\\" model")')


def _chips(page: str) -> list[list[tuple[str, str]]]:
    """Each model call's answer chips, (data-field, text), in page order."""
    calls = re.findall(r"<details class='model-call'>(.*?)</details>", page, re.DOTALL)
    return [
        [
            (html.unescape(name), html.unescape(text))
            for name, text in re.findall(r"<code data-field='([^']*)'>(.*?)</code>", call)
        ]
        for call in calls
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_report_shows_an_answers_fields_under_it(engine: str) -> None:
    page = build_report([entry_from_result(_run(engine))])
    first, second, third = _chips(page)
    assert first == [("finish_reason", "finish_reason=tool_calls")]
    assert [name for name, _ in second] == [
        "finish_reason",
        "conversation_id",
        "continuation_token",
        "model",
        "created_at",
        "additional_properties",
    ]
    assert ("model", "model=gpt-4o-mini") in second
    assert ("continuation_token", 'continuation_token={"response_id": "r-1"}') in second
    assert third == []
    assert page.count("class='answer-fields'") == 2  # the plain answer has no empty box


@settings(max_examples=40, deadline=None)
@given(value=st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30))
@example(value="next\x85line")  # characters splitlines breaks at stay on the one line
@example(value="a\u2028b\U000e0001c")
@example(value="gpt-4o-mini")
def test_any_model_name_is_shown_so_it_reads_back(value: str) -> None:
    # a bare word as it is, anything else as JSON: either way the text reads back whole,
    # and in the page it is escaped text (no markup from a model's answer)
    turn = loopsim.Turn("hi", model=value)
    agent = loopsim.Agent(loopsim.ScriptedChatClient([turn]), name="a")
    transcript = loopsim.record(agent.run, "hello")[1]
    line = loopsim.render_text(transcript).splitlines()[-1]
    shown = line[line.index("  (model=") + len("  (model=") : -1]
    assert (json.loads(shown) if shown.startswith('"') else shown) == value
    page = build_report([entry_from_transcript(transcript, name="t")])
    assert _chips(page) == [[("model", f"model={shown}")]]
