"""The virtual clock: anyio code on asyncio or trio, in virtual time.

A :class:`VirtualClock` runs an async function on a fresh event loop (asyncio) or trio
run whose clock is virtual: whenever every task waits, time jumps straight to the next
deadline, so an hour of ``anyio.sleep`` costs microseconds and the same program always
sees the same times. Inside a run, ``datetime.now()`` and ``time.time()`` follow the
virtual wall clock (``start + elapsed``, through freezegun) unless ``wall_clock=False``.

Rules of virtual time (the same on both backends):

* Time moves only when nothing can run: no ready callback or runnable task, no I/O
  that already arrived, no busy worker thread. It then jumps exactly to the next
  deadline. Work done in a worker thread (``anyio.to_thread.run_sync``,
  ``asyncio.to_thread``, ``loop.run_in_executor``) takes no virtual time.
* Deadlines that tie fire in a stable order: the task that went to sleep first wakes
  first, run after run and on both backends.
* When every task waits for something that can never happen (no deadline, no thread,
  no watched I/O), the run ends with :class:`~loopsim._errors.SimulationDeadlock`,
  which lists each waiting task, where it waits and on what.

Limits (by design, documented here once): threads are seen through the default
thread limiter and the asyncio executor hooks, so a thread started with ``threading``
directly, or with a custom limiter, is invisible (time may jump past it, or a wait on
it may be reported as a deadlock); a worker thread that calls back into the loop and
waits there for virtual time stalls the clock. Runs with ``wall_clock=True`` patch the
process (freezegun) and so cannot overlap across threads.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from datetime import datetime, timedelta, timezone
from typing import Literal, TypeVar

from loopsim import _trace
from loopsim._trace import Trace

from ._session import Session

__all__ = ["DEFAULT_START", "VirtualClock", "current_clock", "simulate"]

T = TypeVar("T")

Backend = Literal["asyncio", "trio"]

#: Where virtual time starts unless told otherwise: a fixed instant, so runs repeat.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=timezone.utc)

_current: ContextVar[VirtualClock | None] = ContextVar("loopsim_clock", default=None)


def current_clock() -> VirtualClock | None:
    """The clock of the running simulation (tasks and worker threads see it), else None."""
    return _current.get()


class VirtualClock:
    """Virtual monotonic and wall time for anyio code, on asyncio and on trio.

    Args:
        start: the virtual wall-clock instant at ``elapsed == 0``. Must be timezone
            aware (a naive datetime is ambiguous); it is converted to UTC.
        seed: the seed of the run's :class:`~loopsim._trace.Trace` (its rng).
        wall_clock: make ``datetime.now()``/``time.time()`` follow virtual time inside
            :meth:`run` (freezegun; costs a few ms per run). ``False`` leaves them real.

    A clock can run several times, one run at a time (a concurrent second run raises
    ``RuntimeError``); each run continues from the time the previous one ended, so a
    simulated process can be stopped and resumed on one timeline.

    Example:
        >>> import anyio
        >>> clock = VirtualClock()
        >>> async def wait_an_hour() -> str:
        ...     await anyio.sleep(3600)
        ...     return "done"
        >>> clock.run(wait_an_hour)
        'done'
        >>> clock.elapsed, clock.now().isoformat()
        (3600.0, '2026-01-01T01:00:00+00:00')
    """

    def __init__(
        self, start: datetime = DEFAULT_START, *, seed: int = 0, wall_clock: bool = True
    ) -> None:
        if not isinstance(start, datetime):
            msg = f"start must be a datetime, got {type(start).__name__}"
            raise TypeError(msg)
        if start.tzinfo is None or start.utcoffset() is None:
            msg = (
                f"start must be timezone-aware, got naive {start.isoformat()}; "
                "pass e.g. datetime(2026, 1, 1, tzinfo=timezone.utc)"
            )
            raise ValueError(msg)
        self._start = start.astimezone(timezone.utc)
        self._seed = seed
        self._wall_clock = wall_clock
        self._elapsed = 0.0
        self._trace: Trace | None = None
        self._move_wall: Callable[[float], None] | None = None
        self._lock = threading.Lock()
        self._running = False

    def __repr__(self) -> str:
        return f"<VirtualClock elapsed={self._elapsed:g}s now={self.now().isoformat()}>"

    @property
    def elapsed(self) -> float:
        """Virtual seconds since ``start``; live during a run, kept after it."""
        return self._elapsed

    def now(self) -> datetime:
        """The virtual wall-clock instant, ``start + elapsed``, aware, in UTC."""
        return self._start + timedelta(seconds=self._elapsed)

    @property
    def start(self) -> datetime:
        """The virtual instant at ``elapsed == 0`` (UTC)."""
        return self._start

    @property
    def seed(self) -> int:
        """The seed given to each run's trace."""
        return self._seed

    @property
    def trace(self) -> Trace | None:
        """The trace bound during the latest run (None before the first run)."""
        return self._trace

    def run(
        self,
        async_fn: Callable[..., Awaitable[T]],
        *args: object,
        backend: Backend = "asyncio",
        trace: Trace | None = None,
    ) -> T:
        """Run ``async_fn(*args)`` in virtual time and return its result.

        The run gets a fresh event loop (asyncio) or trio run, closed at the end.
        ``trace`` (or a new ``Trace(seed=self.seed)``) is bound for the whole run and
        its ``time`` reads this clock's :attr:`elapsed`. Exceptions from ``async_fn``
        propagate unchanged.

        Raises:
            SimulationDeadlock: every task waited with nothing able to wake it.
            RuntimeError: this clock is already running.
            ValueError: unknown ``backend``.
        """
        runner = _runner(backend)
        with self._lock:
            if self._running:
                msg = "this VirtualClock is already running; a clock runs one simulation at a time"
                raise RuntimeError(msg)
            self._running = True
        try:
            if trace is None:
                trace = Trace(seed=self._seed, time=self._read_elapsed)
            else:
                trace.time = self._read_elapsed
            self._trace = trace
            token = _current.set(self)
            try:
                with _trace.bind(trace), self._frozen_wall_clock():
                    return runner(Session(self, async_fn, args))
            finally:
                _current.reset(token)
        finally:
            self._running = False

    def _read_elapsed(self) -> float:
        return self._elapsed

    def _advance_to(self, when: float) -> None:
        """Jump virtual time forward to ``when`` (backends call this; never backwards)."""
        previous = self._elapsed
        if when <= previous:
            return
        self._elapsed = when
        if self._move_wall is not None:
            self._move_wall(when)
        trace = self._trace
        if trace is not None and trace.observed:
            trace.emit("clock_jump", {"from": previous, "to": when})

    @contextmanager
    def _frozen_wall_clock(self) -> Iterator[None]:
        if not self._wall_clock:
            with nullcontext():
                yield
            return
        from ._wall import frozen_wall_clock  # noqa: PLC0415 - freezegun only when asked

        with frozen_wall_clock(self._start, self._elapsed) as move:
            self._move_wall = move
            try:
                yield
            finally:
                self._move_wall = None


def _runner(backend: str) -> Callable[[Session[T]], T]:
    if backend == "asyncio":
        from ._asyncio import run_asyncio  # noqa: PLC0415 - keep import of the package light

        return run_asyncio
    if backend == "trio":
        try:
            from ._trio import run_trio  # noqa: PLC0415 - trio is an optional dependency
        except ImportError as exc:  # pragma: no cover - trio is installed in the test env
            msg = "backend='trio' needs trio installed (pip install trio)"
            raise ImportError(msg) from exc
        return run_trio
    msg = f"unknown backend {backend!r}: expected 'asyncio' or 'trio'"
    raise ValueError(msg)


def simulate(
    async_fn: Callable[..., Awaitable[T]],
    *args: object,
    backend: Backend = "asyncio",
    start: datetime = DEFAULT_START,
    seed: int = 0,
    wall_clock: bool = True,
    trace: Trace | None = None,
) -> T:
    """Run ``async_fn(*args)`` on a fresh :class:`VirtualClock` and return its result.

    Everything inside waits in virtual time: ``anyio.sleep``, ``fail_after``,
    ``asyncio.sleep``/``wait_for``, ``trio.sleep``; ``datetime.now()`` is virtual too.

    The wall clock is patched by freezegun, which rewrites module attributes: code
    that reads ``datetime.now()`` through a module (``import datetime`` or ``from
    datetime import datetime`` at module level) sees virtual time; a reference kept
    elsewhere (a default argument, a copied namespace) keeps the real clock.

    Example:
        >>> import anyio, datetime
        >>> async def nightly_job() -> str:
        ...     await anyio.sleep(6 * 3600)
        ...     return datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M")
        >>> simulate(nightly_job)
        '06:00'
        >>> simulate(nightly_job, backend="trio")
        '06:00'
    """
    clock = VirtualClock(start, seed=seed, wall_clock=wall_clock)
    return clock.run(async_fn, *args, backend=backend, trace=trace)
