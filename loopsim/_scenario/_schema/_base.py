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


#: The largest number of seconds a scenario may give (about 31,700 years): far past any
#: virtual-time limit, small enough that adding it to a clock never overflows.
MAX_SECONDS = 1e12
#: The largest whole number a count (or seed) may be: 2**53, the last one a float holds exactly.
MAX_COUNT = 2**53


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, or None (not a number, a bool, NaN, infinite, or an
    integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _seconds(value: Any, *, code: str, bound: str, positive: bool) -> float:
    number = finite_number(value)
    if number is None or number < 0 or (positive and number == 0):
        raise PydanticCustomError(
            code, "expected a number {bound}, got {got}", {"bound": bound, "got": describe(value)}
        )
    if number > MAX_SECONDS:
        raise PydanticCustomError(
            code,
            "expected a number {bound} of at most {most:g} seconds, got {got}",
            {"bound": bound, "most": MAX_SECONDS, "got": describe(value)},
        )
    return number


def _non_negative(value: Any) -> Any:
    return _seconds(value, code="non_negative_number", bound=">= 0", positive=False)


def _positive(value: Any) -> Any:
    return _seconds(value, code="positive_number", bound="> 0", positive=True)


def _count(minimum: int) -> Any:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise PydanticCustomError(
                "count",
                "expected a whole number >= {minimum}, got {got}",
                {"minimum": minimum, "got": describe(value)},
            )
        if value > MAX_COUNT:
            raise PydanticCustomError(
                "count",
                "expected a whole number >= {minimum} of at most 2**53, got {got}",
                {"minimum": minimum, "got": describe(value)},
            )
        return value

    return check


def _text(value: Any) -> Any:
    if not isinstance(value, str):
        raise PydanticCustomError("text", "expected text, got {got}", {"got": describe(value)})
    return value


Seconds = Annotated[
    float,
    BeforeValidator(_non_negative),
    Field(json_schema_extra={"minimum": 0, "maximum": MAX_SECONDS}),
]
PositiveSeconds = Annotated[
    float,
    BeforeValidator(_positive),
    Field(json_schema_extra={"exclusiveMinimum": 0, "maximum": MAX_SECONDS}),
]
Count = Annotated[
    int, BeforeValidator(_count(0)), Field(json_schema_extra={"minimum": 0, "maximum": MAX_COUNT})
]
PositiveCount = Annotated[
    int, BeforeValidator(_count(1)), Field(json_schema_extra={"minimum": 1, "maximum": MAX_COUNT})
]
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
