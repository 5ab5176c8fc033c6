"""What each event kind's ``data`` must hold when a transcript is read (a model per kind).

The reader checks every event of a known kind against its model, so a file that passes
can be rendered, diffed and replayed without surprises (a ``messages: 5`` or a message
given as a string is refused with its location instead of crashing ``show``). The
models only *check*: the event keeps its JSON data exactly as read, so a re-written file
is byte-identical. Fields the emitters do not always send are optional; keys the models
do not name are allowed (a newer emitter may add one) and must still be JSON.

Unknown kinds are accepted with any JSON object as data: the trace is an open seam
(``loopsim._trace.emit``), and the renderers show unknown kinds generically.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .._messages import Message, Usage

__all__ = ["KIND_MODELS", "check_data", "check_messages"]

_CONFIG = ConfigDict(extra="allow", strict=True, frozen=True)


class _Agentful(BaseModel):
    model_config = _CONFIG
    agent: str
    session: str | None = None


class SessionEvent(_Agentful):
    """``session_created`` / ``session_restored``."""


class ModelRequest(_Agentful):
    """``model_request``: offered tools, instructions (messages are checked apart), and
    the service-side conversation it continues (only when there is one)."""

    tools: list[str] = []
    instructions: str | None = None
    conversation_id: str | None = None


class ModelResponse(_Agentful):
    """``model_response``: usage, response id and, only when the answer set them, its
    other response-level fields (messages are checked apart)."""

    usage: dict[str, Any] | None = None
    response_id: str | None = None
    finish_reason: str | None = None
    conversation_id: str | None = None
    continuation_token: dict[str, Any] | None = None
    model: str | None = None
    created_at: str | None = None
    additional_properties: dict[str, Any] = {}


class ModelError(_Agentful):
    """``model_error``: the exception class name and its text."""

    error: str
    message: str = ""


class ToolCall(_Agentful):
    """``tool_call``."""

    call_id: str
    name: str
    arguments: Any = None


class ToolResult(_Agentful):
    """``tool_result``: ``error_type`` (the exception's class name) only when the tool
    itself raised; ``error`` is then the exception's text."""

    call_id: str
    name: str
    result: Any = None
    error: Any = None
    error_type: str | None = None


class HostedTool(_Agentful):
    """``hosted_tool``: a hosted tool the model's service ran (call and result)."""

    call_id: str
    name: str
    arguments: Any = None
    result: Any = None


class _Loopful(BaseModel):
    model_config = _CONFIG
    loop: str
    iteration: int


class LoopIterationStart(_Loopful):
    """``loop_iteration_start``."""


class EvaluatorDecision(_Loopful):
    """``evaluator_decision``."""

    index: int
    evaluator: str
    decision: str
    feedback: Any = None


class LoopStop(BaseModel):
    """``loop_stop``."""

    model_config = _CONFIG
    loop: str
    reason: str
    iterations: int


class TaskStatus(BaseModel):
    """``task_status``."""

    model_config = _CONFIG
    provider: str | None = None
    session: str | None = None
    task_id: int | str
    agent: str
    description: Any = None
    status: str
    result: Any = None
    error: Any = None


class TaskFinished(BaseModel):
    """``task_finished``: a child run ended (``outcome``), at that instant."""

    model_config = _CONFIG
    provider: str | None = None
    session: str | None = None
    task_id: int | str
    agent: str | None = None
    description: Any = None
    outcome: str
    result: Any = None
    error: Any = None


class ProcessRestart(BaseModel):
    """``process_restart`` (no data)."""

    model_config = _CONFIG


class ClockJump(BaseModel):
    """``clock_jump``: virtual seconds before and after."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True, populate_by_name=True)
    start: float | None = None
    end: float | None = None


#: The model each known kind's data is checked against.
KIND_MODELS: dict[str, type[BaseModel]] = {
    "session_created": SessionEvent,
    "session_restored": SessionEvent,
    "model_request": ModelRequest,
    "model_response": ModelResponse,
    "model_error": ModelError,
    "tool_call": ToolCall,
    "tool_result": ToolResult,
    "hosted_tool": HostedTool,
    "loop_iteration_start": LoopIterationStart,
    "evaluator_decision": EvaluatorDecision,
    "loop_stop": LoopStop,
    "task_status": TaskStatus,
    "task_finished": TaskFinished,
    "process_restart": ProcessRestart,
    "clock_jump": ClockJump,
}


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _first_problem(exc: ValidationError, prefix: str) -> str:
    err = exc.errors(include_url=False)[0]
    more = exc.error_count() - 1
    tail = f" (and {more} more)" if more > 0 else ""
    return f"{prefix}{_where(tuple(err['loc']))}: {err['msg']}{tail}"


def check_data(kind: str, data: dict[str, Any]) -> str | None:
    """None when ``data`` fits ``kind``'s model, else the first problem (``.field: why``)."""
    model = KIND_MODELS.get(kind)
    if model is None:
        return None
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return _first_problem(exc, "data")
    if kind == "clock_jump":
        for key in ("from", "to"):
            value = data.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                return f"data.{key}: expected a number of virtual seconds, got {value!r}"
    if kind == "model_response":
        usage = data.get("usage")
        if usage is not None:
            try:
                Usage.model_validate(usage)
            except ValidationError as exc:
                return _first_problem(exc, "data.usage")
    return None


def check_messages(messages: list[Any], where: str, *, skip_refs: bool = False) -> str | None:
    """None when every item is a message in JSON form, else the first problem.

    With ``skip_refs``, version 2 references (objects with ``ref`` and no ``role``) are
    left to the reference resolver.
    """
    for index, message in enumerate(messages):
        if skip_refs and isinstance(message, dict) and "ref" in message and "role" not in message:
            continue
        at = f"{where}[{index}]"
        if not isinstance(message, dict):
            return f"{at}: expected a message object, got {type(message).__name__}"
        if not isinstance(message.get("role"), str):
            return f"{at}.role: expected a string, got {_got(message.get('role'))}"
        contents = message.get("contents", [])
        if not isinstance(contents, list):
            return f"{at}.contents: expected a list of contents, got {_got(contents)}"
        for position, content in enumerate(contents):
            if not isinstance(content, dict) or not isinstance(content.get("type"), str):
                return f"{at}.contents[{position}]: expected an object with a 'type' string"
        try:
            Message.model_validate(message)
        except ValidationError as exc:
            return _first_problem(exc, at)
        except (TypeError, ValueError) as exc:  # Message's own __init__ checks
            return f"{at}: not a message: {exc}"
    return None


def _got(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__
