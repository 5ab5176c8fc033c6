"""JSON scenario files into plain data: duplicate keys refused and the limits applied.

``json`` parses (its errors have a line); the text is read again as YAML only to learn the
line of every key and item, since JSON is (nearly) YAML.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._errors import ScenarioError
from ._limits import DEFAULT_LIMITS, ScenarioLimits
from ._schema import describe
from ._source import Loc, format_location
from ._yaml import build, check_size, refused_text

__all__ = ["check_tree", "parse_json"]


class _DuplicateKeyError(Exception):
    pass


class _ConstantError(Exception):
    pass


def _constant(name: str) -> Any:
    """JSON has no NaN or Infinity (Python's reader takes them): refuse them."""
    raise _ConstantError(name)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def parse_json(
    text: str, path: Path | None, limits: ScenarioLimits = DEFAULT_LIMITS
) -> tuple[Any, dict[Loc, int]]:
    """JSON text → (plain data, lines); duplicate keys are errors, as in YAML."""
    check_size(text, path, limits)
    trouble: ScenarioError | None = None
    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            f"invalid JSON: {exc.msg}", path=path, line=exc.lineno, expected="a JSON object"
        ) from None
    except _ConstantError as exc:
        line = text.count("\n", 0, max(text.find(exc.args[0]), 0)) + 1
        raise ScenarioError(
            f"{exc.args[0]} is not a JSON number", path=path, line=line, expected="a finite number"
        ) from None
    except _DuplicateKeyError as exc:
        data = None
        trouble = ScenarioError(
            f"duplicate key {describe(exc.args[0])}",
            path=path,
            line=1,
            expected="each key once per object",
        )
    except ValueError as exc:  # a number with more digits than Python converts
        raise ScenarioError(f"invalid JSON: {exc}", path=path, line=1) from None
    except RecursionError:
        data = None
        trouble = ScenarioError(
            f"nested deeper than {limits.max_depth} levels",
            path=path,
            line=1,
            expected="flatter lists and mappings (ScenarioLimits.max_depth sets the bound)",
        )
    # JSON is (nearly) YAML: read it again as YAML only to learn the lines (a JSON tab is
    # whitespace, which YAML's flow style does not take); its errors then have a line too.
    try:
        _, lines = build(text.replace("\t", " "), path, limits, check_text=False)
    except ScenarioError as exc:
        if trouble is not None and exc.problem.startswith(("duplicate key", "nested deeper")):
            raise exc from None
        if exc.problem.startswith("the number "):  # too large (see _yaml._int, _float)
            raise exc from None
        lines = {}
    if trouble is not None:
        raise trouble
    check_tree(data, lines, path, limits)
    return data, lines


def check_tree(data: Any, lines: dict[Loc, int], path: Path | None, limits: ScenarioLimits) -> None:
    """Apply the document limits (values, depth, whole characters) to already parsed data."""
    nodes = 0
    pending: list[tuple[Any, Loc]] = [(data, ())]
    while pending:
        value, loc = pending.pop()
        nodes += 1
        problem: tuple[str, str] | None = None
        if nodes > limits.max_nodes:
            problem = (
                f"more than {limits.max_nodes:,} values in the document",
                "a smaller document (ScenarioLimits.max_nodes sets the bound)",
            )
        elif len(loc) >= limits.max_depth and isinstance(value, (dict, list)):
            problem = (
                f"nested deeper than {limits.max_depth} levels",
                "flatter lists and mappings (ScenarioLimits.max_depth sets the bound)",
            )
        elif isinstance(value, str):
            problem = refused_text(value)
        if problem is not None:
            line = _nearest(lines, loc)
            raise ScenarioError(
                problem[0],
                path=path,
                line=line,
                location=format_location(loc) or None,
                expected=problem[1],
            )
        if isinstance(value, dict):
            for key, item in value.items():
                bad_key = refused_text(str(key))
                if bad_key is not None:
                    raise ScenarioError(
                        bad_key[0],
                        path=path,
                        line=_nearest(lines, loc),
                        location=format_location(loc) or None,
                        expected=bad_key[1],
                    )
                pending.append((item, (*loc, key)))
        elif isinstance(value, list):
            pending.extend((item, (*loc, index)) for index, item in enumerate(value))


def _nearest(lines: dict[Loc, int], loc: Loc) -> int:
    key = tuple(loc)
    while key:
        if key in lines:
            return lines[key]
        key = key[:-1]
    return lines.get((), 1)
