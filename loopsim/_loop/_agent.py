"""LoopAgent: re-invoke an agent while its loop evaluators ask to continue."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from .. import _trace
from .._agents._base import (
    DelegatingAgent,
    ResponseStream,
    RunOptions,
    SupportsAgentRun,
    maybe_await,
)
from .._messages import (
    AgentResponse,
    AgentResponseUpdate,
    Message,
    MessagesInput,
    normalize_messages,
    text_message,
)
from ._engine import LoopPolicy, LoopRun, NextInput, drive, drive_stream
from ._evaluation import FeedbackView, LoopContext, LoopEvaluation, LoopEvaluator

__all__ = ["LoopAgent", "LoopAgentOptions"]

SessionCreatedCallback = Callable[[Any], Awaitable[None] | None]

_FEEDBACK_HEADER = "## Feedback\n"


@dataclass
class LoopAgentOptions:
    """Options of a :class:`LoopAgent`, read once when the agent is built.

    Attributes:
        max_iterations: cap on inner runs per loop run (None = 10); must be >= 1.
        fresh_context_per_iteration: each re-invocation starts from a reset session with
            the original input plus one aggregated feedback message.
        on_behalf_of_author_name: author name of the messages the loop writes (feedback).
        exclude_on_behalf_of_messages: send those messages but do not show them in the
            result or the stream.
        non_streaming_returns_last_response_only: ``run`` returns the last response's
            messages only (usage is still summed over the run).
        session_created_callback: ``callback(session)`` (sync or async), called for every
            session the loop itself creates or restores.
    """

    max_iterations: int | None = None
    fresh_context_per_iteration: bool = False
    on_behalf_of_author_name: str | None = None
    exclude_on_behalf_of_messages: bool = False
    non_streaming_returns_last_response_only: bool = False
    session_created_callback: SessionCreatedCallback | None = None


class LoopAgent(DelegatingAgent):
    """Runs ``inner`` again and again while one of ``evaluators`` asks to continue.

    After each run the evaluators are asked in order; the first that continues wins and
    the rest are not asked; the loop stops when all stop, when ``max_iterations`` runs
    were made, or when a response holds a pending approval request. The caller's
    messages are sent once; a re-invocation sends only the winner's feedback (or its
    explicit messages). ``run`` returns the last response with the messages of every
    iteration (and the feedback sent between them) and the usage summed over the run.

    Each run reports ``loop_iteration_start``, ``evaluator_decision`` and ``loop_stop``
    events through the simulation's trace.

    Deliberate differences from upstream's .NET ``LoopAgent``: ``run`` returns a *copy*
    of the last response (same type and fields, messages and usage replaced) instead
    of mutating the inner agent's object; ids of the messages the loop writes (and the
    fallback response id of an empty streamed iteration) come from the simulation's
    counters (``msg-0007``, ``resp-0003``), not GUIDs, so runs are reproducible;
    ``messages=None`` means an empty input, as everywhere in loopsim.

    Args:
        inner: any agent (``SupportsAgentRun``).
        evaluators: one :class:`LoopEvaluator` or a non-empty sequence of them.
        options: :class:`LoopAgentOptions` (None = defaults).

    Example:
        >>> import loopsim
        >>> client = loopsim.ScriptedChatClient(["draft", "final DONE"])
        >>> agent = loopsim.LoopAgent(
        ...     loopsim.Agent(client, name="writer"),
        ...     loopsim.CompletionMarkerLoopEvaluator("DONE"),
        ... )
        >>> [m.text for m in loopsim.simulate(agent.run, "write").messages][::2]
        ['draft', 'final DONE']
    """

    DEFAULT_MAX_ITERATIONS: ClassVar[int] = 10

    def __init__(
        self,
        inner: SupportsAgentRun,
        evaluators: LoopEvaluator | Iterable[LoopEvaluator],
        options: LoopAgentOptions | None = None,
    ) -> None:
        super().__init__(inner)
        if evaluators is None:
            msg = "evaluators must not be None"
            raise TypeError(msg)
        if isinstance(evaluators, LoopEvaluator) or callable(getattr(evaluators, "evaluate", None)):
            items: tuple[Any, ...] = (evaluators,)
        else:
            items = tuple(evaluators)
        if not items:
            msg = "evaluators: at least one loop evaluator is required"
            raise ValueError(msg)
        for index, item in enumerate(items):
            if item is None:
                msg = f"evaluators[{index}] must not be None"
                raise TypeError(msg)
            if not callable(getattr(item, "evaluate", None)):
                msg = f"evaluators[{index}] must be a LoopEvaluator, got {type(item).__name__}"
                raise TypeError(msg)
        self.evaluators: tuple[LoopEvaluator, ...] = items
        options = options or LoopAgentOptions()
        max_iterations = (
            self.DEFAULT_MAX_ITERATIONS
            if options.max_iterations is None
            else options.max_iterations
        )
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
            msg = f"max_iterations must be an int, got {type(max_iterations).__name__}"
            raise TypeError(msg)
        if max_iterations < 1:
            msg = f"max_iterations must be at least 1, got {max_iterations}"
            raise ValueError(msg)
        self.max_iterations = max_iterations
        self.fresh_context_per_iteration = bool(options.fresh_context_per_iteration)
        self.on_behalf_of_author_name = options.on_behalf_of_author_name
        self.exclude_on_behalf_of_messages = bool(options.exclude_on_behalf_of_messages)
        self.non_streaming_returns_last_response_only = bool(
            options.non_streaming_returns_last_response_only
        )
        self.session_created_callback = options.session_created_callback

    def __repr__(self) -> str:
        names = ", ".join(type(e).__name__ for e in self.evaluators)
        return f"LoopAgent({self.inner!r}, [{names}], max_iterations={self.max_iterations})"

    @property
    def _loop_name(self) -> str:
        return self.name or "loop"

    def _new_run(
        self, messages: MessagesInput, session: Any, options: RunOptions | None
    ) -> LoopRun:
        initial = _initial_messages(messages)
        policy = _EvaluatorPolicy(self, initial, session, options)
        return LoopRun(
            loop=self._loop_name,
            policy=policy,
            messages=initial,
            session=session,
            max_iterations=self.max_iterations,
        )

    async def _run_response(
        self,
        messages: MessagesInput = None,
        *,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> AgentResponse:
        """Run the loop; returns the last response carrying the whole run's messages."""
        run = self._new_run(messages, session, options)
        inner = self.inner

        async def invoke(current: list[Message], active: Any) -> AgentResponse:
            return await inner.run(current, session=active, options=options)

        last = await drive(run, invoke)
        # Upstream mutates the last response in place; we return a copy of it (same
        # type and extra fields) so the inner agent's object is never changed.
        if self.non_streaming_returns_last_response_only:
            return last.model_copy(update={"usage": run.usage})
        return last.model_copy(update={"messages": run.transcript, "usage": run.usage})

    def run_stream(
        self,
        messages: MessagesInput = None,
        *,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> ResponseStream:
        """Run the loop streaming every iteration's updates (and the loop's own messages).

        ``get_final_response()`` merges all updates (usage summed over the run).
        """
        run = self._new_run(messages, session, options)
        run.transcript = None
        inner = self.inner

        async def invoke(current: list[Message], active: Any) -> AsyncIterator[AgentResponseUpdate]:
            return inner.run_stream(current, session=active, options=options)

        return ResponseStream(drive_stream(run, invoke))


def _initial_messages(messages: MessagesInput) -> list[Message]:
    # A caller's list of Messages is kept as is (LoopContext.initial_messages is that
    # very object, as upstream keeps an IReadOnlyList).
    if isinstance(messages, list) and all(isinstance(m, Message) for m in messages):
        return messages
    return normalize_messages(messages)


class _EvaluatorPolicy(LoopPolicy):
    """LoopAgent's decisions: evaluators in order, first continue wins."""

    lazy_surface = True

    def __init__(
        self,
        agent: LoopAgent,
        initial: list[Message],
        session: Any,
        options: RunOptions | None,
    ) -> None:
        self.agent = agent
        self.initial = initial
        self.caller_session = session
        self.options = options
        self.snapshot: dict[str, Any] | None = None
        self.feedback_log: list[str | None] = []
        self.bullets: list[str] = []
        self.context: LoopContext | None = None

    async def start(self, run: LoopRun) -> None:
        agent = self.agent
        if run.session is None:
            run.session = await self._new_session(agent.inner.create_session)
        elif agent.fresh_context_per_iteration:
            self.snapshot = await maybe_await(agent.inner.serialize_session(run.session))

    async def _new_session(self, factory: Callable[[], Any]) -> Any:
        session = await maybe_await(factory())
        callback = self.agent.session_created_callback
        if callback is not None:
            await maybe_await(callback(session))
        return session

    async def step(self, run: LoopRun, *, capped: bool) -> NextInput | None:
        agent = self.agent
        assert run.last_response is not None  # noqa: S101 - set by LoopRun.complete
        context = self.context
        if context is None:
            context = self.context = LoopContext(
                agent.inner, run.session, self.initial, run.last_response, self.options
            )
            context._feedback = FeedbackView(self.feedback_log)
        context._iteration = run.iteration
        context._last_response = run.last_response
        if capped:
            return None
        winner: LoopEvaluation | None = None
        for index, evaluator in enumerate(agent.evaluators):
            evaluation = await evaluator.evaluate(context)
            if not isinstance(evaluation, LoopEvaluation):
                msg = (
                    f"{type(evaluator).__name__}.evaluate returned {type(evaluation).__name__}, "
                    "expected a LoopEvaluation"
                )
                raise TypeError(msg)
            _trace.emit_marked(
                "evaluator_decision",
                _marks(evaluator),
                loop=run.loop,
                iteration=run.iteration,
                index=index,
                evaluator=type(evaluator).__name__,
                decision="continue" if evaluation.should_reinvoke else "stop",
                feedback=evaluation.feedback,
            )
            if evaluation.should_reinvoke:
                winner = evaluation
                break
        if winner is None:
            return None
        if agent.fresh_context_per_iteration:
            snapshot = self.snapshot
            if snapshot is None:
                session = await self._new_session(agent.inner.create_session)
            else:
                session = await self._new_session(lambda: agent.inner.deserialize_session(snapshot))
            run.session = session
            context._session = session
        self.feedback_log.append(winner.feedback)
        if winner.feedback is not None:
            self.bullets.append(winner.feedback)
        if winner.messages is not None:
            messages = list(winner.messages)
            return NextInput(messages, [] if agent.exclude_on_behalf_of_messages else messages)
        if agent.fresh_context_per_iteration:
            messages = list(self.initial)
            surfaced: list[Message] = []
            if self.bullets:
                text = _FEEDBACK_HEADER + "".join(f"\n- {entry}" for entry in self.bullets)
                feedback_message = self._authored(text)
                messages.append(feedback_message)
                surfaced = [feedback_message]
        elif winner.feedback is not None:
            feedback_message = self._authored(winner.feedback)
            messages = [feedback_message]
            surfaced = [feedback_message]
        else:
            messages, surfaced = [], []
        return NextInput(messages, [] if agent.exclude_on_behalf_of_messages else surfaced)

    def _authored(self, text: str) -> Message:
        return text_message(
            "user", text, self.agent.on_behalf_of_author_name, _trace.next_id("msg")
        )


_NO_MARKS: frozenset[str] = frozenset()


def _marks(evaluator: LoopEvaluator) -> frozenset[str]:
    # Identity, never a name: only the class that declares the marker itself carries it
    # (a user class named ...BackgroundTask... or a subclass with its own rule does not).
    marks = type(evaluator).__dict__.get("_loopsim_marks")
    return marks if isinstance(marks, frozenset) else _NO_MARKS
