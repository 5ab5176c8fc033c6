"""The one iteration engine behind LoopAgent and AgentLoopMiddleware.

A :class:`LoopRun` holds one run's state (iteration count, current input, the surfaced
messages waiting to be shown, transcript, summed usage, stop reason). The drivers
:func:`drive` and :func:`drive_stream` run it: invoke the inner run, then
:meth:`LoopRun.complete`: approval check, cap check, then ask the :class:`LoopPolicy`
(evaluators for LoopAgent, ``should_continue`` for the middleware) for the next input.

Cost: every step touches only this run's own lists and the latest response, never the
session's history, so an iteration costs the same at iteration 1,000 as at 10.

The run report goes out through the trace seam (``loop_iteration_start``,
``evaluator_decision`` — emitted by the policy —, ``loop_stop``).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from .. import _trace
from .._agents._base import ResponseStream, close_quietly
from .._agents._context import MiddlewareTermination
from .._clock import loop_iteration
from .._messages import (
    AgentResponse,
    AgentResponseUpdate,
    FunctionApprovalRequestContent,
    Message,
    Usage,
    build_agent_update,
    message_update,
)

__all__ = [
    "LoopPolicy",
    "LoopRun",
    "NextInput",
    "StopReason",
    "drive",
    "drive_stream",
    "has_pending_approval",
]

StopReason = Literal[
    "evaluators_stopped", "max_iterations", "approval_pending", "error", "cancelled"
]
_logger = logging.getLogger("loopsim.loop")


@dataclass(slots=True)
class NextInput:
    """What the next iteration sends (``messages``) and what the loop shows (``surfaced``)."""

    messages: list[Message]
    surfaced: list[Message] = field(default_factory=list)


class LoopPolicy(abc.ABC):
    """How one kind of loop decides and builds its next input (one instance per run)."""

    #: LoopAgent flushes surfaced messages lazily, before the first update of the
    #: iteration they elicit (inheriting its response id); the middleware eagerly.
    lazy_surface: bool = True

    async def start(self, run: LoopRun) -> None:  # noqa: B027 - optional hook
        """Set up before iteration 1 (sessions, snapshots)."""

    @abc.abstractmethod
    async def step(self, run: LoopRun, *, capped: bool) -> NextInput | None:
        """Decide after an iteration: the next input, or None to stop.

        Called unless the iteration ended on a pending approval request. ``capped`` says
        the iteration cap was reached: the loop stops whatever this returns.
        """


def has_pending_approval(response: AgentResponse) -> bool:
    """True when any content of the response asks for a tool-call approval."""
    for message in response.messages:
        for content in message.contents:
            if isinstance(content, FunctionApprovalRequestContent) or (
                getattr(content, "type", None) == "function_approval_request"
            ):
                return True
    return False


class LoopRun:
    """The state of one loop run.

    Attributes:
        loop: the loop's name in events.
        max_iterations: the cap (None = unbounded, the middleware's option).
        iteration: completed inner runs.
        messages: the input of the next inner run.
        session: the session of the next inner run.
        surfaced: messages to show before the next iteration's output.
        transcript: surfaced and response messages in order (None when not collected).
        usage: the summed usage of every iteration that reported one.
        last_response: the latest iteration's response.
        stop_reason: why the loop ended (None while it runs).
    """

    __slots__ = (
        "iteration",
        "last_response",
        "loop",
        "max_iterations",
        "messages",
        "policy",
        "session",
        "stop_reason",
        "surfaced",
        "transcript",
        "usage",
    )

    def __init__(
        self,
        *,
        loop: str,
        policy: LoopPolicy,
        messages: list[Message],
        session: Any,
        max_iterations: int | None,
        collect_transcript: bool = True,
    ) -> None:
        self.loop = loop
        self.policy = policy
        self.messages = messages
        self.session = session
        self.max_iterations = max_iterations
        self.iteration = 0
        self.surfaced: list[Message] = []
        self.transcript: list[Message] | None = [] if collect_transcript else None
        self.usage: Usage | None = None
        self.last_response: AgentResponse | None = None
        self.stop_reason: StopReason | None = None

    async def complete(self, response: AgentResponse) -> bool:
        """Account for one finished inner run; True when the loop runs again."""
        if not isinstance(response, AgentResponse):
            msg = f"the inner run returned {type(response).__name__}, expected an AgentResponse"
            raise TypeError(msg)
        self.iteration += 1
        self.last_response = response
        if response.usage is not None:
            # `+` builds a new Usage, the first one is copied: inner usage is never shared
            # with (or mutated through) the loop's sum.
            self.usage = (
                response.usage.model_copy(deep=True)
                if self.usage is None
                else self.usage + response.usage
            )
        if self.transcript is not None:
            self.transcript.extend(self.surfaced)
            self.transcript.extend(response.messages)
        self.surfaced = []
        if has_pending_approval(response):
            self.stop_reason = "approval_pending"
            return False
        capped = self.max_iterations is not None and self.iteration >= self.max_iterations
        step = await self.policy.step(self, capped=capped)
        if capped:
            _logger.info(
                "loop %r reached the maximum of %d iterations and stopped",
                self.loop,
                self.iteration,
            )
            self.stop_reason = "max_iterations"
            return False
        if step is None:
            self.stop_reason = "evaluators_stopped"
            return False
        self.messages = step.messages
        self.surfaced = step.surfaced
        return True

    def _failed(self, exc: BaseException) -> None:
        # A consumer closing the stream early (GeneratorExit) also counts as cancelled.
        cancelled: tuple[type[BaseException], ...] = (GeneratorExit, MiddlewareTermination)
        # No async library running means a stream finalized late: only GeneratorExit then.
        with suppress(RuntimeError):  # anyio: NoEventLoopError (older: sniffio's error)
            cancelled += (anyio.get_cancelled_exc_class(),)
        self.stop_reason = "cancelled" if isinstance(exc, cancelled) else "error"

    def _report_start(self) -> None:
        loop_iteration(self.loop, self.iteration + 1)  # named by the runaway-loop errors
        _trace.emit("loop_iteration_start", loop=self.loop, iteration=self.iteration + 1)

    def _report_stop(self) -> None:
        _trace.emit("loop_stop", loop=self.loop, reason=self.stop_reason, iterations=self.iteration)


async def drive(
    run: LoopRun,
    invoke: Callable[[list[Message], Any], Awaitable[AgentResponse]],
) -> AgentResponse:
    """Run the loop without streaming; returns the last iteration's response."""
    try:
        await run.policy.start(run)
        while True:
            run._report_start()
            response = await invoke(run.messages, run.session)
            if not await run.complete(response):
                break
    except BaseException as exc:
        run._failed(exc)
        raise
    finally:
        if run.stop_reason is not None:
            run._report_stop()
    assert run.last_response is not None  # noqa: S101 - at least one iteration completed
    return run.last_response


def surfaced_update(message: Message, response_id: str | None) -> AgentResponseUpdate:
    """A surfaced message as a streaming update (no agent id: the loop made it)."""
    return build_agent_update(
        message.role,
        message.contents,
        author_name=message.author_name,
        message_id=message.message_id or _trace.next_id("msg"),
        response_id=response_id,
    )


async def drive_stream(
    run: LoopRun,
    invoke: Callable[[list[Message], Any], Awaitable[AsyncIterator[AgentResponseUpdate]]],
    *,
    yield_last_response: bool = False,
) -> AsyncGenerator[AgentResponseUpdate | AgentResponse, None]:
    """Run the loop streaming: re-yield every iteration's updates and the surfaced ones.

    The inner stream of each iteration is always closed. An iteration's response is the
    inner stream's final response when it is a :class:`ResponseStream`, else its updates
    merged. With ``yield_last_response``, the last iteration's response comes last, after
    the loop has stopped and reported it (what a :class:`ResponseStream` takes as final).
    """
    try:
        await run.policy.start(run)
        while True:
            run._report_start()
            lazy = run.policy.lazy_surface
            pending: Sequence[Message] = run.surfaced if lazy else ()
            try:
                stream = await invoke(run.messages, run.session)
            except MiddlewareTermination:  # upstream: stop cleanly, keep the last iteration
                run.stop_reason = "cancelled"
                break
            # A ResponseStream keeps its own updates and final response: collect only
            # for other iterators, whose updates are merged here.
            final_source = stream if isinstance(stream, ResponseStream) else None
            collected: list[AgentResponseUpdate] | None = [] if final_source is None else None
            try:
                async for update in stream:
                    if pending:
                        for message in pending:
                            yield surfaced_update(message, update.response_id)
                        pending = ()
                    if collected is not None:
                        collected.append(update)
                    yield update
                if final_source is not None:
                    response = await final_source.get_final_response()
                else:
                    response = AgentResponse.from_updates(collected or ())
            except MiddlewareTermination:
                run.stop_reason = "cancelled"
                break
            finally:
                await close_quietly(stream)
            if pending:  # the iteration yielded nothing: flush with a fresh response id
                response_id = _trace.next_id("resp")
                for message in pending:
                    yield surfaced_update(message, response_id)
            if not await run.complete(response):
                break
            if not lazy:
                for message in run.surfaced:
                    yield message_update(message)
    except BaseException as exc:
        run._failed(exc)
        raise
    finally:
        if run.stop_reason is not None:
            run._report_stop()
    if yield_last_response and run.last_response is not None:
        yield run.last_response
