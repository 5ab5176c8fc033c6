"""Transcript events for real agent_framework runs, observed through its public seams.

* model_request / model_response / model_error: the chat-client adapter
  (``LoopsimChatClient``) reports each model call it answers.
* tool_call / tool_result: :class:`ToolTraceMiddleware`, a function middleware that every
  ``LoopsimChatClient`` adds while a transcript is recorded. A call of a tool the run does
  not have never reaches function middleware: :func:`install_auto_instrument` also wraps
  the function layer's call of one tool, to record those (where the middleware is there).
* session_created, task_status: :class:`RunTraceMiddleware`, an agent middleware that
  :func:`instrument` appends to an agent; after every run and every tool call it compares
  each BackgroundAgentsProvider's task records in the session with what it last saw.
* loop_iteration_start / evaluator_decision / loop_stop: :func:`instrument` wraps each
  ``AgentLoopMiddleware``'s ``should_continue`` predicate (the user's function, called as
  before) and puts a boundary middleware just outside the loop; a streamed loop runs
  while the caller iterates, so it is observed through its stream's pull and cleanup hooks.
* process_restart: :func:`process_restart`, called by whoever simulates the restart.

Zero-touch: :func:`install_auto_instrument` (done when ``loopsim.agent_framework`` is
imported) makes every agent_framework agent that runs while a transcript is recorded
instrument itself first, built inside the simulation or not, so code that builds its
agents internally needs no :func:`instrument` call. Unrecorded runs are left alone.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

import agent_framework as af
from pydantic import BaseModel

from .. import _trace
from .._agents._base import maybe_await
from .._clients._recording import answer_fields
from .._clock import loop_iteration
from .._messages import ChatResponse
from ._runtime import require_asyncio
from ._scope import RunScope, current_scope, run_scope
from ._upstream import (
    MIDDLEWARE_RUN_LAYER,
    TOOL_INVOKER,
    in_flight_task,
    is_argument_error,
    provider_agents,
    traced_pipeline,
    unwrapped,
)

__all__ = [
    "RunTraceMiddleware",
    "ToolTraceMiddleware",
    "agent_label",
    "emit_answer",
    "install_auto_instrument",
    "instrument",
    "note_session",
    "process_restart",
]

_INSTRUMENTED = "__loopsim_instrumented__"
_WRAPPED = "__loopsim_predicate__"


def agent_label(agent: Any) -> str:
    """An agent's name in events: its name, else its id."""
    return str(getattr(agent, "name", None) or getattr(agent, "id", None) or type(agent).__name__)


def process_restart() -> None:
    """Report a simulated process restart (the host drops the runtime and restores)."""
    _trace.emit("process_restart")


def note_session(agent: str, session_id: str, kind: str = "session_created") -> None:
    """Report a session the first time this simulation sees it (``kind``: created/restored)."""
    trace = _trace.active()
    if trace is None or not trace.observed:
        return
    known: set[str] = trace.resources.setdefault("agent_framework.sessions", set())
    if session_id not in known or kind == "session_restored":
        known.add(session_id)
        _trace.emit(kind, agent=agent, session=session_id)


# -- background task status ------------------------------------------------------------------


def _seen(trace: _trace.Trace) -> dict[tuple[str, str], dict[int, str]]:
    seen: dict[tuple[str, str], dict[int, str]] = trace.resources.setdefault(
        "agent_framework.tasks", {}
    )
    return seen


def report_tasks(agent: Any, session: Any) -> None:
    """Emit task_status for every task whose recorded status changed since last seen."""
    trace = _trace.active()
    if trace is None or not trace.observed or session is None:
        return
    session_id = getattr(session, "session_id", None)
    state = getattr(session, "state", None)
    if not isinstance(session_id, str) or not isinstance(state, Mapping):
        return
    for provider in getattr(agent, "context_providers", None) or ():
        if not isinstance(provider, af.BackgroundAgentsProvider):
            continue
        source_id = provider.source_id
        records = (state.get(source_id) or {}).get("tasks", [])
        seen = _seen(trace).setdefault((session_id, source_id), {})
        records_by_source: dict[tuple[str, str], dict[int, Mapping[str, Any]]] = (
            trace.resources.setdefault("agent_framework.task_records", {})
        )
        last = records_by_source.setdefault((session_id, source_id), {})
        current: dict[int, dict[str, Any]] = {int(r["id"]): r for r in records}
        for task_id in sorted(current):
            record = current[task_id]
            last[task_id] = dict(record)
            status = str(record["status"])
            if seen.get(task_id) != status:
                seen[task_id] = status
                if status != "running":
                    # the refresh may see a run end before its done callback ran
                    _report_end(trace, (source_id, session_id, task_id))
                _emit_task(source_id, session_id, record, status)
                if status == "running":
                    _watch_run(trace, provider, session_id, record)
        for task_id in sorted(set(seen) - set(current)):
            if seen[task_id] != "cleared":
                seen[task_id] = "cleared"
                # a cleared task is reported with what it last was, as the built-in engine does
                _emit_task(source_id, session_id, last.get(task_id, {"id": task_id}), "cleared")


def _watches(trace: _trace.Trace) -> dict[tuple[str, str, int], Callable[[], bool]]:
    watches: dict[tuple[str, str, int], Callable[[], bool]] = trace.resources.setdefault(
        "agent_framework.task_runs", {}
    )
    return watches


def _report_end(trace: _trace.Trace, key: tuple[str, str, int]) -> None:
    watches = _watches(trace)
    report = watches.get(key)
    if report is not None and report():
        del watches[key]


def _watch_run(
    trace: _trace.Trace, provider: Any, session_id: str, record: Mapping[str, Any]
) -> None:
    """Report ``task_finished`` at the instant the child run's asyncio task ends.

    Its done callback does it, or the first refresh that sees the run over, whichever
    comes first (a waiter woken at the same instant may refresh before the callback).
    """
    task_id = int(record["id"])
    task = in_flight_task(provider, session_id, task_id)
    if task is None or task.done():
        return
    key = (provider.source_id, session_id, task_id)
    data = {
        "provider": provider.source_id,
        "session": session_id,
        "task_id": record["id"],
        "agent": record.get("agent_name"),
        "description": record.get("description"),
    }

    def report() -> bool:
        if not task.done():  # cancelled, but not yet unwound: its callback reports it
            return False
        if _trace.main_done():  # the simulation is over and cancels what is left
            return True
        if task.cancelled():
            outcome, result, error = "cancelled", None, None
        elif task.exception() is not None:
            outcome, result, error = "failed", None, str(task.exception())
        else:
            outcome, result, error = "completed", getattr(task.result(), "text", None), None
        _trace.emit("task_finished", **data, outcome=outcome, result=result, error=error)
        return True

    def ended(_: Any) -> None:
        if _watches(trace).get(key) is report:
            _report_end(trace, key)

    _watches(trace)[key] = report
    task.add_done_callback(ended)


def _emit_task(source_id: str, session_id: str, record: Mapping[str, Any], status: str) -> None:
    _trace.emit(
        "task_status",
        provider=source_id,
        session=session_id,
        task_id=record["id"],
        agent=record.get("agent_name"),
        description=record.get("description"),
        status=status,
        result=record.get("result_text"),
        error=record.get("error_text"),
    )


# -- tools -------------------------------------------------------------------------------------


def emit_answer(response: ChatResponse, agent: str | None, session: str | None) -> None:
    """Report a model's answer (``model_response``): what agent_framework received."""
    _trace.emit(
        "model_response",
        agent=agent,
        session=session,
        messages=list(response.messages),
        usage=response.usage,
        response_id=response.response_id,
        **answer_fields(response),
    )


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, BaseModel):
        return arguments.model_dump(mode="json")
    if isinstance(arguments, Mapping):
        return dict(arguments)
    return arguments


def _result(result: Any) -> Any:
    if isinstance(result, list) and all(isinstance(c, af.Content) for c in result):
        return "\n".join(c.text for c in result if c.type == "text" and c.text)
    if isinstance(result, af.Content):
        return result.text if result.type == "text" else result.to_dict()
    return result


class ToolTraceMiddleware(af.FunctionMiddleware):
    """Reports each tool the function-invocation layer runs (tool_call, tool_result)."""

    async def process(
        self, context: af.FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        if not _trace.observed():
            await call_next()
            return
        scope = current_scope()
        session = context.session
        session_id = getattr(session, "session_id", None) or (scope.session if scope else None)
        agent = scope.agent if scope is not None else None
        call_id = context.metadata.get("call_id")
        name = context.function.name
        _trace.emit(
            "tool_call",
            agent=agent,
            session=session_id,
            call_id=call_id,
            name=name,
            arguments=_arguments(context.arguments),
        )
        try:
            await call_next()
        except Exception as exc:
            # As the function layer keeps it beside the error result (its ``exception``)
            # and the built-in engine records it: the text; the class name apart, only
            # when the tool itself raised (not for arguments the layer refused)
            extra = {} if is_argument_error(exc) else {"error_type": type(exc).__name__}
            _trace.emit(
                "tool_result",
                agent=agent,
                session=session_id,
                call_id=call_id,
                name=name,
                result=None,
                error=str(exc),
                **extra,
            )
            raise
        _trace.emit(
            "tool_result",
            agent=agent,
            session=session_id,
            call_id=call_id,
            name=name,
            result=_result(context.result),
            error=None,
        )
        if scope is not None and scope.agent_object is not None:
            report_tasks(scope.agent_object, session)


# -- runs and loops ----------------------------------------------------------------------------


@dataclass(slots=True)
class _LoopState:
    agent: Any
    loop: str
    iteration: int = 0
    last_decision: str | None = None
    last_result: Any = None
    completed: int = 0
    ended: BaseException | None = None
    reported: bool = False

    def finished(self, result: Any) -> None:
        """One iteration's run is over (``loop_stop`` counts the finished ones)."""
        self.completed += 1
        self.last_result = result


_loop_state: ContextVar[_LoopState | None] = ContextVar("loopsim_af_loop", default=None)


class RunTraceMiddleware(af.AgentMiddleware):
    """Innermost agent middleware: sets the run scope, reports sessions, iterations, tasks.

    A streamed run happens while the caller iterates, after this middleware returned: its
    result stream gets the run scope around every pull (``with_pull_context_manager``,
    the seam agent_framework uses for its own run identity) and the closing task report
    as a result hook, which runs where a non-streamed run's report runs (after the run's
    own result hooks: the context providers' ``after_run``).
    """

    async def process(
        self, context: af.AgentContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        require_asyncio()
        agent = context.agent
        session = context.session
        session_id = getattr(session, "session_id", None)
        label = agent_label(agent)
        if isinstance(session_id, str):
            note_session(label, session_id)
        loop = _loop_state.get()
        if loop is not None and loop.agent is agent:
            loop.iteration += 1
            loop_iteration(loop.loop, loop.iteration)  # named by the runaway-loop errors
            _trace.emit("loop_iteration_start", loop=loop.loop, iteration=loop.iteration)
        else:
            loop = None
        scope = RunScope(label, session_id, agent)
        streamed = False
        with run_scope(scope):
            report_tasks(agent, session)
            try:
                await call_next()
                result = context.result
                if context.stream and isinstance(result, af.ResponseStream):
                    streamed = True
                    _observe_run_stream(result, scope, session, loop)
                elif loop is not None:
                    loop.finished(result)
            finally:
                if not streamed:
                    report_tasks(agent, session)


def _observe_run_stream(
    stream: af.ResponseStream[Any, Any], scope: RunScope, session: Any, loop: _LoopState | None
) -> None:
    def finished(final: Any) -> None:
        report_tasks(scope.agent_object, session)
        # The loop finalizes an iteration inside a pull of its stream; a stream the caller
        # closed early is finalized too (by upstream's telemetry), but the loop never
        # counted that iteration.
        if loop is not None and _loop_state.get() is loop:
            loop.finished(final)

    stream.with_pull_context_manager(functools.partial(run_scope, scope))
    stream.with_result_hook(finished)


class _LoopPull:
    """Around each pull of a streamed loop: the loop's state is current; an end is noted."""

    def __init__(self, state: _LoopState) -> None:
        self.state = state
        self.token: Token[_LoopState | None] | None = None

    def __enter__(self) -> None:
        self.token = _loop_state.set(self.state)

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if self.token is not None:
            _loop_state.reset(self.token)
            self.token = None
        if exc is not None and self.state.ended is None:
            self.state.ended = exc


class _LoopBoundary(af.AgentMiddleware):
    """Sits just outside an AgentLoopMiddleware: opens the loop's state, reports its stop.

    Non-streamed, the loop runs inside ``call_next``. Streamed, it runs while the caller
    iterates the stream the loop returns: that stream makes the loop's state current
    around every pull and reports the stop from its cleanup hook, which runs once the
    loop is over (finished, failed, or closed early by the caller: ``cancelled``).
    """

    def __init__(self, loop: af.AgentLoopMiddleware) -> None:
        self.loop = loop

    async def process(
        self, context: af.AgentContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        state = _LoopState(agent=context.agent, loop=agent_label(context.agent))
        if context.stream:
            await call_next()
            stream = context.result
            if isinstance(stream, af.ResponseStream):
                stream.with_pull_context_manager(functools.partial(_LoopPull, state))
                stream.with_cleanup_hook(functools.partial(self._stream_stopped, state))
            return
        token = _loop_state.set(state)
        reason = "error"
        try:
            await call_next()
            if _pending_approval(context.result):
                reason = "approval_pending"
            elif state.last_decision == "stop":
                reason = "evaluators_stopped"
            else:
                reason = "max_iterations"
        except BaseException as exc:
            reason = "cancelled" if _is_cancel(exc) else "error"
            raise
        finally:
            _loop_state.reset(token)
            _trace.emit("loop_stop", loop=state.loop, reason=reason, iterations=state.completed)

    def _stream_stopped(self, state: _LoopState) -> None:
        if state.reported:
            return
        state.reported = True
        ended = state.ended
        if ended is None:  # the caller closed the stream before the loop was over
            reason = "cancelled"
        elif not isinstance(ended, StopAsyncIteration):
            reason = "cancelled" if _is_cancel(ended) else "error"
        elif _pending_approval(state.last_result):
            reason = "approval_pending"
        elif state.last_decision == "stop":
            reason = "evaluators_stopped"
        elif self.loop.max_iterations is not None and state.completed >= self.loop.max_iterations:
            reason = "max_iterations"
        else:  # upstream ends a streamed loop quietly on MiddlewareTermination
            reason = "cancelled"
        _trace.emit("loop_stop", loop=state.loop, reason=reason, iterations=state.completed)


def _is_cancel(exc: BaseException) -> bool:
    import asyncio  # noqa: PLC0415 - only on the error path

    return isinstance(exc, asyncio.CancelledError)


def _pending_approval(result: Any) -> bool:
    messages = getattr(result, "messages", None) or ()
    return any(
        getattr(c, "type", None) == "function_approval_request"
        for m in messages
        for c in getattr(m, "contents", ())
    )


def _callable_name(fn: Any) -> str:
    # A private closure made by a factory (``background_tasks_running()`` returns
    # ``background_tasks_running.<locals>._should_continue``) is named after its factory.
    name = str(getattr(fn, "__name__", None) or type(fn).__name__)
    qualname = str(getattr(fn, "__qualname__", None) or "")
    if name.startswith("_") and ".<locals>." in qualname:
        return qualname.split(".<locals>.")[-2].rsplit(".", 1)[-1]
    return name


def _wrap_predicate(loop: af.AgentLoopMiddleware) -> None:
    original = loop.should_continue
    if getattr(original, _WRAPPED, None) is not None:
        return
    name = _callable_name(original)

    @functools.wraps(original)
    async def should_continue(**kwargs: Any) -> Any:
        verdict = await maybe_await(original(**kwargs))
        state = _loop_state.get()
        if isinstance(verdict, tuple) and len(verdict) == 2:
            keep_going, feedback = bool(verdict[0]), verdict[1]
        else:
            keep_going, feedback = bool(verdict), None
        decision = "continue" if keep_going else "stop"
        if state is not None:
            state.last_decision = decision
        _trace.emit(
            "evaluator_decision",
            loop=state.loop if state is not None else agent_label(kwargs.get("agent")),
            iteration=kwargs.get("iteration"),
            index=0,
            evaluator=name,
            decision=decision,
            feedback=None if feedback is None else str(feedback),
        )
        return verdict

    setattr(should_continue, _WRAPPED, original)
    loop.should_continue = should_continue


def instrument(agent: Any) -> Any:
    """Make a real agent_framework agent observable by loopsim's transcripts; returns it.

    Adds the tracing middleware to ``agent`` (and, through its BackgroundAgentsProvider,
    to its child agents), wraps the ``should_continue`` of each ``AgentLoopMiddleware`` it
    has so decisions are reported, and is idempotent. Behaviour is unchanged: the
    middleware only observes. Tools and model calls are reported by the chat client
    from :func:`~loopsim.agent_framework.as_chat_client`.
    """
    if getattr(agent, _INSTRUMENTED, False):
        return agent
    if not hasattr(agent, "middleware") or not callable(getattr(agent, "run", None)):
        msg = f"instrument needs an agent_framework Agent, got {type(agent).__name__}"
        raise TypeError(msg)
    # Upstream re-reads ``agent.middleware`` on every run (categorizing it then), so the
    # tracing middleware goes into that public list.
    rebuilt: list[Any] = []
    for item in list(agent.middleware or ()):
        if isinstance(item, af.AgentLoopMiddleware):
            _wrap_predicate(item)
            rebuilt.append(_LoopBoundary(item))
        rebuilt.append(item)
    rebuilt.append(RunTraceMiddleware())
    agent.middleware = rebuilt
    setattr(agent, _INSTRUMENTED, True)
    for provider in getattr(agent, "context_providers", None) or ():
        if isinstance(provider, af.BackgroundAgentsProvider):
            for child in provider_agents(provider):
                if isinstance(getattr(child, "agent_middleware", None), list):
                    instrument(child)
    return agent


def install_auto_instrument() -> None:
    """Make agents instrument themselves on their first recorded run (idempotent).

    The wrapper sits on agent_framework's middleware layer's ``run``, which reads
    ``agent.middleware`` afresh on every call, so the tracing middleware that
    :func:`instrument` adds takes part in that very run.
    """
    original = MIDDLEWARE_RUN_LAYER.run
    if getattr(original, _WRAPPED, None) is not None:
        return

    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self, _INSTRUMENTED, False) and _trace.observed():
            instrument(self)
        return original(self, *args, **kwargs)

    setattr(run, _WRAPPED, original)
    MIDDLEWARE_RUN_LAYER.run = run
    _install_unknown_tool_trace()


def _install_unknown_tool_trace() -> None:
    """Record a call of a tool the run does not have, as the built-in engine does: the
    function layer answers it with its own error result, which no middleware sees."""
    found = unwrapped(TOOL_INVOKER, _WRAPPED)
    if found is None:
        return
    module, original = found

    @functools.wraps(original)
    async def invoke(*args: Any, **kwargs: Any) -> Any:
        result = await original(*args, **kwargs)
        call = kwargs.get("function_call_content", args[0] if args else None)
        tool_map = kwargs.get("tool_map")
        if (
            _trace.observed()
            and call is not None
            and getattr(call, "type", None) == "function_call"
            and isinstance(tool_map, Mapping)
            and call.name not in tool_map
            and traced_pipeline(kwargs.get("middleware_pipeline"), ToolTraceMiddleware)
        ):
            _unknown_tool(call, result, kwargs.get("invocation_session"))
        return result

    setattr(invoke, _WRAPPED, original)
    setattr(module, TOOL_INVOKER[1], invoke)


def _unknown_tool(call: Any, result: Any, session: Any) -> None:
    scope = current_scope()
    agent = scope.agent if scope is not None else None
    session_id = getattr(session, "session_id", None) or (scope.session if scope else None)
    data = {"agent": agent, "session": session_id, "call_id": call.call_id, "name": call.name}
    try:  # as the built-in engine records them: parsed, else as the model wrote them
        arguments = _arguments(call.parse_arguments())
    except Exception:  # noqa: BLE001 - the function layer never parsed them either
        arguments = call.arguments
    _trace.emit("tool_call", **data, arguments=arguments)
    _trace.emit(
        "tool_result",
        **data,
        result=_result(getattr(result, "result", None)),
        error=getattr(result, "exception", None),
    )
