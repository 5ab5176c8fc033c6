"""What one run of a virtual clock shares between the clock, a backend and the main task.

Both backends follow the same protocol, so that they fail the same way:

1. :meth:`Session.main` runs the user's function inside a root cancel scope, after
   capturing the default worker-thread limiter (``borrowed_tokens > 0`` is the public
   sign that a worker thread is busy, so virtual time must stand still).
2. When the backend finds every task waiting with no deadline, no busy thread and no
   watched I/O, it calls :meth:`Session.declare_deadlock` with a description of the
   waiting tasks, then cancels the root scope from inside the loop; the main task
   unwinds and raises :class:`~loopsim._errors.SimulationDeadlock`.
3. If the loop goes idle again (a task waits in a shielded scope or swallowed the
   cancellation), the backend escalates: it cancels past shields (asyncio: native
   ``Task.cancel()``; trio: clears the shields of the stuck tasks' scopes), and past
   that raises the error from the loop machinery itself. A deadlock never hangs a run.

Limits (``docs/limits.md``) end a run through the same three steps, with their own error:

* the **virtual-time budget** and the **wall-clock range**: a jump past
  :attr:`Session.horizon` is refused (the backend checks one float per jump) and the run
  fails with :class:`~loopsim._errors.VirtualTimeLimitError`;
* the **real-time watchdog** (:mod:`._watchdog`): an alarm handed to the loop from a
  thread fails the run with :class:`~loopsim._errors.RealTimeLimitError`; when the loop
  does not take that alarm within :data:`INTERRUPT_GRACE` (code that never suspends), the
  watchdog interrupts the run's thread between two bytecodes (:mod:`._interrupt`);
* **runaway loops**, counted so that they end the same way on any machine: more than
  :attr:`Session.max_steps` steps at one virtual instant (the backend counts), or more
  than :attr:`Session.max_model_calls` model calls in the run (:meth:`Session.model_call`,
  called by every model-call site), fail it with :class:`~loopsim._errors.RunawayLoopError`.

The same alarm looks for livelocks every :data:`LIVELOCK_CHECK` real seconds: when the
run has not gone idle once and virtual time has not moved since the last look, while
a task holds a cancellation it has not acted on, that task swallows its cancellation and
waits again; the run is declared deadlocked (it would have been, had the task let the
loop idle).

Once a run has failed, every step also arms the alarm for :data:`UNWIND_GRACE` real
seconds: a run that never goes idle while it unwinds (a task that swallows its
cancellation and waits again keeps anyio re-delivering it, a busy loop) is escalated in
real time instead of idle time, so it ends within a few grace periods.
"""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Awaitable, Callable
from math import inf
from pathlib import Path
from types import FrameType
from typing import Generic, Protocol, TypeVar

import anyio
import anyio.to_thread

from loopsim import _trace
from loopsim._errors import (
    RealTimeLimitError,
    RunawayLoopError,
    SimulationDeadlock,
    SimulationError,
    VirtualTimeLimitError,
)

from ._interrupt import Interrupter
from ._watchdog import Alarm, real_time

T = TypeVar("T")

#: Real seconds the loop blocks per poll while a worker thread is busy. Finished threads
#: wake the loop themselves (``call_soon_threadsafe`` / trio's ``run_sync_soon``), so
#: this is only the interval at which "is a thread still busy?" is asked again.
THREAD_WAIT = 0.05
#: Real seconds the loop waits for watched sockets/pipes before it jumps to the next
#: timer (only when the program watches real file descriptors; pure simulations never
#: pay it).
IO_GRACE = 0.01
#: Real seconds per poll while the program waits on real I/O with no timer pending;
#: that is a real wait, not a deadlock.
IO_WAIT = 0.1
#: Real seconds a failed run may take to unwind before the next, harder step.
UNWIND_GRACE = 0.5
#: Real seconds between two looks for a livelock: a run that neither idled nor moved
#: time for that long while a task has a pending cancellation is declared deadlocked.
LIVELOCK_CHECK = 1.0
#: Real seconds past the real-time limit that the loop may leave the watchdog's alarm
#: untaken before the run's thread is interrupted between two bytecodes (a live loop
#: takes an alarm within microseconds, or within THREAD_WAIT while a thread works).
INTERRUPT_GRACE = 0.25
#: Steps one run may take at one virtual instant (``max_steps_per_instant``): event-loop
#: callbacks on asyncio, task steps on trio. The shipped scenarios and the test suite
#: take at most a few thousand (docs/limits.md); a loop that never lets time move
#: reaches it in about a second.
DEFAULT_STEPS_PER_INSTANT = 1_000_000
#: Model calls one run may make in all (``max_model_calls``), on every agent together.
DEFAULT_MODEL_CALLS = 100_000

_VIRTUAL_SETTING = (
    "Change it with virtual_time_limit= (VirtualClock, simulate) or `limits: {virtual_time: "
    "...}` in a scenario file (None / null: no limit)."
)
_WALL_SETTING = (
    "With wall_clock=True virtual time cannot pass the last instant a datetime can show "
    "(9999-12-31 UTC); run with wall_clock=False for longer horizons."
)
_STEPS_SETTING = (
    "Change it with max_steps_per_instant= (VirtualClock, simulate, record) or `limits: "
    "{steps_per_instant: ...}` in a scenario file (None / null: no limit)."
)
_CALLS_SETTING = (
    "Change it with max_model_calls= (VirtualClock, simulate, record) or `limits: "
    "{model_calls: ...}` in a scenario file (None / null: no limit)."
)
_REAL_SETTING = (
    "Change it with real_time_limit= (VirtualClock, simulate) or `limits: {real_time: ...}` "
    "in a scenario file (None / null: no watchdog)."
)

# Frames from these modules are plumbing; a waiting task is described by the innermost
# frame outside them (the user's code) and by what that frame awaits.
_PLUMBING = (
    "anyio",
    "asyncio",
    "contextlib",
    "exceptiongroup",
    "loopsim._clock",
    "outcome",
    "sniffio",
    "trio",
)


class Timekeeper(Protocol):
    """The part of :class:`~loopsim._clock.VirtualClock` a backend drives."""

    _elapsed: float

    @property
    def seed(self) -> int: ...

    def _advance_to(self, when: float) -> None: ...


class Session(Generic[T]):
    """State of one run: the clock, the user's function, the root scope, the failure."""

    def __init__(
        self,
        clock: Timekeeper,
        async_fn: Callable[..., Awaitable[T]],
        args: tuple[object, ...],
        *,
        virtual_time_limit: float | None = None,
        wall_range: float | None = None,
        real_time_limit: float | None = None,
        max_steps_per_instant: int | None = None,
        max_model_calls: int | None = None,
    ) -> None:
        self.clock = clock
        self.async_fn = async_fn
        self.args = args
        self.name = callable_name(async_fn)
        #: The error the run ends with once it failed (deadlock or limit); first one wins.
        self.failure: SimulationError | None = None
        #: How many steps of the escalation were taken (drives it; see the module doc).
        self.deadlock_count = 0
        self.root_scope: anyio.CancelScope | None = None
        self.thread_limiter: anyio.CapacityLimiter | None = None
        #: Backend hook run first thing inside the main task (records the root task...).
        self.on_start: Callable[[], None] = _nothing
        #: Backend hooks: describe the waiting tasks; take escalation step n (in the loop);
        #: hand a callable to the loop from another thread.
        self.describe: Callable[[], list[str]] = list
        self.step: Callable[[int], None] = _ignore_step
        self.call_in_loop: Callable[[Callable[[], None]], object] | None = None
        self.virtual_time_limit = virtual_time_limit
        self.real_time_limit = real_time_limit
        self._wall_range = wall_range
        start = clock._elapsed
        budget = inf if virtual_time_limit is None else start + virtual_time_limit
        #: The latest virtual time the clock may jump to in this run.
        self.horizon = min(budget, inf if wall_range is None else wall_range)
        self.alarm = Alarm(self._alarm_fired)
        #: Backends count the times the run was found idle (a cheap sign of progress).
        self.idle_count = 0
        #: Backend hook: does some task sit on a cancellation it has not acted on?
        self.cancel_pending: Callable[[], bool] = _no
        self._real_deadline: float | None = None
        #: Set by the watchdog thread once the real-time limit has passed: the frozen
        #: wall clock then fails every read by the run's code (a busy wait on it would
        #: never end, as the loop never gets to stop it).
        self.overdue = False
        self._progress: tuple[float, int] = (-1.0, -1)
        #: Bounds of the runaway-loop limits (``sys.maxsize``: none); backends read
        #: :attr:`max_steps` once per run.
        self.steps_limit = max_steps_per_instant
        self.max_steps = sys.maxsize if max_steps_per_instant is None else max_steps_per_instant
        self.calls_limit = max_model_calls
        self.max_model_calls = sys.maxsize if max_model_calls is None else max_model_calls
        #: Model calls so far, the agent of the latest one, the latest loop iteration.
        self.model_calls = 0
        self.calling_agent: str | None = None
        self.loop_at: tuple[str | None, int] | None = None
        #: Interrupts the run's thread when the loop never takes the watchdog's alarm.
        self.interrupter: Interrupter | None = None
        self.backstop = Alarm(self._backstop_fired)
        self._handed = 0  # alarms handed to the loop (watchdog thread)
        self._answered = 0  # ... and taken by it (loop)
        self._backstop_for = 0

    @property
    def deadlock(self) -> SimulationError | None:
        """The recorded failure (kept under its old name for the backends)."""
        return self.failure

    def threads_busy(self) -> bool:
        """True while a worker thread started through the default limiter is running."""
        limiter = self.thread_limiter
        return limiter is not None and limiter.borrowed_tokens > 0

    def fail(self, make_error: Callable[[], SimulationError]) -> int:
        """Record a failure (the first one is kept) and count a step; returns the count.

        Also arms the alarm: if the run has not ended :data:`UNWIND_GRACE` real seconds
        from now, the next step is taken from the watchdog.
        """
        if self.failure is None:
            self.failure = make_error()
        self.deadlock_count += 1
        self.alarm.set(UNWIND_GRACE)
        return self.deadlock_count

    def declare_deadlock(self, describe: Callable[[], list[str]]) -> int:
        """Count a deadlock detection; the first failure is recorded. Returns the count."""
        return self.fail(
            lambda: SimulationDeadlock(
                sorted(describe()), virtual_time=self.clock._elapsed, seed=self.clock.seed
            )
        )

    def refuse_jump(self, when: float) -> int:
        """The next deadline ``when`` is past :attr:`horizon`: fail the run (time stays)."""
        return self.fail(lambda: self._horizon_error(when))

    def _horizon_error(self, when: float) -> SimulationError:
        clock = self.clock
        waiting = sorted(self.describe())
        if self.virtual_time_limit is not None and self.horizon < (self._wall_range or inf):
            return VirtualTimeLimitError(
                f"virtual-time limit reached: a run may move virtual time by "
                f"{self.virtual_time_limit:g} s at most (virtual_time_limit), and the next "
                f"wake-up is at t={when:g}s",
                limit="virtual_time",
                value=self.virtual_time_limit,
                waiting=waiting,
                setting=_VIRTUAL_SETTING,
                virtual_time=clock._elapsed,
                seed=clock.seed,
            )
        return VirtualTimeLimitError(
            f"the virtual wall clock cannot show t={when:g}s: it ends at t={self.horizon:g}s "
            "(datetime's last instant)",
            limit="wall_clock_range",
            value=self.horizon,
            waiting=waiting,
            setting=_WALL_SETTING,
            virtual_time=clock._elapsed,
            seed=clock.seed,
        )

    # -- runaway loops ------------------------------------------------------------------

    def model_call(self, agent: str | None) -> None:
        """Count one model call by ``agent``; past :attr:`max_model_calls` the run fails.

        Raises the run's failure right here, as well as cancelling the run: a loop that
        never suspends would never see the cancellation.
        """
        self.model_calls += 1
        self.calling_agent = agent
        if self.model_calls > self.max_model_calls:
            self._runaway(self._calls_error)

    def loop_iteration(self, loop: str | None, iteration: int) -> None:
        """Note the loop iteration that runs now (named by the runaway errors)."""
        self.loop_at = (loop, iteration)

    def steps_ran_away(self, task: str | None) -> None:
        """The backend counted more than :attr:`max_steps` steps at one instant; ``task``
        describes the task that was stepping (in the loop)."""
        if self.failure is None:
            self.step(self.fail(lambda: self._steps_error(task)))

    def _runaway(self, make_error: Callable[[], SimulationError]) -> None:
        if self.failure is None:
            self.step(self.fail(make_error))
        failure = self.failure
        if failure is not None:
            raise failure

    def _where(self) -> tuple[str, str | None, int | None]:
        loop, iteration = self.loop_at if self.loop_at is not None else (None, None)
        text = f" (loop {loop!r}, iteration {iteration})" if loop is not None else ""
        return text, loop, iteration

    def _calls_error(self) -> SimulationError:
        where, loop, iteration = self._where()
        agent = self.calling_agent
        return RunawayLoopError(
            f"runaway loop: the run made more than {self.max_model_calls} model calls "
            f"(max_model_calls); call {self.model_calls} was by agent {agent!r}{where}",
            limit="model_calls",
            value=self.max_model_calls,
            agent=agent,
            loop=loop,
            iteration=iteration,
            waiting=sorted(self.describe()),
            setting=_CALLS_SETTING,
            virtual_time=self.clock._elapsed,
            seed=self.clock.seed,
        )

    def _steps_error(self, task: str | None) -> SimulationError:
        where, loop, iteration = self._where()
        agent = self.calling_agent
        spinning = f"; stepping: {task}" if task else ""
        called = f"; the last model call was by agent {agent!r}{where}" if agent else where
        return RunawayLoopError(
            f"runaway loop: more than {self.max_steps} steps at virtual time "
            f"t={self.clock._elapsed:g}s without time moving (max_steps_per_instant)"
            f"{spinning}{called}",
            limit="steps_per_instant",
            value=self.max_steps,
            agent=agent,
            loop=loop,
            iteration=iteration,
            task=task,
            waiting=sorted(self.describe()),
            setting=_STEPS_SETTING,
            virtual_time=self.clock._elapsed,
            seed=self.clock.seed,
        )

    # -- the watchdog -------------------------------------------------------------------

    def _alarm_fired(self) -> None:
        # On the watchdog thread: hand the work to the loop (it may have just ended).
        now = real_time()
        deadline = self._real_deadline
        if deadline is not None and now >= deadline:
            self.overdue = True
        call = self.call_in_loop
        if call is not None:
            self._handed += 1
            call(self._on_alarm)
            if self.interrupter is not None and (deadline is not None or self.failure):
                # Should the loop not take it by the deadline and a grace period after
                # it, its thread runs code that never suspends: interrupt that code.
                due = now if self.failure is not None or deadline is None else deadline
                self._backstop_for = self._handed
                self.backstop.set(max(due - now, 0.0) + INTERRUPT_GRACE)

    def _backstop_fired(self) -> None:
        # On the watchdog thread.
        interrupter = self.interrupter
        if interrupter is None or self._answered >= self._backstop_for:
            return  # the loop took the alarm: it is alive and handles the limit itself
        if self.failure is None:
            self.failure = self._stuck_error()
        self.overdue = True
        if interrupter.interrupt():
            self.backstop.set(INTERRUPT_GRACE)  # again, should the code swallow it

    def _stuck_error(self) -> SimulationError:
        limit = self.real_time_limit or 0.0
        clock = self.clock
        where = _running_code(self.interrupter)
        return RealTimeLimitError(
            f"real-time limit reached: the run took more than {limit:g} real seconds "
            f"(real_time_limit) in code that kept the event loop from running ({where}); "
            "loopsim interrupted it there (a busy loop without an await, a model called "
            "in a loop that never suspends, or a blocking call)",
            limit="real_time",
            value=limit,
            waiting=[where],
            setting=_REAL_SETTING,
            virtual_time=clock._elapsed,
            seed=clock.seed,
        )

    def _on_alarm(self) -> None:
        # In the loop: a failed run that did not unwind in time, the real-time limit, or
        # the periodic look for a livelock.
        self._answered = self._handed
        if self.failure is not None:
            self.step(self.fail(self._real_time_error))  # fail() re-arms the alarm
            return
        now = real_time()
        if self._real_deadline is not None and now >= self._real_deadline:
            self.step(self.fail(self._real_time_error))
            return
        progress = (self.clock._elapsed, self.idle_count)
        if progress == self._progress and self.cancel_pending():
            # A whole check interval without one idle moment or one jump, while a task
            # sits on a cancellation: it swallows it and waits again (anyio re-delivers
            # the cancellation on every cycle, so the loop never idles).
            self.step(self.declare_deadlock(self.describe))
            return
        self._progress = progress
        self._arm(now)

    def _arm(self, now: float) -> None:
        delay = LIVELOCK_CHECK
        if self._real_deadline is not None:
            delay = min(delay, max(self._real_deadline - now, 0.0))
        self.alarm.set(delay)

    def _real_time_error(self) -> SimulationError:
        limit = self.real_time_limit
        clock = self.clock
        return RealTimeLimitError(
            f"real-time limit reached: the run took more than {limit:g} real seconds "
            "(real_time_limit), without finishing; a task that never lets the loop idle "
            "(a busy loop, or one that swallows its cancellation) or blocking code keeps "
            "it going",
            limit="real_time",
            value=limit or 0.0,
            waiting=sorted(self.describe()),
            setting=_REAL_SETTING,
            virtual_time=clock._elapsed,
            seed=clock.seed,
        )

    def frozen_clock_error(self) -> SimulationError:
        """The error a read of the frozen clock raises once the run is overdue (recorded as
        the run's failure too, in case the reading code swallows it)."""
        limit = self.real_time_limit or 0.0
        clock = self.clock
        error = RealTimeLimitError(
            f"real-time limit reached: the run took more than {limit:g} real seconds "
            "(real_time_limit) while its code kept reading the frozen virtual clock "
            "(time.perf_counter, time.monotonic or time.time stand still between two "
            "awaits: a busy wait on them never ends; await anyio.sleep to let time move)",
            limit="real_time",
            value=limit,
            waiting=[],
            setting=_REAL_SETTING,
            virtual_time=clock._elapsed,
            seed=clock.seed,
        )
        if self.failure is None:
            self.failure = error
        return error

    def cancel_root(self) -> None:
        """Cancel the user's code; called from inside the loop after a failure."""
        if self.root_scope is not None:
            self.root_scope.cancel()

    async def main(self) -> T:
        """The coroutine the backend runs: the user's function under a root cancel scope."""
        # RunVar-backed: the limiter of *this* loop, read later from outside any task.
        self.thread_limiter = anyio.to_thread.current_default_thread_limiter()
        self.on_start()
        now = real_time()
        if self.real_time_limit is not None:
            self._real_deadline = now + self.real_time_limit
        self._arm(now)
        resources = _trace.current().resources
        resources[_trace.MAIN_DONE] = False
        with anyio.CancelScope() as scope:
            self.root_scope = scope
            # Drop our references before running: a finished run must not stay reachable
            # from the session (it would keep the whole simulation alive as garbage).
            async_fn, args = self.async_fn, self.args
            del self.async_fn, self.args
            try:
                result = await async_fn(*args)
            except BaseException as exc:
                if self.deadlock is None:
                    raise
                if isinstance(exc, anyio.get_cancelled_exc_class()):
                    raise self.deadlock from None
                # Something else broke while the deadlocked tasks unwound: keep it visible.
                raise self.deadlock from exc
            finally:
                self.root_scope = None
                resources[_trace.MAIN_DONE] = True
            if self.deadlock is None:
                return result
        # Reached only when a deadlock was declared and the user's code swallowed the
        # cancellation (or returned anyway): the deadlock is still the outcome.
        raise self._declared()

    def _declared(self) -> SimulationError:
        if self.failure is None:  # pragma: no cover - the root scope is only cancelled on failure
            msg = "root scope cancelled without a failure"
            raise RuntimeError(msg)
        return self.failure


#: Tasks (their coroutines) that a hard abort left behind, kept for the process's life.
#: Collected, each would be closed by the garbage collector, which runs its code again:
#: hostile code that swallows GeneratorExit spins there forever, and the rest reports
#: "unraisable" errors far from the run that explains them. Only hard aborts land here.
_ABANDONED: list[object] = []


def park_abandoned(objects: list[object]) -> None:
    """Keep the abandoned tasks of a hard-aborted run alive (see :data:`_ABANDONED`)."""
    _ABANDONED.append(objects)


def _nothing() -> None:
    return None


def _ignore_step(_count: int) -> None:
    return None


def _no() -> bool:
    return False


def callable_name(fn: object) -> str:
    """``module.qualname`` style name of a callable, for task descriptions."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return str(name) if name else repr(fn)


class _Link:
    """One coroutine (or generator) of an await chain: its frame and qualified name."""

    __slots__ = ("frame", "qualname")

    def __init__(self, frame: FrameType, owner: object) -> None:
        self.frame = frame
        # The coroutine object knows its qualname on every Python; the code object
        # only from 3.11 on (co_qualname).
        self.qualname = str(getattr(owner, "__qualname__", frame.f_code.co_name))


# (frame, awaited) attribute pairs of coroutines, @types.coroutine generators and async
# generators.
_CHAIN_ATTRS = (("cr_frame", "cr_await"), ("gi_frame", "gi_yieldfrom"), ("ag_frame", "ag_await"))


def _await_chain(coro: object) -> tuple[list[_Link], object | None]:
    """The await chain of a coroutine, outermost first, and the final awaited object."""
    links: list[_Link] = []
    current: object | None = coro
    while current is not None:
        for frame_attr, await_attr in _CHAIN_ATTRS:
            if hasattr(current, await_attr):
                frame: FrameType | None = getattr(current, frame_attr)
                inner: object | None = getattr(current, await_attr)
                break
        else:
            return links, current
        if frame is None:  # finished
            return links, None
        links.append(_Link(frame, current))
        current = inner
    return links, None


# Functions in whose frames a task waits for a worker thread (anyio on asyncio, trio).
_THREAD_WAITS = frozenset({"run_sync_in_worker_thread", "to_thread_run_sync"})


def waits_on_thread(coro: object) -> bool:
    """True when the task is inside anyio's or trio's "run in a worker thread".

    The limiter check misses threads started with a custom limiter; this frame check
    catches them before a deadlock is declared (too costly to run before every jump).
    """
    links, _ = _await_chain(coro)
    return any(
        link.frame.f_code.co_name in _THREAD_WAITS
        and _module_of(link.frame).startswith(("anyio.", "trio."))
        for link in links
    )


def _module_of(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _is_plumbing(frame: FrameType) -> bool:
    module = _module_of(frame)
    return any(module == p or module.startswith(p + ".") for p in _PLUMBING)


def describe_task(name: str, coro: object) -> str:
    """One line for a waiting task: where the user's code waits, and on what.

    Example: ``Task 'child-1' at scenario.py:12 in wait_for_reply awaiting Event.wait``.
    """
    links, awaited = _await_chain(coro)
    if not links:
        return f"Task {name!r} (not started or finished)"
    user = [i for i, link in enumerate(links) if not _is_plumbing(link.frame)]
    index = user[-1] if user else len(links) - 1
    frame = links[index].frame
    where = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
    if index + 1 < len(links):
        target = links[index + 1].qualname
    elif awaited is not None:
        target = type(awaited).__name__
    else:
        target = "?"
    return f"Task {name!r} at {where} in {links[index].qualname} awaiting {target}"


def _running_code(interrupter: Interrupter | None) -> str:
    """Where the run's thread is now: its innermost frame, and the innermost frame of the
    program (not the standard library's, not loopsim's plumbing) when that differs."""
    frame = None if interrupter is None else sys._current_frames().get(interrupter.thread)
    if frame is None:
        return "where is unknown"
    innermost = _frame_text(frame)
    while frame is not None and (_is_plumbing(frame) or _is_library(frame)):
        frame = frame.f_back
    if frame is None:
        return f"at {innermost}"
    program = _frame_text(frame)
    return f"at {program}" if program == innermost else f"at {program}, inside {innermost}"


_STDLIB = (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"])


def _is_library(frame: FrameType) -> bool:
    module = _module_of(frame)
    if module.startswith(("loopsim._", "_pytest", "pluggy")):
        return True
    filename = frame.f_code.co_filename
    return filename.startswith(_STDLIB) and "site-packages" not in filename


def _frame_text(frame: FrameType) -> str:
    code = frame.f_code
    name = getattr(code, "co_qualname", code.co_name)
    return f"{Path(code.co_filename).name}:{frame.f_lineno} in {name}"
