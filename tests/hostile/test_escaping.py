"""One escaping function per picture target: Mermaid text and HTML text.

The browser half (Mermaid in headless Chromium draws every message, no script runs) is
tests/browser/test_browser_escaping.py; this half checks the text itself for any input.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim._escape import html_text, mermaid_text

HOSTILE = st.text(
    alphabet=st.sampled_from(list("%{}#;&<>\\`'\"-:x \ud800\udc80")) | st.characters(), max_size=60
)


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
def test_mermaid_text_holds_no_syntax(text: str) -> None:
    safe = mermaid_text(text)
    assert not re.search(r"[%<>{}&\\`\ud800-\udfff]", safe)
    assert ";" not in re.sub(r"#(?:\d+|lt|gt|amp);", "", safe)  # only our entity codes
    safe.encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
def test_html_text_holds_no_markup(text: str) -> None:
    safe = html_text(text)
    assert not re.search(r"[<>\"'\ud800-\udfff]", safe)
    assert not re.search(r"&(?!(?:amp|lt|gt|quot|#x27);)", safe)
    safe.encode("utf-8")


def test_a_directive_in_a_host_input_keeps_every_arrow() -> None:
    agent = loopsim.Agent(loopsim.ScriptedChatClient([f"r{i}" for i in range(6)]), name="a")

    async def main() -> None:
        session = agent.create_session()
        for text in ["one", "two %%{init: {}}%% two", "three", "%% four", "five", "six"]:
            await agent.run(text, session=session)

    diagram = loopsim.render_mermaid(loopsim.record(main)[1])
    assert "%" not in diagram.split("\n", 1)[1]  # only the header line may hold any
    assert diagram.count("->>") >= 6


def test_the_report_escapes_script_and_surrogates(tmp_path: Path) -> None:
    reply = "<script>alert(1)</script> &amp; \udc80"
    agent = loopsim.Agent(loopsim.ScriptedChatClient([reply]), name="<b>x</b>")
    _, transcript = loopsim.record(agent.run, "hi", scenario="s")
    from loopsim._report import entry_from_transcript, write_report

    page = write_report(tmp_path / "r.html", [entry_from_transcript(transcript)]).read_text(
        encoding="utf-8"
    )
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp;amp; \ufffd" in page
