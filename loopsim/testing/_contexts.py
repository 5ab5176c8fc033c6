"""Generated loop contexts for :func:`~loopsim.testing.check_evaluator`.

A context is drawn as plain data (:class:`ContextSpec`), so equal specs build equal but
separate :class:`~loopsim.LoopContext` objects: the ``deterministic`` check needs two
copies of one context, and a counterexample is shown as the YAML of its spec.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import yaml
from hypothesis import strategies as st

from .._agents import Agent
from .._background import BackgroundAgentsProvider
from .._clients import FunctionChatClient, ScriptedChatClient
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

__all__ = [
    "ODD_KINDS",
    "TASK_STATUSES",
    "ContextSpec",
    "background_contexts",
    "contexts",
    "marked",
    "unfinished",
]

#: the statuses a generated background task is in when the evaluator is asked
TASK_STATUSES = ("running", "completed", "failed", "lost")
#: the background agent of generated contexts (one is enough: the rule is about tasks)
HELPER = "helper"


@dataclass(frozen=True)
class ContextSpec:
    """A context as plain data, so equal specs build equal (but separate) contexts."""

    iteration: int
    initial: tuple[str, ...]
    response: tuple[dict[str, Any], ...]  # messages as JSON
    feedback: tuple[str | None, ...]
    state: Mapping[str, Any]
    #: the agent carries a BackgroundAgentsProvider (with these tasks)
    provider: bool = False
    tasks: tuple[str, ...] = ()

    def build(self) -> LoopContext:
        """The context (call it inside a simulation when a task is ``running``)."""
        providers: list[BackgroundAgentsProvider] = []
        if self.provider:
            helper = Agent(FunctionChatClient(_works_on, name=HELPER), name=HELPER)
            providers.append(BackgroundAgentsProvider([helper]))
        agent = Agent(ScriptedChatClient([]), name="agent", context_providers=providers)
        session = agent.create_session()
        session.state.update(json.loads(json.dumps(dict(self.state))))
        if providers:
            _add_tasks(providers[0], session, self.tasks)
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
        if self.provider:
            data["background_tasks"] = [
                {"id": n, "agent": HELPER, "status": status}
                for n, status in enumerate(self.tasks, start=1)
            ]
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


async def _works_on(messages: Sequence[Message], options: Any) -> str:  # noqa: ARG001
    # a running task's child: busy for longer than any evaluate may take
    await anyio.sleep(10**9)
    return "finished"  # pragma: no cover - never reached within a check


def _add_tasks(provider: BackgroundAgentsProvider, session: Any, statuses: Sequence[str]) -> None:
    """Give ``session`` the tasks ``statuses``, as the provider keeps them.

    Terminal tasks are records as a refresh leaves them; a ``running`` task is a record
    with a live child run in this provider, so a refresh keeps it running.
    """
    records: list[dict[str, Any]] = []
    state = session.state[provider.source_id] = {"tasks": records, "next_task_id": 1}
    runtime = provider._runtime(session)
    (helper,) = provider.agents
    for task_id, status in enumerate(statuses, start=1):
        record: dict[str, Any] = {
            "id": task_id,
            "agent_name": HELPER,
            "description": f"part {task_id}",
            "status": status,
        }
        if status == "completed":
            record["result_text"] = f"part {task_id} written"
        elif status == "failed":
            record["error_text"] = "the helper gave up"
        elif status == "running":
            child = helper.create_session()
            provider._launch(
                runtime,
                task_id,
                helper,
                f"write part {task_id}",
                child,
                origin=(session, HELPER, record["description"]),
            )
            runtime.child_sessions[task_id] = child
        records.append(record)
    state["next_task_id"] = len(statuses) + 1


def with_provider(spec: ContextSpec) -> ContextSpec:
    """``spec`` with a BackgroundAgentsProvider (and no tasks) on its agent."""
    return ContextSpec(
        spec.iteration, spec.initial, spec.response, spec.feedback, spec.state, provider=True
    )


def background_contexts(marker: str) -> st.SearchStrategy[ContextSpec]:
    """Contexts whose agent's provider has running, finished and lost tasks; the reply
    carries ``marker`` about half the time (so "done, but a task still runs" occurs)."""
    return st.tuples(
        marked(marker), st.lists(st.sampled_from(TASK_STATUSES), min_size=1, max_size=3)
    ).map(
        lambda pair: ContextSpec(
            pair[0].iteration,
            pair[0].initial,
            pair[0].response,
            pair[0].feedback,
            pair[0].state,
            provider=True,
            tasks=tuple(pair[1]),
        )
    )
