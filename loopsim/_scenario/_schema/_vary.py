"""``vary:`` entries: how one value of a property scenario varies."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from ..._clients._faults import FAULT_KINDS
from ._base import Count, PositiveCount, StrictModel, describe

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


class FaultSetSpec(StrictModel):
    """``fault_set:``: hypothesis draws a list of faults (which, when, how many) for a
    ``faults:`` list: each a kind of ``kinds`` at call number ``calls[0]``..``calls[1]``
    (``when: {call: k}``), with ``options`` per kind; ``min_faults``..``max_faults`` of
    them. A failure shrinks to the fewest, earliest, first-listed faults."""

    kinds: list[str]
    calls: list[int] = Field(default_factory=lambda: [1, 10])
    min_faults: Count = 0
    max_faults: PositiveCount = 3
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _valid(self) -> FaultSetSpec:
        if not self.kinds:
            raise PydanticCustomError("vacuous", "an empty kinds list draws no fault")
        for kind in [*self.kinds, *self.options]:
            if kind not in FAULT_KINDS:
                raise PydanticCustomError(
                    "fault_kind",
                    "unknown fault kind {kind}; expected one of: {known}",
                    {"kind": describe(kind), "known": ", ".join(FAULT_KINDS)},
                )
        if len(self.calls) != 2 or not 1 <= self.calls[0] <= self.calls[1]:
            raise PydanticCustomError(
                "calls",
                "calls: expected [low, high] call numbers, 1 <= low <= high, got {got}",
                {"got": describe(self.calls)},
            )
        if self.max_faults < self.min_faults:
            raise PydanticCustomError(
                "vary_sizes",
                "inverted sizes: max_faults {high} < min_faults {low}",
                {"low": self.min_faults, "high": self.max_faults},
            )
        return self

    def fault(self, kind: str, call: int) -> dict[str, Any]:
        """One drawn fault, as a ``faults:`` entry."""
        return {"fault": kind, **self.options.get(kind, {}), "when": {"call": call}}


_VARY_KINDS = ("between", "one_of", "list_of", "fault_set")


class VarySpec(StrictModel):
    """How one value varies: exactly one of ``between: [low, high]`` (whole numbers when
    both bounds are, else any number in the closed range), ``one_of: [choices...]`` (any
    YAML values), ``list_of: <spec>`` (a list of ``min_size``..``max_size`` drawn items)
    or ``fault_set: {...}`` (a list of faults, see :class:`FaultSetSpec`).
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
    fault_set: FaultSetSpec | None = None
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


class VarySettings(StrictModel):
    """Hypothesis settings of a ``vary:`` scenario (the active profile gives the rest)."""

    max_examples: PositiveCount | None = None
