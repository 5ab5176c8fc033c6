"""trio backend: a :class:`trio.abc.Clock` that jumps when the run is idle.

Prior art: trio's ``MockClock(autojump_threshold=0)``, which jumps to the next deadline
once the run loop found nothing runnable after a non-blocking I/O poll. It is not used
as is, for two reasons:

* a task waiting for a worker thread counts as blocked, so MockClock jumps while the
  thread still works (its result would arrive "after" later timers);
* with no deadline at all it polls forever: a deadlock spins instead of failing.

Trio asks the clock how long to sleep (``deadline_to_sleep_time``) only when no task is
runnable. This clock answers in two phases: the first time, 0 (so trio polls I/O and
thread wake-ups without blocking); the second time, if no task was scheduled in
between, the run is truly idle, and the clock jumps to the deadline (returning 0 again)
or, with no deadline, declares the deadlock. An instrument reports "a task was
scheduled" to reset the phases.

Threads: "busy" means a token of trio's default thread limiter is borrowed (anyio's
``to_thread`` uses it too); then the clock sleeps for real and time stands still. A
thread run with its own limiter is caught only on the way to a deadlock (a task inside
``to_thread_run_sync`` is never declared deadlocked).

Deadlock: a clock method is not a task and should not cancel scopes itself, so a system
task (the watcher) sleeps on an event; the clock sets it, and the watcher cancels the
root scope from a proper task. Found idle again, the watcher also clears the shields of
the stuck tasks' scopes; a third time, the clock raises from the run loop (trio turns
that into ``TrioInternalError``, unwrapped by :func:`run_trio`, and abandons the tasks).

Order of ties: trio runs each batch of runnable tasks in a random order (its
``_r.random() < 0.5`` reversal), and equal deadlines expire in ``id(cancel_scope)``
order. For determinism, trio's own hook for Hypothesis is used: while a simulation
runs, ``_ALLOW_DETERMINISTIC_SCHEDULING`` is on and ``_r`` is replaced by an object
whose ``shuffle`` sorts the batch by (phase of the wake-up, step in which the task
last ran), i.e. tasks woken together run in the order they went to sleep, as asyncio
runs timers and waiters. Runs that are not simulations keep trio's behaviour.
"""

from __future__ import annotations

import threading
from math import inf
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import trio
import trio.lowlevel
from trio._core import _run as _trio_run  # the scheduler's rng lives here (see module doc)

from loopsim._errors import SimulationError

from ._session import (
    IO_GRACE,
    IO_WAIT,
    THREAD_WAIT,
    Session,
    describe_task,
    park_abandoned,
    waits_on_thread,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

T = TypeVar("T")

# I/O statistics differ per trio I/O backend (epoll, kqueue, Windows IOCP).
_IO_WAITERS = (
    "tasks_waiting_read",
    "tasks_waiting_write",
    "tasks_waiting_overlapped",
    "tasks_waiting",
)
_IO_MONITORS = ("monitors", "completion_key_monitors")
# trio's own run_sync_soon task always waits to read its wake-up socket.
_TRIO_OWN_WAITERS = 1
_FLAG = "_ALLOW_DETERMINISTIC_SCHEDULING"
_WATCHER = "loopsim-deadlock-watcher"
_RNG = "_r"


class _TrioVirtualClock(trio.abc.Clock):
    """Virtual time for one run; jumps to the next deadline when the run is idle."""

    def __init__(self, session: Session[Any]) -> None:
        self._session = session
        self._vclock = session.clock
        self._primed = False
        #: Set by the instrument whenever a task becomes runnable.
        self.progress = False
        self._watcher_wake: trio.Event | None = None
        self._root_task: trio.lowlevel.Task | None = None
        self._trio_root: trio.lowlevel.Task | None = None
        # Ordering state (see module doc).
        self._phase = 0
        self._last_step: dict[trio.lowlevel.Task, int] = {}
        self._keys: dict[trio.lowlevel.Task, tuple[int, int]] = {}
        #: Set by the last escalation step: raised from the run loop at its next batch.
        self._abort: BaseException | None = None
        # Runaway loops: task steps since virtual time last moved (see _Scheduling).
        self.max_steps = session.max_steps
        self.steps = 0
        session.on_start = self._on_start
        session.describe = self._describe_waiting
        session.step = self._step
        session.cancel_pending = self._cancel_pending

    # --- trio.abc.Clock -------------------------------------------------------------

    def start_clock(self) -> None:
        return None

    def current_time(self) -> float:
        return self._vclock._elapsed

    def deadline_to_sleep_time(self, deadline: float) -> float:
        if deadline <= self._vclock._elapsed:
            return 0.0
        if self._session.threads_busy():
            # A worker thread works: wait for it for real; time stands still.
            self._primed = False
            return THREAD_WAIT
        io_pending = _io_pending()
        if not self._primed or self.progress:
            # Phase 1: let trio poll I/O and thread wake-ups without blocking.
            self._primed = True
            self.progress = False
            return IO_GRACE if io_pending else 0.0
        # Phase 2: nothing became runnable since phase 1.
        self._primed = False
        self._session.idle_count += 1
        if deadline != inf:
            if deadline > self._session.horizon:
                self._step(self._session.refuse_jump(deadline))
                self._raise_abort()
                return 0.0
            self._vclock._advance_to(deadline)
            self.steps = 0  # a new instant (runaway loops count per instant)
            return 0.0
        if io_pending:
            return IO_WAIT
        if self._root_task is not None and any(
            waits_on_thread(task.coro) for task in _walk(self._root_task)
        ):
            return THREAD_WAIT  # a thread started with its own limiter
        self._deadlocked()
        return 0.0

    # --- deadlock -------------------------------------------------------------------

    def _on_start(self) -> None:
        self._root_task = trio.lowlevel.current_task()
        self._trio_root = trio.lowlevel.current_root_task()
        self._session.call_in_loop = trio.lowlevel.current_trio_token().run_sync_soon
        self._watcher_wake = trio.Event()
        trio.lowlevel.spawn_system_task(self._watch, name=_WATCHER)

    async def _watch(self) -> None:
        # A system task: trio cancels it when the main task ends.
        while True:
            assert self._watcher_wake is not None  # noqa: S101 - set before this task starts
            await self._watcher_wake.wait()
            self._watcher_wake = trio.Event()
            if self._session.deadlock_count > 1:
                self._drop_shields()
            self._session.cancel_root()

    def _drop_shields(self) -> None:
        """Clear the shields around the stuck tasks, so the root cancellation reaches them.

        trio has no public way to enumerate a task's cancel scopes; this walks its
        private cancel-status chain and does nothing if that chain looks different.
        """
        if self._root_task is None:
            return
        for task in self._tasks():
            status = getattr(task, "_cancel_status", None)
            while status is not None:
                scope = getattr(status, "_scope", None)
                if isinstance(scope, trio.CancelScope) and scope.shield:
                    scope.shield = False
                status = getattr(status, "_parent", None)

    def _deadlocked(self) -> None:
        self._step(self._session.declare_deadlock(self._describe_waiting))
        self._raise_abort()

    def _step(self, count: int) -> None:
        """Escalation step ``count`` of a failed run (see ``_session``); in the run loop."""
        if count <= 2 and self._watcher_wake is not None:
            # 1: cancel the root scope; 2: also drop shields (see _watch).
            self._watcher_wake.set()
            return
        # Nothing unwinds: abort from the run loop. trio wraps the error in
        # TrioInternalError (run_trio unwraps it) and abandons the stuck tasks. Raised
        # by the clock when it is asked (the run is idle), else at the next batch.
        self._abort = self._session._declared()

    def _raise_abort(self) -> None:
        if self._abort is not None:
            raise self._abort

    def _tasks(self) -> list[trio.lowlevel.Task]:
        """The user's tasks: the main task's tree and the system tasks user code spawned
        (background child runs are system tasks); not trio's own nor the watcher."""
        root = self._root_task
        if root is None:
            return []
        tasks = list(_walk(root))
        seen = {id(task) for task in tasks}
        for task in _walk(self._trio_root) if self._trio_root is not None else ():
            if id(task) in seen or task.name.startswith("<") or task.name == _WATCHER:
                continue
            seen.add(id(task))
            tasks.append(task)
        return tasks

    def _cancel_pending(self) -> bool:
        # trio has no public "is this task cancelled?"; read its cancel status, if present.
        return any(
            getattr(getattr(task, "_cancel_status", None), "effectively_cancelled", False)
            for task in self._tasks()
        )

    def spinning(self, task: trio.lowlevel.Task) -> None:
        """More than the limit of steps at one instant; ``task`` just took the last one."""
        name = self._session.name if task is self._root_task else task.name
        self._session.steps_ran_away(describe_task(name, task.coro))

    def _describe_waiting(self) -> list[str]:
        root = self._root_task
        return [
            describe_task(self._session.name if task is root else task.name, task.coro)
            for task in self._tasks()
        ]

    # --- ordering -------------------------------------------------------------------

    def order(self, batch: list[trio.lowlevel.Task]) -> None:
        """Sort a batch of runnable tasks; trio runs it from the end (``batch.pop()``)."""
        if self._abort is not None:
            raise self._abort
        keys = self._keys
        default = (self._phase, self._phase)
        batch.sort(key=lambda task: keys.pop(task, default))
        batch.reverse()


class _Scheduling(trio.abc.Instrument):
    """Feeds the clock's idle detection and tie ordering."""

    def __init__(self, clock: _TrioVirtualClock) -> None:
        self._clock = clock

    def task_scheduled(self, task: trio.lowlevel.Task) -> None:
        clock = self._clock
        clock.progress = True
        phase = clock._phase
        clock._keys[task] = (phase, clock._last_step.get(task, phase))

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        clock = self._clock
        # trio reports a task's last step after task_exited: remembering an exited task
        # would keep it (and its coroutine) alive for the rest of the run.
        if task.coro.cr_frame is not None:
            clock._last_step[task] = clock._phase
        clock._phase += 1
        # Runaway loops: task steps at one virtual instant (the asyncio loop counts its
        # callbacks the same way; the clock starts the count again when it moves time).
        steps = clock.steps + 1
        clock.steps = steps
        if steps > clock.max_steps:
            clock.steps = 0
            clock.spinning(task)

    def after_io_wait(self, timeout: float) -> None:  # noqa: ARG002 - trio's hook signature
        # Deadline expiry comes next: its wake-ups form one phase of their own.
        self._clock._phase += 1

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        self._clock._last_step.pop(task, None)
        self._clock._keys.pop(task, None)


def _walk(task: trio.lowlevel.Task) -> Iterator[trio.lowlevel.Task]:
    yield task
    for nursery in task.child_nurseries:
        for child in nursery.child_tasks:
            yield from _walk(child)


def _io_pending() -> bool:
    """True when a task waits on a real file descriptor (trio's own wake-up fd excluded)."""
    stats = trio.lowlevel.current_statistics().io_statistics
    waiters = sum(getattr(stats, name, 0) for name in _IO_WAITERS)
    monitors = sum(getattr(stats, name, 0) for name in _IO_MONITORS)
    return waiters > _TRIO_OWN_WAITERS or monitors > 0


class _OrderingRandom:
    """Stands in for trio's scheduler rng; orders batches of simulated runs only."""

    def __init__(self, original: Any) -> None:
        self._original = original

    def shuffle(self, batch: list[trio.lowlevel.Task]) -> None:
        clock = trio.lowlevel.current_clock()
        if isinstance(clock, _TrioVirtualClock):
            clock.order(batch)
        else:
            self._original.shuffle(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


_patch_lock = threading.Lock()
_patch_depth = 0
_saved: tuple[object, object] | None = None


def _install_ordering() -> None:
    global _patch_depth, _saved  # noqa: PLW0603 - one process-wide patch, reference-counted
    with _patch_lock:
        if _patch_depth == 0 and hasattr(_trio_run, _FLAG) and hasattr(_trio_run, _RNG):
            original = getattr(_trio_run, _RNG)
            _saved = (getattr(_trio_run, _FLAG), original)
            setattr(_trio_run, _FLAG, True)
            setattr(_trio_run, _RNG, _OrderingRandom(original))
        _patch_depth += 1


def _uninstall_ordering() -> None:
    global _patch_depth, _saved  # noqa: PLW0603 - see _install_ordering
    with _patch_lock:
        _patch_depth -= 1
        if _patch_depth == 0 and _saved is not None:
            flag, original = _saved
            setattr(_trio_run, _FLAG, flag)
            setattr(_trio_run, _RNG, original)
            _saved = None


def run_trio(session: Session[T]) -> T:
    """Run ``session.main`` with trio on a :class:`_TrioVirtualClock` through anyio."""
    clock = _TrioVirtualClock(session)
    _install_ordering()
    try:
        return anyio.run(
            session.main,
            backend="trio",
            backend_options={"clock": clock, "instruments": [_Scheduling(clock)]},
        )
    except trio.TrioInternalError as exc:
        # The hard abort of a failed run, raised from inside the run loop (see _step).
        if not isinstance(exc.__cause__, SimulationError):
            raise
        error = exc.__cause__
    finally:
        _uninstall_ordering()
    # Outside the except block, so that nothing of the dead run stays reachable from the
    # error (its traceback and context hold trio's run loop and every abandoned task).
    error.__traceback__ = None
    error.__context__ = None
    park_abandoned([task.coro for task in clock._tasks()])
    clock._root_task = clock._trio_root = None
    raise error
