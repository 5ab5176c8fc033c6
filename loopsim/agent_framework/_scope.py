"""Who is asking: the agent and session of the agent_framework run in progress.

The tracing middleware (see ``_tracing``) sets this around each run, so the chat-client
adapter can label model events and ``ChatOptions`` with the asking agent and session
the way loopsim's own Agent does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = ["RunScope", "current_scope", "run_scope"]


@dataclass(frozen=True, slots=True)
class RunScope:
    """The asking agent's label (name, else id), its session id and the agent itself."""

    agent: str
    session: str | None
    agent_object: Any = None


_scope: ContextVar[RunScope | None] = ContextVar("loopsim_af_run_scope", default=None)


def current_scope() -> RunScope | None:
    return _scope.get()


@contextmanager
def run_scope(scope: RunScope) -> Iterator[None]:
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)
