"""The virtual wall clock: ``datetime.now()`` / ``time.time()`` follow the simulation.

freezegun does the patching. Two of its properties shape this module:

* Entering ``freeze_time`` scans every loaded module for references to the real time
  functions (~4-9 ms with a few hundred modules loaded); leaving it undoes that. A
  *nested* ``freeze_time`` only pushes a new time factory (~3 µs). So a run freezes
  once for its whole duration, and a caller that wraps many runs in an outer
  ``freeze_time`` (a test session, say) makes each run's freeze nearly free.
* While frozen, ``time.monotonic``/``perf_counter`` read the frozen clock too. The
  virtual event loop never reads them (its ``time()`` is the virtual clock), so
  freezegun's ``real_asyncio`` patch is not needed (and not paid for).

The frozen instant is moved by assigning the factory's ``time_to_freeze`` on every
clock jump (~1.6 µs), computed from the start so no rounding accumulates.

freezegun's patch is process-wide, but the frozen instant belongs to one simulation.
Only code of that simulation sees it: code running in the simulation's context (its
tasks, and worker threads started through ``anyio.to_thread``, ``asyncio.to_thread`` or
``loop.run_in_executor``, which copy the context). Any other thread, in particular one
running its own simulation with ``wall_clock=False``, reads the real clock (or the
instant of a ``freeze_time`` it entered itself, below ours). Two freezegun hooks make it
so: the factory on top of freezegun's stack is a :class:`_SimulationTime` (``datetime``
reads the factory), and freezegun's ``_should_use_real_time`` answers yes for other
code (``time.time``/``monotonic``/``perf_counter`` ask it first).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import freezegun.api
from freezegun import freeze_time

# freezegun patches process-wide state with a stack; two threads freezing at once would
# pop each other's factories. Nested use in one thread is fine (a stack).
_lock = threading.Lock()
_owner: int | None = None
_depth = 0


# In a tuple: freezegun replaces module attributes that are the real datetime class.
_REAL: tuple[Any] = (freezegun.api.real_datetime,)


class _SimulationTime:
    """freezegun's time factory for one simulation: frozen for it, real for the rest."""

    def __init__(
        self, frozen: Callable[[], datetime], below: Any, owns: Callable[[], bool]
    ) -> None:
        self.frozen = frozen
        self.below = below  # the factory under ours (a freeze_time entered before), or None
        self.owns = owns

    def __call__(self) -> datetime:
        if self.owns():
            return self.frozen()
        if self.below is not None:
            found: datetime = self.below()
            return found
        real: datetime = _REAL[0].now(timezone.utc)
        return real.replace(tzinfo=None)  # freezegun keeps naive UTC


_original_should_use_real_time: Callable[[], bool] | None = None


def _should_use_real_time() -> bool:
    factories = freezegun.api.freeze_factories
    if factories:
        top = factories[-1]
        if isinstance(top, _SimulationTime) and top.below is None and not top.owns():
            return True
    assert _original_should_use_real_time is not None  # noqa: S101 - installed with it
    return _original_should_use_real_time()


def _install_hook() -> None:
    """Route freezegun's "use real time?" question through :func:`_should_use_real_time`."""
    global _original_should_use_real_time  # noqa: PLW0603 - one process-wide hook
    current = getattr(freezegun.api, "_should_use_real_time", None)
    if current is None or current is _should_use_real_time:
        return
    _original_should_use_real_time = current
    freezegun.api._should_use_real_time = _should_use_real_time  # freezegun's private hook


_install_hook()


@contextmanager
def frozen_wall_clock(
    start: datetime, elapsed: float, owns: Callable[[], bool] = lambda: True
) -> Iterator[Callable[[float], None]]:
    """Freeze the wall clock at ``start + elapsed``; yields ``move(elapsed)``.

    ``start`` must be aware and in UTC. ``owns()`` says whether the calling code belongs
    to the simulation (sees the frozen instant); other code sees real time.
    """
    global _owner, _depth  # noqa: PLW0603 - one process-wide patch, one owner
    me = threading.get_ident()
    with _lock:
        if _owner is not None and _owner != me:
            msg = (
                "another simulation with wall_clock=True is running in another thread; "
                "freezegun patches the whole process, so such runs cannot overlap "
                "(use wall_clock=False for concurrent runs)"
            )
            raise RuntimeError(msg)
        _owner = me
        _depth += 1
    try:
        base = start.replace(tzinfo=None)  # freezegun keeps naive UTC
        freezer = freeze_time(base + timedelta(seconds=elapsed))
        factory = freezer.start()
        factories: list[Any] = freezegun.api.freeze_factories
        if factories and factories[-1] is factory:
            below = factories[-2] if len(factories) > 1 else None
            factories[-1] = _SimulationTime(factory, below, owns)
        try:

            def move(elapsed: float) -> None:
                factory.time_to_freeze = base + timedelta(seconds=elapsed)

            yield move
        finally:
            freezer.stop()
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _owner = None


def real_seconds() -> float:
    """Real (not virtual, never frozen) seconds from an arbitrary origin, for measuring
    real latencies such as a real model's (``RecordingChatClient(latency="real")``)."""
    # Looked up at call time: freezegun replaces every module-level reference to the
    # real clock functions while frozen, except those in its own module.
    from freezegun import api  # noqa: PLC0415

    return float(api.real_perf_counter())
