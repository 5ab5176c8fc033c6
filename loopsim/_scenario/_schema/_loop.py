"""The loop: evaluator specs (with their short forms) and loop options."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ._base import (
    BUILTIN_EVALUATORS,
    Flag,
    Name,
    PositiveCount,
    StrictModel,
    Text,
    describe,
    one_key,
)


class CompletionMarkerSpec(StrictModel):
    kind: Literal["completion_marker"] = Field("completion_marker", exclude=True)
    marker: Name = "DONE"
    feedback_message_template: Text | None = None


class BackgroundTaskCompletionSpec(StrictModel):
    kind: Literal["background_task_completion"] = Field("background_task_completion", exclude=True)
    feedback_message_template: Text | None = None


JudgeVerdictSpec = Literal["done", "more"] | dict[str, Any]


class AIJudgeSpec(StrictModel):
    """The judge model is scripted: one verdict per evaluation (``done`` / ``more`` /
    ``{answered: false, gap_analysis: "..."}``)."""

    kind: Literal["ai_judge"] = Field("ai_judge", exclude=True)
    verdicts: list[JudgeVerdictSpec]
    criteria: list[Text] = Field(default_factory=list)
    instructions: Text | None = None
    feedback_message_template: Text | None = None

    @field_validator("criteria", mode="before")
    @classmethod
    def _one_criterion(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("verdicts")
    @classmethod
    def _verdicts(cls, value: list[JudgeVerdictSpec]) -> list[JudgeVerdictSpec]:
        for verdict in value:
            if isinstance(verdict, dict):
                unknown = set(verdict) - {"answered", "gap_analysis"}
                if unknown or not isinstance(verdict.get("answered"), bool):
                    raise PydanticCustomError(
                        "verdict",
                        "expected each verdict to be done, more, or {{answered: true|false, "
                        "gap_analysis: text}}, got {got}",
                        {"got": describe(verdict)},
                    )
        return value


def _one_continue(value: Any) -> Any:
    if isinstance(value, dict) and len(value) != 1:
        raise PydanticCustomError(
            "decision",
            "expected a decision: continue, stop, or {{continue: feedback}} (one key), got {got}",
            {"got": describe(value)},
        )
    return value


DecisionSpec = (
    Literal["continue", "stop"]
    | Annotated[dict[Literal["continue"], Text], BeforeValidator(_one_continue)]
)


class DelegateSpec(StrictModel):
    """A scripted ``DelegateLoopEvaluator``: one decision per evaluation, fails loudly when
    the list runs out. ``{continue: "feedback"}`` continues with feedback."""

    kind: Literal["delegate"] = Field("delegate", exclude=True)
    decisions: list[DecisionSpec]


class CustomEvaluatorSpec(StrictModel):
    """A user evaluator ``module:Class``; its options are passed as keyword arguments."""

    kind: Literal["custom"] = Field("custom", exclude=True)
    import_path: Name
    options: dict[str, Any] = Field(default_factory=dict)


def _expand_evaluator(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value
    name, arg = one_key(value, "an evaluator")
    if ":" in name:
        if arg is not None and not isinstance(arg, dict):
            raise PydanticCustomError(
                "evaluator_options",
                "expected the options of evaluator {name} as a mapping, got {got}",
                {"name": name, "got": describe(arg)},
            )
        return {"custom": {"kind": "custom", "import_path": name, "options": arg or {}}}
    if name not in BUILTIN_EVALUATORS:
        raise PydanticCustomError(
            "unknown_evaluator",
            "unknown evaluator {name}; expected one of: {known}, or a class as module:Class",
            {"name": describe(name), "known": ", ".join(BUILTIN_EVALUATORS)},
        )
    if arg is None:
        arg = {}
    elif name == "completion_marker" and not isinstance(arg, dict):
        arg = {"marker": arg}
    elif not isinstance(arg, dict):
        raise PydanticCustomError(
            "evaluator_options",
            "expected the options of evaluator {name} as a mapping, got {got}",
            {"name": name, "got": describe(arg)},
        )
    return {name: {"kind": name, **arg}}


class EvaluatorSpec(StrictModel):
    """One entry of ``loop.evaluators`` (see the module docstring for the short forms)."""

    completion_marker: CompletionMarkerSpec | None = None
    background_task_completion: BackgroundTaskCompletionSpec | None = None
    ai_judge: AIJudgeSpec | None = None
    delegate: DelegateSpec | None = None
    custom: CustomEvaluatorSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _short(cls, value: Any) -> Any:
        return _expand_evaluator(value)

    @property
    def chosen(
        self,
    ) -> (
        CompletionMarkerSpec
        | BackgroundTaskCompletionSpec
        | AIJudgeSpec
        | DelegateSpec
        | CustomEvaluatorSpec
    ):
        for candidate in (
            self.completion_marker,
            self.background_task_completion,
            self.ai_judge,
            self.delegate,
            self.custom,
        ):
            if candidate is not None:
                return candidate
        raise AssertionError  # pragma: no cover - _expand_evaluator sets exactly one

    @property
    def label(self) -> str:
        chosen = self.chosen
        return chosen.import_path if isinstance(chosen, CustomEvaluatorSpec) else chosen.kind


class LoopSpec(StrictModel):
    """Wrap the parent in a LoopAgent (or, with ``parent.harness``, the harness loop).

    ``should_continue: background_tasks_running`` is the Python-style predicate loop of
    the harness (an AgentLoopMiddleware); it needs ``parent.harness: true``.
    """

    evaluators: list[EvaluatorSpec] = Field(default_factory=list)
    should_continue: Literal["background_tasks_running"] | None = None
    max_iterations: PositiveCount | None = None
    fresh_context_per_iteration: Flag = False
    on_behalf_of_author_name: Text | None = None
    exclude_on_behalf_of_messages: Flag = False
    non_streaming_returns_last_response_only: Flag = False

    @model_validator(mode="after")
    def _needs_a_rule(self) -> LoopSpec:
        if not self.evaluators and self.should_continue is None:
            raise PydanticCustomError(
                "loop_rule",
                "a loop needs at least one evaluator (or should_continue with parent.harness)",
            )
        return self
