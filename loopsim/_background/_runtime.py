"""The live side of a BackgroundAgentsProvider: one runtime per parent session.

A :class:`Runtime` holds the child runs and child sessions of one parent ``session_id``
(never serialized: a restored session has records but no runs). :class:`Index` maps task
ids to the session's records for O(1) lookups while the task list is the same object.
:func:`drain` ends the runs of a released session within its (virtual) time budget.
"""

from __future__ import annotations

import bisect
import logging
import math
from typing import Any

import anyio

from .._agents import FunctionTool
from .._wording import say
from ._spawn import ChildRun, loop_alive

__all__ = ["Index", "Runtime", "drain", "foreign", "normalize", "record_id"]

_logger = logging.getLogger("loopsim.background")


class Index:
    """id → record for one task list object; valid while the list is unchanged by others."""

    __slots__ = ("by_id", "length", "reconciled", "tasks")

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks = tasks
        self.by_id: dict[int, dict[str, Any]] = {record["id"]: record for record in tasks}
        self.length = len(tasks)
        self.reconciled = False

    def valid_for(self, tasks: list[dict[str, Any]]) -> bool:
        return self.tasks is tasks and self.length == len(tasks)

    def append(self, record: dict[str, Any]) -> None:
        self.tasks.append(record)
        self.by_id[record["id"]] = record
        self.length += 1

    def remove(self, record: dict[str, Any]) -> None:
        tasks = self.tasks
        # the oldest task first is the common order (collected as they were started)
        pos = (
            0
            if tasks and tasks[0] is record
            else bisect.bisect_left(tasks, record["id"], key=record_id)
        )
        if not (pos < len(tasks) and tasks[pos] is record):  # list not in id order: search
            pos = next(i for i, candidate in enumerate(tasks) if candidate is record)
        del tasks[pos]
        del self.by_id[record["id"]]
        self.length -= 1


def record_id(record: dict[str, Any]) -> int:
    return int(record["id"])


class Runtime:
    """The live side of one parent session: child runs and child sessions."""

    __slots__ = (
        "child_sessions",
        "closed",
        "finished",
        "in_flight",
        "index",
        "token",
        "tools",
        "waiting",
    )

    def __init__(self, token: object | None) -> None:
        self.token = token
        self.closed = False
        #: runs not yet finalized into the session (running, or ended but not collected);
        #: at most one per task id, so a run that is not here any more (finalized, cleared,
        #: or replaced by ``continue_task``) must not write its outcome into the session
        self.in_flight: dict[int, ChildRun] = {}
        self.child_sessions: dict[int, Any] = {}
        #: runs that ended since the last refresh (appended by the runs themselves)
        self.finished: list[ChildRun] = []
        self.index: Index | None = None
        self.tools: tuple[object, list[FunctionTool]] | None = None
        #: task id -> how many wait-tool calls are blocked on its run right now
        self.waiting: dict[int, int] = {}

    def track(self, task_id: int, run: ChildRun) -> None:
        if self.closed:
            run.cancel()
            msg = say("background.released.track")
            raise RuntimeError(msg)
        self.in_flight[task_id] = run

    def clear(self) -> None:
        self.in_flight.clear()
        self.child_sessions.clear()
        self.finished.clear()
        self.index = None
        self.tools = None


def foreign(runtime: Runtime, token: object | None) -> bool:
    """True when ``runtime``'s runs belong to an event loop other than the running one.

    A simulation that ended is a process that ended: its runs are gone, so their tasks
    read as ``lost`` — in a later simulation, and also when the host inspects the session
    outside any event loop after the run.
    """
    if runtime.token is None:
        return token is not None
    if token is not None:
        return runtime.token is not token
    return not loop_alive(runtime.token)


def normalize(state: dict[str, Any]) -> None:
    if not isinstance(state.get("next_task_id"), int):
        state["next_task_id"] = 1
    if not isinstance(state.get("tasks"), list):
        state["tasks"] = []


async def drain(
    session_id: str,
    pending: list[ChildRun],
    timeout: float | None,  # noqa: ASYNC109 - a drain budget, not a caller timeout
) -> None:
    """Cancel ``pending`` and wait for them, at most ``timeout`` (virtual) seconds."""
    deadline = math.inf if timeout is None else anyio.current_time() + float(timeout)
    for run in pending:
        run.cancel()
    with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
        for run in pending:
            await run.wait()
    left = [run for run in pending if not run.finished]
    if left:
        _logger.warning(
            "release of session %s timed out; abandoning %d background task(s) that did not "
            "stop: %s",
            session_id,
            len(left),
            ", ".join(str(run.task_id) for run in left),
        )
