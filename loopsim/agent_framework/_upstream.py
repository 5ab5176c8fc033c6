"""Every private name of agent_framework that loopsim touches, in one place.

The background provider keeps its child agents in a private attribute and refreshes its
task records through private helpers. Nothing else in loopsim reaches
past agent_framework's public API. ``tests/test_af_upstream_seams.py`` checks that each
name below still exists, so an upgrade that moves one fails loudly there.
"""

from __future__ import annotations

import importlib
from typing import Any

import agent_framework as af

__all__ = [
    "DEFAULT_MEMORY_FOLDER",
    "DEFAULT_STORE_ASSEMBLER",
    "INSTRUMENT_FACTORIES",
    "MIDDLEWARE_RUN_LAYER",
    "PROVIDER_AGENTS_ATTRIBUTE",
    "REFRESH_FUNCTIONS",
    "STORE_ROOT_ATTRIBUTE",
    "TOOL_INVOKER",
    "background_tasks",
    "in_flight_task",
    "is_argument_error",
    "provider_agents",
    "traced_pipeline",
    "unwrapped",
]

#: The class whose ``run`` reads ``agent.middleware`` on each call (a base of ``af.Agent``):
#: zero-touch tracing wraps its ``run``.
MIDDLEWARE_RUN_LAYER: Any = af.AgentMiddlewareLayer

#: Module functions that make a new OpenTelemetry histogram for each chat client and
#: function tool agent_framework builds (module, function name). Without a meter provider
#: set, OpenTelemetry's proxy meters keep every instrument made, for ever.
INSTRUMENT_FACTORIES = (
    ("agent_framework.observability", "_get_duration_histogram"),
    ("agent_framework.observability", "_get_token_usage_histogram"),
    ("agent_framework._tools", "_default_histogram"),
)

#: The exception the function layer raises for arguments that do not fit a tool (module,
#: class name): the tool never ran, so it is not an error the tool raised.
ARGUMENT_ERROR = ("agent_framework._tools", "_FunctionArgumentValidationError")


def is_argument_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the function layer refusing a call's arguments."""
    module, name = ARGUMENT_ERROR
    refused = getattr(importlib.import_module(module), name, None)
    return isinstance(refused, type) and isinstance(exc, refused)


#: The function layer's call of one tool (module, function name). A call of a tool the run
#: does not have gets its error result there, without passing the function middleware:
#: zero-touch tracing wraps it to record that call too.
TOOL_INVOKER = ("agent_framework._tools", "_auto_invoke_function")
#: A FunctionMiddlewarePipeline's middleware, as it was given.
PIPELINE_MIDDLEWARE_ATTRIBUTE = "_source_middleware"


def unwrapped(spec: tuple[str, str], marker: str) -> tuple[Any, Any] | None:
    """The module and function ``spec`` (module, function name) names, or None when that
    function is already loopsim's wrapper (it carries the attribute ``marker``)."""
    module_name, name = spec
    module = importlib.import_module(module_name)
    original = getattr(module, name)
    if getattr(original, marker, None) is not None:
        return None
    return module, original


def traced_pipeline(pipeline: Any, middleware: type) -> bool:
    """Whether a function middleware pipeline holds a ``middleware`` instance."""
    given = getattr(pipeline, PIPELINE_MIDDLEWARE_ATTRIBUTE, None) or ()
    return any(isinstance(m, middleware) for m in given)


#: BackgroundAgentsProvider's dict of child agents by name.
PROVIDER_AGENTS_ATTRIBUTE = "_agents"


def provider_agents(provider: Any) -> list[Any]:
    """The child agents of a BackgroundAgentsProvider, in its order."""
    agents = getattr(provider, PROVIDER_AGENTS_ATTRIBUTE, None)
    if isinstance(agents, dict):
        return list(agents.values())
    return []


#: The background provider's private helpers that bring a session's task records up to
#: date (finished runs finalized, orphaned running ones marked lost), as its tools do
#: before they answer. Public API reads the records only as the provider last saved them.
REFRESH_FUNCTIONS = ("_get_provider_state", "_refresh_task_state")
REFRESH_MODULE = "agent_framework._harness._background_agents"
RUNTIME_METHOD = "_get_runtime"
#: The provider's runtimes by parent session id, and a runtime's asyncio tasks by task id.
RUNTIMES_ATTRIBUTE = "_runtime"
IN_FLIGHT_ATTRIBUTE = "in_flight_tasks"


def in_flight_task(provider: Any, session_id: str, task_id: int) -> Any:
    """The asyncio task running task ``task_id`` of a session, or None (creates nothing)."""
    runtime = (getattr(provider, RUNTIMES_ATTRIBUTE, None) or {}).get(session_id)
    tasks = getattr(runtime, IN_FLIGHT_ATTRIBUTE, None) or {}
    return tasks.get(task_id)


def background_tasks(provider: Any, session: Any) -> list[Any]:
    """The session's BackgroundTaskInfo records, refreshed first (the provider's own rule)."""
    module = importlib.import_module(REFRESH_MODULE)
    source_id = provider.source_id
    state = module._get_provider_state(session, source_id=source_id)
    runtime = getattr(provider, RUNTIME_METHOD)(session)
    tasks: list[Any] = module._refresh_task_state(session, state, runtime, source_id=source_id)
    return sorted(tasks, key=lambda task: task.id)


#: The function of ``create_harness_agent`` that builds its context providers, among them
#: the default file-memory store rooted at ``{cwd}/agent-file-memory`` (module, name).
DEFAULT_STORE_ASSEMBLER = ("agent_framework._harness._agent", "_assemble_context_providers")
#: The folder, in the working directory at build time, of that default store's root.
DEFAULT_MEMORY_FOLDER = "agent-file-memory"
#: Where a ``FileSystemAgentFileStore`` keeps its resolved root (every file op reads it).
STORE_ROOT_ATTRIBUTE = "_root_path"
