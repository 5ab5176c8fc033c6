"""agent_framework's BackgroundAgentsProvider, as loopsim's evaluators read a provider.

loopsim's :class:`~loopsim.BackgroundTaskCompletionLoopEvaluator` asks the looped agent for
``get_service(loopsim.BackgroundAgentsProvider)`` and reads ``incomplete_tasks(session)``:
the session's tasks still running, after the provider's own refresh. :class:`ProviderView`
answers that question from the real provider's task records; ``as_agent`` offers it for
the first ``agent_framework.BackgroundAgentsProvider`` among the agent's context providers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import agent_framework as af

from ._upstream import background_tasks

__all__ = ["ProviderView", "TaskView", "find_provider"]


@dataclass(frozen=True, slots=True)
class TaskView:
    """A running task as loopsim's evaluator reads it."""

    task_id: int
    agent_name: str
    description: str


class ProviderView:
    """The real provider, read as loopsim's background-completion evaluator reads one."""

    def __init__(self, provider: af.BackgroundAgentsProvider) -> None:
        self.provider = provider

    def __repr__(self) -> str:
        return f"ProviderView({self.provider.source_id!r})"

    def incomplete_tasks(self, session: Any) -> list[TaskView]:
        """The session's tasks still running (after the provider's refresh), by id."""
        return [
            TaskView(task.id, task.agent_name, task.description)
            for task in background_tasks(self.provider, session)
            if task.status.value == "running"
        ]


def find_provider(agent: Any) -> af.BackgroundAgentsProvider | None:
    """The first ``agent_framework.BackgroundAgentsProvider`` of ``agent``'s context providers."""
    for provider in getattr(agent, "context_providers", None) or ():
        if isinstance(provider, af.BackgroundAgentsProvider):
            return provider
    return None
