"""The seams a user's code plugs into an Agent run: context providers and middleware."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._messages import AgentResponse, Message
from ._base import ResponseStream
from ._session import AgentSession
from ._tools import FunctionTool

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = [
    "AgentContext",
    "AgentMiddleware",
    "AgentRunContext",
    "CallNext",
    "ContextProvider",
    "MiddlewareTermination",
    "SessionContext",
]


@dataclass(slots=True)
class SessionContext:
    """What context providers add to one run (and, in ``after_run``, what it answered).

    Attributes:
        input_messages: the caller's messages for this run.
        instructions: extra instructions, in the order providers added them.
        tools: extra tools offered for this run.
        context_messages: messages sent before the input but not stored in history.
        response: the run's response (set before ``after_run``).
    """

    input_messages: Sequence[Message]
    instructions: list[str] = field(default_factory=list)
    tools: list[FunctionTool] = field(default_factory=list)
    context_messages: list[Message] = field(default_factory=list)
    response: AgentResponse | None = None

    def extend_instructions(self, source_id: str, instructions: Iterable[str]) -> None:  # noqa: ARG002 - upstream signature
        """Add instructions for this run."""
        self.instructions.extend(instructions)

    def extend_tools(self, source_id: str, tools: Iterable[FunctionTool]) -> None:  # noqa: ARG002 - upstream signature
        """Offer more tools for this run."""
        self.tools.extend(tools)

    def extend_messages(self, source_id: str, messages: Iterable[Message]) -> None:  # noqa: ARG002 - upstream signature
        """Send more messages (after history, before the input) for this run."""
        self.context_messages.extend(messages)


class ContextProvider:
    """Adds instructions, tools and messages to an agent's runs, with per-session state.

    ``state`` is this provider's JSON-safe dict inside ``session.state[source_id]``.
    ``get_service`` on the agent finds providers by type, which is how evaluators such as
    ``BackgroundTaskCompletionLoopEvaluator`` find theirs.
    """

    def __init__(self, source_id: str) -> None:
        if not source_id:
            msg = "source_id must be a non-empty string"
            raise ValueError(msg)
        self.source_id = source_id

    async def before_run(
        self,
        *,
        agent: Agent,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Called before every run, with this provider's state."""

    async def after_run(
        self,
        *,
        agent: Agent,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Called after every run that finished, with ``context.response`` set."""


@dataclass(slots=True)
class AgentRunContext:
    """What agent middleware sees and may change: the run's input and, after, its result.

    ``result`` is an :class:`~loopsim.AgentResponse` after ``call_next()`` in a
    non-streaming run, and a :class:`ResponseStream` in a streaming one.
    """

    agent: Agent
    messages: list[Message]
    session: AgentSession | None
    options: dict[str, Any]
    stream: bool
    result: AgentResponse | ResponseStream | None = None


CallNext = Callable[[], Awaitable[None]]


#: Upstream's name for what agent middleware sees (``agent_framework.AgentContext``).
AgentContext = AgentRunContext


class MiddlewareTermination(Exception):  # noqa: N818 - upstream's name
    """Raised by a middleware to end the run early and cleanly (upstream's control flow).

    The run returns what the middleware context holds then: a non-streaming run the
    ``context.result`` already set (a response with no messages when there is none;
    upstream returns None there), a stream the updates seen so far. Inside an
    :class:`~loopsim.AgentLoopMiddleware` the loop stops and keeps its last finished
    iteration. ``result`` is kept for upstream's signature; as upstream, an agent run
    does not read it.
    """

    def __init__(self, message: str = "middleware ended the run", *, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class AgentMiddleware:
    """Wraps an agent's runs: ``process`` may change the context and call ``call_next``
    (any number of times — ``AgentLoopMiddleware`` re-invokes through it)."""

    async def process(self, context: AgentRunContext, call_next: CallNext) -> None:  # noqa: ARG002 - the default ignores the context
        """Default: pass through."""
        await call_next()
