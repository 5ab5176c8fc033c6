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
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from freezegun import freeze_time

# freezegun patches process-wide state with a stack; two threads freezing at once would
# pop each other's factories. Nested use in one thread is fine (a stack).
_lock = threading.Lock()
_owner: int | None = None
_depth = 0


@contextmanager
def frozen_wall_clock(start: datetime, elapsed: float) -> Iterator[Callable[[float], None]]:
    """Freeze the wall clock at ``start + elapsed``; yields ``move(elapsed)``.

    ``start`` must be aware and in UTC.
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
