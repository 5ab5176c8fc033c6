"""agent_framework-style loop code, checked by ``loopsim check-evaluator`` (docs/evaluators.md).

``until_done`` / ``nudge`` and ``judged_loop`` pass every check; ``first_reply_only`` is
caught (it reads the first message of the response, which an empty response lacks).
"""

from __future__ import annotations

from typing import Any

from agent_framework import AgentLoopMiddleware

import loopsim
from loopsim.agent_framework import as_chat_client


def until_done(*, last_result: Any, **kwargs: Any) -> bool:
    """Keep looping until the agent says DONE."""
    return "DONE" not in last_result.text


def nudge(*, feedback: str | None = None, **kwargs: Any) -> str:
    """The next iteration's input."""
    return feedback or "Keep going, and say DONE when the task is complete."


def first_reply_only(*, last_result: Any, **kwargs: Any) -> bool:
    """Buggy: raises IndexError on an empty response."""
    return "DONE" not in last_result.messages[0].text


def _verdict(messages: list[loopsim.Message], options: Any) -> str:
    # the judge sees the agent's latest response just before its closing question
    answered = len(messages) >= 2 and "DONE" in messages[-2].text
    reason = "the agent said DONE" if answered else "the agent has not said DONE yet"
    return f'{{"answered": {"true" if answered else "false"}, "reasoning": "{reason}"}}'


def judged_loop() -> AgentLoopMiddleware:
    """A with_judge setup whose judge is a loopsim function client (no model)."""
    judge = as_chat_client(loopsim.FunctionChatClient(_verdict, name="judge"))
    return AgentLoopMiddleware.with_judge(judge, max_iterations=5)
