"""Value matchers for trajectory steps: an exact value, ``contains``, ``regex``, ``any``,
``between`` and ``one_of``.

Each matcher answers two questions: does a value match (:meth:`Matcher.matches`), and how
does it read in a failure (:meth:`Matcher.render`). The scenario format writes them as
one-key mappings (``{contains: "420"}``); Python code may pass the objects themselves.
Exact equality is strict about booleans (``True`` is not ``1``), as ``events:`` counts are.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MATCHER_KEYS",
    "Anything",
    "Between",
    "Contains",
    "Equals",
    "Matcher",
    "OneOf",
    "Regex",
    "matcher_of",
    "show",
]


def show(value: Any, limit: int = 60) -> str:
    """A short JSON-like rendering of a value for failure messages."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):  # a circular structure: its repr will do
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def same(got: Any, wanted: Any) -> bool:
    """Equality that does not let ``True`` stand for ``1`` (nor ``1`` for ``True``)."""
    if isinstance(got, bool) or isinstance(wanted, bool):
        return got is wanted
    if isinstance(got, Mapping) and isinstance(wanted, Mapping):
        return got.keys() == wanted.keys() and all(same(got[k], wanted[k]) for k in wanted)
    if (
        isinstance(got, Sequence)
        and isinstance(wanted, Sequence)
        and not isinstance(got, str)
        and not isinstance(wanted, str)
    ):
        return len(got) == len(wanted) and all(same(g, w) for g, w in zip(got, wanted, strict=True))
    try:
        return bool(got == wanted)
    except Exception:  # noqa: BLE001 - a value whose __eq__ raises is simply not equal
        return False


class Matcher:
    """The base of every matcher: ``matches(value)`` and ``render()``."""

    __slots__ = ()

    def matches(self, value: Any) -> bool:
        raise NotImplementedError

    def render(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.render()})"


@dataclass(frozen=True, slots=True, repr=False)
class Equals(Matcher):
    """Exactly this value (the form a plain value in a step stands for)."""

    value: Any

    def matches(self, value: Any) -> bool:
        return same(value, self.value)

    def render(self) -> str:
        return show(self.value)


@dataclass(frozen=True, slots=True, repr=False)
class Contains(Matcher):
    """A text that contains ``part``, or a list that holds an item equal to it."""

    part: Any

    def matches(self, value: Any) -> bool:
        if isinstance(value, str):
            return isinstance(self.part, str) and self.part in value
        if isinstance(value, Sequence):
            return any(same(item, self.part) for item in value)
        return False

    def render(self) -> str:
        return f"contains {show(self.part)}"


@dataclass(frozen=True, slots=True, repr=False)
class Regex(Matcher):
    """A text in which ``pattern`` is found (``re.search``; anchor it to match the whole)."""

    pattern: str

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str):
            msg = f"a regex is a text, got {show(self.pattern)}"
            raise TypeError(msg)
        try:
            re.compile(self.pattern)
        except re.error as exc:
            msg = f"not a valid regular expression {self.pattern!r}: {exc}"
            raise ValueError(msg) from None

    def matches(self, value: Any) -> bool:
        return isinstance(value, str) and re.search(self.pattern, value) is not None

    def render(self) -> str:
        return f"regex {show(self.pattern)}"


@dataclass(frozen=True, slots=True, repr=False)
class Anything(Matcher):
    """Any value at all, but the key (argument, field) must be there."""

    def matches(self, value: Any) -> bool:  # noqa: ARG002 - anything matches
        return True

    def render(self) -> str:
        return "any"


@dataclass(frozen=True, slots=True, repr=False)
class Between(Matcher):
    """A number from ``low`` to ``high``, both included (not a boolean)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        for bound in (self.low, self.high):
            if (
                isinstance(bound, bool)
                or not isinstance(bound, (int, float))
                or not math.isfinite(bound)
            ):
                msg = f"between takes two finite numbers, got {show(bound)}"
                raise TypeError(msg)
        if self.low > self.high:
            msg = f"between {self.low:g} and {self.high:g} is empty (the low bound is higher)"
            raise ValueError(msg)

    def matches(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return self.low <= value <= self.high

    def render(self) -> str:
        return f"between {self.low:g} and {self.high:g}"


@dataclass(frozen=True, slots=True, repr=False)
class OneOf(Matcher):
    """A value equal to one of ``choices``."""

    choices: tuple[Any, ...]

    def __post_init__(self) -> None:
        if not self.choices:
            msg = "one_of needs at least one choice (an empty one_of matches nothing)"
            raise ValueError(msg)

    def matches(self, value: Any) -> bool:
        return any(same(value, choice) for choice in self.choices)

    def render(self) -> str:
        return f"one of {show(list(self.choices))}"


#: The one-key mapping forms of the scenario format.
MATCHER_KEYS = ("equals", "contains", "regex", "any", "between", "one_of")


def matcher_of(value: Any) -> Matcher:
    """A matcher from its written form: a matcher, a one-key mapping, or a plain value.

    Raises ``ValueError``/``TypeError`` saying what is wrong with a mapping form.
    """
    if isinstance(value, Matcher):
        return value
    if isinstance(value, Mapping) and any(key in MATCHER_KEYS for key in value):
        if len(value) != 1:
            keys = ", ".join(map(str, value))
            msg = (
                f"a matcher is a mapping with one key ({', '.join(MATCHER_KEYS)}), got {keys}; "
                "to match such a mapping exactly, write {equals: {...}}"
            )
            raise ValueError(msg)
        ((key, arg),) = value.items()
        return _from_key(str(key), arg)
    return Equals(value)


def _from_key(key: str, arg: Any) -> Matcher:
    if key == "equals":
        return Equals(arg)
    if key == "contains":
        return Contains(arg)
    if key == "regex":
        return Regex(arg)
    if key == "any":
        if arg is not True:
            msg = f"write `any: true` to match any value, got any: {show(arg)}"
            raise ValueError(msg)
        return Anything()
    if key == "between":
        if isinstance(arg, Mapping) and set(arg) <= {"min", "max"} and len(arg) == 2:
            return Between(arg["min"], arg["max"])
        if isinstance(arg, Sequence) and not isinstance(arg, str) and len(arg) == 2:
            return Between(arg[0], arg[1])
        msg = f"between takes [low, high] or {{min: low, max: high}}, got {show(arg)}"
        raise ValueError(msg)
    # one_of
    if not isinstance(arg, Sequence) or isinstance(arg, str):
        msg = f"one_of takes a list of choices, got {show(arg)}"
        raise TypeError(msg)
    return OneOf(tuple(arg))
