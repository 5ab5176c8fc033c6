"""An editor agent that rewrites a blurb until it fits (an ``AgentLoopMiddleware`` loop).

The team's rule: at most ``MAX_WORDS`` words and signed ``-- Ed.``. The agent has a
word-count tool; the loop's own predicate checks the rule and its ``next_message`` says
what is still wrong.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af
from af_programs import models

MAX_WORDS = 12
SIGNATURE = "-- Ed."


@af.tool(approval_mode="never_require")
def count_words(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def _problems(text: str) -> list[str]:
    problems = []
    if len(text.split()) > MAX_WORDS:
        problems.append(f"it has {len(text.split())} words, the limit is {MAX_WORDS}")
    if not text.rstrip().endswith(SIGNATURE):
        problems.append(f"it must end with {SIGNATURE!r}")
    return problems


def needs_another_pass(*, last_result: af.AgentResponse, **_: Any) -> bool:
    return bool(_problems(last_result.text))


def what_is_wrong(*, last_result: af.AgentResponse, **_: Any) -> str:
    return "Rewrite the blurb: " + "; ".join(_problems(last_result.text)) + "."


def build_editor() -> af.Agent:
    return af.Agent(
        client=models.chat_client("editor"),
        name="editor",
        instructions=f"Write a product blurb of at most {MAX_WORDS} words, signed {SIGNATURE}",
        tools=[count_words],
        middleware=[
            af.AgentLoopMiddleware(needs_another_pass, next_message=what_is_wrong, max_iterations=4)
        ],
    )


async def main(brief: str = "A blurb for our new kettle.") -> str:
    editor = build_editor()
    result = await editor.run(brief, session=editor.create_session())
    return result.messages[-1].text
