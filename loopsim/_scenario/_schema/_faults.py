"""Faults in scenario files: ``- fault: rate_limit`` script entries and ``faults:`` rules.

A script entry ``{fault: kind, <options>}`` is a model fault on that turn. A ``faults:``
list (on an agent: its model calls; on a tool: its calls) holds rules with the same
options plus ``when:`` (``call``, ``every``, ``after``, ``before``, ``rate``) and
``times:``. The options are checked by :class:`loopsim.Fault` itself, so a file and a
Python test accept exactly the same faults.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from ..._clients._faults import FAULT_KINDS, MODEL_FAULTS, TOOL_FAULTS, Fault
from ._base import PositiveCount, Seconds, StrictModel, describe

__all__ = [
    "FAULT_KEYS",
    "FaultSpec",
    "ModelFaultSpec",
    "ScriptFaultSpec",
    "ToolFaultSpec",
    "WhenSpec",
    "fault_short_form",
]

FaultKind = Literal[FAULT_KINDS]  # type: ignore[valid-type] # a Literal of the kinds tuple


class WhenSpec(StrictModel):
    """When a ``faults:`` rule fires: every condition given must hold (none: every call)."""

    call: PositiveCount | None = None
    every: PositiveCount | None = None
    after: Seconds | None = None
    before: Seconds | None = None
    rate: float | None = Field(default=None, gt=0, le=1)


class FaultSpec(StrictModel):
    """One fault: ``fault:`` names the kind; the other keys are its options."""

    fault: FaultKind
    retry_after: Seconds | None = None
    status: int | None = None
    after: float | None = None
    delay: Seconds | None = None
    reply: str | None = None
    name: str | None = None
    arguments: dict[str, Any] | None = None
    message: str | None = None
    result: Any = None
    when: WhenSpec | None = None
    times: PositiveCount | None = None

    @model_validator(mode="before")
    @classmethod
    def _short(cls, value: Any) -> Any:
        return fault_short_form(value)

    @model_validator(mode="after")
    def _valid(self) -> FaultSpec:
        try:
            self.build()
        except (TypeError, ValueError) as exc:
            raise PydanticCustomError("fault", "{problem}", {"problem": str(exc)}) from None
        return self

    def options(self) -> dict[str, Any]:
        """The options the file gives (the keys set besides ``fault``, ``when``, ``times``)."""
        given = self.model_fields_set - {"fault", "when", "times"}
        return {k: getattr(self, k) for k in sorted(given)}

    def build(self, *, rule: bool = True) -> Fault:
        """The :class:`loopsim.Fault` (``rule=False``: as a script item, no when/times)."""
        when = None if self.when is None else self.when.model_dump(exclude_none=True)
        if not rule:
            return Fault(self.fault, **self.options())
        return Fault(self.fault, when=when or None, times=self.times, **self.options())

    def check_for(self, target: Literal["model", "tool"]) -> None:
        """Raise a pydantic error when the kind does not fit ``target``."""
        kinds = MODEL_FAULTS if target == "model" else TOOL_FAULTS
        if self.fault not in kinds:
            raise PydanticCustomError(
                "fault_kind",
                "{kind} is no {target} fault; {target} faults are: {kinds}",
                {"kind": self.fault, "target": target, "kinds": ", ".join(kinds)},
            )


def fault_short_form(value: Any) -> Any:
    """``- rate_limit`` → ``{fault: rate_limit}``."""
    if isinstance(value, str):
        return {"fault": value}
    if isinstance(value, dict) and "fault" not in value:
        raise PydanticCustomError(
            "fault",
            "a fault needs `fault:` naming its kind (one of: {kinds}); got {got}",
            {"kinds": ", ".join(FAULT_KINDS), "got": describe(value)},
        )
    return value


class ModelFaultSpec(FaultSpec):
    """A model-call fault (a script entry, or a rule of an agent's ``faults:``)."""

    @model_validator(mode="after")
    def _a_model_fault(self) -> ModelFaultSpec:
        self.check_for("model")
        return self


class ScriptFaultSpec(ModelFaultSpec):
    """A script entry's fault: it happens on its own turn (no ``when``, no ``times``)."""

    @model_validator(mode="after")
    def _on_its_turn(self) -> ScriptFaultSpec:
        if self.when is not None or self.times is not None:
            raise PydanticCustomError(
                "fault_turn",
                "a script's fault happens on its own turn, so it takes no `when` or `times` "
                "(those are for an agent's `faults:` rules)",
            )
        return self


#: the keys a ``- fault:`` script entry may have besides the turn's own ``usage``
FAULT_KEYS = tuple(FaultSpec.model_fields)


class ToolFaultSpec(FaultSpec):
    """A rule of a tool's ``faults:``."""

    @model_validator(mode="after")
    def _a_tool_fault(self) -> ToolFaultSpec:
        self.check_for("tool")
        return self
