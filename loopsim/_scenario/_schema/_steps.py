"""The host's steps: run, advance, approve, restart, release_session."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Discriminator, Tag
from pydantic_core import PydanticCustomError

from ._base import Flag, Seconds, StrictModel, Text, describe

# -- steps ----------------------------------------------------------------------------------


class RunStep(StrictModel):
    """``run: <input>`` — one call of the host into the parent (or the loop)."""

    run: Text


class AdvanceStep(StrictModel):
    """``advance: <seconds>`` — let virtual time pass (background tasks keep running)."""

    advance: Seconds


class ApprovalStep(StrictModel):
    """``approve: true|false`` — answer the pending approval requests of the last response."""

    approve: Flag


class RestartStep(StrictModel):
    """``restart`` — serialize the parent session, drop the runtime, restore (tasks → lost)."""

    restart: Literal[True] = True


class ReleaseStep(StrictModel):
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
