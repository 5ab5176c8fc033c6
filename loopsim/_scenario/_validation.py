"""pydantic's errors → one located :class:`~loopsim.ScenarioError`.

pydantic's error locations are mapped back to the lines of the user's document; its
``ValidationError`` never reaches the user (pydantic_evals' ``Dataset.from_file`` wraps
its errors the same way).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from .._errors import ScenarioError
from ._limits import DEFAULT_LIMITS, ScenarioLimits
from ._schema import Scenario, describe
from ._source import Loc, Located, combine

__all__ = ["from_validation"]


_TYPE_WORDS = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping",
    "list_type": "a list",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _problem(error: Mapping[str, Any]) -> tuple[str, str | None]:
    kind = error["type"]
    got = describe(error.get("input"))
    ctx = error.get("ctx") or {}
    if kind in _TYPE_WORDS:
        return f"expected {_TYPE_WORDS[kind]}, got {got}", _TYPE_WORDS[kind]
    if kind == "missing":
        return "missing required key", "this key to be given"
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", "")
        return f"expected one of: {expected}; got {got}", expected
    if kind == "too_short":
        minimum = ctx.get("min_length", 1)
        return f"expected at least {minimum} item(s), got {ctx.get('actual_length', 0)}", None
    if kind == "string_too_short":
        return "expected non-empty text", "non-empty text"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return f"unexpected value {got}", None
    message = str(error.get("msg", kind))
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    said = _EXPECTED.match(message)
    return message, None if said is None else said.group(1)


_EXPECTED = re.compile(r"^expected (.+?)(?:, got |; got |$)")


def _allowed_keys(loc: Loc) -> list[str]:
    """Field names of the model at ``loc`` (for did-you-mean), best effort."""
    model: Any = Scenario
    for part in loc:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
        fld = model.model_fields.get(str(part)) if isinstance(part, str) else None
        if fld is None:
            continue
        model = _model_in(fld.annotation)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [n for n in model.model_fields if n != "kind"]
    return []


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def from_validation(
    exc: ValidationError, where: Located, data: Any, limits: ScenarioLimits = DEFAULT_LIMITS
) -> ScenarioError:
    """The first problem in document order, every other one riding along (``.others``)."""
    return combine(validation_errors(exc, where, data), limits)


_SHAPE_ERRORS = ("list_type", "dict_type", "model_type", "model_attributes_type")


def validation_errors(exc: ValidationError, where: Located, data: Any) -> list[ScenarioError]:
    """pydantic's errors as located errors, one per place, in document order.

    A union reports every member that failed; of the errors at one place (or inside it)
    only the most specific is kept: a "this is not a list" of one member is dropped when
    another member got further.
    """
    errors = exc.errors(include_url=False)
    located = [(_user_loc(err["loc"], data), err) for err in errors]

    def order(item: tuple[Loc, Mapping[str, Any]]) -> tuple[int, int, int]:
        loc, err = item
        # deeper first: a union reports every member, and the deepest error is the specific one
        return (where.line(loc) or 0, err["type"] in _SHAPE_ERRORS, -len(loc))

    located.sort(key=order)
    kept: list[tuple[Loc, Mapping[str, Any]]] = []
    places: set[Loc] = set()
    for loc, err in located:
        if loc in places:
            continue
        if err["type"] in _SHAPE_ERRORS and any(
            other[: len(loc)] == loc for other, _ in located if other != loc
        ):
            continue
        if any(loc[: len(other)] == other for other, e in kept if e["type"] in _SHAPE_ERRORS):
            continue
        places.add(loc)
        kept.append((loc, err))
    return [_one(loc, err, where) for loc, err in kept]


def _one(loc: Loc, first: Mapping[str, Any], where: Located) -> ScenarioError:
    if first["type"] == "extra_forbidden":
        key = loc[-1] if loc else "?"
        allowed = _allowed_keys(loc[:-1])
        hint = difflib.get_close_matches(str(key), allowed, n=1)
        problem = f"unknown key {describe(key)}"
        if hint:
            problem += f"; did you mean {describe(hint[0])}?"
        expected = ", ".join(allowed) if allowed else None
        if expected:
            problem += f" (known keys: {expected})"
        return where.error(loc, problem, expected=expected)
    problem, expected = _problem(first)
    if first["type"] == "missing" and loc:
        return where.error(loc, f"missing required key {describe(loc[-1])}", expected=expected)
    return where.error(loc, problem, expected=expected)


def _user_loc(loc: Sequence[str | int], data: Any) -> Loc:
    """Keep only the parts of pydantic's ``loc`` that walk the user's document.

    Tags pydantic adds for union members (``ToolCallSpec``, ``list[...]``, the short-form
    tags we insert ourselves) are dropped unless the user wrote that key; a last part the
    user did not write (a missing key) is kept.
    """
    out: list[str | int] = []
    node = data
    for position, part in enumerate(loc):
        found, child = _child(node, part)
        if found:
            out.append(part)
            node = child
        elif (
            position == len(loc) - 1
            and isinstance(node, dict)
            and isinstance(part, str)
            and not _TAGS.match(part)
        ):
            out.append(part)
    return tuple(out)


def _child(node: Any, part: str | int) -> tuple[bool, Any]:
    """``node[part]`` when the user's document has it: (True, child), else (False, None)."""
    if isinstance(node, dict) and part in node:
        return True, node[part]
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return True, node[part]
    return False, None


_TAGS = re.compile(
    r"^([A-Z]\w*Spec|[A-Z]\w*Step|[A-Z]\w*Policy|function-|literal\[|list\[|dict\[|json-or-python|tagged-union|lax-|strict-|int$|float$|str$|bool$|none$)"
)
