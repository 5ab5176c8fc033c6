"""The agent_framework engine runs on asyncio only, as the package does."""

from __future__ import annotations

import sys

from .._errors import LoopsimError

__all__ = ["EngineBackendError", "check_backend", "require_asyncio"]


class EngineBackendError(LoopsimError, ValueError):
    """agent_framework code was asked to run on trio (it needs asyncio)."""


_MESSAGE = (
    "the agent_framework engine runs on asyncio only (agent_framework itself uses "
    "asyncio tasks); got backend {backend!r}. Use backend='asyncio', or the built-in "
    "'loopsim' engine for trio"
)


def check_backend(backend: str) -> None:
    """Raise :class:`EngineBackendError` unless ``backend`` is ``"asyncio"``."""
    if backend != "asyncio":
        raise EngineBackendError(_MESSAGE.format(backend=backend))


def require_asyncio() -> None:
    """Raise :class:`EngineBackendError` when called from a trio run."""
    trio = sys.modules.get("trio")
    if trio is None:
        return
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return
    check_backend("trio")
