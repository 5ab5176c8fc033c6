"""The evaluator seam: LoopEvaluation, LoopEvaluator and LoopContext.

An evaluator is one method (``async evaluate(context) -> LoopEvaluation``): pure
judgement, no session handling and no message construction. The loop owns those.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from .._messages import AgentResponse, Message

__all__ = ["FeedbackView", "LoopContext", "LoopEvaluation", "LoopEvaluator"]

_PRIVATE = object()


class LoopEvaluation:
    """An evaluator's decision: stop, or re-invoke the agent (with feedback or messages).

    Build one with the factories; the constructor is private.

    * :meth:`stop` — "I do not ask to continue" (not a veto: a later evaluator may still
      continue the loop).
    * :meth:`continue_with_feedback` — re-invoke; the feedback (if not blank) becomes the
      next input (or part of it in fresh-context mode).
    * :meth:`continue_with_messages` — re-invoke with exactly these messages.

    Example:
        >>> from loopsim import LoopEvaluation
        >>> LoopEvaluation.continue_with_feedback("   ").feedback is None
        True
        >>> LoopEvaluation.stop().should_reinvoke
        False
    """

    __slots__ = ("_feedback", "_messages", "_should_reinvoke")

    _STOP: LoopEvaluation

    def __init__(
        self,
        token: object,
        *,
        should_reinvoke: bool,
        feedback: str | None,
        messages: tuple[Message, ...] | None,
    ) -> None:
        if token is not _PRIVATE:
            msg = (
                "LoopEvaluation has no public constructor; use LoopEvaluation.stop(), "
                ".continue_with_feedback(...) or .continue_with_messages(...)"
            )
            raise TypeError(msg)
        self._should_reinvoke = should_reinvoke
        self._feedback = feedback
        self._messages = messages

    @property
    def should_reinvoke(self) -> bool:
        """True when the evaluator asks the loop to run the agent again."""
        return self._should_reinvoke

    @property
    def feedback(self) -> str | None:
        """The feedback for the next iteration (None when there is none)."""
        return self._feedback

    @property
    def messages(self) -> tuple[Message, ...] | None:
        """Explicit next input (from :meth:`continue_with_messages`), else None."""
        return self._messages

    @classmethod
    def stop(cls) -> LoopEvaluation:
        """Do not ask for another iteration (one shared instance)."""
        return cls._STOP

    @classmethod
    def continue_with_feedback(cls, feedback: str | None = None) -> LoopEvaluation:
        """Re-invoke the agent; empty or whitespace-only ``feedback`` becomes None."""
        if feedback is not None and not isinstance(feedback, str):
            msg = f"feedback must be a str or None, got {type(feedback).__name__}"
            raise TypeError(msg)
        if feedback is not None and not feedback.strip():
            feedback = None
        return cls(_PRIVATE, should_reinvoke=True, feedback=feedback, messages=None)

    @classmethod
    def continue_with_messages(cls, messages: Iterable[Message]) -> LoopEvaluation:
        """Re-invoke the agent with exactly ``messages`` (sent verbatim; may be empty)."""
        if messages is None:
            msg = "messages must not be None"
            raise TypeError(msg)
        if isinstance(messages, (str, Message)):
            msg = f"messages must be an iterable of Message, got {type(messages).__name__}"
            raise TypeError(msg)
        items = tuple(messages)
        for index, item in enumerate(items):
            if not isinstance(item, Message):
                msg = f"messages[{index}] must be a Message, got {type(item).__name__}"
                raise TypeError(msg)
        return cls(_PRIVATE, should_reinvoke=True, feedback=None, messages=items)

    def __repr__(self) -> str:
        if not self._should_reinvoke:
            return "LoopEvaluation.stop()"
        if self._messages is not None:
            return f"LoopEvaluation.continue_with_messages({list(self._messages)!r})"
        return f"LoopEvaluation.continue_with_feedback({self._feedback!r})"


LoopEvaluation._STOP = LoopEvaluation(_PRIVATE, should_reinvoke=False, feedback=None, messages=None)


class FeedbackView(Sequence["str | None"]):
    """A live read-only view of a loop's feedback log (one entry per re-invocation)."""

    __slots__ = ("_items",)

    def __init__(self, items: Sequence[str | None]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> str | None: ...
    @overload
    def __getitem__(self, index: slice) -> list[str | None]: ...
    def __getitem__(self, index: int | slice) -> str | list[str | None] | None:
        if isinstance(index, slice):
            return list(self._items[index])
        return self._items[index]

    def __iter__(self) -> Iterator[str | None]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment] # a live view of a mutable log is not hashable

    def __repr__(self) -> str:
        return f"FeedbackView({list(self._items)!r})"


class LoopContext:
    """What an evaluator sees: the agent, session, input and the latest response.

    One context per loop run, created after the first inner run and reused across
    iterations. The loop updates :attr:`session`, :attr:`iteration`,
    :attr:`last_response` and :attr:`feedback`; evaluators read them.
    :attr:`additional_properties` is a per-run dict evaluators may use for their state.
    The constructor is public so a custom evaluator can be unit-tested on its own.

    Args:
        agent: the wrapped (inner) agent; evaluators use ``agent.get_service(...)``.
        session: the session of the iteration that just completed.
        initial_messages: the caller's messages (this very object is kept).
        last_response: the response of the iteration that just completed.
        run_options: the options given to the loop's run, or None.

    Example:
        >>> import loopsim
        >>> agent = loopsim.Agent(loopsim.ScriptedChatClient([]), name="a")
        >>> ctx = loopsim.LoopContext(agent, agent.create_session(), [],
        ...                           loopsim.AgentResponse(loopsim.Message.assistant("hi")))
        >>> ctx.iteration, list(ctx.feedback)
        (0, [])
    """

    __slots__ = (
        "_additional_properties",
        "_agent",
        "_feedback",
        "_initial_messages",
        "_iteration",
        "_last_response",
        "_run_options",
        "_session",
    )

    def __init__(
        self,
        agent: Any,
        session: Any,
        initial_messages: Sequence[Message],
        last_response: AgentResponse,
        run_options: Any = None,
    ) -> None:
        for name, value in (
            ("agent", agent),
            ("session", session),
            ("initial_messages", initial_messages),
            ("last_response", last_response),
        ):
            if value is None:
                msg = f"{name} must not be None"
                raise TypeError(msg)
        self._agent = agent
        self._session = session
        self._initial_messages = initial_messages
        self._last_response = last_response
        self._run_options = run_options
        self._iteration = 0
        self._feedback: Sequence[str | None] = FeedbackView(())
        self._additional_properties: dict[str, Any] = {}

    @property
    def agent(self) -> Any:
        """The wrapped (inner) agent being looped."""
        return self._agent

    @property
    def session(self) -> Any:
        """The session of the iteration just completed (replaced in fresh-context mode)."""
        return self._session

    @property
    def initial_messages(self) -> Sequence[Message]:
        """The caller's messages for iteration 1 (the same object the loop was given)."""
        return self._initial_messages

    @property
    def run_options(self) -> Any:
        """The options passed to the loop run, or None."""
        return self._run_options

    @property
    def iteration(self) -> int:
        """Completed inner runs so far (1-based during a run; 0 for a new context)."""
        return self._iteration

    @property
    def last_response(self) -> AgentResponse:
        """The response of the iteration just completed (streaming: its merged updates)."""
        return self._last_response

    @property
    def feedback(self) -> Sequence[str | None]:
        """Read-only feedback log: one entry per re-invocation (None when it had none)."""
        return self._feedback

    @property
    def additional_properties(self) -> dict[str, Any]:
        """Per-run state shared by all evaluators of the run."""
        return self._additional_properties

    def __repr__(self) -> str:
        return (
            f"LoopContext(iteration={self._iteration}, feedback={list(self._feedback)!r}, "
            f"session={self._session!r})"
        )


class LoopEvaluator(abc.ABC):
    """Decides after each iteration whether a LoopAgent runs its agent again.

    Subclass and implement :meth:`evaluate`. Evaluators should keep no per-run state on
    ``self`` (one evaluator may serve concurrent runs); use
    ``context.additional_properties`` instead.

    Example:
        >>> import loopsim
        >>> class UntilThree(loopsim.LoopEvaluator):
        ...     async def evaluate(self, context):
        ...         if context.iteration < 3:
        ...             return loopsim.LoopEvaluation.continue_with_feedback("more")
        ...         return loopsim.LoopEvaluation.stop()
    """

    @abc.abstractmethod
    async def evaluate(self, context: LoopContext) -> LoopEvaluation:
        """Judge the iteration that just completed."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
