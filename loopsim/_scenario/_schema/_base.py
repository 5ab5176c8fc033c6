"""Shared pieces of the scenario format: constants, ``describe``, value types, the strict base."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict
from pydantic_core import PydanticCustomError

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
#: What runs the scenario: loopsim's own implementation, or the real agent_framework package.
Engine = Literal["loopsim", "agent_framework"]
ENGINES: tuple[Engine, ...] = ("loopsim", "agent_framework")
STOP_REASONS = ("evaluators_stopped", "max_iterations", "approval_pending", "error", "cancelled")
TASK_STATUSES = ("running", "completed", "failed", "lost", "cleared")


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


class StrictModel(BaseModel):
    """Strict base: unknown keys are errors (with a did-you-mean in the message)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


def one_key(value: Any, what: str) -> tuple[str, Any]:
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
