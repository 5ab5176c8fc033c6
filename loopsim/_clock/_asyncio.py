"""asyncio backend: an event loop whose ``time()`` is virtual and whose idle wait jumps.

Prior art: looptime (a loop whose time is decoupled from the real clock) and trio's
``MockClock(autojump_threshold=0)``. The idea taken from both: the loop never *sleeps*;
when it would block with nothing ready, time moves straight to the next timer.

The loop owns a selector that wraps the real one. ``BaseEventLoop._run_once`` asks the
selector to block only when no callback is ready; the wrapper first polls the real
selector without blocking (so I/O and thread wake-ups that already arrived are handled
before time moves), then decides:

* a worker thread is busy → block for real; virtual time stands still until it reports
  (busy = a token of the default thread limiter is borrowed, or an executor job runs);
* the program watches real sockets/pipes → give them a short real grace period;
* a timer is pending → jump virtual time to exactly that timer's deadline;
* nothing can ever wake the loop → declare a :class:`SimulationDeadlock` (unless a
  task sits in anyio's worker-thread call with its own limiter: then wait for real).

Executor jobs (``asyncio.to_thread``, ``run_in_executor``) are waited for when they are
submitted, up to :data:`HOLD` real seconds: a quick job hands back before the loop goes
on, so jobs run in submission order whatever the threads' speed. A job that asks the
loop for something, or takes longer, runs on as a worker thread (see ``_hold_for``).

Timers due at the same instant fire in the order they were scheduled: CPython orders
its timer heap by deadline only, so ties would follow heap layout; the loop's timer
handles carry a sequence number as a tie-breaker.

When is a timer due? ``BaseEventLoop._run_once`` fires a timer when
``when < time() + clock_resolution``. With a fixed resolution (1e-9 s) that test breaks at
large virtual times: from t = 2**24 s on, ``t + 1e-9 == t`` in floating point, so the
timer at the deadline the clock just jumped to is never due and the loop spins. A
virtual clock has no resolution of its own: this loop's resolution is one unit in the
last place of the current time, so ``time() + resolution`` is the next float and "due"
means exactly ``when <= time()`` at every magnitude (checked up to 1e12 s). A deadline
of ``inf`` (``anyio.sleep_forever``) is no deadline: waiting on it alone is a deadlock.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import heapq
import itertools
import math
import selectors
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping, Sized
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import Context, Token
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from typing_extensions import TypeVarTuple, Unpack

from ._session import (
    IO_GRACE,
    IO_WAIT,
    THREAD_WAIT,
    Session,
    describe_task,
    park_abandoned,
    waits_on_thread,
)
from ._watchdog import real_time

try:  # anyio asks sniffio for the running library when it is installed
    import sniffio
except ImportError:  # pragma: no cover - trio (a dev dependency) brings it
    sniffio = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from _typeshed import FileDescriptorLike

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

#: Real seconds the loop waits for a just-submitted executor job before it goes on
#: without it (see ``_hold_for``): quick jobs (a sync tool) are thereby run in order.
HOLD = 0.05
#: Real seconds between two looks at whether the held job asks the loop for something.
HOLD_POLL = 0.0005

_Ready = list[tuple[selectors.SelectorKey, int]]


class _SequencedTimerHandle(asyncio.TimerHandle):
    """A timer handle ordered by ``(deadline, scheduling order)``."""

    __slots__ = ("_seq",)

    def __init__(
        self,
        when: float,
        callback: Callable[..., object],
        args: tuple[Any, ...],
        loop: asyncio.AbstractEventLoop,
        context: Context | None,
        *,
        seq: int,
    ) -> None:
        super().__init__(when, callback, args, loop, context)
        self._seq = seq

    def _key(self) -> tuple[float, int]:
        return (self.when(), self._seq)

    def __lt__(self, other: asyncio.TimerHandle) -> bool:
        # The timer heap's only comparison, so the hot one: CPython's own slot reads.
        when: float = self._when  # type: ignore[attr-defined]  # TimerHandle's slot
        other_when: float = other._when  # type: ignore[attr-defined]
        if when != other_when:
            return when < other_when
        seq = getattr(other, "_seq", None)  # a foreign handle at the same time: not less
        return seq is not None and self._seq < seq

    def __le__(self, other: asyncio.TimerHandle) -> bool:
        if isinstance(other, _SequencedTimerHandle):
            return self._key() <= other._key()
        return super().__le__(other)

    def __gt__(self, other: asyncio.TimerHandle) -> bool:
        if isinstance(other, _SequencedTimerHandle):
            return self._key() > other._key()
        return super().__gt__(other)

    def __ge__(self, other: asyncio.TimerHandle) -> bool:
        if isinstance(other, _SequencedTimerHandle):
            return self._key() >= other._key()
        return super().__ge__(other)

    # Ordering is refined, equality is CPython's (same deadline, callback and args).
    __hash__ = asyncio.TimerHandle.__hash__


class _IdleAwareSelector(selectors.BaseSelector):
    """The real selector, except that a blocking ``select`` is decided by the loop."""

    def __init__(self) -> None:
        self._real = selectors.DefaultSelector()
        self._fds: set[int] = set()
        self._own_fds: frozenset[int] = frozenset()
        self.on_idle: Callable[[float | None], _Ready] | None = None
        #: Set to make every further ``select`` raise: the hard end of a failed run that
        #: never goes idle (see ``VirtualEventLoop._step``).
        self.abort: BaseException | None = None
        #: Loop cycles since virtual time last moved, and how many make a runaway loop.
        self.steps = 0
        self.max_steps = sys.maxsize
        self.on_runaway: Callable[[], None] = _nothing

    def own(self, fd: int) -> None:
        """``fd`` (the loop's self-pipe) is the loop's own, not the program's I/O."""
        self._own_fds = self._own_fds | {fd}

    @property
    def watches_io(self) -> bool:
        """True when the program itself waits on a real file descriptor."""
        return not self._fds <= self._own_fds

    def register(
        self, fileobj: FileDescriptorLike, events: int, data: Any = None
    ) -> selectors.SelectorKey:
        key = self._real.register(fileobj, events, data)
        self._fds.add(key.fd)
        return key

    def unregister(self, fileobj: FileDescriptorLike) -> selectors.SelectorKey:
        key = self._real.unregister(fileobj)
        self._fds.discard(key.fd)
        return key

    def modify(
        self, fileobj: FileDescriptorLike, events: int, data: Any = None
    ) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def get_map(self) -> Mapping[FileDescriptorLike, selectors.SelectorKey]:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()

    def wait(self, timeout: float) -> _Ready:
        """A real, blocking select."""
        return self._real.select(timeout)

    def select(self, timeout: float | None = None) -> _Ready:
        if self.abort is not None:
            raise self.abort
        # Whatever already arrived (I/O, a thread's call_soon_threadsafe wake-up) is
        # handled before virtual time may move.
        ready = self._real.select(0) if self._fds else []  # nothing registered: no syscall
        if ready or (timeout is not None and timeout <= 0):
            # The loop has work at this instant: one more cycle without time moving. A
            # program that never lets time move (``while True: await asyncio.sleep(0)``)
            # is a runaway loop after max_steps cycles, on any machine. Counted here,
            # where each cycle already calls in, to keep the hot path free of a frame.
            steps = self.steps + 1
            self.steps = steps
            if steps > self.max_steps:
                self.steps = 0  # one report per limit's worth of cycles
                self.on_runaway()
            return ready
        if self.on_idle is None:
            return self._real.select(timeout)
        return self.on_idle(timeout)


def _hold_for(job: Future[Any], ready: Sized) -> None:
    """Let a just-submitted executor job finish before the loop goes on, if it is quick.

    A job that ends within :data:`HOLD` real seconds hands its result back at one fixed
    point (its wake-up is queued while the loop waits here, after everything already
    ready), so the order of a run never depends on how fast threads are: jobs run one
    after another, in submission order, as if inline. A job that asks the loop for
    something (``call_soon_threadsafe``, ``run_coroutine_threadsafe(...).result()``: the
    ready queue grows) or takes longer is left to run as a worker thread: the loop goes
    on at once, with virtual time held still until the job reports, as before.
    """
    finished = threading.Event()
    job.add_done_callback(lambda _job: finished.set())  # after wrap_future's own hand-back
    asked = len(ready)
    deadline = real_time() + HOLD
    while not finished.wait(HOLD_POLL):
        if len(ready) != asked or real_time() >= deadline:
            return


class VirtualEventLoop(asyncio.SelectorEventLoop):
    """A selector event loop on the virtual clock of one :class:`Session`.

    Built by :func:`run_asyncio`, used for one run and closed by it: it is never installed
    as the policy's loop.
    """

    def __init__(self, session: Session[Any]) -> None:
        self._idle_selector = _IdleAwareSelector()
        super().__init__(self._idle_selector)
        self._idle_selector.on_idle = self._on_idle
        self._session = session
        self._vclock = session.clock
        self._timer_seq = itertools.count()
        self._executor_jobs = 0
        self._root_task: asyncio.Task[Any] | None = None
        session.on_start = self._on_start
        session.describe = self._describe_waiting
        session.step = self._step
        session.cancel_pending = self._cancel_pending
        # One ulp of the current virtual time: "due" means when <= time() (module doc).
        # BaseEventLoop.__init__ stored the real monotonic clock's resolution; not ours.
        self._clock_resolution = math.ulp(self._vclock._elapsed)
        # Runaway loops: the selector counts the loop's cycles at one instant (see
        # _IdleAwareSelector.select; _on_idle starts the count again when time moves).
        self._idle_selector.max_steps = session.max_steps
        self._idle_selector.on_runaway = self._ran_away

    def _ran_away(self) -> None:
        self._session.steps_ran_away(self._stepping())

    def _stepping(self) -> str | None:
        """The first task about to take a step (the spinning one), described."""
        for handle in self._ready:  # type: ignore[attr-defined]  # CPython's ready queue
            task = getattr(getattr(handle, "_callback", None), "__self__", None)
            if isinstance(task, asyncio.Task) and not task.done():
                name = self._session.name if task is self._root_task else task.get_name()
                return describe_task(name, task.get_coro())
        return None

    # -- the self-pipe, made when first needed --------------------------------------------
    #
    # BaseSelectorEventLoop makes a socket pair in __init__ so that other threads
    # (call_soon_threadsafe) and signals can wake a loop blocked in select; making and
    # closing it costs more than a short simulation's whole loop. This loop blocks for real
    # only in _block (a busy thread, watched I/O) and for signal handlers, so the pair is
    # made there. A thread's call_soon_threadsafe without the pair still lands in the ready
    # queue, which the loop reads before it could block (and again once the pair exists).

    def _make_self_pipe(self) -> None:
        self._ssock: socket.socket | None = None
        self._csock: socket.socket | None = None

    def _open_self_pipe(self) -> None:
        super()._make_self_pipe()  # type: ignore[misc]  # CPython's private maker
        if self._ssock is not None:
            self._idle_selector.own(self._ssock.fileno())

    def _close_self_pipe(self) -> None:
        if self._ssock is not None:
            super()._close_self_pipe()  # type: ignore[misc]  # CPython's private closer

    def add_signal_handler(
        self, sig: int, callback: Callable[[Unpack[Ts]], object], *args: Unpack[Ts]
    ) -> None:
        if self._csock is None and not self.is_closed():
            self._open_self_pipe()  # signals wake the loop through the pair
        super().add_signal_handler(sig, callback, *args)

    def _block(self, timeout: float) -> _Ready:
        """A real, blocking select (the self-pipe exists from here on)."""
        if self._csock is None:
            self._open_self_pipe()
            if self._ready:  # type: ignore[attr-defined]  # a thread called in before the pair
                return []
        return self._idle_selector.wait(timeout)

    def time(self) -> float:
        # Virtual seconds since the clock's start: small numbers, so sub-microsecond
        # deadlines stay exact (looptime's advice: never start at an epoch-sized value).
        return self._vclock._elapsed

    def call_at(
        self,
        when: float,
        callback: Callable[[Unpack[Ts]], object],
        *args: Unpack[Ts],
        context: Context | None = None,
    ) -> asyncio.TimerHandle:
        # Same contract as BaseEventLoop.call_at; only the handle type differs, so that
        # equal deadlines fire in scheduling order.
        if self.is_closed():
            msg = "Event loop is closed"
            raise RuntimeError(msg)
        if self.get_debug():
            self._check_thread()  # type: ignore[attr-defined]  # asyncio's debug-mode check
        timer = _SequencedTimerHandle(
            when, callback, args, self, context, seq=next(self._timer_seq)
        )
        heapq.heappush(self._timer_heap(), timer)
        timer._scheduled = True  # type: ignore[attr-defined]  # TimerHandle slot, set as CPython does
        return timer

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[Unpack[Ts]], T], *args: Unpack[Ts]
    ) -> asyncio.Future[T]:
        # asyncio.to_thread and getaddrinfo end up here: while such a job runs, virtual
        # time must not move (the job's result comes "instantly" in virtual time). The
        # job runs in a copy of the caller's context (as asyncio.to_thread's does), so it
        # is seen as this simulation's code (its virtual wall clock, current_clock()).
        self._check_closed()  # type: ignore[attr-defined]  # BaseEventLoop's own check
        if executor is None:
            executor = self._default_pool()
        context = contextvars.copy_context()
        job: Future[T] = executor.submit(functools.partial(context.run, func, *args))
        future: asyncio.Future[T] = asyncio.wrap_future(job, loop=self)
        self._executor_jobs += 1
        future.add_done_callback(self._executor_job_done)
        _hold_for(job, self._ready)  # type: ignore[attr-defined]  # CPython's ready queue
        return future

    def _default_pool(self) -> Executor:
        # BaseEventLoop.run_in_executor's lazily made default executor, made the same way.
        executor: Executor | None = self._default_executor  # type: ignore[has-type]  # CPython's slot, untyped
        self._check_default_executor()  # type: ignore[attr-defined]  # refuses after shutdown
        if executor is None:
            executor = ThreadPoolExecutor(thread_name_prefix="asyncio")
            self._default_executor = executor
        return executor

    def _executor_job_done(self, _future: asyncio.Future[Any]) -> None:
        self._executor_jobs -= 1

    async def shutdown_default_executor(self, *args: Any, **kwargs: Any) -> None:
        # The runner joins the default executor from a helper thread at the end of a
        # run; count it as a busy thread so the idle loop waits for it for real.
        self._executor_jobs += 1
        try:
            await super().shutdown_default_executor(*args, **kwargs)
        finally:
            self._executor_jobs -= 1

    def _timer_heap(self) -> list[asyncio.TimerHandle]:
        heap: list[asyncio.TimerHandle] = self._scheduled  # type: ignore[attr-defined]  # CPython's timer heap
        return heap

    def _on_start(self) -> None:
        self._root_task = asyncio.current_task()
        self._session.call_in_loop = self.call_soon_threadsafe

    def _threads_busy(self) -> bool:
        return self._executor_jobs > 0 or self._session.threads_busy()

    def _on_idle(self, timeout: float | None) -> _Ready:
        """The loop would block for ``timeout`` seconds (None: no timer at all)."""
        self._session.idle_count += 1
        if self._ready:  # type: ignore[attr-defined]  # a thread-safe callback slipped in
            return []
        if self._threads_busy():
            return self._block(THREAD_WAIT)
        # _run_once dropped cancelled timers from the head before computing `timeout`,
        # so the head is the next live deadline; jump to it exactly (now + timeout can
        # differ from it in the last bit).
        head = math.inf if timeout is None else self._timer_heap()[0].when()
        if self._idle_selector.watches_io:
            ready = self._block(IO_GRACE if head < math.inf else IO_WAIT)
            if ready or not head < math.inf:
                return ready
        if not head < math.inf:  # no timer, or only timers at inf: nothing will fire
            if any(waits_on_thread(task.get_coro()) for task in asyncio.all_tasks(self)):
                return self._block(THREAD_WAIT)  # a thread with its own limiter
            self._step(self._session.declare_deadlock(self._describe_waiting))
            return []
        if head > self._session.horizon:
            self._step(self._session.refuse_jump(head))
            return []
        self._vclock._advance_to(head)
        self._clock_resolution = math.ulp(self._vclock._elapsed)
        self._idle_selector.steps = 0  # a new instant
        return []

    def _step(self, count: int) -> None:
        """Escalation step ``count`` of a failed run (see ``_session``); in the loop."""
        session = self._session
        if count == 1:
            # Cancel the user's code from a loop callback, as anyio's own timeouts do.
            self.call_soon(session.cancel_root)
        elif count == 2:
            # Still running: a task waits in a shielded scope (or swallowed the
            # cancellation). Native cancellation goes through anyio's shields.
            self.call_soon(self._cancel_all_tasks)
        else:
            # Nothing unwinds: abort the run from the loop itself, at its next select.
            self._idle_selector.abort = session._declared()

    def _cancel_pending(self) -> bool:
        # Task.cancelling() counts cancel requests not yet answered by uncancel() (3.11+).
        return any(getattr(task, "cancelling", _never)() for task in asyncio.all_tasks(self))

    def _cancel_all_tasks(self) -> None:
        for task in asyncio.all_tasks(self):
            task.cancel()

    def _describe_waiting(self) -> list[str]:
        lines = []
        for task in asyncio.all_tasks(self):
            if task.done():
                continue
            name = self._session.name if task is self._root_task else task.get_name()
            lines.append(describe_task(name, task.get_coro()))
        return lines


def _never() -> int:
    return 0


def run_asyncio(session: Session[T]) -> T:
    """Run ``session.main`` on a fresh :class:`VirtualEventLoop` and close it.

    What ``anyio.run`` (through ``asyncio.Runner``) does for a run, minus the parts a
    simulation has no use for, which together cost about as much as a short simulation:
    clean-up passes of the loop with nothing to clean, and a Ctrl-C handler whose removal
    formats the main task's repr. The main task runs with the backend's name set for
    sniffio. A first Ctrl-C cancels it (the program unwinds, then ``KeyboardInterrupt``
    is raised here), a second one raises at once, as ``asyncio.run`` does. Afterwards
    tasks left behind are cancelled and awaited, async generators finalized and the
    default executor joined. The loop is never set as the policy's current loop.
    """
    if asyncio._get_running_loop() is not None:  # the low-level check loops use
        msg = (
            "a simulation cannot start inside a running event loop (it runs its own "
            "loop): call VirtualClock.run / simulate from synchronous code"
        )
        raise RuntimeError(msg)
    loop = VirtualEventLoop(session)
    token = _set_library()
    task = loop.create_task(session.main())
    interrupts = _Interrupts(loop, task)
    installed = interrupts.install()
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if interrupts.count:
            raise KeyboardInterrupt from None
        raise
    finally:
        if installed:
            interrupts.uninstall()
        if task.done() and not task.cancelled():
            task.exception()  # raised above already: not "never retrieved"
        try:
            if loop._idle_selector.abort is None:
                _finish(loop)
            else:
                # A hard abort leaves tasks behind that cannot unwind: keep them from
                # the garbage collector (see park_abandoned).
                park_abandoned(list(asyncio.all_tasks(loop)))
        finally:
            _reset_library(token)
            loop.close()


class _Interrupts:
    """The SIGINT handler of a run in the main thread (``asyncio.Runner``'s behaviour)."""

    __slots__ = ("count", "loop", "task")

    def __init__(self, loop: VirtualEventLoop, task: asyncio.Task[Any]) -> None:
        self.loop = loop
        self.task = task
        self.count = 0

    def __repr__(self) -> str:  # signal.getsignal formats it: keep it cheap
        return "<loopsim Ctrl-C handler>"

    def __call__(self, _signum: int, _frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1 and not self.task.done():
            self.task.cancel()
            self.loop.call_soon_threadsafe(_nothing)  # wakes a loop blocked in select
            return
        raise KeyboardInterrupt

    def install(self) -> bool:
        """Take over Ctrl-C, if this is the main thread and nobody else has it."""
        if threading.current_thread() is not threading.main_thread():
            return False
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return False
        try:
            signal.signal(signal.SIGINT, self)
        except ValueError:  # an embedded interpreter without signals
            return False
        return True

    def uninstall(self) -> None:
        if signal.getsignal(signal.SIGINT) is self:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _nothing() -> None:
    return None


def _finish(loop: VirtualEventLoop) -> None:
    """``asyncio.Runner.close``'s clean-up, each step only when there is something to do."""
    left = list(asyncio.all_tasks(loop))
    if left:
        for task in left:
            task.cancel()
        outcomes = loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        for task, outcome in zip(left, outcomes, strict=True):
            if isinstance(outcome, BaseException) and not task.cancelled():
                loop.call_exception_handler(
                    {
                        "message": "unhandled exception in a task left running at the end",
                        "exception": outcome,
                        "task": task,
                    }
                )
    if loop._asyncgens:  # type: ignore[attr-defined]  # BaseEventLoop's live async generators
        loop.run_until_complete(loop.shutdown_asyncgens())
    if loop._default_executor is not None:
        loop.run_until_complete(loop.shutdown_default_executor())


def _set_library() -> Token[str | None] | None:
    # anyio.run tells sniffio (which anyio asks on every call) the backend's name.
    return None if sniffio is None else sniffio.current_async_library_cvar.set("asyncio")


def _reset_library(token: Token[str | None] | None) -> None:
    if sniffio is not None and token is not None:
        sniffio.current_async_library_cvar.reset(token)
