"""Detached child runs: started by a tool call, outliving it, cancellable and awaitable.

anyio has no "spawn and forget": a task group ties its children to the block that opened
it, but a background task must outlive the tool call (and the parent run) that started
it. So each child run is a native task of the running backend — ``loop.create_task`` on
asyncio (as upstream's ``asyncio.create_task``), a *system task* on trio (it lives until
the run ends and is cancelled then, the way ``asyncio.run`` cancels leftover tasks).
The wrapper never lets an ``Exception`` out (trio turns an exception escaping a system
task into ``TrioInternalError``; asyncio would log "exception was never retrieved"): the
outcome is recorded on the :class:`ChildRun` instead. Cancellation goes through an anyio
``CancelScope`` entered inside the child, so it behaves the same on both backends, even
when requested before the child first ran.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol, cast

import anyio
import anyio.lowlevel

from .._agents import SupportsAgentRun
from .._wording import WORDING
from ._task import BackgroundTaskStatus

__all__ = ["CANCELED_ERROR_TEXT", "ChildRun", "loop_alive", "loop_token", "settle"]

#: Error text of a task whose child run was cancelled (upstream's wording).
CANCELED_ERROR_TEXT = WORDING["background.canceled"]

#: Scheduler rounds a waiter yields after waking, so that children finishing at the same
#: virtual instant all land before it picks a winner (see ``settle``).
SETTLE_ROUNDS = 3


def loop_token() -> object | None:
    """The running event loop (asyncio) or trio token, or None outside any event loop.

    A run belongs to the event loop that started it; a runtime from another loop holds
    handles that can never be awaited again (a simulation that ended is a process that
    ended).
    """
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")
    if trio is None:
        return None
    try:
        token: object = trio.lowlevel.current_trio_token()
    except RuntimeError:
        return None
    return token


def loop_alive(token: object) -> bool:
    """True while the event loop behind a :func:`loop_token` still runs (or may run)."""
    if isinstance(token, asyncio.AbstractEventLoop):
        return not token.is_closed()
    trio = sys.modules.get("trio")
    if trio is None:  # pragma: no cover - a trio token implies trio is imported
        return False
    try:
        token.run_sync_soon(_nothing)  # type: ignore[attr-defined] # a trio.lowlevel.TrioToken
    except trio.RunFinishedError:
        return False
    return True


def _nothing() -> None:
    return None


async def settle(rounds: int = SETTLE_ROUNDS) -> None:
    """Yield to the scheduler a few times without letting (virtual) time pass.

    Children whose timers expire at the same virtual instant are woken together but run
    one after the other; a waiter woken by the first of them yields here so the others
    finish too, and its choice (the first *requested* finished task) does not depend on
    which of them the scheduler happened to run first.
    """
    for _ in range(rounds):
        await anyio.lowlevel.checkpoint()


class _Scope(Protocol):
    """What a run needs of a cancel scope (anyio's on asyncio, trio's own on trio)."""

    def cancel(self) -> None: ...
    def __enter__(self) -> object: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> bool | None: ...


class _NotStarted:
    """The scope of a run that was never started: cancelling it is a no-op."""

    def cancel(self) -> None:
        return None

    def __enter__(self) -> object:  # pragma: no cover - a run always starts before _main
        msg = "ChildRun.start() was not called"
        raise RuntimeError(msg)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> None:  # pragma: no cover - see __enter__
        return None


_NOT_STARTED = _NotStarted()


class ChildRun:
    """One run of a child agent for a background task.

    While it runs, the run holds its agent, input, child session, native task and cancel
    scope; when it ends it drops all of them (and its listeners), keeping only the
    outcome, so a finished run is a handful of slots and nothing the cyclic garbage
    collector has to look at. A run never refers to itself through a closure or a bound
    method, so it dies by reference counting as soon as the provider forgets it.

    Attributes:
        task_id: the parent-session task id this run belongs to.
        agent_name: the child agent's name (for labels and logs).
        status: ``running`` until the run ends, then ``completed`` or ``failed``.
        result_text: the child's response text (completed runs).
        error_text: ``str(exception)`` of a failed run, or :data:`CANCELED_ERROR_TEXT`.
        cancelled: True when the run ended by cancellation.
    """

    __slots__ = (
        "_agent",
        "_done",
        "_finished",
        "_input",
        "_keepalive",
        "_listeners",
        "_native",
        "_report",
        "_scope",
        "_session",
        "agent_name",
        "cancelled",
        "error_text",
        "result_text",
        "status",
        "task_id",
    )

    def __init__(
        self,
        task_id: int,
        agent: SupportsAgentRun,
        text: str,
        session: Any,
        done: list[ChildRun],
        *,
        report: Callable[[ChildRun], None] | None = None,
    ) -> None:
        """Prepare (not start) a run of ``agent.run(text, session=session)``.

        ``done`` is the list the run appends itself to when it ends; ``report`` is
        called with the run at the instant it ends (before anyone is woken).
        """
        self.task_id = task_id
        self.agent_name = agent.name
        self.status = BackgroundTaskStatus.RUNNING
        self.result_text: str | None = None
        self.error_text: str | None = None
        self.cancelled = False
        self._agent: SupportsAgentRun | None = agent
        self._input = text
        self._session: Any = session
        self._done: list[ChildRun] | None = done
        self._finished = False
        self._scope: _Scope = _NOT_STARTED
        self._listeners: list[anyio.Event] | None = None
        self._native: object = None
        self._keepalive: set[ChildRun] | None = None
        self._report = report

    @property
    def label(self) -> str:
        """The run's task name: ``background task <id> (<agent>)``."""
        return f"background task {self.task_id} ({self.agent_name})"

    def __repr__(self) -> str:
        return (
            f"ChildRun(task_id={self.task_id}, label={self.label!r}, status={self.status.value!r})"
        )

    @property
    def finished(self) -> bool:
        """True once the run has ended (in any way)."""
        return self._finished

    def start(self, keepalive: set[ChildRun]) -> None:
        """Start the run as a detached task of the current backend.

        ``keepalive`` holds a strong reference until the run ends (asyncio keeps only weak
        references to tasks).
        """
        keepalive.add(self)
        self._keepalive = keepalive
        token = loop_token()
        if isinstance(token, asyncio.AbstractEventLoop):
            self._scope = anyio.CancelScope()
            self._native = token.create_task(self._main(), name=self.label)
        else:
            import trio  # noqa: PLC0415 - only needed (and only importable) on trio

            # trio's own scope: same semantics as anyio's, without the wrapper's cost
            self._scope = trio.CancelScope()
            self._native = trio.lowlevel.spawn_system_task(
                self._main, name=self.label, context=contextvars.copy_context()
            )

    def cancel(self) -> None:
        """Ask the run to stop; it ends ``failed`` with :data:`CANCELED_ERROR_TEXT`.

        A no-op once the run has ended.
        """
        self._scope.cancel()

    async def wait(self) -> None:
        """Wait until the run has ended."""
        if not self._finished:
            event = anyio.Event()
            self.add_listener(event)
            try:
                await event.wait()
            finally:
                self.remove_listener(event)

    def add_listener(self, event: anyio.Event) -> None:
        """Set ``event`` when the run ends (at once if it already has)."""
        if self._finished:
            event.set()
        elif self._listeners is None:
            self._listeners = [event]
        else:
            self._listeners.append(event)

    def remove_listener(self, event: anyio.Event) -> None:
        """Forget a listener added with :meth:`add_listener`."""
        listeners = self._listeners
        if listeners is not None and event in listeners:
            listeners.remove(event)

    async def _main(self) -> None:
        outcome: BackgroundTaskStatus | None = None
        try:
            with self._scope:
                agent = cast("SupportsAgentRun", self._agent)  # set until the run ends
                response = await agent.run(self._input, session=self._session)
                del agent
                text = getattr(response, "text", None)
                self.result_text = text if isinstance(text, str) else str(response)
                outcome = BackgroundTaskStatus.COMPLETED
        except Exception as exc:  # noqa: BLE001 - a child's failure is its task's result
            self.error_text = str(exc)
            outcome = BackgroundTaskStatus.FAILED
        finally:
            if outcome is None:  # our scope was cancelled, or the whole run is ending
                self.cancelled = True
                self.error_text = CANCELED_ERROR_TEXT
                outcome = BackgroundTaskStatus.FAILED
            self.status = outcome
            report, self._report = self._report, None
            if report is not None:
                report(self)
            self._finish()

    def _finish(self) -> None:
        """Record the end: drop every runtime handle, wake listeners, report to ``done``."""
        self._finished = True
        self._agent = self._session = self._native = None
        self._input = ""
        self._scope = _NOT_STARTED
        listeners, self._listeners = self._listeners, None
        if listeners is not None:
            for listener in listeners:
                listener.set()
        keepalive, self._keepalive = self._keepalive, None
        if keepalive is not None:
            keepalive.discard(self)
        done, self._done = self._done, None
        if done is not None:
            done.append(self)
