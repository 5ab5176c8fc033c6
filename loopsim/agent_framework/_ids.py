"""agent_framework's uuid4 ids inside a simulation: seeded, as random-looking as real ones.

agent_framework makes its session, agent, tool-call and stored-value ids with ``uuid4``.
Inside a loopsim simulation those come from the simulation's seeded stream
(:mod:`loopsim._entropy`): well-formed version-4 UUIDs, random in every bit, the same for
the same seed. The swap is made on ``uuid.uuid4``'s function object, so it holds however
and in whichever order agent_framework and loopsim were imported. Outside a simulation
(and in a ``threading.Thread`` started during one, which does not copy the run's
context) ``uuid4`` is the standard library's, unchanged; an ``asyncio.to_thread`` job
runs in a copy of the context and draws from the simulation's stream.
"""

from __future__ import annotations

from .._entropy import install_uuid4, original_uuid4, simulated_uuid4

__all__ = ["install", "original_uuid4", "simulated_uuid4"]


def install() -> None:
    """Put the seeded ``uuid4`` in place (idempotent; every simulation also does it)."""
    install_uuid4()
