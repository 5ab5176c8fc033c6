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
  no watched I/O, or only ``anyio.sleep_forever()``), the run ends with
  :class:`~loopsim._errors.SimulationDeadlock`, which lists each waiting task, where it
  waits and on what.
* Any horizon works: virtual time is a float of seconds since the start, exact for
  sub-microsecond deadlines near 0 and correct up to at least 1e12 s on both backends.

Limits of a run (``docs/limits.md``), each ending it with a
:class:`~loopsim._errors.SimulationLimitError` that lists what was still running:

* ``virtual_time_limit`` (default None: none): how far one run may move virtual time;
* ``real_time_limit`` (default :data:`DEFAULT_REAL_TIME_LIMIT`, 60 s): the real-time
  watchdog, which stops busy loops and tasks that swallow their cancellation;
* with ``wall_clock=True``, virtual time cannot pass the last instant a ``datetime`` can
  show (year 9999);
* ``max_steps_per_instant`` (default :data:`DEFAULT_STEPS_PER_INSTANT`) and
  ``max_model_calls`` (default :data:`DEFAULT_MODEL_CALLS`): runaway loops, counted, so
  they end the same way whatever the machine's speed
  (:class:`~loopsim._errors.RunawayLoopError`, naming the agent and the loop).

Limits (by design, documented here once): threads are seen through the default
thread limiter and the asyncio executor hooks, so a thread started with ``threading``
directly, or with a custom limiter, is invisible (time may jump past it, or a wait on
it may be reported as a deadlock); a worker thread that calls back into the loop and
waits there for virtual time stalls the clock. Runs with ``wall_clock=True`` patch the
process once (freezegun) and each sees its own instant: simulations in several threads
may overlap, with or without a virtual wall clock.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, TypeVar

from loopsim import _trace
from loopsim._entropy import install_uuid4, seeded_random
from loopsim._scratch import removed_after
from loopsim._trace import Trace

from ._gc import with_simulation_gc
from ._interrupt import Interrupter
from ._session import DEFAULT_MODEL_CALLS, DEFAULT_STEPS_PER_INSTANT, Session

__all__ = [
    "DEFAULT_MODEL_CALLS",
    "DEFAULT_REAL_TIME_LIMIT",
    "DEFAULT_START",
    "DEFAULT_STEPS_PER_INSTANT",
    "VirtualClock",
    "current_clock",
    "loop_iteration",
    "model_call",
    "simulate",
]

T = TypeVar("T")

Backend = Literal["asyncio", "trio"]

#: Where virtual time starts unless told otherwise: a fixed instant, so runs repeat.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=timezone.utc)
#: Real seconds a run may take before the watchdog stops it (``real_time_limit``).
DEFAULT_REAL_TIME_LIMIT = 60.0
_LAST_INSTANT = datetime.max.replace(tzinfo=timezone.utc)

_current: ContextVar[VirtualClock | None] = ContextVar("loopsim_clock", default=None)


def current_clock() -> VirtualClock | None:
    """The clock of the running simulation (tasks and worker threads see it), else None."""
    return _current.get()


def model_call(agent: str | None) -> None:
    """Count a model call of ``agent`` against the running simulation's ``max_model_calls``.

    Every place that calls a model on behalf of an agent calls this first (the built-in
    agent, the agent_framework adapters); outside a simulation it does nothing.

    Raises:
        RunawayLoopError: the run has now made more model calls than it may.
    """
    clock = _current.get()
    session = None if clock is None else clock._session
    if session is not None:
        session.model_call(agent)


def loop_iteration(loop: str | None, iteration: int) -> None:
    """Note that iteration ``iteration`` of loop ``loop`` starts (the runaway errors name it)."""
    clock = _current.get()
    session = None if clock is None else clock._session
    if session is not None:
        session.loop_at = (loop, iteration)


#: loopsim's adapter of the agent_framework package (imported only if that package is).
_ADAPTER = "loopsim.agent_framework"


def _adapt_agent_framework() -> None:
    """Import loopsim's adapter if agent_framework is loaded and the adapter is not yet.

    Its hooks (the harness's default file memory in the run's own folder, tracing,
    seeded ids) are installed when it is imported; a program that runs agent_framework
    code in a simulation without importing it (its own model, ``import loopsim`` only)
    gets them too, whatever the import order. ``import loopsim`` alone still imports no
    agent_framework.
    """
    if _ADAPTER not in sys.modules and sys.modules.get("agent_framework") is not None:
        importlib.import_module(_ADAPTER)


class VirtualClock:
    """Virtual monotonic and wall time for anyio code, on asyncio and on trio.

    Args:
        start: the virtual wall-clock instant at ``elapsed == 0``. Must be timezone
            aware (a naive datetime is ambiguous); it is converted to UTC.
        seed: the seed of the run's :class:`~loopsim._trace.Trace` (its rng).
        wall_clock: make ``datetime.now()``/``time.time()`` follow virtual time inside
            :meth:`run` (freezegun; costs a few ms per run). ``False`` leaves them real
            (also while another thread runs a simulation with ``wall_clock=True``).
        virtual_time_limit: virtual seconds one :meth:`run` may move time by; a run that
            would jump further ends with ``VirtualTimeLimitError``. None: no limit.
        real_time_limit: real seconds one :meth:`run` may take; the watchdog then ends
            it with ``RealTimeLimitError`` (busy loops, swallowed cancellations, blocking
            code that returns, and code that never suspends, which it interrupts between
            two bytecodes). None: no watchdog.
        max_steps_per_instant: steps (asyncio: event-loop callbacks; trio: task steps)
            one run may take at one virtual instant; past it the run ends with
            ``RunawayLoopError`` naming the stepping task. None: no limit.
        max_model_calls: model calls one run may make in all agents together; past it
            ``RunawayLoopError`` names the calling agent and loop. None: no limit.

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
        self,
        start: datetime = DEFAULT_START,
        *,
        seed: int = 0,
        wall_clock: bool = True,
        virtual_time_limit: float | None = None,
        real_time_limit: float | None = DEFAULT_REAL_TIME_LIMIT,
        max_steps_per_instant: int | None = DEFAULT_STEPS_PER_INSTANT,
        max_model_calls: int | None = DEFAULT_MODEL_CALLS,
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
        self.virtual_time_limit = _limit("virtual_time_limit", virtual_time_limit)
        self.real_time_limit = _limit("real_time_limit", real_time_limit)
        self.max_steps_per_instant = _count("max_steps_per_instant", max_steps_per_instant)
        self.max_model_calls = _count("max_model_calls", max_model_calls)
        self._seed = seed
        self._wall_clock = wall_clock
        self._elapsed = 0.0
        self._trace: Trace | None = None
        self._wall_start = self._start.replace(tzinfo=None)  # freezegun keeps naive UTC
        self._session: Session[Any] | None = None
        self._lock = threading.Lock()
        self._running = False

    def __repr__(self) -> str:
        try:
            now = self.now().isoformat()
        except OverflowError:
            now = "past year 9999"
        return f"<VirtualClock elapsed={self._elapsed:g}s now={now}>"

    @property
    def elapsed(self) -> float:
        """Virtual seconds since ``start``; live during a run, kept after it."""
        return self._elapsed

    def now(self) -> datetime:
        """The virtual wall-clock instant, ``start + elapsed``, aware, in UTC.

        Raises:
            OverflowError: ``start + elapsed`` is past what a ``datetime`` can show
                (year 9999; only runs with ``wall_clock=False`` get that far).
        """
        try:
            return self._start + timedelta(seconds=self._elapsed)
        except OverflowError:
            msg = (
                f"virtual time t={self._elapsed:g}s is past the last instant a datetime can "
                f"show ({_LAST_INSTANT.isoformat()}); read clock.elapsed instead"
            )
            raise OverflowError(msg) from None

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
            VirtualTimeLimitError: the run would move time past ``virtual_time_limit``
                (or, with ``wall_clock=True``, past year 9999).
            RealTimeLimitError: the run took longer than ``real_time_limit`` real seconds.
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
            _adapt_agent_framework()
            install_uuid4()
            if trace is None:
                trace = Trace(seed=self._seed, time=self._read_elapsed)
            else:
                trace.time = self._read_elapsed
            self._trace = trace
            wall_range = None
            if self._wall_clock:
                wall_range = (_LAST_INSTANT - self._start).total_seconds()
            session = Session(
                self,
                async_fn,
                args,
                virtual_time_limit=self.virtual_time_limit,
                wall_range=wall_range,
                real_time_limit=self.real_time_limit,
                max_steps_per_instant=self.max_steps_per_instant,
                max_model_calls=self.max_model_calls,
            )
            if self.real_time_limit is not None:
                session.interrupter = Interrupter()
                session.interrupter.install()
            token = _current.set(self)
            self._session = session
            try:
                with (
                    _trace.bind(trace),
                    seeded_random(trace.seed),
                    removed_after(trace),
                    self._frozen_wall_clock(),
                ):
                    return runner(session)
            finally:
                session.alarm.cancel()
                session.backstop.cancel()
                session.call_in_loop = None
                if session.interrupter is not None:
                    session.interrupter.close()
                    session.interrupter = None
                self._session = None
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
        trace = self._trace
        if trace is not None and trace.observed:
            trace.emit("clock_jump", {"from": previous, "to": when})

    def _wall_now(self) -> datetime:
        """The virtual wall-clock instant, naive UTC, for freezegun (the owning code reads it).

        Raises:
            RealTimeLimitError: the run is past its real-time limit while its code reads
                the frozen clock without letting the loop run (a busy wait on
                ``perf_counter``/``monotonic``/``time.time``, which virtual time never moves).
        """
        session = self._session
        if session is not None and session.overdue and _read_by_user_code():
            raise session.frozen_clock_error()
        return self._wall_start + timedelta(seconds=self._elapsed)

    @contextmanager
    def _frozen_wall_clock(self) -> Iterator[None]:
        if not self._wall_clock:
            with nullcontext():
                yield
            return
        from ._wall import frozen_wall_clock  # noqa: PLC0415 - freezegun only when asked

        with frozen_wall_clock(_wall_lookup, _wall_owned):
            yield


# Modules whose reads of the clock are machinery (a gc callback of hypothesis, anyio's
# own bookkeeping): they get the frozen instant even when the run is overdue.
_MACHINERY = (
    "freezegun",
    "loopsim",
    "anyio",
    "asyncio",
    "trio",
    "hypothesis",
    "_pytest",
    "pytest",
    "pluggy",
    "sniffio",
    "coverage",
    "threading",
    "logging",
)


def _read_by_user_code() -> bool:
    frame = sys._getframe(2)  # the reader of the clock, cheaply
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if not module.startswith(("freezegun", "loopsim._clock")):
            return module.partition(".")[0] not in _MACHINERY
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _wall_owned() -> bool:
    clock = _current.get()
    return clock is not None and clock._wall_clock and clock._session is not None


def _wall_lookup() -> datetime | None:
    """The virtual instant of the simulation the calling code belongs to (see ``_wall``)."""
    clock = _current.get()
    if clock is None or not clock._wall_clock or clock._session is None:
        return None
    return clock._wall_now()


def _limit(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"{name} must be a number of seconds or None, got {type(value).__name__}"
        raise TypeError(msg)
    if not value > 0:
        msg = f"{name} must be > 0 seconds (or None for no limit), got {value!r}"
        raise ValueError(msg)
    return float(value)


def _count(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be a whole number or None, got {type(value).__name__}"
        raise TypeError(msg)
    if value < 1:
        msg = f"{name} must be at least 1 (or None for no limit), got {value!r}"
        raise ValueError(msg)
    return value


def _runner(backend: str) -> Callable[[Session[T]], T]:
    if backend == "asyncio":
        from ._asyncio import run_asyncio  # noqa: PLC0415 - keep import of the package light

        return with_simulation_gc(run_asyncio)
    if backend == "trio":
        try:
            from ._trio import run_trio  # noqa: PLC0415 - trio is an optional dependency
        except ImportError as exc:  # pragma: no cover - trio is installed in the test env
            msg = "backend='trio' needs trio installed (pip install trio)"
            raise ImportError(msg) from exc
        return with_simulation_gc(run_trio)
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
    virtual_time_limit: float | None = None,
    real_time_limit: float | None = DEFAULT_REAL_TIME_LIMIT,
    max_steps_per_instant: int | None = DEFAULT_STEPS_PER_INSTANT,
    max_model_calls: int | None = DEFAULT_MODEL_CALLS,
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
    clock = VirtualClock(
        start,
        seed=seed,
        wall_clock=wall_clock,
        virtual_time_limit=virtual_time_limit,
        real_time_limit=real_time_limit,
        max_steps_per_instant=max_steps_per_instant,
        max_model_calls=max_model_calls,
    )
    return clock.run(async_fn, *args, backend=backend, trace=trace)
