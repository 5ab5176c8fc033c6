"""HarnessAgent: a chat agent with background agents and a loop, wired in one call.

Wiring, outermost first (upstream's order, minus the parts loopsim does not simulate):

* ``LoopAgent(inner, loop_evaluators, loop_options)`` when ``loop_evaluators`` are given
  (.NET's ``HarnessAgentOptions.LoopEvaluators``);
* the chat :class:`~loopsim.Agent`, whose middleware starts with
  ``AgentLoopMiddleware(loop_should_continue, max_iterations=loop_max_iterations,
  next_message=loop_next_message)`` when ``loop_should_continue`` is given (Python's
  ``create_harness_agent``), followed by the caller's middleware;
* its context providers: a :class:`~loopsim.BackgroundAgentsProvider` when
  ``background_agents`` is non-empty, then the caller's providers;
* its tools: upstream's default hosted web search (a :class:`~loopsim.HostedTool`
  ``{"type": "web_search"}``, what a vendor client's ``get_web_search_tool()`` gives)
  unless ``disable_web_search=True``, then the caller's tools. The model's service runs
  it: a scripted model answers with :func:`loopsim.hosted_call`.

Not simulated: upstream's todo/mode/memory/file/skills providers, the tool
auto-approval middleware (tools with ``approval_mode="always_require"`` yield approval
requests as on a plain Agent, so a run without a session works too), the message
injection middleware, compaction, shell, telemetry and the
``ExperimentalWarning``. Their options are accepted under upstream's names (never a
``TypeError``); one given a value that would change what upstream does raises one
:class:`NotSimulatedWarning` per call naming them all. Without
``harness_instructions`` the harness's own default (:data:`DEFAULT_HARNESS_INSTRUCTIONS`,
loopsim's words, ``WORDING["harness.instructions"]``) comes first, where upstream puts
its own; ``""`` leaves it out.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
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
from ._messages import HostedTool
from ._wording import WORDING

__all__ = [
    "DEFAULT_HARNESS_INSTRUCTIONS",
    "NOT_SIMULATED_OPTIONS",
    "HarnessAgent",
    "NotSimulatedWarning",
    "create_harness_agent",
]

DEFAULT_LOOP_MAX_ITERATIONS = 10
#: the hosted web search the harness offers unless ``disable_web_search=True``: the
#: declaration an agent_framework vendor client's ``get_web_search_tool()`` returns
WEB_SEARCH_TOOL: Mapping[str, Any] = MappingProxyType({"type": "web_search"})
#: The harness's own instructions, before the agent's (upstream's name; loopsim's words).
DEFAULT_HARNESS_INSTRUCTIONS = WORDING["harness.instructions"]

#: upstream's ``create_harness_agent`` options that loopsim accepts but does not simulate,
#: each with the values that change nothing here (upstream's default; for a flag, both)
NOT_SIMULATED_OPTIONS: dict[str, tuple[object, ...]] = {
    "max_context_window_tokens": (None,),
    "history_provider": (None,),
    "disable_compaction": (False, True),
    "before_compaction_strategy": (None,),
    "after_compaction_strategy": (None,),
    "tokenizer": (None,),
    "disable_todo": (False, True),
    "todo_provider": (None,),
    "disable_mode": (False, True),
    "mode_provider": (None,),
    "disable_file_memory": (False, True),
    "file_memory_store": (None,),
    "file_access_store": (None,),
    "file_access_session_scoped": (False, True),
    "file_access_disable_write_tools": (False, True),
    "file_access_disable_readonly_tool_approval": (False, True),
    "file_access_disable_write_tool_approval": (False, True),
    "skills_provider": (None,),
    "skills_paths": (None,),
    "shell_executor": (None,),
    "shell_environment_provider_options": (None,),
    "disable_tool_auto_approval": (False, True),
    "auto_approval_rules": (None,),
    "otel_provider_name": (None,),
}


class NotSimulatedWarning(UserWarning):
    """An upstream option was given that loopsim accepts but does not simulate."""


def _warn_not_simulated(given: Mapping[str, object]) -> None:
    # A flag (disable_todo=...) changes nothing either way: the feature is not here.
    names = [
        name
        for name, value in given.items()
        if value is not _UNSET and all(value != quiet for quiet in NOT_SIMULATED_OPTIONS[name])
    ]
    if names:
        msg = (
            "create_harness_agent: loopsim does not simulate "
            f"{', '.join(names)}; they are accepted and ignored (see docs/fidelity.md)"
        )
        warnings.warn(msg, NotSimulatedWarning, stacklevel=3)


def _check_token_limits(context_window: Any, output: Any) -> None:
    """Upstream's checks on the two token limits (loopsim's words)."""
    window = None if context_window is _UNSET else context_window
    if window is not None and window <= 0:
        msg = f"max_context_window_tokens must be a positive number of tokens, got {window}"
        raise ValueError(msg)
    if output is not None and output <= 0:
        msg = f"max_output_tokens must be a positive number of tokens, got {output}"
        raise ValueError(msg)
    if window is not None and output is not None and output >= window:
        msg = f"max_output_tokens ({output}) must be less than max_context_window_tokens ({window})"
        raise ValueError(msg)


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


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
        name: str | None = None,
        id: str | None = None,
        harness_instructions: str | None = None,
        agent_instructions: str | None = None,
        default_options: Mapping[str, Any] | None = None,
        background_agents: Sequence[SupportsAgentRun] | None = (),
        background_agents_wait_timeout_seconds: int = DEFAULT_WAIT_TIMEOUT_SECONDS,
        background_agents_instructions: str | None = None,
        loop_should_continue: Callable[..., Any] | None = None,
        loop_next_message: Callable[..., Any] | None = None,
        loop_max_iterations: int | None = DEFAULT_LOOP_MAX_ITERATIONS,
        loop_evaluators: LoopEvaluator | Sequence[LoopEvaluator] | None = (),
        loop_options: LoopAgentOptions | None = None,
        instructions: str | None = None,
        tools: Sequence[FunctionTool | Callable[..., Any]] | None = (),
        context_providers: Sequence[ContextProvider] = (),
        middleware: Sequence[AgentMiddleware] | None = (),
        description: str | None = None,
        max_context_window_tokens: Any = _UNSET,
        history_provider: Any = _UNSET,
        disable_compaction: Any = _UNSET,
        before_compaction_strategy: Any = _UNSET,
        after_compaction_strategy: Any = _UNSET,
        tokenizer: Any = _UNSET,
        disable_todo: Any = _UNSET,
        todo_provider: Any = _UNSET,
        disable_mode: Any = _UNSET,
        mode_provider: Any = _UNSET,
        disable_file_memory: Any = _UNSET,
        file_memory_store: Any = _UNSET,
        file_access_store: Any = _UNSET,
        file_access_session_scoped: Any = _UNSET,
        file_access_disable_write_tools: Any = _UNSET,
        file_access_disable_readonly_tool_approval: Any = _UNSET,
        file_access_disable_write_tool_approval: Any = _UNSET,
        skills_provider: Any = _UNSET,
        skills_paths: Any = _UNSET,
        shell_executor: Any = _UNSET,
        shell_environment_provider_options: Any = _UNSET,
        disable_web_search: bool = False,
        disable_tool_auto_approval: Any = _UNSET,
        auto_approval_rules: Any = _UNSET,
        otel_provider_name: Any = _UNSET,
        max_output_tokens: int | None = None,
    ) -> None:
        _check_token_limits(max_context_window_tokens, max_output_tokens)
        _warn_not_simulated(
            {
                "max_context_window_tokens": max_context_window_tokens,
                "history_provider": history_provider,
                "disable_compaction": disable_compaction,
                "before_compaction_strategy": before_compaction_strategy,
                "after_compaction_strategy": after_compaction_strategy,
                "tokenizer": tokenizer,
                "disable_todo": disable_todo,
                "todo_provider": todo_provider,
                "disable_mode": disable_mode,
                "mode_provider": mode_provider,
                "disable_file_memory": disable_file_memory,
                "file_memory_store": file_memory_store,
                "file_access_store": file_access_store,
                "file_access_session_scoped": file_access_session_scoped,
                "file_access_disable_write_tools": file_access_disable_write_tools,
                "file_access_disable_readonly_tool_approval": (
                    file_access_disable_readonly_tool_approval
                ),
                "file_access_disable_write_tool_approval": file_access_disable_write_tool_approval,
                "skills_provider": skills_provider,
                "skills_paths": skills_paths,
                "shell_executor": shell_executor,
                "shell_environment_provider_options": shell_environment_provider_options,
                "disable_tool_auto_approval": disable_tool_auto_approval,
                "auto_approval_rules": auto_approval_rules,
                "otel_provider_name": otel_provider_name,
            }
        )
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
        if agent_instructions is not None and instructions is not None:
            msg = "give agent_instructions (upstream's name) or instructions, not both"
            raise TypeError(msg)
        own = agent_instructions if agent_instructions is not None else instructions
        # upstream: harness-level text (its default when None; "" for none), a blank line,
        # the agent's own; blank parts dropped
        harness = (
            DEFAULT_HARNESS_INSTRUCTIONS if harness_instructions is None else harness_instructions
        )
        joined = f"{harness}\n\n{own or ''}".strip() or None
        options = dict(default_options or {})
        if max_output_tokens is not None:  # upstream: the model's max_tokens, unless given
            options.setdefault("max_tokens", max_output_tokens)
        # upstream: its web search tool first (the vendor's hosted one), then the caller's
        offered: list[Any] = [] if disable_web_search else [HostedTool(WEB_SEARCH_TOOL)]
        agent = Agent(
            client,
            name=name,
            id=id,
            default_options=options,
            instructions=joined,
            tools=[*offered, *_tools(tools)],
            context_providers=providers,
            middleware=caller_middleware,
            description=description,
        )
        # upstream's harness persists history after every model call (see the attribute)
        agent._per_service_call_history = True
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

    @property
    def default_options(self) -> dict[str, Any]:
        """The chat agent's default run options (upstream's attribute)."""
        return self.agent.default_options

    @property
    def context_providers(self) -> list[ContextProvider]:
        """The chat agent's context providers (upstream's attribute)."""
        return self.agent.context_providers

    @property
    def middleware(self) -> list[AgentMiddleware]:
        """The chat agent's middleware, outermost first (upstream's attribute)."""
        return self.agent.middleware

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


def _tools(value: Any) -> list[Any]:
    """The caller's tools: None, one tool, or a sequence of them (as upstream takes)."""
    if value is None:
        return []
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    return [value]


def create_harness_agent(client: ChatClient, **options: Any) -> HarnessAgent:
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
    return HarnessAgent(client, **options)
