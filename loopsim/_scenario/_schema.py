"""The scenario file format (version 1) as pydantic models.

Every model forbids unknown keys. Short forms (``- restart``, ``- completion_marker``,
``policy: echo``) are expanded by ``mode="before"`` validators into one tagged shape, so
pydantic's error locations follow the keys the user wrote — the idea of pydantic_evals'
evaluator specs (``- Name``, ``- Name: arg``, ``- Name: {k: v}``), written for our needs.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Strict,
    Tag,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = [
    "BACKENDS",
    "BUILTIN_EVALUATORS",
    "BUILTIN_POLICIES",
    "SCHEMA_VERSION",
    "AgentSpec",
    "ApprovalStep",
    "Backend",
    "EvaluatorSpec",
    "ExpectSpec",
    "LoopSpec",
    "ParentSpec",
    "PolicySpec",
    "RunStep",
    "Scenario",
    "StepSpec",
    "ToolCallSpec",
    "ToolSpec",
    "TurnSpec",
    "UsageSpec",
    "VarySettings",
    "VarySpec",
]

SCHEMA_VERSION = 1
BUILTIN_EVALUATORS = (
    "completion_marker",
    "background_task_completion",
    "ai_judge",
    "delegate",
)
BUILTIN_POLICIES = ("echo", "coordinator")
#: The async library a scenario runs on.
Backend = Literal["asyncio", "trio"]
BACKENDS: tuple[Backend, ...] = ("asyncio", "trio")
STOP_REASONS = ("evaluators_stopped", "max_iterations", "approval_pending", "error", "cancelled")
TASK_STATUSES = ("running", "completed", "failed", "lost")


def describe(value: Any) -> str:
    """A short rendering of a user value for error messages (``"soon"``, ``3``, a list)."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _non_negative(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PydanticCustomError(
            "non_negative_number", "expected a number >= 0, got {got}", {"got": describe(value)}
        )
    if value < 0:
        raise PydanticCustomError(
            "non_negative_number", "expected a number >= 0, got {got}", {"got": describe(value)}
        )
    return float(value)


def _positive(value: Any) -> Any:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise PydanticCustomError(
            "positive_number", "expected a number > 0, got {got}", {"got": describe(value)}
        )
    return float(value)


def _count(minimum: int) -> Any:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise PydanticCustomError(
                "count",
                "expected a whole number >= {minimum}, got {got}",
                {"minimum": minimum, "got": describe(value)},
            )
        return value

    return check


def _text(value: Any) -> Any:
    if not isinstance(value, str):
        raise PydanticCustomError("text", "expected text, got {got}", {"got": describe(value)})
    return value


Seconds = Annotated[float, BeforeValidator(_non_negative), Field(json_schema_extra={"minimum": 0})]
PositiveSeconds = Annotated[
    float, BeforeValidator(_positive), Field(json_schema_extra={"exclusiveMinimum": 0})
]
Count = Annotated[int, BeforeValidator(_count(0)), Field(json_schema_extra={"minimum": 0})]
PositiveCount = Annotated[int, BeforeValidator(_count(1)), Field(json_schema_extra={"minimum": 1})]
Text = Annotated[str, BeforeValidator(_text)]
Name = Annotated[str, BeforeValidator(_text), Field(min_length=1)]
Flag = Annotated[bool, Strict()]


class _Model(BaseModel):
    """Strict base: unknown keys are errors (with a did-you-mean in the message)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


def _one_key(value: Any, what: str) -> tuple[str, Any]:
    """Split a short form ``name`` / ``{name: arg}`` into (name, arg)."""
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if isinstance(key, str):
            return key, arg
    raise PydanticCustomError(
        "short_form",
        "expected {what}: a name, or a mapping with exactly one key (the name), got {got}",
        {"what": what, "got": describe(value)},
    )


# -- usage, tools, turns --------------------------------------------------------------------


class UsageSpec(_Model):
    """Token usage a scripted turn reports."""

    input_tokens: Count | None = None
    output_tokens: Count | None = None
    total_tokens: Count | None = None
    cached_input_tokens: Count | None = None
    reasoning_tokens: Count | None = None


class ToolCallSpec(_Model):
    """A function call the scripted model makes."""

    name: Name
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: Name | None = None


class ToolSpec(_Model):
    """A tool an agent offers: what it returns (or the error it raises), and approval."""

    result: Any = "ok"
    error: Text | None = None
    approval_required: Flag = False
    description: Text = ""
    parameters: list[Name] = Field(default_factory=list)


_TURN_KINDS = ("reply", "tool_call", "approval_request", "failure")


class TurnSpec(_Model):
    """One scripted model turn: exactly one of reply / tool_call / approval_request / failure.

    ``delay`` is the virtual time the model "thinks" before answering.
    """

    reply: Text | None = None
    tool_call: ToolCallSpec | list[ToolCallSpec] | None = None
    approval_request: ToolCallSpec | None = None
    failure: Text | None = None
    delay: Seconds = 0.0
    usage: UsageSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, value: Any) -> Any:
        if isinstance(value, str):  # `- "some reply"`
            return {"reply": value}
        return value

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> TurnSpec:
        given = [k for k in _TURN_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "turn_kind",
                "a turn needs exactly one of {kinds}; got {given}",
                {
                    "kinds": ", ".join(_TURN_KINDS),
                    "given": ", ".join(given) if given else "none",
                },
            )
        return self

    @property
    def kind(self) -> str:
        return next(k for k in _TURN_KINDS if getattr(self, k) is not None)

    @property
    def calls(self) -> list[ToolCallSpec]:
        if self.tool_call is None:
            return [] if self.approval_request is None else [self.approval_request]
        return self.tool_call if isinstance(self.tool_call, list) else [self.tool_call]


# -- policies -------------------------------------------------------------------------------


class EchoPolicy(_Model):
    """A child that answers ``{prefix}{input}`` after ``delay`` virtual seconds."""

    kind: Literal["echo"] = Field("echo", exclude=True)
    delay: Seconds = 0.0
    prefix: Text = "echo: "


class CoordinatorPolicy(_Model):
    """A parent that starts one task per child, collects results as they finish, clears them.

    ``detach``: answer right after starting the tasks (collect in a later run).
    ``restart_lost``: start a new task for each task found ``lost`` (recovery).
    ``max_waits``: give up waiting after this many wait timeouts (None: keep waiting).
    """

    kind: Literal["coordinator"] = Field("coordinator", exclude=True)
    children: list[Name] | None = None
    input: Text | None = None
    detach: Flag = False
    restart_lost: Flag = False
    max_waits: PositiveCount | None = None


def _policy_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        return value.get("kind") if isinstance(value.get("kind"), str) else None
    return getattr(value, "kind", None)


def _expand_policy(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value
    name, arg = _one_key(value, "a policy")
    if name not in BUILTIN_POLICIES:
        raise PydanticCustomError(
            "unknown_policy",
            "unknown policy {name}; expected one of: {known}",
            {"name": describe(name), "known": ", ".join(BUILTIN_POLICIES)},
        )
    if arg is None:
        arg = {}
    if not isinstance(arg, dict):
        raise PydanticCustomError(
            "policy_options",
            "expected the options of policy {name} as a mapping, got {got}",
            {"name": name, "got": describe(arg)},
        )
    return {name: {"kind": name, **arg}}


class PolicySpec(_Model):
    """``policy: echo`` / ``policy: {coordinator: {detach: true}}``."""

    echo: EchoPolicy | None = None
    coordinator: CoordinatorPolicy | None = None

    @model_validator(mode="before")
    @classmethod
    def _short(cls, value: Any) -> Any:
        return _expand_policy(value)

    @property
    def chosen(self) -> EchoPolicy | CoordinatorPolicy:
        chosen = self.echo or self.coordinator
        assert chosen is not None  # noqa: S101 - _expand_policy sets exactly one
        return chosen


class AgentSpec(_Model):
    """One agent: a script of model turns, or a built-in policy."""

    description: Text | None = None
    instructions: Text | None = None
    script: list[TurnSpec] | None = None
    policy: PolicySpec | None = None
    tools: dict[Name, ToolSpec] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _script_or_policy(self) -> AgentSpec:
        if (self.script is None) == (self.policy is None):
            raise PydanticCustomError(
                "script_or_policy",
                "an agent needs exactly one of `script` (a list of turns) or `policy` "
                "(one of: {known}); got {given}",
                {
                    "known": ", ".join(BUILTIN_POLICIES),
                    "given": "both" if self.script is not None else "neither",
                },
            )
        return self


# -- parent and loop ------------------------------------------------------------------------


class ParentSpec(_Model):
    """The agent the host talks to, its background agents and its session's history store."""

    agent: Name
    background_agents: list[Name] = Field(default_factory=list)
    wait_timeout: PositiveCount = 300
    history_store: Literal["in_memory", "service_conversation", "service_response_chain"] = (
        "in_memory"
    )
    harness: Flag = False
    background_agents_instructions: Text | None = None


class CompletionMarkerSpec(_Model):
    kind: Literal["completion_marker"] = Field("completion_marker", exclude=True)
    marker: Name = "DONE"
    feedback_message_template: Text | None = None


class BackgroundTaskCompletionSpec(_Model):
    kind: Literal["background_task_completion"] = Field("background_task_completion", exclude=True)
    feedback_message_template: Text | None = None


JudgeVerdictSpec = Literal["done", "more"] | dict[str, Any]


class AIJudgeSpec(_Model):
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


DecisionSpec = Literal["continue", "stop"] | dict[Literal["continue"], Text]


class DelegateSpec(_Model):
    """A scripted ``DelegateLoopEvaluator``: one decision per evaluation, fails loudly when
    the list runs out. ``{continue: "feedback"}`` continues with feedback."""

    kind: Literal["delegate"] = Field("delegate", exclude=True)
    decisions: list[DecisionSpec]


class CustomEvaluatorSpec(_Model):
    """A user evaluator ``module:Class``; its options are passed as keyword arguments."""

    kind: Literal["custom"] = Field("custom", exclude=True)
    import_path: Name
    options: dict[str, Any] = Field(default_factory=dict)


def _expand_evaluator(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value
    name, arg = _one_key(value, "an evaluator")
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


class EvaluatorSpec(_Model):
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


class LoopSpec(_Model):
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


# -- steps ----------------------------------------------------------------------------------


class RunStep(_Model):
    """``run: <input>`` — one call of the host into the parent (or the loop)."""

    run: Text


class AdvanceStep(_Model):
    """``advance: <seconds>`` — let virtual time pass (background tasks keep running)."""

    advance: Seconds


class ApprovalStep(_Model):
    """``approve: true|false`` — answer the pending approval requests of the last response."""

    approve: Flag


class RestartStep(_Model):
    """``restart`` — serialize the parent session, drop the runtime, restore (tasks → lost)."""

    restart: Literal[True] = True


class ReleaseStep(_Model):
    """``release_session`` — release the background runtime of the parent session."""

    release_session: Literal[True] = True
    cancel_running: Flag = True


_STEP_KEYS = ("run", "advance", "approve", "restart", "release_session")


def _step_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in _STEP_KEYS:
            if key in value:
                return key
        return None
    if isinstance(value, BaseModel):
        for key in _STEP_KEYS:
            if key in type(value).model_fields:
                return key
    return None


def _expand_step(value: Any) -> Any:
    if isinstance(value, str):
        if value in ("restart", "release_session"):
            return {value: True}
        raise PydanticCustomError(
            "step",
            "unknown step {got}; expected one of: run: <input>, advance: <seconds>, "
            "approve: true|false, restart, release_session",
            {"got": describe(value)},
        )
    if isinstance(value, dict) and _step_tag(value) is None:
        raise PydanticCustomError(
            "step",
            "unknown step {got}; expected one of: run: <input>, advance: <seconds>, "
            "approve: true|false, restart, release_session",
            {"got": describe(next(iter(value), value))},
        )
    if not isinstance(value, (dict, BaseModel)):
        raise PydanticCustomError("step", "expected a step, got {got}", {"got": describe(value)})
    return value


StepSpec = Annotated[
    Annotated[
        Annotated[RunStep, Tag("run")]
        | Annotated[AdvanceStep, Tag("advance")]
        | Annotated[ApprovalStep, Tag("approve")]
        | Annotated[RestartStep, Tag("restart")]
        | Annotated[ReleaseStep, Tag("release_session")],
        Discriminator(_step_tag),
    ],
    BeforeValidator(_expand_step),
]


# -- expectations ---------------------------------------------------------------------------


class RangeSpec(_Model):
    """A closed range of virtual seconds."""

    min: Seconds | None = None
    max: Seconds | None = None


class ResponseExpect(_Model):
    """What the last response's text must be, or contain (every item, in order)."""

    equals: Text | None = None
    contains: list[Text] = Field(default_factory=list)
    not_contains: list[Text] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _contains_one(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for key in ("contains", "not_contains"):
                if isinstance(value.get(key), str):
                    value = {**value, key: [value[key]]}
        return value


class ExpectSpec(_Model):
    """What must hold when the steps are done (each checked key may fail on its own line)."""

    iterations: Count | None = None
    stop_reason: (
        Literal["evaluators_stopped", "max_iterations", "approval_pending", "error", "cancelled"]
        | None
    ) = None
    calls: dict[Name, Count] = Field(default_factory=dict)
    tasks: dict[int, Literal["running", "completed", "failed", "lost"]] = Field(
        default_factory=dict
    )
    elapsed: Seconds | RangeSpec | None = None
    response: ResponseExpect | None = None
    error: Text | None = None
    transcript: Literal["snapshot"] | None = None
    unused_turns: Flag = False
    invariants: Flag = True


# -- vary: property scenarios ---------------------------------------------------------------


def _between(value: Any) -> Any:
    if not isinstance(value, list) or len(value) != 2:
        raise PydanticCustomError(
            "between", "expected [low, high] (two numbers), got {got}", {"got": describe(value)}
        )
    for bound in value:
        if (
            isinstance(bound, bool)
            or not isinstance(bound, (int, float))
            or not math.isfinite(bound)
        ):
            raise PydanticCustomError(
                "between",
                "expected [low, high] (two numbers), got {got} in it",
                {"got": describe(bound)},
            )
    if value[0] > value[1]:
        raise PydanticCustomError(
            "between",
            "inverted range [{low}, {high}]: expected low <= high",
            {"low": value[0], "high": value[1]},
        )
    return value


def _choices(value: Any) -> Any:
    if isinstance(value, list) and not value:
        raise PydanticCustomError(
            "one_of", "empty choice list: expected at least one value to choose from"
        )
    return value


_VARY_KINDS = ("between", "one_of", "list_of")


class VarySpec(_Model):
    """How one value varies: exactly one of ``between: [low, high]`` (whole numbers when
    both bounds are, else any number in the closed range), ``one_of: [choices...]`` (any
    YAML values) or ``list_of: <spec>`` (a list of ``min_size``..``max_size`` drawn items).
    """

    between: (
        Annotated[
            list[float | int],
            BeforeValidator(_between),
            Field(json_schema_extra={"minItems": 2, "maxItems": 2}),
        ]
        | None
    ) = None
    one_of: (
        Annotated[list[Any], BeforeValidator(_choices), Field(json_schema_extra={"minItems": 1})]
        | None
    ) = None
    list_of: VarySpec | None = None
    min_size: Count = 0
    max_size: Count | None = None

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> VarySpec:
        given = [k for k in _VARY_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "vary_kind",
                "a vary entry needs exactly one of {kinds}; got {given}",
                {"kinds": ", ".join(_VARY_KINDS), "given": ", ".join(given) or "none"},
            )
        if self.list_of is None and (self.min_size or self.max_size is not None):
            raise PydanticCustomError("vary_sizes", "min_size and max_size go with list_of only")
        if self.max_size is not None and self.max_size < self.min_size:
            raise PydanticCustomError(
                "vary_sizes",
                "inverted sizes: max_size {high} < min_size {low}",
                {"low": self.min_size, "high": self.max_size},
            )
        return self

    @property
    def largest(self) -> int:
        """The longest list ``list_of`` draws (``min_size + 5`` unless ``max_size`` says)."""
        return self.min_size + 5 if self.max_size is None else self.max_size


class VarySettings(_Model):
    """Hypothesis settings of a ``vary:`` scenario (the active profile gives the rest)."""

    max_examples: PositiveCount | None = None


class Scenario(_Model):
    """A scenario file: agents, the parent and its loop, the host's steps, expectations.

    Example (YAML)::

        version: 1
        agents:
          writer:
            script:
              - reply: "draft"
              - reply: "final DONE"
        parent: {agent: writer}
        loop:
          evaluators: [completion_marker]
        steps:
          - run: "write it"
        expect:
          iterations: 2
          stop_reason: evaluators_stopped
    """

    version: Literal[1]
    name: Name | None = None
    description: Text | None = None
    seed: Count = 0
    backend: Backend = "asyncio"
    streaming: Flag = False
    #: make ``datetime.now()``/``time.time()`` follow the virtual clock in this run
    #: (freezegun; about 4 ms per run, so off unless the code under test reads them)
    wall_clock: Flag = False
    agents: dict[Name, AgentSpec] = Field(min_length=1)
    parent: ParentSpec
    loop: LoopSpec | None = None
    steps: list[StepSpec] = Field(min_length=1)
    expect: ExpectSpec = Field(default_factory=ExpectSpec)
    #: dotted path into this document → how that value varies (a property scenario)
    vary: dict[Name, VarySpec] = Field(default_factory=dict)
    #: expectations every draw (and the file as written) must meet
    always: ExpectSpec | None = None
    vary_settings: VarySettings | None = None
    #: for each same-instant tie of background tasks, in order: the index (in requested
    #: order) of the task the parent observes first; later ties follow the seeded rng.
    #: ``vary:`` draws ignore it: they draw every tie.
    ties: list[Count] = Field(default_factory=list)

    def agent(self, name: str) -> AgentSpec:
        """The agent spec named ``name`` (exact spelling)."""
        return self.agents[name]
