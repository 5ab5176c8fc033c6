"""AgentLoopMiddleware: the Python-style loop, one predicate instead of evaluators.

It runs on the same engine as :class:`~loopsim.LoopAgent` (``_engine.LoopRun``); only
the decision (``should_continue``) and the next input (progress + ``next_message``)
differ, as in upstream's Python package.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from .. import _trace
from .._agents import AgentMiddleware, AgentRunContext, AgentSession, ResponseStream
from .._agents._base import maybe_await
from .._messages import (
    AgentResponse,
    AgentResponseUpdate,
    ChatOptions,
    ChatResponse,
    Message,
    copied,
    normalize_messages,
)
from .._wording import WORDING, say
from ._engine import LoopPolicy, LoopRun, NextInput, drive, drive_stream
from ._evaluators import JudgeVerdict

__all__ = [
    "CRITERIA_PLACEHOLDER",
    "DEFAULT_JUDGE_MAX_ITERATIONS",
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_NEXT_MESSAGE",
    "JUDGE_VERDICT_DONE",
    "JUDGE_VERDICT_MORE",
    "AgentLoopMiddleware",
]

DEFAULT_MAX_ITERATIONS = 10
DEFAULT_NEXT_MESSAGE = WORDING["loop.next_message"]
#: the cap of a judged loop (upstream's default for ``with_judge``)
DEFAULT_JUDGE_MAX_ITERATIONS = 5
#: where the rendered criteria go in the judge's instructions (upstream's placeholder)
CRITERIA_PLACEHOLDER = "{{criteria}}"
JUDGE_VERDICT_DONE = "VERDICT: DONE"
JUDGE_VERDICT_MORE = "VERDICT: MORE"

LoopCallback = Callable[..., Any]
CallNext = Callable[[], Awaitable[None]]


class AgentLoopMiddleware(AgentMiddleware):
    """Re-runs the agent while ``should_continue(**kwargs)`` says so.

    Every callback (sync or async) is called with keyword arguments — accept
    ``**kwargs``: ``iteration`` (completed runs, 1-based), ``last_result`` (that run's
    AgentResponse), ``messages`` (its input), ``original_messages``, ``session`` (may be
    None), ``agent``, ``progress`` (a copy of the progress log) and ``feedback``.

    Args:
        should_continue: returns a bool, or ``(bool, feedback)``.
        max_iterations: cap on runs (None = unbounded); the capped run does not call
            ``should_continue``.
        next_message: returns the next input (str, Message, list), or None to re-send
            the previous input; default: :data:`DEFAULT_NEXT_MESSAGE`.
        record_feedback: returns the progress entry for a run (default: its text).
        inject_progress: send a "Progress so far" message before the next input.
        fresh_context: re-send the original messages each time and restore the
            session in place to its start-of-run snapshot.
        return_final_only: return the last run's response untouched (not the
            aggregated transcript, and no summed usage).
        additional_instructions: a system message put before the caller's input.

    Example:
        >>> import loopsim
        >>> client = loopsim.ScriptedChatClient(["step 1", "step 2"])
        >>> loop = loopsim.AgentLoopMiddleware(
        ...     lambda iteration, **kw: iteration < 2, inject_progress=False)
        >>> agent = loopsim.Agent(client, name="worker", middleware=[loop])
        >>> loopsim.simulate(agent.run, "go").text.endswith("step 2")
        True
    """

    DEFAULT_MAX_ITERATIONS: ClassVar[int] = DEFAULT_MAX_ITERATIONS
    DEFAULT_NEXT_MESSAGE: ClassVar[str] = DEFAULT_NEXT_MESSAGE
    DEFAULT_JUDGE_MAX_ITERATIONS: ClassVar[int] = DEFAULT_JUDGE_MAX_ITERATIONS

    def __init__(
        self,
        should_continue: LoopCallback,
        *,
        max_iterations: int | None = DEFAULT_MAX_ITERATIONS,
        next_message: LoopCallback | None = None,
        record_feedback: LoopCallback | None = None,
        inject_progress: bool = True,
        fresh_context: bool = False,
        return_final_only: bool = False,
        additional_instructions: str | None = None,
    ) -> None:
        if should_continue is None or not callable(should_continue):
            msg = f"should_continue must be callable, got {type(should_continue).__name__}"
            raise TypeError(msg)
        if max_iterations is not None and (
            isinstance(max_iterations, bool)
            or not isinstance(max_iterations, int)
            or max_iterations < 1
        ):
            msg = f"max_iterations must be None or a positive integer, got {max_iterations!r}"
            raise ValueError(msg)
        for name, value in (("next_message", next_message), ("record_feedback", record_feedback)):
            if value is not None and not callable(value):
                msg = f"{name} must be callable or None, got {type(value).__name__}"
                raise TypeError(msg)
        self.should_continue = should_continue
        self.max_iterations = max_iterations
        self.next_message = next_message
        self.record_feedback = record_feedback
        self.inject_progress = inject_progress
        self.fresh_context = fresh_context
        self.return_final_only = return_final_only
        self.additional_instructions = additional_instructions

    @classmethod
    def with_judge(
        cls,
        judge_client: Any,
        *,
        criteria: Sequence[str] | None = None,
        instructions: str | None = None,
        response_format: type[BaseModel] | Mapping[str, Any] | None = JudgeVerdict,
        verdict_parser: Callable[[ChatResponse], Any] | None = None,
        max_iterations: int | None = DEFAULT_JUDGE_MAX_ITERATIONS,
        next_message: LoopCallback | None = None,
        fresh_context: bool = False,
    ) -> Self:
        """A loop that goes on until a judge chat client says the request is answered.

        After each run the judge gets its instructions, the original request and the
        agent's latest response (fresh messages, no tools or session), asked for
        ``response_format``. The verdict: ``verdict_parser(response)`` when given (it
        must return a :class:`JudgeVerdict`, else ``TypeError``; its errors propagate),
        else ``response.value`` when it is a ``JudgeVerdict``, else the reply text:
        ``VERDICT: MORE`` wins, then ``VERDICT: DONE``, neither means "not answered"
        (the whole text is then the reasoning). The reasoning is fed back as the next
        input unless ``next_message`` is given. ``criteria`` become an extra system
        message for the agent and replace ``{{criteria}}`` in the judge's instructions.

        Upstream's signature and defaults (``max_iterations`` =
        :data:`DEFAULT_JUDGE_MAX_ITERATIONS`); the texts are loopsim's own (WORDING).

        Example:
            >>> import loopsim
            >>> judge = loopsim.ScriptedChatClient(["VERDICT: MORE add a source", "VERDICT: DONE"])
            >>> loop = loopsim.AgentLoopMiddleware.with_judge(judge)
            >>> worker = loopsim.ScriptedChatClient(["draft", "draft with a source"])
            >>> agent = loopsim.Agent(worker, middleware=[loop])
            >>> loopsim.simulate(agent.run, "write it").messages[-1].text
            'draft with a source'
        """
        judge_instructions = (instructions or WORDING["judge.instructions"]).replace(
            CRITERIA_PLACEHOLDER, _criteria_block(criteria)
        )

        async def judge(
            *, last_result: AgentResponse, original_messages: list[Message], **_: Any
        ) -> tuple[bool, str | None]:
            messages = [
                Message.system(judge_instructions),
                Message.user(WORDING["judge.request_intro"]),
                *original_messages,
                Message.user(WORDING["judge.response_intro"]),
                *last_result.messages,
                Message.user(WORDING["judge.question"]),
            ]
            options = ChatOptions(response_format=response_format)  # type: ignore[arg-type] # a schema mapping passes through as upstream's does
            response = await judge_client.get_response(messages, options=options)
            if verdict_parser is not None:
                verdict = await maybe_await(verdict_parser(response))
                if not isinstance(verdict, JudgeVerdict):
                    msg = (
                        "AgentLoopMiddleware.with_judge: verdict_parser must return a "
                        f"JudgeVerdict, got {type(verdict).__name__}"
                    )
                    raise TypeError(msg)
                answered, reasoning = verdict.answered, verdict.reasoning or verdict.gap_analysis
            else:
                value = getattr(response, "value", None)
                if isinstance(value, JudgeVerdict):
                    answered, reasoning = value.answered, value.reasoning or value.gap_analysis
                else:
                    text = response.text.upper()
                    answered = False if JUDGE_VERDICT_MORE in text else JUDGE_VERDICT_DONE in text
                    reasoning = response.text.strip()
            return (not answered), (reasoning or None)

        def judge_next_message(*, feedback: str | None = None, **_: Any) -> str:
            if feedback:
                return say("judge.feedback", feedback=feedback)
            return DEFAULT_NEXT_MESSAGE

        return cls(
            judge,
            max_iterations=max_iterations,
            next_message=next_message or judge_next_message,
            fresh_context=fresh_context,
            additional_instructions=(
                say("judge.criteria_instruction", bullets=_bullets(criteria)) if criteria else None
            ),
        )

    def __repr__(self) -> str:
        return (
            f"AgentLoopMiddleware({_callable_name(self.should_continue)}, "
            f"max_iterations={self.max_iterations})"
        )

    async def process(self, context: AgentRunContext, call_next: CallNext) -> None:
        if self.additional_instructions:
            context.messages = [Message.system(self.additional_instructions), *context.messages]
        original = list(context.messages)
        policy = _PredicatePolicy(self, context, original)
        run = LoopRun(
            loop=context.agent.name or "loop",
            policy=policy,
            messages=original,
            session=context.session,
            max_iterations=self.max_iterations,
            collect_transcript=not context.stream and not self.return_final_only,
        )
        if context.stream:

            async def invoke_stream(
                messages: list[Message],
                session: Any,  # noqa: ARG001 - the session is context.session
            ) -> AsyncIterator[AgentResponseUpdate]:
                context.messages = messages
                await call_next()
                result = context.result
                if not isinstance(result, ResponseStream):
                    got = type(result).__name__
                    msg = f"AgentLoopMiddleware expected a ResponseStream, got {got}"
                    raise TypeError(msg)
                return result

            # Upstream's streaming final response is the last iteration's, not an aggregate.
            context.result = ResponseStream(
                drive_stream(run, invoke_stream, yield_last_response=True)
            )
            return

        async def invoke(messages: list[Message], session: Any) -> AgentResponse:  # noqa: ARG001 - the session is context.session
            context.messages = messages
            await call_next()
            result = context.result
            if not isinstance(result, AgentResponse):
                msg = f"AgentLoopMiddleware expected an AgentResponse, got {type(result).__name__}"
                raise TypeError(msg)
            return result

        last = await drive(run, invoke)
        if self.return_final_only:
            context.result = last
        else:
            context.result = copied(last, {"messages": run.transcript, "usage": run.usage})


def _bullets(criteria: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in criteria)


def _criteria_block(criteria: Sequence[str] | None) -> str:
    return say("judge.criteria_block", bullets=_bullets(criteria)) if criteria else ""


def _callable_name(fn: Any) -> str:
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


class _PredicatePolicy(LoopPolicy):
    """The middleware's decisions: ``should_continue``, progress log, next message."""

    lazy_surface = False

    def __init__(
        self, middleware: AgentLoopMiddleware, context: AgentRunContext, original: list[Message]
    ) -> None:
        self.mw = middleware
        self.context = context
        self.original = original
        self.progress: list[str] = []
        # "- entry" lines of the whole log joined by newlines, kept up to date as entries
        # are added, so a sessionless loop does not re-render the log every iteration.
        self._progress_lines = ""
        self.snapshot: dict[str, Any] | None = None

    async def start(self, run: LoopRun) -> None:  # noqa: ARG002 - the session is context's
        session = self.context.session
        if self.mw.fresh_context and session is not None:
            if not isinstance(session, AgentSession):
                msg = (
                    f"fresh_context needs an AgentSession to snapshot, got {type(session).__name__}"
                )
                raise TypeError(msg)
            self.snapshot = session.to_dict()

    def _kwargs(self, run: LoopRun, feedback: str | None) -> dict[str, Any]:
        return {
            "iteration": run.iteration,
            "last_result": run.last_response,
            "messages": run.messages,
            "original_messages": self.original,
            "session": self.context.session,
            "agent": self.context.agent,
            "progress": list(self.progress),
            "feedback": feedback,
        }

    async def step(self, run: LoopRun, *, capped: bool) -> NextInput | None:
        mw = self.mw
        assert run.last_response is not None  # noqa: S101 - set by LoopRun.complete
        feedback: str | None = None
        if capped:
            stop = True
        else:
            verdict = mw.should_continue(**self._kwargs(run, None))
            # maybe_await, inlined (a coroutine object per iteration saved): the usual
            # answers are plain bools
            if verdict is not True and verdict is not False and inspect.isawaitable(verdict):
                verdict = await verdict
            if isinstance(verdict, tuple) and len(verdict) == 2:
                stop = not bool(verdict[0])
                feedback = None if verdict[1] is None else str(verdict[1])
            else:
                stop = not bool(verdict)
            if _trace.observed():  # the evaluator's name is only worth finding for a listener
                _trace.emit(
                    "evaluator_decision",
                    loop=run.loop,
                    iteration=run.iteration,
                    index=0,
                    evaluator=_callable_name(mw.should_continue),
                    decision="stop" if stop else "continue",
                    feedback=feedback,
                )
        if mw.record_feedback is not None:
            entry = await maybe_await(mw.record_feedback(**self._kwargs(run, feedback)))
        else:
            entry = run.last_response.text.strip()
        if entry:
            text = str(entry)
            self.progress.append(text)
            self._progress_lines = (
                f"{self._progress_lines}\n- {text}" if self._progress_lines else f"- {text}"
            )
        if stop:
            return None
        session = self.context.session
        if self.snapshot is not None and isinstance(session, AgentSession):
            _restore_in_place(session, self.snapshot, self.context.agent)
        messages = await self._next_messages(run, feedback)
        return NextInput(messages, messages)

    async def _next_messages(self, run: LoopRun, feedback: str | None) -> list[Message]:
        mw = self.mw
        if mw.next_message is None:
            base = [Message.user(DEFAULT_NEXT_MESSAGE)]
        else:
            value = await maybe_await(mw.next_message(**self._kwargs(run, feedback)))
            if value is None:
                if not mw.fresh_context:
                    return list(run.messages)  # re-send the previous input, nothing added
                base = [Message.user(DEFAULT_NEXT_MESSAGE)]
            else:
                base = normalize_messages(value)
        head: list[Message] = list(self.original) if mw.fresh_context else []
        if mw.inject_progress and self.progress:
            full = self.context.session is None or mw.fresh_context
            lines = self._progress_lines if full else f"- {self.progress[-1]}"
            head.append(Message.user(say("loop.progress", entries=lines)))
        return [*head, *base]


def _restore_in_place(session: AgentSession, snapshot: dict[str, Any], agent: Any) -> None:
    # Upstream copies service_session_id and state onto the live object (its local
    # history lives in state); loopsim keeps in-memory history beside state, so it is
    # restored too. session_id is unchanged.
    restored = AgentSession.from_dict(snapshot)
    session.state = restored.state
    session.service_session_id = restored.service_session_id
    session._messages = restored._messages
    _trace.emit("session_restored", agent=agent.name or agent.id, session=session.session_id)
