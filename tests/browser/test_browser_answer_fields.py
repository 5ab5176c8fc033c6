"""A model answer's fields in the HTML report, as headless Chromium lays the page out.

A copy of the report gets a small script that reads what is drawn (not the markup): for
each model call, whether its field chips take space while the call is folded, then,
opened, the chips' rendered text and whether they sit below the answer inside the call.
"""

from __future__ import annotations

import html
import json
import re
import textwrap
from pathlib import Path
from typing import Any

from chromium_page import load

from loopsim._report import build_report, entry_from_result
from loopsim._scenario import load_scenario_text, run_scenario

SCENARIO = textwrap.dedent(
    """\
    version: 1
    description: "answer fields <b>shown</b>"
    agents:
      writer:
        script:
          - reply: cut short
            finish_reason: length
            model: "<img src=x onerror=alert(1)>"
            created_at: 2026-01-01T00:00:00Z
            additional_properties: {region: eu}
          - plain answer
    parent: {agent: writer}
    steps: [{run: one}, {run: two}]
    """
)

_SCRIPT = r"""
const calls = [...document.querySelectorAll("details.model-call")];
// checkVisibility: false inside a closed <details> (its content is not rendered)
const drawn = (el) => el.checkVisibility() && el.getBoundingClientRect().width > 0;
const out = calls.map((call) => {
  const chips = [...call.querySelectorAll(".answer-fields code")];
  const folded = chips.some(drawn);
  call.open = true;
  const answer = [...call.querySelectorAll("pre")].pop().getBoundingClientRect();
  const box = call.getBoundingClientRect();
  return {
    folded_drawn: folded,
    chips: chips.map((chip) => {
      const r = chip.getBoundingClientRect();
      return {
        field: chip.dataset.field,
        text: chip.innerText,
        drawn: drawn(chip),
        below_answer: r.top >= answer.bottom - 1,
        inside_call: r.left >= box.left && r.right <= box.right + 1 && r.bottom <= box.bottom + 1,
      };
    }),
  };
});
document.getElementById("result").textContent = JSON.stringify(out);
"""
_RESULT = re.compile(r'<pre id="result">(.*?)</pre>', re.DOTALL)


def _laid_out(tmp_path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    result = run_scenario(load_scenario_text(SCENARIO))
    assert result.passed, result.failures
    page = build_report([entry_from_result(result)])
    assert "<script" not in page  # the report has none; the check below adds its own
    probe = page.replace("</body>", f'<pre id="result"></pre><script>{_SCRIPT}</script></body>', 1)
    target = tmp_path / "answer_fields.html"
    target.write_text(probe, encoding="utf-8")
    loaded = load(target)
    found = _RESULT.search(loaded.dom)
    assert found is not None, loaded.console
    assert found.group(1).strip(), loaded.console
    return json.loads(html.unescape(found.group(1))), loaded.console


def test_the_fields_are_drawn_under_the_answer_and_fold_with_the_call(tmp_path: Path) -> None:
    calls, console = _laid_out(tmp_path)
    assert console == []
    assert len(calls) == 2
    first, second = calls
    assert first["folded_drawn"] is False  # folded with the call
    assert [chip["text"] for chip in first["chips"]] == [
        "finish_reason=length",
        'model="<img src=x onerror=alert(1)>"',  # text on the page, not an element
        "created_at=2026-01-01T00:00:00Z",
        'additional_properties={"region": "eu"}',
    ]
    assert [chip["field"] for chip in first["chips"]] == [
        "finish_reason",
        "model",
        "created_at",
        "additional_properties",
    ]
    for chip in first["chips"]:
        assert chip["drawn"], chip
        assert chip["below_answer"], chip
        assert chip["inside_call"], chip
    assert second["chips"] == []  # an answer that set nothing shows nothing
