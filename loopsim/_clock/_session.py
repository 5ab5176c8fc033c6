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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Generic, Protocol, TypeVar

import anyio
import anyio.to_thread

from loopsim._errors import SimulationDeadlock

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
    """State of one run: the clock, the user's function, the root scope, the deadlock."""

    def __init__(
        self, clock: Timekeeper, async_fn: Callable[..., Awaitable[T]], args: tuple[object, ...]
    ) -> None:
        self.clock = clock
        self.async_fn = async_fn
        self.args = args
        self.name = callable_name(async_fn)
        self.deadlock: SimulationDeadlock | None = None
        #: How many times the run was found deadlocked (drives the escalation).
        self.deadlock_count = 0
        self.root_scope: anyio.CancelScope | None = None
        self.thread_limiter: anyio.CapacityLimiter | None = None
        #: Backend hook run first thing inside the main task (records the root task...).
        self.on_start: Callable[[], None] = _nothing

    def threads_busy(self) -> bool:
        """True while a worker thread started through the default limiter is running."""
        limiter = self.thread_limiter
        return limiter is not None and limiter.borrowed_tokens > 0

    def declare_deadlock(self, describe: Callable[[], list[str]]) -> int:
        """Count a detection; the first one records the error. Returns the count."""
        if self.deadlock is None:
            self.deadlock = SimulationDeadlock(
                sorted(describe()), virtual_time=self.clock._elapsed, seed=self.clock.seed
            )
        self.deadlock_count += 1
        return self.deadlock_count

    def cancel_root(self) -> None:
        """Cancel the user's code; called from inside the loop after a deadlock."""
        if self.root_scope is not None:
            self.root_scope.cancel()

    async def main(self) -> T:
        """The coroutine the backend runs: the user's function under a root cancel scope."""
        # RunVar-backed: the limiter of *this* loop, read later from outside any task.
        self.thread_limiter = anyio.to_thread.current_default_thread_limiter()
        self.on_start()
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
            if self.deadlock is None:
                return result
        # Reached only when a deadlock was declared and the user's code swallowed the
        # cancellation (or returned anyway): the deadlock is still the outcome.
        raise self._declared()

    def _declared(self) -> SimulationDeadlock:
        if self.deadlock is None:  # pragma: no cover - the root scope is only cancelled on deadlock
            msg = "root scope cancelled without a deadlock"
            raise RuntimeError(msg)
        return self.deadlock


def _nothing() -> None:
    return None


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
