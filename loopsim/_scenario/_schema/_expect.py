"""Expectations: what must hold when the steps are done."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ._base import Count, Flag, Name, Seconds, StrictModel, Text

# -- expectations ---------------------------------------------------------------------------


class RangeSpec(StrictModel):
    """A closed range of virtual seconds."""

    min: Seconds | None = None
    max: Seconds | None = None


class ResponseExpect(StrictModel):
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


class ExpectSpec(StrictModel):
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
