"""Agents: usage, tool calls, tools, scripted turns, built-in policies, the parent."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ._base import (
    BUILTIN_POLICIES,
    Count,
    Flag,
    Name,
    PositiveCount,
    Seconds,
    StrictModel,
    Text,
    describe,
    one_key,
)
from ._faults import FAULT_KEYS, ModelFaultSpec, ScriptFaultSpec, ToolFaultSpec

# -- usage, tools, turns --------------------------------------------------------------------


class UsageSpec(StrictModel):
    """Token usage a scripted turn reports."""

    input_tokens: Count | None = None
    output_tokens: Count | None = None
    total_tokens: Count | None = None
    cached_input_tokens: Count | None = None
    reasoning_tokens: Count | None = None


def _json_data(value: Any) -> Any:
    """Tool arguments and results are JSON data: no NaN or infinity (JSON has none, and a
    NaN equals nothing, not even its own replay)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise PydanticCustomError(
                "json_data",
                "expected JSON data, got {got} in it (JSON has no NaN or infinity)",
                {"got": describe(item)},
            )
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return value


JsonData = Annotated[Any, AfterValidator(_json_data)]


class ToolCallSpec(StrictModel):
    """A function call the scripted model makes."""

    name: Name
    arguments: dict[str, JsonData] = Field(default_factory=dict)
    call_id: Name | None = None


class HostedCallSpec(StrictModel):
    """A hosted tool the model's service runs in this turn, and what it returned.

    The service answers with the call and its result together, so ``result`` is required:
    a hosted call the script never answers is a mistake, not a silent drop.
    """

    tool: Name
    arguments: dict[str, JsonData] = Field(default_factory=dict)
    result: JsonData = None
    call_id: Name | None = None

    @model_validator(mode="before")
    @classmethod
    def _answered(cls, value: Any) -> Any:
        if isinstance(value, dict) and "result" not in value:
            raise PydanticCustomError(
                "hosted_result",
                "the hosted call of {tool} has no `result`: the service returns what the "
                "hosted tool found in the same answer, so the script must say it",
                {"tool": describe(value.get("tool", "?"))},
            )
        return value


def _hosted_declaration(value: Any) -> Any:
    """``- web_search`` is ``- {type: web_search}``; a mapping needs a hosted ``type``."""
    if isinstance(value, str):
        value = {"type": value}
    if isinstance(value, dict):
        kind = value.get("type")
        if not isinstance(kind, str) or not kind or kind == "function":
            raise PydanticCustomError(
                "hosted_type",
                "a hosted tool needs its `type` (such as web_search, file_search, "
                "code_interpreter, image_generation, mcp), got {got}",
                {"got": describe(kind)},
            )
    return value


HostedToolDeclaration = Annotated[dict[str, JsonData], BeforeValidator(_hosted_declaration)]


def hosted_name(declaration: dict[str, Any]) -> str:
    """A hosted tool's name, as the model sees it: its ``name``, else its ``type``."""
    name = declaration.get("name")
    return name if isinstance(name, str) and name else str(declaration["type"])


class ToolSpec(StrictModel):
    """A tool an agent offers: what it returns (or the error it raises), and approval."""

    result: JsonData = "ok"
    error: Text | None = None
    approval_required: Flag = False
    description: Text = ""
    parameters: list[Name] = Field(default_factory=list)
    #: tool faults (``error``, ``delay``, ``hang``, ``wrong_result``) with when/times
    faults: list[ToolFaultSpec] = Field(default_factory=list)


_TURN_KINDS = ("reply", "tool_call", "approval_request", "failure", "fault")
#: keys of a script entry that stay the turn's own when it is a ``fault:`` entry
_TURN_KEYS = ("usage",)


#: the response fields a turn may set on its answer (not on a failure or fault)
_RESPONSE_KEYS = (
    "response_id",
    "conversation_id",
    "model",
    "created_at",
    "finish_reason",
    "continuation_token",
    "additional_properties",
)


class TurnSpec(StrictModel):
    """One scripted model turn: exactly one of reply / tool_call / approval_request / failure.

    ``delay`` is the virtual time the model "thinks" before answering. ``response_id``,
    ``conversation_id``, ``model``, ``created_at`` (text), ``finish_reason``,
    ``continuation_token`` (a JSON object: a background response in progress) and
    ``additional_properties`` set the answer's own fields (not a failure's or a fault's).
    """

    reply: Text | None = None
    tool_call: ToolCallSpec | list[ToolCallSpec] | None = None
    approval_request: ToolCallSpec | None = None
    failure: Text | None = None
    #: a model fault on this turn: ``- fault: rate_limit`` with its options beside it
    fault: ScriptFaultSpec | None = None
    delay: Seconds = 0.0
    usage: UsageSpec | None = None
    #: hosted tools the service ran in this turn, beside the reply or the tool calls
    hosted_call: HostedCallSpec | list[HostedCallSpec] | None = None
    response_id: Name | None = None
    conversation_id: Name | None = None
    model: Name | None = None
    created_at: Name | None = None
    finish_reason: Name | None = None
    continuation_token: dict[str, JsonData] | None = None
    additional_properties: dict[str, JsonData] | None = None

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, value: Any) -> Any:
        if isinstance(value, str):  # `- "some reply"`
            return {"reply": value}
        if isinstance(value, dict) and "fault" in value and not isinstance(value["fault"], dict):
            # `- fault: rate_limit` + `retry_after: 30`: the options sit beside the kind
            fault = {k: v for k, v in value.items() if k not in _TURN_KEYS}
            unknown = [k for k in fault if k not in FAULT_KEYS]
            if unknown:
                raise PydanticCustomError(
                    "fault_key",
                    "unknown key {key} in a fault entry; its keys: {known}",
                    {"key": describe(unknown[0]), "known": ", ".join((*FAULT_KEYS, *_TURN_KEYS))},
                )
            return {**{k: value[k] for k in _TURN_KEYS if k in value}, "fault": fault}
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

    @model_validator(mode="after")
    def _hosted_beside_an_answer(self) -> TurnSpec:
        if self.hosted_call is not None and self.kind not in ("reply", "tool_call"):
            raise PydanticCustomError(
                "hosted_kind",
                "a hosted_call comes with a reply or a tool_call (the service's answer holds "
                "them together), not with {kind}",
                {"kind": self.kind},
            )
        return self

    @model_validator(mode="after")
    def _fields_need_an_answer(self) -> TurnSpec:
        if self.failure is not None or self.fault is not None:
            given = [k for k in _RESPONSE_KEYS if getattr(self, k) is not None]
            if given:
                raise PydanticCustomError(
                    "turn_response_field",
                    "{field} sets a field of the model's answer, but a {kind} turn has none",
                    {"field": given[0], "kind": self.kind},
                )
        return self

    @property
    def kind(self) -> str:
        return next(k for k in _TURN_KINDS if getattr(self, k) is not None)

    @property
    def hosted_calls(self) -> list[HostedCallSpec]:
        if self.hosted_call is None:
            return []
        return self.hosted_call if isinstance(self.hosted_call, list) else [self.hosted_call]

    @property
    def response_fields(self) -> dict[str, Any]:
        """The answer's fields this turn sets (only the ones given)."""
        values = {k: getattr(self, k) for k in _RESPONSE_KEYS}
        return {k: v for k, v in values.items() if v is not None}

    @property
    def calls(self) -> list[ToolCallSpec]:
        if self.tool_call is None:
            return [] if self.approval_request is None else [self.approval_request]
        return self.tool_call if isinstance(self.tool_call, list) else [self.tool_call]


# -- policies -------------------------------------------------------------------------------


class EchoPolicy(StrictModel):
    """A child that answers ``{prefix}{input}`` after ``delay`` virtual seconds."""

    kind: Literal["echo"] = Field("echo", exclude=True)
    delay: Seconds = 0.0
    prefix: Text = "echo: "


class CoordinatorPolicy(StrictModel):
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


def _expand_policy(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value
    name, arg = one_key(value, "a policy")
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


class PolicySpec(StrictModel):
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


#: Upstream's default of ``function_invocation_configuration["max_iterations"]``.
DEFAULT_MAX_TOOL_ITERATIONS = 40


class FunctionInvocationSpec(StrictModel):
    """The agent's tool loop, named as upstream's ``function_invocation_configuration``.

    ``max_iterations``: model turns with tools offered in one run (upstream's default 40);
    past it one last request lets no tool be called (tool_choice "none").
    """

    max_iterations: PositiveCount = DEFAULT_MAX_TOOL_ITERATIONS


def _import_path(value: Any) -> Any:
    """``module:function``: a dotted module name, a colon, a (dotted) attribute name."""
    if not isinstance(value, str):
        raise PydanticCustomError("text", "expected text, got {got}", {"got": describe(value)})
    module, colon, attr = value.partition(":")
    parts = [*module.split("."), *attr.split(".")]
    if not colon or not all(part.isidentifier() for part in parts):
        raise PydanticCustomError(
            "import_path",
            "expected an import path module:function (a dotted module name, a colon, then "
            "the function's name), got {got}",
            {"got": describe(value)},
        )
    return value


ImportPath = Annotated[
    str,
    BeforeValidator(_import_path),
    Field(json_schema_extra={"pattern": r"^[^:\s]+:[^:\s]+$"}),
]


class AgentSpec(StrictModel):
    """One agent: a script of model turns, a built-in policy, or a real model.

    ``factory: "module:function"`` builds the user's own agent around that model:
    ``function(client, name)`` receives the scripted chat client (adapted for the engine)
    and the agent's name, and returns the agent (its tools, instructions, middleware...).

    ``model: "module:function"`` makes the agent talk to a real model: ``function(name)``
    returns a chat client (loopsim's or agent_framework's). Such a scenario replays from
    its cassette (``cassettes/<scenario>.transcript.json``) and records it on request.
    """

    description: Text | None = None
    instructions: Text | None = None
    script: list[TurnSpec] | None = None
    policy: PolicySpec | None = None
    tools: dict[Name, ToolSpec] = Field(default_factory=dict)
    #: hosted tools the agent offers, run by the model's service: ``- web_search`` or
    #: a vendor declaration ``- {type: file_search, vector_store_ids: [vs_1]}``
    hosted_tools: list[HostedToolDeclaration] = Field(default_factory=list)
    factory: Name | None = None
    function_invocation_configuration: FunctionInvocationSpec | None = None
    model: ImportPath | None = None
    #: model-call faults of this agent (a child's too: fail, hang, lost) with when/times
    faults: list[ModelFaultSpec] = Field(default_factory=list)

    @field_validator("model")
    @classmethod
    def _model_alone(cls, value: str | None, info: ValidationInfo) -> str | None:
        given = [k for k in ("script", "policy") if info.data.get(k) is not None]
        if value is not None and given:
            raise PydanticCustomError(
                "model_and_script",
                "`model` (a real model, replayed from the scenario's cassette) replaces "
                "`script` and `policy`; this agent also has {given}",
                {"given": " and ".join(f"`{k}`" for k in given)},
            )
        return value

    @model_validator(mode="after")
    def _script_or_policy(self) -> AgentSpec:
        if self.model is not None:
            return self
        if (self.script is None) == (self.policy is None):
            raise PydanticCustomError(
                "script_or_policy",
                "an agent needs exactly one of `script` (a list of turns), `policy` "
                "(one of: {known}) or `model` (module:function of a real model); got {given}",
                {
                    "known": ", ".join(BUILTIN_POLICIES),
                    "given": "both" if self.script is not None else "neither",
                },
            )
        return self


# -- parent and loop ------------------------------------------------------------------------


class ParentSpec(StrictModel):
    """The agent the host talks to, its background agents and its session's history store."""

    agent: Name
    background_agents: list[Name] = Field(default_factory=list)
    wait_timeout: PositiveCount = 300
    history_store: Literal["in_memory", "service_conversation", "service_response_chain"] = (
        "in_memory"
    )
    harness: Flag = False
    background_agents_instructions: Text | None = None
