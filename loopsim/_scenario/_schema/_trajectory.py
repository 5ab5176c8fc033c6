"""Trajectory expectations in scenario files: ``trajectory:``, ``trajectories:`` and ``never:``.

The steps are the mappings :mod:`loopsim._trajectory` reads (the same ones
``loopsim.testing.assert_trajectory`` takes); these models only give them file locations
and a JSON Schema, and hand the checked mapping to that layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, cast

from pydantic import BeforeValidator, Field, PrivateAttr, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from ..._trajectory import (
    MATCHER_KEYS,
    StepPattern,
    Trajectory,
    TrajectorySpecError,
    matcher_of,
    pattern_of,
)
from ._base import Count, Flag, Name, Seconds, StrictModel

__all__ = [
    "MATCHER_MARK",
    "MATCHER_SCHEMA",
    "StepPatternSpec",
    "TrajectorySpec",
    "check_never_steps",
]


def _matcher(value: Any) -> Any:
    try:
        matcher_of(value)
    except (TypeError, ValueError) as exc:
        raise PydanticCustomError("matcher", "{why}", {"why": str(exc)}) from None
    return value


_ONE = {"type": "object", "minProperties": 1, "maxProperties": 1}
#: stands for ``{"$ref": "#/$defs/Matcher"}`` until ``loopsim schema`` swaps it in
MATCHER_MARK = "x-loopsim-matcher"
MATCHER_SCHEMA: dict[str, Any] = {
    "description": (
        "an exact value, or one of {equals: v}, {contains: text}, {regex: pattern}, "
        "{any: true}, {between: [low, high]}, {one_of: [v, ...]}"
    ),
    "anyOf": [
        {"type": ["string", "number", "boolean", "null", "array"]},
        {**_ONE, "properties": {"equals": {}}, "required": ["equals"]},
        {**_ONE, "properties": {"contains": {}}, "required": ["contains"]},
        {**_ONE, "properties": {"regex": {"type": "string"}}, "required": ["regex"]},
        {**_ONE, "properties": {"any": {"const": True}}, "required": ["any"]},
        {
            **_ONE,
            "properties": {
                "between": {
                    "type": "array",
                    "items": {"type": "number"},
                    "minItems": 2,
                    "maxItems": 2,
                }
            },
            "required": ["between"],
        },
        {
            **_ONE,
            "properties": {"one_of": {"type": "array", "minItems": 1}},
            "required": ["one_of"],
        },
        {"type": "object", "not": {"anyOf": [{"required": [k]} for k in MATCHER_KEYS]}},
    ],
}
_T = TypeVar("_T")
#: editors see one definition (``$defs.Matcher``), which ``loopsim schema`` adds
MatcherValue = Annotated[Any, BeforeValidator(_matcher), WithJsonSchema({MATCHER_MARK: True})]


def _once(model: StrictModel, name: str, make: Callable[[], _T]) -> _T:
    """``model``'s private ``name``, made by ``make`` the first time it is asked for.

    A frozen model's fields never change, so neither does what is compiled from them; read
    from the private values' dict (pydantic's attribute path for them costs far more)."""
    private = model.__pydantic_private__
    if private is None:  # pragma: no cover - only a model without private attributes
        return make()
    value = private.get(name)
    if value is None:
        value = private[name] = make()
    return cast("_T", value)


class StepPatternSpec(StrictModel):
    """One expected step: exactly one of ``tool``, ``says``, ``task``, ``host`` (or a bare
    ``status`` for a task event), the fields it must have, and optional bounds.

    See docs/trajectories.md for each key.
    """

    tool: MatcherValue = None
    says: MatcherValue = None
    sent: MatcherValue = None
    messages: MatcherValue = None
    task: MatcherValue = None
    host: MatcherValue = None
    status: MatcherValue = None
    agent: MatcherValue = None
    iteration: MatcherValue = None
    args: dict[Name, MatcherValue] | None = None
    result: MatcherValue = None
    approved: Flag | None = None
    by: Seconds | None = None
    after: Seconds | None = None
    at_most: Count | None = None
    at_least: Count | None = None
    #: the pattern, compiled once, when the step is validated: each run's check would
    #: compile it again. Every validated step holds its own, and equal steps compile to
    #: equal patterns, so the models' equality (which compares these too) still holds.
    _pattern: StepPattern | None = PrivateAttr(default=None)

    def raw(self) -> dict[str, Any]:
        """The mapping as written (only the keys given)."""
        return {key: getattr(self, key) for key in self.model_fields_set}

    def pattern(self, *, never: bool = False) -> StepPattern:
        if never:
            return pattern_of(self.raw(), never=True)
        return _once(self, "_pattern", lambda: pattern_of(self.raw()))

    @model_validator(mode="after")
    def _a_step(self) -> StepPatternSpec:
        try:
            self.pattern()
        except TrajectorySpecError as exc:
            raise PydanticCustomError("step", "{why}", {"why": str(exc)}) from None
        return self


class TrajectorySpec(StrictModel):
    """An expected trajectory: its ``steps`` held to the run in ``mode`` (default
    ``in_order``), optionally only one ``agent``'s steps, each iteration apart
    (``per_iteration``), or a virtual-time window (``after``/``by``). A list is short for
    ``{steps: <the list>}``."""

    mode: Literal["exact", "in_order", "any_order", "subset", "superset"] = "in_order"
    steps: list[StepPatternSpec] = Field(min_length=1)
    agent: Name | None = None
    per_iteration: Flag = False
    by: Seconds | None = None
    after: Seconds | None = None
    #: the kinds of the run's steps compared (default: tool, says, task, and host when a
    #: step names one)
    kinds: list[Literal["tool", "says", "task", "host"]] | None = Field(default=None, min_length=1)
    #: compiled once, when validated, as each step's pattern (see StepPatternSpec._pattern)
    _trajectory: Trajectory | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _window(self) -> TrajectorySpec:
        if self.by is not None and self.after is not None and self.after > self.by:
            raise PydanticCustomError(
                "window",
                "after {after:g}s is later than by {by:g}s: no step fits",
                {"after": self.after, "by": self.by},
            )
        self.trajectory()  # compiled now, as each step is: equal specs hold equal ones
        return self

    def trajectory(self) -> Trajectory:
        return _once(
            self,
            "_trajectory",
            lambda: Trajectory(
                tuple(s.pattern() for s in self.steps),
                self.mode,
                self.agent,
                self.per_iteration,
                self.by,
                self.after,
                None if self.kinds is None else tuple(self.kinds),
            ),
        )


def check_never_steps(value: list[StepPatternSpec] | None) -> list[StepPatternSpec] | None:
    """``never:`` steps are forbidden outright: no empty list, no counts."""
    if value is None:
        return None
    if not value:
        raise PydanticCustomError(
            "vacuous", "an empty never: list forbids nothing; list the forbidden steps"
        )
    for index, step in enumerate(value):
        if step.at_most is not None or step.at_least is not None:
            raise PydanticCustomError(
                "never",
                "never[{index}]: a never: step is forbidden outright; at_most/at_least belong "
                "in a trajectory",
                {"index": index},
            )
    return value
