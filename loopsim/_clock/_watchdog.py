"""The real-time watchdog: one daemon thread that looks at every running simulation.

Virtual time cannot catch code that keeps the loop busy without ever letting time move
(``while True: await anyio.sleep(0)``), nor a task that swallows its cancellation and
waits again (anyio re-delivers the cancellation on every loop cycle, so the loop is never
idle and the deadlock escalation never runs). Real time can. Runs register an alarm (a
real instant and a callback); a single daemon thread polls the alarms every
:data:`POLL` seconds and hands each due callback to its run's event loop
(``call_soon_threadsafe`` / trio's ``run_sync_soon``), where the run is stopped.

Nothing of this is on the clock's hot path: registering is a dict assignment, and the
thread sleeps for real between polls (it exits after :data:`IDLE_EXIT` seconds with no
run to watch, so an idle process has no extra thread).

Real time is read with the monotonic clock saved before freezegun could patch it
(freezegun rewrites ``time.monotonic`` while a run freezes the wall clock).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["POLL", "Alarm", "real_time"]

#: Real seconds between two looks at the alarms (the precision of every real-time limit).
POLL = 0.05
#: Real seconds with nothing to watch after which the thread exits.
IDLE_EXIT = 2.0


def _real_monotonic() -> Callable[[], float]:
    frozen = sys.modules.get("freezegun.api")
    saved = getattr(frozen, "real_monotonic", None)
    return saved if callable(saved) else time.monotonic


# In a tuple: freezegun replaces module attributes that are the real time functions.
_CLOCK: tuple[Callable[[], float]] = (_real_monotonic(),)


def real_time() -> float:
    """Real monotonic seconds (never frozen by freezegun)."""
    return _CLOCK[0]()


class Alarm:
    """A callback due at a real instant; :meth:`set` (re)arms it, :meth:`cancel` drops it.

    The callback runs on the watchdog thread: it must only hand work to its loop.
    """

    __slots__ = ("__weakref__", "at", "callback")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.at: float | None = None

    def set(self, delay: float) -> None:
        """Fire ``delay`` real seconds from now (replaces an earlier setting)."""
        self.at = real_time() + delay
        _watch(self)

    def cancel(self) -> None:
        """Do not fire (again)."""
        self.at = None
        with _lock:
            _alarms.pop(id(self), None)


_lock = threading.Lock()
_alarms: dict[int, Alarm] = {}
_thread: threading.Thread | None = None


def _watch(alarm: Alarm) -> None:
    global _thread  # noqa: PLW0603 - one watchdog thread per process
    with _lock:
        _alarms[id(alarm)] = alarm
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, name="loopsim-watchdog", daemon=True)
            _thread.start()


def _loop() -> None:
    global _thread  # noqa: PLW0603 - see _watch
    idle_since: float | None = None
    while True:
        time.sleep(POLL)  # freezegun leaves time.sleep alone
        now = real_time()
        with _lock:
            if not _alarms:
                if idle_since is None:
                    idle_since = now
                elif now - idle_since >= IDLE_EXIT:
                    _thread = None
                    return
                continue
            idle_since = None
            due = [a for a in _alarms.values() if a.at is not None and a.at <= now]
            for alarm in due:
                alarm.at = None
                del _alarms[id(alarm)]
        for alarm in due:
            _fire(alarm)


def _fire(alarm: Alarm) -> None:
    # A run that just ended (its loop closed) has nothing left to stop.
    with contextlib.suppress(Exception):
        alarm.callback()
