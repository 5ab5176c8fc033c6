"""Generated loop contexts for :func:`~loopsim.testing.check_evaluator`.

A context is drawn as plain data (:class:`ContextSpec`), so equal specs build equal but
separate :class:`~loopsim.LoopContext` objects: the ``deterministic`` check needs two
copies of one context, and a counterexample is shown as the YAML of its spec.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import strategies as st

from .._agents import Agent
from .._clients import ScriptedChatClient
from .._loop import LoopContext
from .._loop._evaluation import FeedbackView
from .._messages import (
    AgentResponse,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
)

__all__ = ["ODD_KINDS", "ContextSpec", "contexts", "marked", "unfinished"]


@dataclass(frozen=True)
class ContextSpec:
    """A context as plain data, so equal specs build equal (but separate) contexts."""

    iteration: int
    initial: tuple[str, ...]
    response: tuple[dict[str, Any], ...]  # messages as JSON
    feedback: tuple[str | None, ...]
    state: Mapping[str, Any]

    def build(self) -> LoopContext:
        agent = Agent(ScriptedChatClient([]), name="agent")
        session = agent.create_session()
        session.state.update(json.loads(json.dumps(dict(self.state))))
        initial = [Message.user(text) for text in self.initial]
        response = AgentResponse([Message.model_validate(m) for m in self.response])
        context = LoopContext(agent, session, initial, response)
        context._iteration = self.iteration
        context._feedback = FeedbackView(list(self.feedback))
        return context

    def describe(self) -> str:
        data = {
            "iteration": self.iteration,
            "initial_messages": list(self.initial),
            "last_response": {"messages": list(self.response)},
            "feedback": list(self.feedback),
            "session_state": dict(self.state),
        }
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


_WORDS = ("draft", "fix", "tests", "pass", "more", "DONE", "done", "ok", "")
_text = st.lists(st.sampled_from(_WORDS), max_size=4).map(" ".join)


def _call(n: int) -> dict[str, Any]:
    return FunctionCallContent(call_id=f"c{n}", name="lookup", arguments={"q": "x"}).model_dump(
        mode="json"
    )


def _odd_response(kind: str) -> tuple[dict[str, Any], ...]:
    call = FunctionCallContent(call_id="c1", name="deploy", arguments={})
    if kind == "empty":
        return ()
    if kind == "empty_text":
        return (Message("assistant", "").model_dump(mode="json", exclude_none=True),)
    if kind == "tool_only":
        return (
            Message("assistant", [FunctionCallContent.model_validate(_call(1))]).model_dump(
                mode="json"
            ),
            Message("tool", [FunctionResultContent(call_id="c1", result="found")]).model_dump(
                mode="json"
            ),
        )
    if kind == "approval_request":
        content: Any = FunctionApprovalRequestContent(id="a1", function_call=call)
        return (Message("assistant", [content]).model_dump(mode="json", exclude_none=True),)
    content = FunctionApprovalResponseContent(id="a1", approved=True, function_call=call)
    return (Message("user", [content]).model_dump(mode="json", exclude_none=True),)


ODD_KINDS = ("empty", "empty_text", "tool_only", "approval_request", "approval_response")


@st.composite
def contexts(draw: st.DrawFn, *, odd: bool) -> ContextSpec:
    iteration = draw(st.integers(1, 6))
    if odd:
        response = _odd_response(draw(st.sampled_from(ODD_KINDS)))
    else:
        texts = draw(st.lists(_text, min_size=1, max_size=2))
        response = tuple(
            Message.assistant(t).model_dump(mode="json", exclude_none=True) for t in texts
        )
    feedback = tuple(
        draw(
            st.lists(
                st.none() | _text.filter(str.strip), min_size=iteration - 1, max_size=iteration - 1
            )
        )
    )
    state = draw(
        st.dictionaries(st.sampled_from(["notes", "plan"]), _text, max_size=2).map(
            lambda d: {"user": d} if d else {}
        )
    )
    initial = tuple(draw(st.lists(_text.filter(str.strip), min_size=1, max_size=2)))
    return ContextSpec(iteration, initial, response, feedback, state)


def _reply_spec(text: str, iteration: int = 1) -> ContextSpec:
    reply = Message.assistant(text).model_dump(mode="json", exclude_none=True)
    return ContextSpec(iteration, ("do the task",), (reply,), (None,) * (iteration - 1), {})


def unfinished(marker: str) -> st.SearchStrategy[ContextSpec]:
    """First-iteration contexts whose reply lacks ``marker``: other cases and near-misses."""
    near = {marker.lower(), marker.capitalize(), marker.title(), marker.swapcase()} - {marker}
    texts = ["not done yet", "working on it", "", "almost", *sorted(near)]
    texts += [f"not {t} yet" for t in sorted(near)]
    return st.sampled_from(texts).map(_reply_spec)


def marked(marker: str) -> st.SearchStrategy[ContextSpec]:
    """Ordinary contexts whose last reply carries ``marker`` about half the time."""
    return st.tuples(contexts(odd=False), st.booleans()).map(
        lambda pair: pair[0] if not pair[1] else _with_marker(pair[0], marker)
    )


def _with_marker(spec: ContextSpec, marker: str) -> ContextSpec:
    reply = Message.assistant(f"finished {marker}").model_dump(mode="json", exclude_none=True)
    return ContextSpec(
        spec.iteration, spec.initial, (*spec.response, reply), spec.feedback, spec.state
    )
