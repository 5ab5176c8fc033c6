"""A real agent_framework agent as a loopsim ``SupportsAgentRun``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, TypeVar

import agent_framework as af

from .._messages import AgentResponse, AgentResponseUpdate, ChatOptions, MessagesInput
from .._messages import normalize_messages as normalize_loopsim_messages
from ._convert import (
    to_af_messages,
    to_af_options,
    to_loopsim_agent_response,
    to_loopsim_agent_update,
)
from ._provider import ProviderView, find_provider
from ._runtime import require_asyncio
from ._scope import RunScope, run_scope
from ._tracing import agent_label, instrument, note_session

__all__ = ["AgentFrameworkAgent", "as_agent"]

T = TypeVar("T")


def _af_input(messages: MessagesInput) -> list[af.Message] | None:
    if messages is None:
        return None
    return to_af_messages(normalize_loopsim_messages(messages))


def _af_run_options(options: Any) -> dict[str, Any] | None:
    if options is None:
        return None
    if isinstance(options, ChatOptions):
        return to_af_options(options)
    if isinstance(options, Mapping):
        return dict(options)
    return None  # loopsim's own run options (a LoopAgent's) mean nothing to agent_framework


class AgentFrameworkAgent:
    """Forwards loopsim's agent protocol to an agent_framework agent.

    ``run``/``run_stream`` take loopsim messages and return loopsim responses; sessions
    are agent_framework's own ``AgentSession`` objects (opaque to loopsim), serialized
    with their ``to_dict``/``from_dict``. ``get_service(T)`` finds ``T`` among the agent's
    context providers (or the agent itself); ``get_service(loopsim.BackgroundAgentsProvider)``
    is a :class:`~loopsim.agent_framework._provider.ProviderView` of the agent's
    ``agent_framework.BackgroundAgentsProvider``, what loopsim's
    ``BackgroundTaskCompletionLoopEvaluator`` reads. The agent is instrumented for tracing.
    """

    def __init__(self, af_agent: Any) -> None:
        self.af_agent = instrument(af_agent)
        provider = find_provider(af_agent)
        self.provider_view = None if provider is None else ProviderView(provider)

    def __repr__(self) -> str:
        return f"AgentFrameworkAgent({agent_label(self.af_agent)!r})"

    @property
    def name(self) -> str | None:
        name = getattr(self.af_agent, "name", None)
        return name if isinstance(name, str) else None

    @property
    def id(self) -> str:
        return str(self.af_agent.id)

    @property
    def description(self) -> str | None:
        description = getattr(self.af_agent, "description", None)
        return description if isinstance(description, str) else None

    async def run(
        self, messages: MessagesInput = None, *, session: Any = None, options: Any = None
    ) -> AgentResponse:
        """One run of the agent_framework agent, in loopsim types."""
        require_asyncio()
        response = await self.af_agent.run(
            _af_input(messages), session=session, options=_af_run_options(options)
        )
        return to_loopsim_agent_response(response)

    async def run_stream(
        self, messages: MessagesInput = None, *, session: Any = None, options: Any = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        """One streaming run of the agent_framework agent, in loopsim updates."""
        require_asyncio()
        stream = self.af_agent.run(
            _af_input(messages), stream=True, session=session, options=_af_run_options(options)
        )
        # agent_framework calls the model while the stream is iterated, after the run's
        # middleware returned: the run scope is held here so model calls name the session.
        session_id = getattr(session, "session_id", None)
        scope = RunScope(agent_label(self.af_agent), session_id, self.af_agent)
        with run_scope(scope):
            async for update in stream:
                yield to_loopsim_agent_update(update)

    def create_session(self) -> Any:
        """A new agent_framework session of the agent."""
        session = self.af_agent.create_session()
        note_session(agent_label(self.af_agent), session.session_id)
        return session

    def serialize_session(self, session: Any) -> dict[str, Any]:
        """The session as JSON-safe data (agent_framework's ``to_dict``)."""
        data: dict[str, Any] = session.to_dict()
        return data

    def deserialize_session(self, data: dict[str, Any]) -> Any:
        """A session restored from :meth:`serialize_session` data."""
        session = af.AgentSession.from_dict(data)
        note_session(agent_label(self.af_agent), session.session_id, "session_restored")
        return session

    def get_service(self, service_type: type[T]) -> T | None:
        """The first context provider (or the agent itself) that is a ``service_type``.

        For loopsim's ``BackgroundAgentsProvider``: the view of the real provider (or None).
        """
        from .._background import BackgroundAgentsProvider  # noqa: PLC0415 - a light import

        if service_type is BackgroundAgentsProvider:
            return self.provider_view  # type: ignore[return-value] # read through incomplete_tasks
        if isinstance(self.af_agent, service_type):
            return self.af_agent
        for provider in getattr(self.af_agent, "context_providers", None) or ():
            if isinstance(provider, service_type):
                return provider
        return None


def as_agent(af_agent: Any) -> AgentFrameworkAgent:
    """``af_agent`` (an agent_framework agent) as a loopsim ``SupportsAgentRun``.

    Example:
        >>> import agent_framework as af
        >>> import loopsim
        >>> from loopsim.agent_framework import as_agent, as_chat_client
        >>> client = as_chat_client(loopsim.ScriptedChatClient(["draft", "final DONE"]))
        >>> looped = loopsim.LoopAgent(
        ...     as_agent(af.Agent(client=client, name="writer")),
        ...     loopsim.CompletionMarkerLoopEvaluator("DONE"),
        ... )
        >>> loopsim.simulate(looped.run, "write").messages[-1].text
        'final DONE'
    """
    if not callable(getattr(af_agent, "run", None)) or not callable(
        getattr(af_agent, "create_session", None)
    ):
        msg = f"as_agent needs an agent_framework agent, got {type(af_agent).__name__}"
        raise TypeError(msg)
    return AgentFrameworkAgent(af_agent)
