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

__all__ = ["PROVIDER_AGENTS_ATTRIBUTE", "UUID4_MODULES", "provider_agents"]

#: Modules that bind ``uuid4`` at import (``from uuid import uuid4``): agent ids, tool
#: call occurrence ids, in-memory record keys. Modules that call ``uuid.uuid4()`` go
#: through the ``uuid`` module and need no entry here.
UUID4_MODULES = ("agent_framework._agents", "agent_framework._tools", "agent_framework._in_memory")

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
