"""BackgroundAgentsProvider: delegate work to named child agents through six tools.

Where things live (as upstream's Python provider):

* ``session.state[source_id]`` holds the serializable part, ``{"next_task_id": n,
  "tasks": [record, ...]}`` with records in id order (see :class:`BackgroundTaskInfo`).
* The live part — running child tasks and child sessions — lives on the provider, in one
  *runtime* per parent ``session_id``. It never enters the session, so a serialized
  session restored into a new provider (a simulated process restart) has records but no
  handles: its ``running`` tasks become ``lost`` at the next refresh.

Cost: every operation is O(1) (or O(k) in its own arguments) thanks to a per-runtime index
(id → record) and a queue of finished runs; a full scan of the task list happens only when
the list is new to the runtime (first use, restart, restore, release), and once per
parent run for the status message. Clearing a task deletes its record from the list with
a bisect and one ``del`` (a C memmove). The index trusts that only the provider edits the
task list; a replaced state dict or list (a restore, a fresh-context reset) is noticed
and costs one rebuild.

Status changes are reported through the trace seam as ``task_status`` events (status
``running``, ``completed``, ``failed``, ``lost``, or ``cleared`` when a record is removed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any

import anyio
from pydantic import BeforeValidator

from .. import _trace
from .._agents import (
    AgentSession,
    ContextProvider,
    FunctionTool,
    SessionContext,
    SupportsAgentRun,
)
from .._messages import Message
from .._wording import WORDING, say
from ._runtime import Index, Runtime, drain, foreign, normalize, record_id
from ._spawn import ChildRun, loop_token, settle
from ._task import BackgroundTaskInfo, BackgroundTaskStatus
from ._ties import break_tie

__all__ = [
    "BACKGROUND_AGENTS_PLACEHOLDER",
    "DEFAULT_BACKGROUND_AGENTS_INSTRUCTIONS",
    "DEFAULT_BACKGROUND_AGENTS_SOURCE_ID",
    "DEFAULT_BACKGROUND_AGENTS_WAIT_TIMEOUT_SECONDS",
    "BackgroundAgentsProvider",
]

_logger = logging.getLogger("loopsim.background")

DEFAULT_BACKGROUND_AGENTS_SOURCE_ID = "background_agents"
DEFAULT_BACKGROUND_AGENTS_WAIT_TIMEOUT_SECONDS = 300
BACKGROUND_AGENTS_PLACEHOLDER = "{background_agents}"

#: Our own wording (``WORDING["background.instructions"]``); the structure (heading, one
#: sentence, four bullets, the agent list last) follows upstream's default.
DEFAULT_BACKGROUND_AGENTS_INSTRUCTIONS = WORDING["background.instructions"]

_RUNNING = BackgroundTaskStatus.RUNNING.value
_LOST = BackgroundTaskStatus.LOST.value
_STATUS_HEADING = WORDING["background.status_heading"]


def _reject_bool(value: object) -> object:
    if isinstance(value, bool):
        msg = "a task id is an integer, not a boolean"
        raise ValueError(msg)  # noqa: TRY004 - pydantic turns ValueError into a validation error
    return value


#: An integer task id as the tools accept it (``"3"`` and ``3.0`` pass, ``True`` does not).
TaskId = Annotated[int, BeforeValidator(_reject_bool)]


class BackgroundAgentsProvider(ContextProvider):
    """Lets a parent agent delegate tasks to named child agents that run concurrently.

    On every parent run it adds instructions, six tools and (when tasks exist) a
    ``### Current background tasks`` message. Each task runs its child agent in a
    dedicated child session, concurrently with the parent and on whatever clock runs
    (virtual in a simulation). Results come back as text.

    Args:
        agents: the child agents; at least one, names non-empty and unique ignoring case.
        instructions: replaces the default instructions; every ``{background_agents}`` in
            it becomes the list of agents (``""`` is honoured).
        wait_timeout_seconds: how long one ``background_agents_wait_for_first_completion``
            call waits at most (a positive ``int``, default 300). The model cannot change it.
        source_id: the key of this provider's state in ``session.state``.

    Raises:
        ValueError: for an empty agent list, a blank or duplicate name, or a wait timeout
            that is not a positive integer (``bool`` and ``float`` included).

    Example:
        >>> import loopsim
        >>> writer = loopsim.Agent(loopsim.ScriptedChatClient([]), name="writer")
        >>> provider = loopsim.BackgroundAgentsProvider([writer], wait_timeout_seconds=30)
        >>> provider.instructions.splitlines()[-1]
        '- writer'
    """

    def __init__(
        self,
        agents: Sequence[SupportsAgentRun],
        *,
        instructions: str | None = None,
        wait_timeout_seconds: int = DEFAULT_BACKGROUND_AGENTS_WAIT_TIMEOUT_SECONDS,
        source_id: str = DEFAULT_BACKGROUND_AGENTS_SOURCE_ID,
    ) -> None:
        super().__init__(source_id)
        agent_list = list(agents) if agents else []
        if not agent_list:
            msg = "At least one background agent must be provided."
            raise ValueError(msg)
        by_key: dict[str, SupportsAgentRun] = {}
        for agent in agent_list:
            name = getattr(agent, "name", None)
            if not isinstance(name, str) or not name.strip():
                msg = (
                    f"All background agents must have a non-empty name; got {name!r} for {agent!r}."
                )
                raise ValueError(msg)
            key = name.lower()
            if key in by_key:
                msg = (
                    f"Duplicate background agent name: {name!r}. Background agent names must "
                    "be unique (case-insensitive)."
                )
                raise ValueError(msg)
            by_key[key] = agent
        if (
            not isinstance(wait_timeout_seconds, int)
            or isinstance(wait_timeout_seconds, bool)
            or wait_timeout_seconds <= 0
        ):
            msg = f"wait_timeout_seconds must be a positive integer, got {wait_timeout_seconds!r}"
            raise ValueError(msg)
        self._agents = by_key
        self._wait_timeout_seconds = wait_timeout_seconds
        template = (
            instructions if instructions is not None else DEFAULT_BACKGROUND_AGENTS_INSTRUCTIONS
        )
        self.instructions = template.replace(BACKGROUND_AGENTS_PLACEHOLDER, self._agent_list())
        self._runtimes: dict[str, Runtime] = {}
        self._keepalive: set[ChildRun] = set()

    def __repr__(self) -> str:
        names = ", ".join(str(a.name) for a in self._agents.values())
        return f"BackgroundAgentsProvider([{names}], source_id={self.source_id!r})"

    @property
    def agents(self) -> tuple[SupportsAgentRun, ...]:
        """The child agents, in registration order."""
        return tuple(self._agents.values())

    @property
    def wait_timeout_seconds(self) -> int:
        """The longest one wait-tool call waits, in (virtual) seconds."""
        return self._wait_timeout_seconds

    def _agent_list(self) -> str:
        lines = [WORDING["background.agent_list"]]
        for agent in self._agents.values():
            line = f"- {agent.name}"
            if agent.description:
                line += f": {agent.description}"
            lines.append(line)
        return "\n".join(lines)

    # -- host API -----------------------------------------------------------------------

    async def before_run(
        self,
        *,
        agent: Any,  # noqa: ARG002 - hook signature
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Add the instructions, the six tools and the current task list to the run."""
        runtime = self._runtime(session)
        state = self._state(session)  # the hook's ``state`` is this same dict, normalized here
        context.extend_instructions(self.source_id, [self.instructions])
        context.extend_tools(self.source_id, self._tools(session, runtime))
        index = self._refresh(session, runtime, state)
        if index.tasks:
            lines = [_STATUS_HEADING]
            lines.extend(
                f"- Task {r['id']} [{r['status']}] ({r['agent_name']}): {r['description']}"
                for r in index.tasks
            )
            context.extend_messages(self.source_id, [Message.user("\n".join(lines))])

    def tasks(self, session: AgentSession) -> list[BackgroundTaskInfo]:
        """The session's tasks sorted by id, refreshed first.

        Refreshing finalizes runs that ended and marks ``running`` records that have no
        live run in this provider as ``lost``.
        """
        runtime = self._runtime(session)
        index = self._refresh(session, runtime, self._state(session))
        return sorted(
            (BackgroundTaskInfo.from_dict(r) for r in index.tasks), key=lambda t: t.task_id
        )

    def incomplete_tasks(self, session: AgentSession | None) -> list[BackgroundTaskInfo]:
        """The tasks still ``running`` after a refresh (.NET's ``GetIncompleteTasks``)."""
        if session is None:
            return []
        return [t for t in self.tasks(session) if t.status is BackgroundTaskStatus.RUNNING]

    async def release_session(
        self,
        session: AgentSession,
        *,
        cancel_running: bool = True,
        timeout: float | None = 30.0,  # noqa: ASYNC109 - upstream's signature
    ) -> None:
        """Drop this provider's live state for ``session`` (call it when the host is done).

        Cancels the session's running child runs and waits up to ``timeout`` (virtual)
        seconds for them (``None``: no limit), then forgets runs and child sessions. A
        child that does not stop in time is abandoned (logged) — the call still returns
        after ``timeout``. The session's records are not touched: those saved as
        ``running`` become ``lost`` at the next refresh. Tools bound to the released
        runtime refuse to start, wait, continue or clear. Idempotent; unknown sessions
        are fine.

        Raises:
            RuntimeError: ``cancel_running=False`` while tasks are running (nothing is
                changed then).
        """
        session_id = session.session_id
        runtime = self._runtimes.get(session_id)
        if runtime is None or runtime.closed:
            return
        if foreign(runtime, loop_token()):  # handles of another (ended) event loop
            runtime.closed = True
            runtime.clear()
            del self._runtimes[session_id]
            return
        pending = [run for run in runtime.in_flight.values() if not run.finished]
        if pending and not cancel_running:
            msg = f"Cannot release session {session_id}: {len(pending)} tasks still running."
            raise RuntimeError(msg)
        runtime.closed = True
        try:
            if pending:
                await drain(session_id, pending, timeout)
                self._finalize_awaited(session, runtime, pending)
        finally:
            runtime.clear()
            if self._runtimes.get(session_id) is runtime:
                del self._runtimes[session_id]

    def _finalize_awaited(
        self, session: AgentSession, runtime: Runtime, runs: Iterable[ChildRun]
    ) -> None:
        """Save the outcome of drained runs a blocked wait tool is waiting on.

        Upstream's waiter resumes before the release clears the runtime, so such a
        task's record is final (``failed``, cancelled) when ``release_session`` returns;
        a run nobody waits on keeps its saved ``running`` record (``lost`` later).
        """
        index = self._index(runtime, self._state(session)["tasks"])
        for run in runs:
            if not (run.finished and runtime.waiting.get(run.task_id)):
                continue
            record = index.by_id.get(run.task_id)
            if (
                record is not None
                and record["status"] == _RUNNING
                and runtime.in_flight.get(run.task_id) is run
            ):
                self._finalize(session, runtime, record, run)

    # -- state, runtime and refresh -----------------------------------------------------

    def _state(self, session: AgentSession) -> dict[str, Any]:
        state = session.state.get(self.source_id)
        if not isinstance(state, dict):
            state = session.state[self.source_id] = {}
        normalize(state)
        return state

    def _runtime(self, session: AgentSession) -> Runtime:
        """The session's runtime; a closed one, or one of another event loop, is replaced."""
        session_id = session.session_id
        runtime = self._runtimes.get(session_id)
        token = loop_token()
        if runtime is not None and (runtime.closed or foreign(runtime, token)):
            runtime = None
        if runtime is None:
            runtime = self._runtimes[session_id] = Runtime(token)
        return runtime

    def _launch(
        self,
        runtime: Runtime,
        task_id: int,
        agent: SupportsAgentRun,
        text: str,
        child_session: Any,
        *,
        origin: tuple[AgentSession, str, str],
    ) -> str | None:
        """Start ``agent`` on ``text`` in ``child_session`` as task ``task_id``; an error
        text for the model when the runtime refuses it (e.g. released), else None.

        ``origin`` is the parent session, the task's agent name and description, for the
        ``task_finished`` event the run reports at the instant it ends.
        """
        report = self._finish_reporter(origin) if _trace.observed() else None
        run = ChildRun(task_id, agent, text, child_session, runtime.finished, report=report)
        run.start(self._keepalive)
        try:
            runtime.track(task_id, run)
        except RuntimeError as exc:
            return f"Error: {exc}"
        return None

    def _finish_reporter(self, origin: tuple[AgentSession, str, str]) -> Callable[[ChildRun], None]:
        provider, session_id = self.source_id, origin[0].session_id
        agent_name, description = origin[1], origin[2]

        def report(run: ChildRun) -> None:
            if _trace.main_done():  # the simulation is over and cancels what is left
                return
            _trace.emit(
                "task_finished",
                provider=provider,
                session=session_id,
                task_id=run.task_id,
                agent=agent_name,
                description=description,
                outcome="cancelled" if run.cancelled else run.status.value,
                result=run.result_text,
                error=None if run.cancelled else run.error_text,
            )

        return report

    @staticmethod
    def _index(runtime: Runtime, tasks: list[dict[str, Any]]) -> Index:
        index = runtime.index
        if index is None or not index.valid_for(tasks):
            index = runtime.index = Index(tasks)
            runtime.finished.clear()  # the full scan of the next refresh covers them
        return index

    def _refresh(self, session: AgentSession, runtime: Runtime, state: dict[str, Any]) -> Index:
        """Finalize ended runs; mark ``running`` records without a live run ``lost``."""
        index = self._index(runtime, state["tasks"])
        if not index.reconciled:  # the list is new to this runtime: one full scan
            index.reconciled = True
            runtime.finished.clear()
            for record in index.tasks:
                if record["status"] != _RUNNING:
                    continue
                run = runtime.in_flight.get(record["id"])
                if run is None:
                    self._set_status(session, record, _LOST)
                elif run.finished:
                    self._finalize(session, runtime, record, run)
            return index
        if runtime.finished:
            batch = sorted(runtime.finished, key=lambda r: r.task_id)  # deterministic order
            runtime.finished.clear()
            for run in batch:
                if runtime.in_flight.get(run.task_id) is not run:
                    continue  # already finalized by a waiter, or superseded
                found = index.by_id.get(run.task_id)
                if found is None or found["status"] != _RUNNING:
                    del runtime.in_flight[run.task_id]
                    continue
                self._finalize(session, runtime, found, run)
        return index

    def _finalize(
        self, session: AgentSession, runtime: Runtime, record: dict[str, Any], run: ChildRun
    ) -> None:
        if run.status is BackgroundTaskStatus.COMPLETED:
            record["result_text"] = run.result_text
            record.pop("error_text", None)
        else:
            record["error_text"] = run.error_text
            record.pop("result_text", None)
        if runtime.in_flight.get(run.task_id) is run:
            del runtime.in_flight[run.task_id]
        self._set_status(session, record, run.status.value)

    def _set_status(self, session: AgentSession, record: dict[str, Any], status: str) -> None:
        record["status"] = status
        self._emit(session, record, status)

    def _emit(self, session: AgentSession, record: dict[str, Any], status: str) -> None:
        if _trace.observed():
            _trace.emit(
                "task_status",
                provider=self.source_id,
                session=session.session_id,
                task_id=record["id"],
                agent=record["agent_name"],
                description=record["description"],
                status=status,
                result=record.get("result_text"),
                error=record.get("error_text"),
            )

    # -- the six tools ------------------------------------------------------------------

    def _tools(self, session: AgentSession, runtime: Runtime) -> list[FunctionTool]:
        """The six tools bound to ``session`` and the runtime current now (cached)."""
        if runtime.tools is not None and runtime.tools[0] is session:
            return runtime.tools[1]
        provider = self

        def background_agents_start_task(agent_name: str, input: str, description: str) -> str:
            return provider._start_task(session, runtime, agent_name, input, description)

        async def background_agents_wait_for_first_completion(task_ids: list[TaskId]) -> str:
            return await provider._wait(session, runtime, task_ids)

        def background_agents_get_task_results(task_id: TaskId) -> str:
            return provider._get_task_results(session, runtime, task_id)

        def background_agents_get_all_tasks() -> str:
            return provider._get_all_tasks(session, runtime)

        def background_agents_continue_task(task_id: TaskId, text: str) -> str:
            return provider._continue_task(session, runtime, task_id, text)

        def background_agents_clear_completed_task(task_id: TaskId) -> str:
            return provider._clear_task(session, runtime, task_id)

        timeout = self._wait_timeout_seconds
        tools: list[FunctionTool] = [
            FunctionTool(
                background_agents_start_task,
                description=say("background.tool.start"),
            ),
            FunctionTool(
                background_agents_wait_for_first_completion,
                description=say("background.tool.wait", timeout=timeout),
            ),
            FunctionTool(
                background_agents_get_task_results,
                description=say("background.tool.results"),
            ),
            FunctionTool(
                background_agents_get_all_tasks,
                description=say("background.tool.list"),
            ),
            FunctionTool(
                background_agents_continue_task,
                description=say("background.tool.continue"),
            ),
            FunctionTool(
                background_agents_clear_completed_task,
                description=say("background.tool.clear"),
            ),
        ]
        runtime.tools = (session, tools)
        return tools

    def _start_task(
        self,
        session: AgentSession,
        runtime: Runtime,
        agent_name: str,
        input: str,
        description: str,
    ) -> str:
        if runtime.closed:
            return say("background.released.start")
        agent = self._agents.get(agent_name.lower())
        if agent is None:
            available = ", ".join(str(a.name) for a in self._agents.values())
            return say("background.start.unknown_agent", agent_name=agent_name, available=available)
        state = self._state(session)
        index = self._index(runtime, state["tasks"])
        task_id = int(state["next_task_id"])
        # Py-later order: create and track the child first; only then take the id and
        # write the record, so a failure here leaves no id used and no orphan record.
        child_session = agent.create_session()
        refused = self._launch(
            runtime, task_id, agent, input, child_session, origin=(session, agent_name, description)
        )
        if refused is not None:
            return refused
        runtime.child_sessions[task_id] = child_session
        state["next_task_id"] = task_id + 1
        record = {
            "id": task_id,
            "agent_name": agent_name,
            "description": description,
            "status": _RUNNING,
        }
        index.append(record)
        self._emit(session, record, _RUNNING)
        return say("background.start.ok", task_id=task_id, agent_name=agent_name)

    async def _wait(self, session: AgentSession, runtime: Runtime, task_ids: Iterable[int]) -> str:
        if runtime.closed:
            return say("background.released.wait")
        requested = list(dict.fromkeys(task_ids))
        if not requested:
            return say("background.wait.no_ids")
        runs = [runtime.in_flight[t] for t in requested if t in runtime.in_flight]
        if not runs:
            index = self._refresh(session, runtime, self._state(session))
            found = [index.by_id[t] for t in requested if t in index.by_id]
            not_running = [r for r in found if r["status"] != _RUNNING]
            if not_running:
                first = min(not_running, key=record_id)  # state order is id order
                return say(
                    "background.wait.not_running", task_id=first["id"], status=first["status"]
                )
            return say("background.wait.none_running")
        if not any(run.finished for run in runs):
            wake = anyio.Event()
            waiting = runtime.waiting  # a release finalizes what a blocked wait waits on
            for run in runs:
                run.add_listener(wake)
                waiting[run.task_id] = waiting.get(run.task_id, 0) + 1
            try:
                try:
                    with anyio.move_on_after(self._wait_timeout_seconds):
                        await wake.wait()
                finally:
                    for run in runs:
                        run.remove_listener(wake)
                # Let runs that end at this same virtual instant finish too, so the winner
                # is chosen among all of them (by the simulation's tie breaker, see
                # ``_ties``), not by which one the scheduler happened to run first; and a
                # deadline that falls on a finish reports the finish, as upstream does,
                # whichever of the two timers was set first.
                await settle()
                if not any(run.finished for run in runs):
                    return say("background.wait.timeout", timeout=self._wait_timeout_seconds)
                tied = [run for run in runs if run.finished]
                winner = tied[break_tie([run.task_id for run in tied])]
            finally:
                for run in runs:
                    left = waiting.get(run.task_id, 1) - 1
                    if left:
                        waiting[run.task_id] = left
                    else:
                        waiting.pop(run.task_id, None)
        else:
            # Already finished when called: the first in the requested order (upstream).
            winner = next(run for run in runs if run.finished)
        record = self._index(runtime, self._state(session)["tasks"]).by_id.get(winner.task_id)
        if record is None:
            return say("background.wait.finished_unknown", task_id=winner.task_id)
        # A newer run under the same id (``continue_task``) owns the record now; with no
        # run in flight (a release forgot them) the winner's outcome is still the news.
        current = runtime.in_flight.get(winner.task_id)
        if (current is None or current is winner) and record["status"] == _RUNNING:
            self._finalize(session, runtime, record, winner)
        return say("background.wait.finished", task_id=winner.task_id, status=winner.status.value)

    def _get_task_results(self, session: AgentSession, runtime: Runtime, task_id: int) -> str:
        index = self._refresh(session, runtime, self._state(session))
        record = index.by_id.get(task_id)
        if record is None:
            return say("background.task.not_found", task_id=task_id)
        status = record["status"]
        if status == BackgroundTaskStatus.COMPLETED.value:
            return record.get("result_text") or WORDING["background.results.no_output"]
        if status == BackgroundTaskStatus.FAILED.value:
            error = record.get("error_text") or WORDING["background.results.unknown_error"]
            return say("background.results.failed", error=error)
        if status == _LOST:
            return WORDING["background.results.lost"]
        if status == _RUNNING:
            return say("background.results.running", task_id=task_id)
        return say("background.results.other", task_id=task_id, status=status)

    def _get_all_tasks(self, session: AgentSession, runtime: Runtime) -> str:
        index = self._refresh(session, runtime, self._state(session))
        if not index.tasks:
            return WORDING["background.list.empty"]
        lines = [WORDING["background.list.heading"]]
        lines.extend(
            f"- Task {r['id']} [{r['status']}] ({r['agent_name']}): {r['description']}"
            for r in index.tasks
        )
        return "\n".join(lines)

    def _continue_task(
        self, session: AgentSession, runtime: Runtime, task_id: int, text: str
    ) -> str:
        if runtime.closed:
            return say("background.released.continue")
        index = self._refresh(session, runtime, self._state(session))
        record = index.by_id.get(task_id)
        if record is None:
            return say("background.task.not_found", task_id=task_id)
        status = record["status"]
        if status == _LOST:
            return say("background.continue.lost", task_id=task_id)
        if status == _RUNNING:
            return say("background.continue.running", task_id=task_id)
        agent = self._agents.get(str(record["agent_name"]).lower())
        if agent is None:
            return say("background.continue.agent_gone", agent_name=record["agent_name"])
        child_session = runtime.child_sessions.get(task_id)
        if child_session is None:
            return say("background.continue.session_gone", task_id=task_id)
        refused = self._launch(
            runtime,
            task_id,
            agent,
            text,
            child_session,
            origin=(session, str(record["agent_name"]), str(record.get("description") or "")),
        )
        if refused is not None:
            return refused
        record.pop("result_text", None)
        record.pop("error_text", None)
        self._set_status(session, record, _RUNNING)
        return say("background.continue.ok", task_id=task_id)

    def _clear_task(self, session: AgentSession, runtime: Runtime, task_id: int) -> str:
        if runtime.closed:
            return say("background.released.clear")
        index = self._refresh(session, runtime, self._state(session))
        record = index.by_id.get(task_id)
        if record is None:
            return say("background.task.not_found", task_id=task_id)
        if record["status"] == _RUNNING:
            return say("background.clear.running", task_id=task_id)
        index.remove(record)
        runtime.in_flight.pop(task_id, None)
        runtime.child_sessions.pop(task_id, None)
        self._emit(session, record, "cleared")
        return say("background.clear.ok", task_id=task_id)
