"""Built-in loop evaluators: delegate, completion marker and AI judge.

The default template sentences are loopsim's own; the placeholders and line formats
are upstream's, so a custom template written for the .NET evaluators works unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from .._agents._base import maybe_await
from .._messages import ChatOptions, Content, Message, TextContent
from .._wording import WORDING
from ._evaluation import LoopContext, LoopEvaluation, LoopEvaluator

__all__ = [
    "AIJudgeLoopEvaluator",
    "AIJudgeLoopEvaluatorOptions",
    "CompletionMarkerLoopEvaluator",
    "CompletionMarkerLoopEvaluatorOptions",
    "DelegateLoopEvaluator",
    "JudgeVerdict",
    "check_context",
    "required_service",
]

EvaluateFn = Callable[[LoopContext], LoopEvaluation | Awaitable[LoopEvaluation]]


S = TypeVar("S")


def check_context(context: LoopContext) -> None:
    """Built-in evaluators reject a None context, naming the argument."""
    if context is None:
        msg = "context must not be None"
        raise TypeError(msg)


def required_service(context: LoopContext, service_type: type[S], evaluator: str) -> S:
    """The looped agent's ``service_type`` (found through ``get_service``), or a
    RuntimeError saying that ``evaluator`` needs one (upstream: InvalidOperationException)."""
    check_context(context)
    service: S | None = context.agent.get_service(service_type)
    if service is None:
        name = service_type.__name__
        article = "an" if name[:1] in "AEIOU" else "a"
        msg = (
            f"{evaluator} needs {article} {name} on the agent, "
            f"but agent.get_service({name}) found none"
        )
        raise RuntimeError(msg)
    return service


class DelegateLoopEvaluator(LoopEvaluator):
    """An evaluator made from a function ``fn(context) -> LoopEvaluation`` (sync or async).

    Returns exactly what ``fn`` returns.

    Example:
        >>> import loopsim
        >>> until_3 = loopsim.DelegateLoopEvaluator(
        ...     lambda ctx: loopsim.LoopEvaluation.continue_with_feedback("more")
        ...     if ctx.iteration < 3 else loopsim.LoopEvaluation.stop()
        ... )
    """

    def __init__(self, fn: EvaluateFn) -> None:
        if fn is None:
            msg = "fn must not be None"
            raise TypeError(msg)
        if not callable(fn):
            msg = f"fn must be callable, got {type(fn).__name__}"
            raise TypeError(msg)
        self.fn = fn

    async def evaluate(self, context: LoopContext) -> LoopEvaluation:
        check_context(context)
        evaluation = await maybe_await(self.fn(context))
        if not isinstance(evaluation, LoopEvaluation):
            name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
            msg = f"{name} returned {type(evaluation).__name__}, expected a LoopEvaluation"
            raise TypeError(msg)
        return evaluation

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        return f"DelegateLoopEvaluator({name})"


@dataclass
class CompletionMarkerLoopEvaluatorOptions:
    """Options of :class:`CompletionMarkerLoopEvaluator`.

    Attributes:
        feedback_message_template: feedback when the marker is missing (None = default);
            ``{completion_marker}`` and ``{last_response}`` are replaced.
    """

    feedback_message_template: str | None = None


class CompletionMarkerLoopEvaluator(LoopEvaluator):
    """Continues until the agent's response contains ``completion_marker``.

    The match is a case-sensitive substring anywhere in the response text.

    Example:
        >>> import loopsim
        >>> done = loopsim.CompletionMarkerLoopEvaluator("DONE")
        >>> "'DONE'" in done.feedback_message_template
        True
    """

    COMPLETION_MARKER_PLACEHOLDER: ClassVar[str] = "{completion_marker}"
    LAST_RESPONSE_PLACEHOLDER: ClassVar[str] = "{last_response}"
    DEFAULT_FEEDBACK_MESSAGE_TEMPLATE: ClassVar[str] = WORDING[
        "evaluator.completion_marker.feedback"
    ]

    def __init__(
        self,
        completion_marker: str,
        options: CompletionMarkerLoopEvaluatorOptions | None = None,
    ) -> None:
        if completion_marker is None:
            msg = "completion_marker must not be None"
            raise ValueError(msg)
        if not isinstance(completion_marker, str):
            msg = f"completion_marker must be a str, got {type(completion_marker).__name__}"
            raise TypeError(msg)
        if not completion_marker.strip():
            msg = "completion_marker must not be empty or whitespace"
            raise ValueError(msg)
        self.completion_marker = completion_marker
        template = (options or CompletionMarkerLoopEvaluatorOptions()).feedback_message_template
        if template is None:
            template = self.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
        self.feedback_message_template = template.replace(
            self.COMPLETION_MARKER_PLACEHOLDER, completion_marker
        )

    async def evaluate(self, context: LoopContext) -> LoopEvaluation:
        check_context(context)
        text = context.last_response.text
        if self.completion_marker in text:
            return LoopEvaluation.stop()
        return LoopEvaluation.continue_with_feedback(
            self.feedback_message_template.replace(self.LAST_RESPONSE_PLACEHOLDER, text)
        )

    def __repr__(self) -> str:
        return f"CompletionMarkerLoopEvaluator({self.completion_marker!r})"


_UNSET: Any = object()


class JudgeVerdict(BaseModel):
    """The judge's structured verdict: ``{"answered": bool, "gapAnalysis": str}``.

    ``gap_analysis`` is also accepted in JSON; ``model_dump(by_alias=True)`` writes the
    upstream name ``gapAnalysis`` (.NET's). ``reasoning`` is the Python package's field
    (what :meth:`AgentLoopMiddleware.with_judge` feeds back).
    """

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    answered: bool = Field(description="True when the original request is fully addressed.")
    gap_analysis: str = Field(
        default="",
        validation_alias=AliasChoices("gapAnalysis", "gap_analysis"),
        serialization_alias="gapAnalysis",
        description="When not answered: what is still missing or incomplete.",
    )
    reasoning: str = Field(default="", description="A short justification of the verdict.")

    def __init__(self, answered: Any = _UNSET, gap_analysis: Any = _UNSET, **data: Any) -> None:
        # Positional as in the design's signature. pydantic also validates through a
        # custom __init__, passing the raw keys (``gapAnalysis``) in ``data``.
        if answered is not _UNSET:
            data["answered"] = answered
        if gap_analysis is not _UNSET:
            data["gap_analysis"] = gap_analysis
        super().__init__(**data)


@dataclass
class AIJudgeLoopEvaluatorOptions:
    """Options of :class:`AIJudgeLoopEvaluator` (None = the default; "" is used as given).

    Attributes:
        instructions: the judge's system prompt; ``{criteria}`` receives the criteria.
        criteria: requirements the response must meet (blank ones are dropped).
        feedback_message_template: feedback when not answered; ``{gap_analysis}`` is
            replaced by the judge's gap analysis.
    """

    instructions: str | None = None
    criteria: Iterable[str] | None = None
    feedback_message_template: str | None = None


_UNKNOWN_GAP = "<unknown>"
_JUDGE_HEADER = WORDING["evaluator.judge.header"]
_JUDGE_RESPONSE_HEADER = WORDING["evaluator.judge.response_header"]
_CRITERIA_HEADER = WORDING["evaluator.judge.criteria_header"]


class AIJudgeLoopEvaluator(LoopEvaluator):
    """Asks a judge model whether the original request is answered; continues if not.

    The judge gets a system message (the instructions) and one user message holding the
    original request's contents (images too) and the agent's latest response text, with
    ``response_format=JudgeVerdict``. A JSON verdict in the reply decides; otherwise the
    reply text is searched for ``VERDICT: MORE`` (wins) or ``VERDICT: DONE``.

    The judge sees the request and response each iteration and its gap analysis is fed
    back to the agent: treat it as part of the prompt-injection surface, and prefer a
    smaller ``max_iterations`` for judged loops.

    Example:
        >>> import loopsim
        >>> judge = loopsim.ScriptedChatClient(['{"answered": true}'])
        >>> evaluator = loopsim.AIJudgeLoopEvaluator(judge)
    """

    DONE_VERDICT_MARKER: ClassVar[str] = "VERDICT: DONE"
    MORE_VERDICT_MARKER: ClassVar[str] = "VERDICT: MORE"
    CRITERIA_PLACEHOLDER: ClassVar[str] = "{criteria}"
    GAP_ANALYSIS_PLACEHOLDER: ClassVar[str] = "{gap_analysis}"
    DEFAULT_INSTRUCTIONS: ClassVar[str] = WORDING["evaluator.judge.instructions"]
    DEFAULT_FEEDBACK_MESSAGE_TEMPLATE: ClassVar[str] = WORDING["evaluator.judge.feedback"]

    def __init__(self, client: Any, options: AIJudgeLoopEvaluatorOptions | None = None) -> None:
        if client is None:
            msg = "client must not be None"
            raise TypeError(msg)
        if not callable(getattr(client, "get_response", None)):
            msg = f"client must be a chat client (with get_response), got {type(client).__name__}"
            raise TypeError(msg)
        self.client = client
        options = options or AIJudgeLoopEvaluatorOptions()
        instructions = (
            self.DEFAULT_INSTRUCTIONS if options.instructions is None else options.instructions
        )
        self.instructions = instructions.replace(
            self.CRITERIA_PLACEHOLDER, _render_criteria(options.criteria)
        )
        self.feedback_message_template = (
            self.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
            if options.feedback_message_template is None
            else options.feedback_message_template
        )

    def judge_messages(self, context: LoopContext) -> list[Message]:
        """The request sent to the judge for ``context``."""
        contents: list[Content] = [TextContent(text=_JUDGE_HEADER)]
        for message in context.initial_messages:
            contents.extend(message.contents)
        contents.append(TextContent(text=_JUDGE_RESPONSE_HEADER + context.last_response.text))
        return [Message.system(self.instructions), Message("user", contents)]

    async def evaluate(self, context: LoopContext) -> LoopEvaluation:
        check_context(context)
        response = await self.client.get_response(
            self.judge_messages(context), options=ChatOptions(response_format=JudgeVerdict)
        )
        text = response.text
        verdict = parse_verdict(text)
        if verdict is not None:
            answered = verdict.answered
            gap = verdict.gap_analysis if verdict.gap_analysis.strip() else _UNKNOWN_GAP
        else:
            upper = text.upper()
            answered = self.MORE_VERDICT_MARKER not in upper and self.DONE_VERDICT_MARKER in upper
            gap = _UNKNOWN_GAP
        if answered:
            return LoopEvaluation.stop()
        return LoopEvaluation.continue_with_feedback(
            self.feedback_message_template.replace(self.GAP_ANALYSIS_PLACEHOLDER, gap)
        )

    def __repr__(self) -> str:
        return f"AIJudgeLoopEvaluator({self.client!r})"


def _render_criteria(criteria: Iterable[str] | None) -> str:
    if criteria is None:
        return ""
    if isinstance(criteria, str):
        criteria = [criteria]
    bullets = "".join(f"\n- {c}" for c in criteria if c is not None and c.strip())
    return _CRITERIA_HEADER + bullets if bullets else ""


def parse_verdict(text: str) -> JudgeVerdict | None:
    """The verdict in a judge's JSON reply, or None when the text is not one.

    Keys match case-insensitively (``answered``, ``gapAnalysis`` / ``gap_analysis``); a
    missing ``answered`` counts as not answered, as upstream's JSON defaults do.
    """
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    keys: dict[str, Any] = {str(k).lower().replace("_", ""): v for k, v in data.items()}
    answered = keys.get("answered", False)
    gap = keys.get("gapanalysis", "")
    if gap is None:
        gap = ""
    if not isinstance(answered, bool) or not isinstance(gap, str):
        return None
    try:
        return JudgeVerdict(answered=answered, gap_analysis=gap)
    except ValidationError:  # pragma: no cover - both fields were checked above
        return None
