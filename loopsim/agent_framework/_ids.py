"""Deterministic uuid4 for agent_framework code running inside a simulation.

agent_framework makes its session, agent and tool-call ids with ``uuid4``. Inside a
loopsim simulation (a trace is bound in the current context: ``loopsim.simulate``,
``VirtualClock.run``, ``loopsim.record``) those calls return UUIDs numbered from the
simulation's own counter (``UUID(int=n)`` with the version-4 bits set), so two runs of
one program produce the same ids. Anywhere else (no simulation, or another thread
started during one, which does not inherit the context) they stay random.

The replacement is installed once, when ``loopsim.agent_framework`` is imported, on the
``uuid`` module and on the agent_framework modules that bound ``uuid4`` by name (see
``_upstream.UUID4_MODULES``). The scoping is a context variable, so it is exact.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from .. import _trace
from ._upstream import UUID4_MODULES, uuid4_modules

__all__ = ["install", "original_uuid4", "simulated_uuid4"]

original_uuid4: Callable[[], uuid.UUID] = uuid.uuid4  # noqa: TID251 - kept to call outside simulations
_COUNTER = "uuid"


def simulated_uuid4() -> uuid.UUID:
    """The next id of the running simulation, or a random uuid4 outside one."""
    trace = _trace.active()
    if trace is None:
        return original_uuid4()
    number = int(trace.next_id(_COUNTER).rpartition("-")[2])
    return uuid.UUID(int=number, version=4)


simulated_uuid4.__loopsim__ = True  # type: ignore[attr-defined] # marks the replacement


def install() -> None:
    """Put :func:`simulated_uuid4` in place of ``uuid4`` (idempotent)."""
    uuid.uuid4 = simulated_uuid4  # noqa: TID251 - this is the one place that replaces it
    for name, module in zip(UUID4_MODULES, uuid4_modules(), strict=True):
        if not hasattr(module, "uuid4"):  # pragma: no cover - guarded by the seam test
            msg = f"{name} no longer has uuid4; update loopsim.agent_framework._upstream"
            raise RuntimeError(msg)
        module.uuid4 = simulated_uuid4
