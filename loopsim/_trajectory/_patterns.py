"""Step patterns: what one expected step says, written as the same mapping in YAML and Python.

``{tool: get_quote, agent: trader, args: {symbol: MSFT}}`` is a tool call of
``get_quote`` by ``trader`` whose ``symbol`` argument is ``"MSFT"`` (arguments not named
are not checked). Every value may be a matcher (``{contains: ...}``, ``{regex: ...}``,
``{any: true}``, ``{between: [lo, hi]}``, ``{one_of: [...]}``) or a matcher object.
``by:``/``after:`` bound the step's virtual time; ``at_most:``/``at_least:`` turn the step
into a count of the steps it matches instead of one step of the sequence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._matchers import Equals, Matcher, matcher_of, show
from ._steps import KINDS, TrajectoryStep

__all__ = ["PATTERN_KEYS", "StepPattern", "TrajectorySpecError", "pattern_of"]

#: The keys a step may use, per kind (besides by, after, at_most, at_least).
FIELDS: dict[str, tuple[str, ...]] = {
    "tool": ("tool", "agent", "iteration", "args", "result", "approved", "sent", "messages"),
    "says": ("says", "sent", "messages", "agent", "iteration"),
    "task": ("task", "status", "agent", "iteration"),
    "host": ("host", "approved"),
}
COMMON = ("by", "after", "at_most", "at_least")
PATTERN_KEYS = tuple(dict.fromkeys(k for keys in FIELDS.values() for k in keys)) + COMMON


class TrajectorySpecError(ValueError):
    """A step written wrong; ``loc`` is the path of the key inside the step."""

    def __init__(self, message: str, loc: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.loc = loc

    def __str__(self) -> str:
        where = ".".join(str(p) for p in self.loc)
        return f"{where}: {self.args[0]}" if where else str(self.args[0])


@dataclass(frozen=True, slots=True)
class StepPattern:
    """One expected step: its kind, a matcher per field, and optional time and count bounds."""

    kind: str
    fields: Mapping[str, Matcher] = field(default_factory=dict)
    args: Mapping[str, Matcher] | None = None
    by: float | None = None
    after: float | None = None
    at_most: int | None = None
    at_least: int | None = None

    @property
    def counting(self) -> bool:
        """Whether this step is a count (``at_most``/``at_least``), not a step of the order."""
        return self.at_most is not None or self.at_least is not None

    def mismatch(self, step: TrajectoryStep) -> str | None:
        """None when ``step`` is one this pattern matches, else the first reason it is not."""
        if step.kind != self.kind:
            return f"expected a {self.kind} step, got a {step.kind} step"
        for key, matcher in self.fields.items():
            got = step.field(key)
            if not matcher.matches(got):
                return f"{key}: expected {matcher.render()}, got {show(got)}"
        for name, matcher in (self.args or {}).items():
            given = step.args or {}
            if name not in given:
                return f"args.{name}: the call has no argument {name!r}"
            if not matcher.matches(given[name]):
                return f"args.{name}: expected {matcher.render()}, got {show(given[name])}"
        if self.after is not None and step.time < self.after - 1e-9:
            return f"after: at t={step.time:g}s, expected no earlier than t={self.after:g}s"
        if self.by is not None and step.time > self.by + 1e-9:
            return f"by: at t={step.time:g}s, expected by t={self.by:g}s"
        return None

    def render(self) -> str:
        """The step as written, shortly: ``tool get_quote agent="trader" args.symbol="MSFT"``."""
        head = self.fields.get(self.kind)
        if head is None:
            parts = [self.kind]
        elif isinstance(head, Equals) and isinstance(head.value, str):
            parts = [f"{self.kind} {head.value}"]
        else:
            parts = [f"{self.kind} {head.render()}"]
        parts += [f"{k}={m.render()}" for k, m in self.fields.items() if k != self.kind]
        parts += [f"args.{k}={m.render()}" for k, m in (self.args or {}).items()]
        if self.after is not None:
            parts.append(f"after={self.after:g}s")
        if self.by is not None:
            parts.append(f"by={self.by:g}s")
        if self.at_least is not None:
            parts.append(f"at_least={self.at_least}")
        if self.at_most is not None:
            parts.append(f"at_most={self.at_most}")
        return " ".join(parts)


def _seconds(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        msg = f"expected a number of virtual seconds >= 0, got {show(value)}"
        raise TrajectorySpecError(msg, (key,))
    if value < 0:
        msg = f"expected a number of virtual seconds >= 0, got {show(value)}"
        raise TrajectorySpecError(msg, (key,))
    return float(value)


def _count(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        msg = f"expected a whole number >= 0, got {show(value)}"
        raise TrajectorySpecError(msg, (key,))
    return value


def _matcher(value: Any, loc: tuple[str | int, ...]) -> Matcher:
    try:
        return matcher_of(value)
    except (TypeError, ValueError) as exc:
        raise TrajectorySpecError(str(exc), loc) from None


def pattern_of(raw: Any, *, never: bool = False) -> StepPattern:
    """A :class:`StepPattern` from its mapping form (or a pattern, returned as is).

    Raises :class:`TrajectorySpecError` with the path of the offending key.
    """
    if isinstance(raw, StepPattern):
        return raw
    if not isinstance(raw, Mapping):
        msg = f"expected a step mapping such as {{tool: <name>}}, got {show(raw)}"
        raise TrajectorySpecError(msg)
    kinds = [k for k in KINDS if k in raw]
    if not kinds and "status" in raw:
        kinds = ["task"]
    if len(kinds) != 1:
        said = "none of them" if not kinds else ", ".join(kinds)
        msg = f"a step names exactly one of tool, says, task, host (got {said})"
        raise TrajectorySpecError(msg)
    kind = kinds[0]
    allowed = FIELDS[kind] + COMMON
    for key in raw:
        if key not in allowed:
            msg = f"a {kind} step has no key {show(key)}; its keys: {', '.join(allowed)}"
            raise TrajectorySpecError(msg, (str(key),))
    fields: dict[str, Matcher] = {}
    args: dict[str, Matcher] | None = None
    for key in FIELDS[kind]:
        if key not in raw:
            continue
        if key == "args":
            given = raw["args"]
            if not isinstance(given, Mapping) or not given:
                msg = "expected a mapping of argument name to value or matcher, e.g. {symbol: MSFT}"
                raise TrajectorySpecError(msg, ("args",))
            args = {str(n): _matcher(v, ("args", str(n))) for n, v in given.items()}
        elif key == "approved":
            if not isinstance(raw[key], bool):
                msg = f"expected true or false, got {show(raw[key])}"
                raise TrajectorySpecError(msg, (key,))
            fields[key] = _matcher(raw[key], (key,))
        else:
            fields[key] = _matcher(raw[key], (key,))
    pattern = StepPattern(
        kind,
        fields,
        args,
        by=None if raw.get("by") is None else _seconds(raw["by"], "by"),
        after=None if raw.get("after") is None else _seconds(raw["after"], "after"),
        at_most=None if raw.get("at_most") is None else _count(raw["at_most"], "at_most"),
        at_least=None if raw.get("at_least") is None else _count(raw["at_least"], "at_least"),
    )
    if pattern.by is not None and pattern.after is not None and pattern.after > pattern.by:
        msg = f"after {pattern.after:g}s is later than by {pattern.by:g}s: no time fits"
        raise TrajectorySpecError(msg, ("after",))
    low, high = pattern.at_least, pattern.at_most
    if low is not None and high is not None and low > high:
        msg = f"at_least {low} > at_most {high}: no count fits"
        raise TrajectorySpecError(msg, ("at_least",))
    if pattern.at_least == 0 and pattern.at_most is None:
        msg = "at_least: 0 checks nothing; give a count above 0, or an at_most"
        raise TrajectorySpecError(msg, ("at_least",))
    if never and pattern.counting:
        msg = "a never: step is forbidden outright; at_most/at_least belong in a trajectory"
        raise TrajectorySpecError(msg, ("at_most" if pattern.at_most is not None else "at_least",))
    return pattern
