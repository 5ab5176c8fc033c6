"""The virtual wall clock: ``datetime.now()`` / ``time.time()`` follow the simulation.

freezegun does the patching. Three of its properties shape this module:

* Entering ``freeze_time`` scans every loaded module for references to the real time
  functions (~4-9 ms with a few hundred modules loaded); leaving it undoes that. A
  *nested* ``freeze_time`` only pushes a new time factory (~3 µs). So the patch is
  entered once while any simulation with a virtual wall clock runs, in any thread, and
  left when the last one ends. :func:`hold` keeps it entered between runs (the pytest
  plugin holds it across consecutive tests that use the virtual wall clock), which makes
  each run's freeze nearly free; a caller's outer ``freeze_time`` does too.
* freezegun's patch is process-wide (module attributes, one stack of time factories),
  but a virtual instant belongs to one simulation. So the factory on top of freezegun's
  stack is one :class:`_SimulationTime` for the whole process that asks, on every read,
  whose code is reading: code running in a simulation's context (its tasks, and worker
  threads started through ``anyio.to_thread``, ``asyncio.to_thread`` or
  ``loop.run_in_executor``, which copy the context) reads that simulation's
  ``start + elapsed``; any other code reads the real clock (or the instant of a
  ``freeze_time`` entered before, below ours). freezegun's ``_should_use_real_time`` is
  hooked so that ``time.time``/``monotonic``/``perf_counter`` ask the same question.
  Two simulations in two threads, each with a virtual wall clock, therefore see their
  own instants, and one with ``wall_clock=False`` sees the real clock.
* ``freeze_time.start()`` pushes its factory *before* it patches the modules (the slow
  part): a plain frozen factory on top during those milliseconds would show the new
  instant to every thread. Our factory is therefore the one freezegun pushes (its
  factory class is swapped for the duration of ``start``, under our lock).

While frozen, ``time.monotonic``/``perf_counter`` read the simulation's virtual time
too (so durations that code measures around a virtual sleep come out as in production).
The virtual event loop never reads them (its ``time()`` is the virtual clock), so
freezegun's ``real_asyncio`` patch is not needed (and not paid for).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import freezegun.api
from freezegun import freeze_time

__all__ = ["frozen_wall_clock", "held", "hold", "real_seconds", "release"]

#: ``lookup()`` gives the calling code's virtual instant (naive UTC), or None when the
#: code belongs to no simulation with a virtual wall clock.
Lookup = Callable[[], datetime | None]

# In a tuple: freezegun replaces module attributes that are the real datetime class.
_REAL: tuple[Any] = (freezegun.api.real_datetime,)


def _nobody() -> datetime | None:
    return None


def _no() -> bool:
    return False


class _SimulationTime:
    """freezegun's time factory: each simulation's instant for its code, real for the rest."""

    def __init__(self, _time_to_freeze: object = None) -> None:
        self.lookup: Lookup = _nobody
        self.owned: Callable[[], bool] = _no  # cheaper than lookup() is not None
        self.below: Any = None  # the factory under ours (a freeze_time entered before), or None

    def __call__(self) -> datetime:
        mine = self.lookup()
        if mine is not None:
            return mine
        if self.below is not None:
            found: datetime = self.below()
            return found
        real: datetime = _REAL[0].now(timezone.utc)
        return real.replace(tzinfo=None)  # freezegun keeps naive UTC


_lock = threading.Lock()
_users = 0  # simulations inside frozen_wall_clock, in every thread
_freezer: Any = None
_factory: _SimulationTime | None = None

_original_should_use_real_time: Callable[[], bool] | None = None


def _should_use_real_time() -> bool:
    factories = freezegun.api.freeze_factories
    if factories:
        top = factories[-1]
        if isinstance(top, _SimulationTime) and top.below is None and not top.owned():
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
def _scanning() -> Iterator[None]:
    """While freezegun scans the modules: the lazy ``loopsim`` package lists only the
    names it has imported (see ``_DIR_LOADED_ONLY`` there), so the scan imports nothing."""
    flag = getattr(sys.modules.get("loopsim"), "_DIR_LOADED_ONLY", None)
    if not isinstance(flag, list):
        yield
        return
    flag[0] = True
    try:
        yield
    finally:
        flag[0] = False


def _start(lookup: Lookup, owned: Callable[[], bool]) -> None:
    global _freezer, _factory
    factories: list[Any] = freezegun.api.freeze_factories
    below = factories[-1] if factories else None
    freezer = freeze_time(
        datetime(2000, 1, 1, tzinfo=timezone.utc)
    )  # the instant is never read: ours answers
    plain = freezegun.api.FrozenDateTimeFactory
    # Swapped so that start() pushes our factory (see the module doc).
    freezegun.api.FrozenDateTimeFactory = _SimulationTime  # type: ignore[misc,assignment]
    try:
        with _scanning():
            factory = freezer.start()
    finally:
        freezegun.api.FrozenDateTimeFactory = plain  # type: ignore[misc]
    if not isinstance(factory, _SimulationTime):  # pragma: no cover - a freezegun change
        freezer.stop()
        msg = "freezegun did not use loopsim's time factory; this freezegun is not supported"
        raise RuntimeError(msg)  # noqa: TRY004 - not a caller's type error
    factory.below = below
    factory.lookup = lookup
    factory.owned = owned
    _freezer, _factory = freezer, factory


@contextmanager
def frozen_wall_clock(lookup: Lookup, owned: Callable[[], bool]) -> Iterator[None]:
    """Patch the wall clock (once for all simulations) while inside.

    ``lookup()`` answers, for the calling code, the virtual instant (naive UTC) of the
    simulation it belongs to, or None (then it reads real time); ``owned()`` whether it
    is not None, cheaply. Every simulation passes the same pair; the first one in
    starts freezegun, the last one out stops it.
    """
    global _users  # noqa: PLW0603 - one process-wide patch
    with _lock:
        if _users == 0:
            _start(lookup, owned)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            _stop_if_unused()


def _stop_if_unused() -> None:
    global _freezer, _factory
    if _users == 0 and _freezer is not None:
        freezer, _freezer, _factory = _freezer, None, None
        with _scanning():
            freezer.stop()


_held = False  # hold() counts as one user until release()


def hold(lookup: Lookup, owned: Callable[[], bool]) -> None:
    """Keep the patch on after the last simulation leaves, until :func:`release`.

    Starting and stopping freezegun costs milliseconds (the scan of every module);
    pushing one more user costs a lock and a counter. The pytest plugin holds the patch
    across a run of consecutive tests that use the virtual wall clock (marked async
    tests, scenario files) and releases it before any other test and at the end of the
    session, so that every simulation but the first pays microseconds. While held and no
    simulation runs, every reading is real (the factory asks whose code reads), only the
    functions are freezegun's. Same ``lookup``/``owned`` as :func:`frozen_wall_clock`.
    """
    global _users, _held  # noqa: PLW0603 - one process-wide patch
    with _lock:
        if _held:
            return
        if _users == 0:
            _start(lookup, owned)
        _users += 1
        _held = True


def release() -> None:
    """End :func:`hold` (nothing when not held); the last user out stops freezegun."""
    global _users, _held  # noqa: PLW0603 - one process-wide patch
    with _lock:
        if not _held:
            return
        _held = False
        _users -= 1
        _stop_if_unused()


def held() -> bool:
    """Whether :func:`hold` is in force."""
    return _held


def real_seconds() -> float:
    """Real (not virtual, never frozen) seconds from an arbitrary origin, for measuring
    real latencies such as a real model's (``RecordingChatClient(latency="real")``)."""
    # Looked up at call time: freezegun replaces every module-level reference to the
    # real clock functions while frozen, except those in its own module.
    from freezegun import api  # noqa: PLC0415

    return float(api.real_perf_counter())
