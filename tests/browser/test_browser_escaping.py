"""Hostile text in a Mermaid sequence diagram, rendered by Mermaid in headless Chromium.

A host input holding ``%%{`` once made Mermaid drop every arrow after it (1 of 6 messages
drawn). Hypothesis draws host inputs and replies from directives, comments, arrows,
entities, HTML, script and surrogates; each run's diagram must draw every host call with
its input, raise no Mermaid error, and run no script.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mermaid_page import render_all

import loopsim
from loopsim._transcript._mermaid import host_calls

PIECES = [
    "%%{init: {'theme': 'dark'}}%%",
    "%%",
    "%% comment",
    "-->",
    "->>",
    "--x",
    "A->>B: forged",
    "&lt;",
    "&amp;",
    "#35;",
    "#lt;",
    "<script>document.body.dataset.pwned='script'</script>",
    "<img src=x onerror=\"document.body.dataset.pwned='img'\">",
    "<b>bold</b>",
    "<br/>",
    ";",
    "#",
    "{",
    "}",
    "`",
    "\\",
    "end",
    "note over x: y",
    "\udc80",
    "plain words",
]
TEXT = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), min_size=1, max_size=4).map(" ".join)
_MARK = "\ufffd"


def _program(inputs: list[str], replies: list[str]) -> loopsim.Transcript:
    agent = loopsim.Agent(loopsim.ScriptedChatClient(replies), name="agent")

    async def main() -> None:
        session = agent.create_session()
        for text in inputs:
            await agent.run(text, session=session)

    return loopsim.record(main)[1]


def _shown(text: str) -> str:
    """What the diagram should show of ``text``: whitespace folded, surrogates replaced."""
    folded = " ".join(text.split())
    return "".join(_MARK if "\ud800" <= c <= "\udfff" else c for c in folded)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=st.lists(TEXT, min_size=1, max_size=6))
@example(inputs=["first", "say %%{ here", "third", "fourth", "fifth", "sixth"])
@example(inputs=["0\x1f0", "tab\there \udc80"])
def test_every_message_is_drawn_and_no_script_runs(
    tmp_path_factory: object, inputs: list[str]
) -> None:
    transcript = _program(inputs, [f"reply {t}" for t in inputs])
    calls = host_calls(transcript.events)
    assert len(calls) == len(inputs)
    diagram = loopsim.render_mermaid(transcript)
    folder = tmp_path_factory.mktemp("escaping")  # type: ignore[attr-defined]
    results, page = render_all({"hostile": diagram}, Path(folder))
    result = results["hostile"]
    assert result["error"] is None, (result["error"], diagram)
    assert "data-pwned" not in page.dom
    runs = [m for m in result["messages"] if m.startswith("t=") and " run " in m]
    assert len(runs) == len(inputs), (runs, diagram)
    for text, drawn in zip(inputs, runs, strict=True):
        # drawn as JSON text (control characters as \\u escapes), whitespace folded
        expected = _plain(_shown(json.dumps(text, ensure_ascii=False)))[:20].rstrip()
        assert expected in _plain(drawn), (text, drawn)


def _plain(text: str) -> str:
    return text.replace('"', "").replace("\\", "")
