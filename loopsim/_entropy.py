"""The code under test's randomness inside a simulation: seeded, never patterned.

Two sources of nondeterminism that user code (and agent_framework) reaches for are made
reproducible for the length of a simulation, without changing what they look like:

* ``uuid.uuid4()`` returns well-formed version-4 UUIDs whose 122 random bits come from a
  generator seeded by the simulation's seed (one stream per simulation). They are as
  random in every bit as real ones, so ids cut short (``uuid4().hex[:8]``) or keyed on a
  prefix collide no more often than in production; the same seed gives the same ids.
  The swap is made on the function object itself (its ``__code__``), so every reference
  to it works the same, however it was imported and in which order: ``uuid.uuid4``,
  ``from uuid import uuid4`` in a module loaded before loopsim, a default argument.
  Outside a simulation the original code runs unchanged; so it does in a
  ``threading.Thread`` started during one (it does not copy the run's context), while an
  ``asyncio.to_thread`` job runs in a copy of it and draws from the simulation's stream.
* the global :mod:`random` generator is seeded from the simulation's seed when a run
  starts and its previous state is restored when it ends. It is one generator for the
  process: two simulations running at once in two threads share it (their draws then
  interleave by scheduling luck). Own :class:`random.Random` instances are the user's.

What loopsim does not control is listed in ``docs/limits.md``: ``os.urandom``,
``secrets``, ``random.SystemRandom``, hash randomization of ``str`` (``PYTHONHASHSEED``),
and threads or processes started by user code.
"""

from __future__ import annotations

import importlib._bootstrap
import random
import sys
import types
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from . import _trace

__all__ = ["MINTED", "install_uuid4", "original_uuid4", "seeded_random", "simulated_uuid4"]

#: ``Trace.resources`` key of the set of uuid strings the simulation made (the recorder
#: tells them from ids made elsewhere, e.g. by an agent built before the simulation).
MINTED = "uuid4.minted"
_STREAM = "uuid4.rng"
_HOOK = "_loopsim_uuid4"

_uuid4 = uuid.uuid4
#: A copy of ``uuid.uuid4`` as the standard library wrote it (random, from os.urandom).
original_uuid4: types.FunctionType = types.FunctionType(
    _uuid4.__code__, _uuid4.__globals__, "uuid4", _uuid4.__defaults__, _uuid4.__closure__
)
_UUID = uuid.UUID
#: The importlib frame every module body runs under (``exec_module``).
_MODULE_BODY = importlib._bootstrap._call_with_frames_removed.__code__  # type: ignore[attr-defined] # private, unstubbed


def _importing() -> bool:
    # True while a module body runs (its import happens to fall inside a simulation):
    # an id made then is the process's (a module constant), not the simulation's.
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code is _MODULE_BODY:
            return True
        frame = frame.f_back  # type: ignore[assignment] # None ends the walk
    return False


def simulated_uuid4() -> uuid.UUID:
    """A seeded version-4 uuid inside a simulation, the standard one outside.

    A module imported for the first time during a simulation gets standard ids for its
    module-level code, so the first run in a process draws the same ids as later ones.
    """
    trace = _trace.active()
    if trace is None or _importing():
        return original_uuid4()  # type: ignore[no-any-return] # a copy of uuid.uuid4
    resources = trace.resources
    stream = resources.get(_STREAM)
    if stream is None:
        # A stream of its own, so ids do not shift loopsim's scheduling draws (trace.rng).
        stream = resources[_STREAM] = random.Random(f"loopsim-uuid4:{trace.seed}")  # noqa: S311 - reproducible ids, not secrets
        resources[MINTED] = set()
    value = _UUID(int=stream.getrandbits(128), version=4)
    resources[MINTED].add(str(value))
    return value


def _trampoline() -> uuid.UUID:  # pragma: no cover - runs as uuid.uuid4's code
    return _loopsim_uuid4()  # type: ignore[name-defined,no-any-return] # noqa: F821 - a name in uuid's globals


# Named as the function it becomes, so tracebacks still say ``uuid4``.
_BODY = _trampoline.__code__.replace(co_name="uuid4")
if hasattr(_BODY, "co_qualname"):  # Python 3.11+
    _BODY = _BODY.replace(co_qualname="uuid4")  # type: ignore[call-arg] # typed for 3.10


def install_uuid4() -> None:
    """Make ``uuid.uuid4`` (the function object, wherever referenced) seeded in simulations.

    Idempotent. The function keeps its identity, name and signature; only its body
    becomes "the simulation's next id, or the original outside one".
    """
    if _uuid4.__code__ is _BODY:
        return
    setattr(uuid, _HOOK, simulated_uuid4)
    _uuid4.__code__ = _BODY
    uuid.uuid4 = _uuid4


def uninstall_uuid4() -> None:
    """Give ``uuid.uuid4`` its original body back (tests of the swap itself)."""
    _uuid4.__code__ = original_uuid4.__code__


@contextmanager
def seeded_random(seed: int) -> Iterator[None]:
    """Seed the global :mod:`random` generator for the block; restore its state after."""
    state = random.getstate()
    random.seed(f"loopsim-random:{seed}")
    try:
        yield
    finally:
        random.setstate(state)
