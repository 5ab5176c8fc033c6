"""HarnessAgent: a chat agent with background agents and a loop, wired in one call.

Wiring, outermost first (upstream's order, minus the parts loopsim does not simulate):

* ``LoopAgent(inner, loop_evaluators, loop_options)`` when ``loop_evaluators`` are given
  (.NET's ``HarnessAgentOptions.LoopEvaluators``);
* the chat :class:`~loopsim.Agent`, whose middleware starts with
  ``AgentLoopMiddleware(loop_should_continue, max_iterations=loop_max_iterations,
  next_message=loop_next_message)`` when ``loop_should_continue`` is given (Python's
  ``create_harness_agent``), followed by the caller's middleware;
* its context providers: a :class:`~loopsim.BackgroundAgentsProvider` when
  ``background_agents`` is non-empty, then the caller's providers.

Not simulated: upstream's todo/mode/memory/file/skills providers, the tool
auto-approval middleware (tools with ``approval_mode="always_require"`` yield approval
requests as on a plain Agent, so a run without a session works too), the message
injection middleware, telemetry and the ``ExperimentalWarning``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._agents import (
    Agent,
    AgentMiddleware,
    ContextProvider,
    DelegatingAgent,
    FunctionTool,
    SupportsAgentRun,
)
from ._background import (
    DEFAULT_BACKGROUND_AGENTS_WAIT_TIMEOUT_SECONDS as DEFAULT_WAIT_TIMEOUT_SECONDS,
)
from ._background import BackgroundAgentsProvider
from ._clients import ChatClient
from ._loop import AgentLoopMiddleware, LoopAgent, LoopAgentOptions, LoopEvaluator

__all__ = ["HarnessAgent", "create_harness_agent"]

DEFAULT_LOOP_MAX_ITERATIONS = 10


class HarnessAgent(DelegatingAgent):
    """A chat agent plus background agents plus a loop (see :func:`create_harness_agent`).

    Attributes:
        agent: the chat :class:`~loopsim.Agent` at the core.
        background_agents_provider: its provider, or None without background agents.
        loop_agent: the outermost :class:`~loopsim.LoopAgent`, or None.
        loop_middleware: the :class:`~loopsim.AgentLoopMiddleware`, or None.

    ``get_service`` reaches the chat agent's providers through the wrappers, so
    ``BackgroundTaskCompletionLoopEvaluator`` finds the provider with no extra wiring.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        name: str,
        background_agents: Sequence[SupportsAgentRun] | None = (),
        background_agents_wait_timeout_seconds: int = DEFAULT_WAIT_TIMEOUT_SECONDS,
        background_agents_instructions: str | None = None,
        loop_should_continue: Callable[..., Any] | None = None,
        loop_next_message: Callable[..., Any] | None = None,
        loop_max_iterations: int | None = DEFAULT_LOOP_MAX_ITERATIONS,
        loop_evaluators: LoopEvaluator | Sequence[LoopEvaluator] | None = (),
        loop_options: LoopAgentOptions | None = None,
        instructions: str | None = None,
        tools: Sequence[FunctionTool | Callable[..., Any]] = (),
        context_providers: Sequence[ContextProvider] = (),
        middleware: Sequence[AgentMiddleware] | None = (),
        description: str | None = None,
    ) -> None:
        caller_middleware = _sequence(middleware, "middleware")
        providers: list[ContextProvider] = []
        provider: BackgroundAgentsProvider | None = None
        if background_agents:
            provider = BackgroundAgentsProvider(
                background_agents,
                instructions=background_agents_instructions,
                wait_timeout_seconds=background_agents_wait_timeout_seconds,
            )
            providers.append(provider)
        providers.extend(_sequence(context_providers, "context_providers"))
        loop_middleware: AgentLoopMiddleware | None = None
        if loop_should_continue is not None:
            loop_middleware = AgentLoopMiddleware(
                loop_should_continue,
                max_iterations=loop_max_iterations,
                next_message=loop_next_message,
            )
            caller_middleware.insert(0, loop_middleware)
        agent = Agent(
            client,
            name=name,
            instructions=instructions,
            tools=tools,
            context_providers=providers,
            middleware=caller_middleware,
            description=description,
        )
        if isinstance(loop_evaluators, LoopEvaluator):
            evaluators: list[LoopEvaluator] = [loop_evaluators]
        else:
            evaluators = list(loop_evaluators or ())
        loop_agent = LoopAgent(agent, evaluators, loop_options) if evaluators else None
        super().__init__(loop_agent if loop_agent is not None else agent)
        self.agent = agent
        self.background_agents_provider = provider
        self.loop_agent = loop_agent
        self.loop_middleware = loop_middleware

    def __repr__(self) -> str:
        parts = [repr(self.agent.name)]
        if self.background_agents_provider is not None:
            names = ", ".join(str(a.name) for a in self.background_agents_provider.agents)
            parts.append(f"background_agents=[{names}]")
        if self.loop_agent is not None:
            parts.append(f"loop_evaluators={len(self.loop_agent.evaluators)}")
        if self.loop_middleware is not None:
            parts.append("loop_should_continue=...")
        return f"HarnessAgent({', '.join(parts)})"


def _sequence(value: Any, what: str) -> list[Any]:
    """A list copy of a non-string sequence (1.23: a bare object is a TypeError)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"{what} must be a non-string sequence, got {type(value).__name__}"
        raise TypeError(msg)
    return list(value)


def create_harness_agent(
    client: ChatClient,
    *,
    name: str,
    background_agents: Sequence[SupportsAgentRun] | None = (),
    background_agents_wait_timeout_seconds: int = DEFAULT_WAIT_TIMEOUT_SECONDS,
    background_agents_instructions: str | None = None,
    loop_should_continue: Callable[..., Any] | None = None,
    loop_next_message: Callable[..., Any] | None = None,
    loop_max_iterations: int | None = DEFAULT_LOOP_MAX_ITERATIONS,
    loop_evaluators: LoopEvaluator | Sequence[LoopEvaluator] | None = (),
    loop_options: LoopAgentOptions | None = None,
    instructions: str | None = None,
    tools: Sequence[FunctionTool | Callable[..., Any]] = (),
    context_providers: Sequence[ContextProvider] = (),
    middleware: Sequence[AgentMiddleware] | None = (),
    description: str | None = None,
) -> HarnessAgent:
    """A :class:`HarnessAgent`: chat agent, background agents and a loop in one.

    Two ways to keep the parent going while its background tasks run, as in the seeds:
    the Python style ``loop_should_continue=background_tasks_running()`` with
    ``loop_next_message=background_tasks_running_message`` (an
    :class:`~loopsim.AgentLoopMiddleware` at index 0 of the middleware), or the .NET
    style ``loop_evaluators=[BackgroundTaskCompletionLoopEvaluator()]`` (a
    :class:`~loopsim.LoopAgent` as the outermost wrapper, with ``loop_options``).
    ``loop_next_message`` and ``loop_max_iterations`` are ignored without
    ``loop_should_continue``; ``loop_options`` without ``loop_evaluators``.
    ``background_agents_wait_timeout_seconds`` is validated only when
    ``background_agents`` is non-empty (as upstream).

    Raises:
        ValueError: invalid background agents or wait timeout (from the provider), or
            an invalid loop cap.
        TypeError: ``middleware`` (or ``context_providers``) is not a sequence.

    Example:
        >>> import loopsim
        >>> worker = loopsim.Agent(loopsim.ScriptedChatClient(["42"]), name="worker")
        >>> parent = loopsim.create_harness_agent(
        ...     loopsim.ScriptedChatClient(["nothing to delegate"]),
        ...     name="coordinator",
        ...     background_agents=[worker],
        ...     loop_should_continue=loopsim.background_tasks_running(),
        ...     loop_next_message=loopsim.background_tasks_running_message,
        ... )
        >>> async def main():
        ...     session = parent.create_session()
        ...     return (await parent.run("hi", session=session)).text
        >>> loopsim.simulate(main)
        'nothing to delegate'
    """
    return HarnessAgent(
        client,
        name=name,
        background_agents=background_agents,
        background_agents_wait_timeout_seconds=background_agents_wait_timeout_seconds,
        background_agents_instructions=background_agents_instructions,
        loop_should_continue=loop_should_continue,
        loop_next_message=loop_next_message,
        loop_max_iterations=loop_max_iterations,
        loop_evaluators=loop_evaluators,
        loop_options=loop_options,
        instructions=instructions,
        tools=tools,
        context_providers=context_providers,
        middleware=middleware,
        description=description,
    )
