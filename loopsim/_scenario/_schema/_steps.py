"""The host's steps: run, advance, approve, restart, release_session."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Discriminator, Tag, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from ._base import Flag, Seconds, StrictModel, Text, describe
from ._expect import StepExpect

# -- steps ----------------------------------------------------------------------------------


def _OR_AN_INSTANT(key: str, **more: Any) -> dict[str, Any]:  # noqa: N802 - reads as a constant
    """JSON Schema of a step value that may also be written as ``{<key>: <instant>}``."""
    base: dict[str, Any] = {"type": "number", "minimum": 0} if key == "until" else {"const": True}
    instant = {"type": "number", "minimum": 0}
    return {
        "anyOf": [
            base,
            {
                "type": "object",
                "properties": {key: instant, **more},
                "required": [key],
                "additionalProperties": False,
            },
        ]
    }


class RunStep(StrictModel):
    """``run: <input>`` — one call of the host into the parent (or the loop).

    ``expect:`` checks what holds when this call has returned.
    """

    run: Text
    expect: StepExpect | None = None


class AdvanceStep(StrictModel):
    """``advance: <seconds>`` — let virtual time pass (background tasks keep running);
    ``advance: {until: <instant>}`` — until that instant, even while a call is in flight."""

    advance: Annotated[Seconds | None, WithJsonSchema(_OR_AN_INSTANT("until"))] = None
    until: Seconds | None = None

    @model_validator(mode="before")
    @classmethod
    def _until(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("advance"), dict):
            return {**value["advance"], "advance": None, **_rest(value, "advance")}
        return value

    @model_validator(mode="after")
    def _one(self) -> AdvanceStep:
        if (self.advance is None) == (self.until is None):
            raise PydanticCustomError(
                "advance",
                "expected advance: <seconds> or advance: {{until: <instant>}}",
            )
        return self

    @property
    def at(self) -> float | None:
        return self.until


class ApprovalStep(StrictModel):
    """``approve: true|false`` — answer the pending approval requests of the last response."""

    approve: Flag
    expect: StepExpect | None = None


class RestartStep(StrictModel):
    """``restart`` — serialize the parent session, drop the runtime, restore (tasks → lost).

    ``restart: {at: <instant>}`` happens at that virtual instant, during a call in flight.
    """

    restart: Annotated[Literal[True], WithJsonSchema(_OR_AN_INSTANT("at"))] = True
    at: Seconds | None = None

    @model_validator(mode="before")
    @classmethod
    def _at(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("restart"), dict):
            return {**value["restart"], "restart": True, **_rest(value, "restart")}
        return value


class ReleaseStep(StrictModel):
    """``release_session`` — release the background runtime of the parent session.

    ``release_session: {at: <instant>, cancel_running: false}`` is the mapping form.
    """

    release_session: Annotated[
        Literal[True], WithJsonSchema(_OR_AN_INSTANT("at", cancel_running={"type": "boolean"}))
    ] = True
    cancel_running: Flag = True
    at: Seconds | None = None

    @model_validator(mode="before")
    @classmethod
    def _at(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("release_session"), dict):
            return {
                **value["release_session"],
                "release_session": True,
                **_rest(value, "release_session"),
            }
        return value


def _rest(value: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != key}


_STEP_KEYS = ("run", "advance", "approve", "restart", "release_session")
#: Union tags (in error locations) spelled so they never collide with the user's keys.
_TAG_OF = {
    "run": "RunStep",
    "advance": "AdvanceStep",
    "approve": "ApprovalStep",
    "restart": "RestartStep",
    "release_session": "ReleaseStep",
}


def _step_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in _STEP_KEYS:
            if key in value:
                return _TAG_OF[key]
        return None
    if isinstance(value, BaseModel):
        for key in _STEP_KEYS:
            if key in type(value).model_fields:
                return _TAG_OF[key]
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
        Annotated[RunStep, Tag("RunStep")]
        | Annotated[AdvanceStep, Tag("AdvanceStep")]
        | Annotated[ApprovalStep, Tag("ApprovalStep")]
        | Annotated[RestartStep, Tag("RestartStep")]
        | Annotated[ReleaseStep, Tag("ReleaseStep")],
        Discriminator(_step_tag),
    ],
    BeforeValidator(_expand_step),
]
