"""A team's own coordinator with background agents, built by a factory a scenario names.

The factory takes ``background_agents``: loopsim passes the child agents it built for
``parent.background_agents`` (scripted, or built by factories of their own), and the
team's code puts them in its own ``BackgroundAgentsProvider``, with its own wait
timeout and instructions, as it does in production.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af


def coordinator(client: Any, name: str, background_agents: list[Any]) -> af.Agent:
    """The coordinator under test: its instructions and its own background provider."""
    return af.Agent(
        client=client,
        name=name,
        instructions="Delegate research to your background agents, then report what they found.",
        context_providers=[
            af.BackgroundAgentsProvider(background_agents, wait_timeout_seconds=120)
        ],
    )


def bare_coordinator(client: Any, name: str) -> af.Agent:
    """A coordinator without a provider: loopsim adds one for ``parent.background_agents``."""
    return af.Agent(client=client, name=name, instructions="Delegate, then report.")
