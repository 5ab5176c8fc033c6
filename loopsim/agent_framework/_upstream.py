"""Every private name of agent_framework that loopsim touches, in one place.

agent_framework binds ``uuid4`` by name in a few modules (``from uuid import uuid4``), so
making its ids deterministic means replacing those module attributes; the background
provider keeps its child agents in a private attribute. Nothing else in loopsim reaches
past agent_framework's public API. ``tests/test_af_upstream_seams.py`` checks that each
name below still exists, so an upgrade that moves one fails loudly there.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "INSTRUMENT_FACTORIES",
    "PROVIDER_AGENTS_ATTRIBUTE",
    "REFRESH_FUNCTIONS",
    "UUID4_MODULES",
    "background_tasks",
    "provider_agents",
]

#: Modules that bind ``uuid4`` at import (``from uuid import uuid4``): agent ids, tool
#: call occurrence ids, in-memory record keys. Modules that call ``uuid.uuid4()`` go
#: through the ``uuid`` module and need no entry here.
UUID4_MODULES = ("agent_framework._agents", "agent_framework._tools", "agent_framework._in_memory")

#: Module functions that make a new OpenTelemetry histogram for each chat client and
#: function tool agent_framework builds (module, function name). Without a meter provider
#: set, OpenTelemetry's proxy meters keep every instrument made, for ever.
INSTRUMENT_FACTORIES = (
    ("agent_framework.observability", "_get_duration_histogram"),
    ("agent_framework.observability", "_get_token_usage_histogram"),
    ("agent_framework._tools", "_default_histogram"),
)

#: BackgroundAgentsProvider's dict of child agents by name.
PROVIDER_AGENTS_ATTRIBUTE = "_agents"


def uuid4_modules() -> list[Any]:
    """The modules of :data:`UUID4_MODULES`, imported."""
    return [importlib.import_module(name) for name in UUID4_MODULES]


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


def background_tasks(provider: Any, session: Any) -> list[Any]:
    """The session's BackgroundTaskInfo records, refreshed first (the provider's own rule)."""
    module = importlib.import_module(REFRESH_MODULE)
    source_id = provider.source_id
    state = module._get_provider_state(session, source_id=source_id)
    runtime = getattr(provider, RUNTIME_METHOD)(session)
    tasks: list[Any] = module._refresh_task_state(session, state, runtime, source_id=source_id)
    return sorted(tasks, key=lambda task: task.id)
