"""YAML and JSON text into plain data, keeping the line of every key and item.

YAML is read as PyYAML's event stream (safe: no object is ever constructed from a tag) and
built into plain values here, without recursion, so that:

- scalars follow the YAML 1.2 core schema (``1e3`` is a number; ``on``/``yes`` are text);
- only the core tags are accepted (``!!str``, ``!!int``, ``!!float``, ``!!bool``,
  ``!!null``, ``!!seq``, ``!!map``); any other tag, on a scalar, a list or a mapping, is a
  located error (``!!python/object/apply:…``, ``!!binary``, ``!!timestamp``, ``!foo``);
- an alias counts as the whole value it stands for, so nesting depth and the number of
  values are bounded (``ScenarioLimits``): alias bombs and cycles end in an error at once;
- every problem, including unreadable characters, is a :class:`~loopsim.ScenarioError`
  with a line.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .._errors import ScenarioError
from ._limits import DEFAULT_LIMITS, ScenarioLimits
from ._schema import describe
from ._source import Loc, format_location

__all__ = ["build", "check_size", "parse_yaml", "refused_text"]

_CORE = "tag:yaml.org,2002:"
_NULL = re.compile(r"null|Null|NULL|~|")
_TRUE = re.compile(r"true|True|TRUE")
_FALSE = re.compile(r"false|False|FALSE")
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INF = re.compile(r"[-+]?\.(inf|Inf|INF)")
_NAN = re.compile(r"\.(nan|NaN|NAN)")
_NON_TEXT_START = frozenset("-+.0123456789~nNtTfF")
_ALLOWED = "text, numbers, true/false, null, lists and mappings"
_SCALAR_TAGS = ("str", "int", "float", "bool", "null")


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


class _Refused(Exception):  # noqa: N818 - internal signal, turned into a ScenarioError
    def __init__(self, problem: str, expected: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.expected = expected


#: Whole numbers past this many digits are refused at load (no field takes one so large).
MAX_DIGITS = 30


def _int(text: str) -> int:
    digits = len(text.lstrip("+-").lstrip("0") or "0")
    if digits > MAX_DIGITS and not text.lstrip("+-").startswith(("0o", "0x")):
        raise _Refused(
            f"the number {describe(text)} has {digits} digits, more than loopsim reads "
            f"({MAX_DIGITS})",
            "a number of sensible size",
        )
    try:
        value = int(text, 0) if text.lstrip("+-").startswith(("0o", "0x")) else int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        raise _Refused(
            f"the number {describe(text)} has too many digits", "a number of sensible size"
        ) from None
    if abs(value) >= 10**MAX_DIGITS:
        raise _Refused(
            f"the number {describe(text)} is larger than loopsim reads (10**{MAX_DIGITS})",
            "a number of sensible size",
        )
    return value


def _float(text: str) -> float:
    if _INF.fullmatch(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.fullmatch(text):
        return float("nan")
    if _INT.fullmatch(text):  # !!float 0x1F, !!float 12
        whole = _int(text)
        return float(whole)
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(
            f"the number {describe(text)} is too large: it overflows to infinity",
            "a number of sensible size (write .inf for infinity)",
        )
    return value


def _resolve_plain(text: str) -> Any:
    """A plain (unquoted, untagged) scalar by the YAML 1.2 core schema."""
    if text and text[0] not in _NON_TEXT_START:
        return text  # the common case: a word
    if _NULL.fullmatch(text):
        return None
    if _TRUE.fullmatch(text):
        return True
    if _FALSE.fullmatch(text):
        return False
    if _INT.fullmatch(text):
        return _int(text)
    if _FLOAT.fullmatch(text) or _INF.fullmatch(text) or _NAN.fullmatch(text):
        return _float(text)
    return text


def _tagged(tag: str, text: str) -> Any:
    """A scalar with an explicit core tag: its text must fit the tag."""
    kind = tag[len(_CORE) :]
    if kind == "str":
        return text
    if kind == "null" and _NULL.fullmatch(text):
        return None
    if kind == "bool" and (_TRUE.fullmatch(text) or _FALSE.fullmatch(text)):
        return bool(_TRUE.fullmatch(text))
    if kind == "int" and _INT.fullmatch(text):
        return _int(text)
    if kind == "float" and (
        _INT.fullmatch(text)
        or _FLOAT.fullmatch(text)
        or _INF.fullmatch(text)
        or _NAN.fullmatch(text)
    ):
        return _float(text)
    words = {"null": "null", "bool": "true or false", "int": "a whole number", "float": "a number"}
    raise _Refused(
        f"{describe(text)} is not {words[kind]}, as its tag !!{kind} says",
        f"{words[kind]} after !!{kind}",
    )


def _scalar_value(tag: str | None, style: str | None, text: str) -> Any:
    if tag is None:
        return _resolve_plain(text) if not style else text  # plain: None (or "" from libyaml)
    if tag == "!":
        return text
    if tag.startswith(_CORE) and tag[len(_CORE) :] in _SCALAR_TAGS:
        return _tagged(tag, text)
    raise _Refused(
        f"the tag {_short_tag(tag)} is not allowed: scenario files hold only {_ALLOWED}",
        "a value without a tag",
    )


def refused_text(text: str) -> tuple[str, str] | None:
    """(problem, expected) when ``text`` cannot be written as UTF-8, else None."""
    try:
        _check_text(text)
    except _Refused as refused:
        return refused.problem, refused.expected or ""
    return None


def _line(mark: Any) -> int:
    return 1 if mark is None else int(mark.line) + 1


def _check_text(text: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        raise _Refused(
            f"text with a lone surrogate (U+{code:04X}), which cannot be written as UTF-8",
            "text of whole Unicode characters",
        ) from None


@dataclass(slots=True)
class _Node:
    """A finished value: the value, how many values it holds, how deep it nests."""

    value: Any
    size: int
    height: int


@dataclass(slots=True)
class _Frame:
    """An open list or mapping."""

    value: Any
    loc: Loc
    line: int
    anchor: str | None
    size: int = 1
    height: int = 1
    key: Any = None
    has_key: bool = False
    merging: bool = False
    merges: list[dict[Any, Any]] = field(default_factory=list)


_OPEN = object()  # an anchor whose value is still being read


class _Builder:
    """YAML events → plain values and their lines, with the limits enforced."""

    def __init__(self, path: Path | None, limits: ScenarioLimits, *, check_text: bool) -> None:
        self.path = path
        self.limits = limits
        self.check_text = check_text
        self.lines: dict[Loc, int] = {}
        self.anchors: dict[str, Any] = {}
        self.stack: list[_Frame] = []
        self.nodes = 0
        self.root: _Node | None = None

    def error(
        self, line: int, loc: Loc, problem: str, expected: str | None = None
    ) -> ScenarioError:
        return ScenarioError(
            problem,
            path=self.path,
            line=line,
            location=format_location(loc) or None,
            expected=expected,
        )

    # -- where the next value goes ------------------------------------------------------------

    def _child_loc(self) -> tuple[Loc, bool]:
        """The location of the next value and whether it is a mapping key."""
        if not self.stack:
            return (), False
        top = self.stack[-1]
        if isinstance(top.value, list):
            return (*top.loc, len(top.value)), False
        if not top.has_key:
            return top.loc, True
        return (*top.loc, _part(top.key)), False

    def _count(self, size: int, height: int, line: int, loc: Loc) -> None:
        self.nodes += size
        if self.nodes > self.limits.max_nodes:
            raise self.error(
                line,
                loc,
                f"more than {self.limits.max_nodes:,} values in the document (aliases count "
                "as every value they repeat)",
                "a smaller document (ScenarioLimits.max_nodes sets the bound)",
            )
        if len(self.stack) + height > self.limits.max_depth:
            raise self.error(
                line,
                loc,
                f"nested deeper than {self.limits.max_depth} levels (through aliases too)",
                "flatter lists and mappings (ScenarioLimits.max_depth sets the bound)",
            )

    # -- events ---------------------------------------------------------------------------------

    def scalar(self, event: yaml.ScalarEvent) -> None:
        """A scalar; the common case (inside a list or mapping, no anchor, no tag, text
        that needs no check) here, every other one in :meth:`_scalar`."""
        stack = self.stack
        if not stack or event.anchor is not None or event.tag is not None:
            self._scalar(event)
            return
        top = stack[-1]
        container = top.value
        text = event.value
        is_list = type(container) is list
        if (not is_list and top.merging and top.has_key) or (
            self.check_text and not text.isascii()
        ):
            self._scalar(event)
            return
        if event.style or (text and text[0] not in _NON_TEXT_START):
            value: Any = text  # quoted, or a plain word (what _resolve_plain gives it)
        else:
            try:
                value = _resolve_plain(text)
            except _Refused:
                self._scalar(event)  # raises the located error
                return
        is_key = not is_list and not top.has_key
        if is_key and not event.style and text == "<<":
            self._scalar(event)  # a merge key
            return
        nodes = self.nodes + 1
        limits = self.limits
        if nodes > limits.max_nodes or len(stack) > limits.max_depth:
            self._scalar(event)  # raises the located error
            return
        self.nodes = nodes
        top.size += 1  # (a frame's height is 1 at least: a scalar leaves it as it is)
        line = _line(event.start_mark)
        if is_list:
            loc: Loc = (*top.loc, len(container))
            self.lines[loc] = line
            container.append(value)
        elif is_key:
            self._key(top, value, line)
        else:
            top.has_key = False
            container[top.key] = value

    def _scalar(self, event: yaml.ScalarEvent) -> None:
        line = _line(event.start_mark)
        loc, is_key = self._child_loc()
        tag = event.tag
        text = event.value
        try:
            if self.check_text:
                _check_text(text)
            value = _scalar_value(tag, event.style, text)
        except _Refused as refused:
            raise self.error(line, loc, refused.problem, refused.expected) from None
        if is_key and tag is None and not event.style and text == "<<":
            self._merge_key(line, loc)
            return
        self._count(1, 0, line, loc)
        self._finish(_Node(value, 1, 0), line, loc, is_key, event.anchor)

    def alias(self, event: yaml.AliasEvent) -> None:
        line = _line(event.start_mark)
        loc, is_key = self._child_loc()
        name = str(event.anchor)
        found = self.anchors.get(name)
        if found is None:
            raise self.error(
                line, loc, f"unknown alias *{name}", f"an anchor &{name} defined above this alias"
            )
        if found is _OPEN:
            raise self.error(
                line,
                loc,
                f"the alias *{name} is inside the value it names (a cycle)",
                "aliases only to values that end before the alias",
            )
        node: _Node = found
        self._count(node.size, node.height, line, loc)
        value = node.value if node.height == 0 else copy.deepcopy(node.value)
        self._finish(_Node(value, node.size, node.height), line, loc, is_key, None)

    def start(self, event: yaml.CollectionStartEvent, value: Any) -> None:
        line = _line(event.start_mark)
        loc, is_key = self._child_loc()
        kind = "mapping" if isinstance(value, dict) else "list"
        if is_key:
            raise self.error(
                line, loc, f"expected a plain key (text or a number), got a {kind}", "a plain key"
            )
        tag = event.tag
        allowed = (None, "!", _CORE + ("map" if kind == "mapping" else "seq"))
        if tag not in allowed:
            raise self.error(
                line,
                loc,
                f"the tag {_short_tag(str(tag))} is not allowed: scenario files hold only "
                f"{_ALLOWED}",
                f"a {kind} without a tag",
            )
        self._count(1, 1, line, loc)
        if event.anchor is not None:
            self.anchors[event.anchor] = _OPEN
        self.stack.append(_Frame(value, loc, line, event.anchor))

    def start_mapping(self, event: yaml.MappingStartEvent) -> None:
        self.start(event, {})

    def start_sequence(self, event: yaml.SequenceStartEvent) -> None:
        self.start(event, [])

    def end(self, _event: object = None) -> None:
        frame = self.stack.pop()
        value = frame.value
        if frame.merges:
            merged: dict[Any, Any] = {}
            for source in frame.merges:  # the first mapping merged wins (YAML merge keys)
                for key, item in source.items():
                    merged.setdefault(key, item)
            value = {**{k: v for k, v in merged.items() if k not in value}, **value}
        node = _Node(value, frame.size, frame.height)
        self._finish(node, frame.line, frame.loc, is_key=False, anchor=frame.anchor)

    # -- putting a finished value in place ------------------------------------------------------

    def _merge_key(self, line: int, loc: Loc) -> None:
        top = self.stack[-1]
        top.has_key = True
        top.key = "<<"
        top.merging = True
        self.lines.setdefault((*loc, "<<"), line)

    def _finish(self, node: _Node, line: int, loc: Loc, is_key: bool, anchor: str | None) -> None:
        if anchor is not None:
            self.anchors[anchor] = node
        if not self.stack:
            self.root = node
            return
        top = self.stack[-1]
        top.size += node.size
        top.height = max(top.height, node.height + 1)
        if isinstance(top.value, list):
            self.lines[loc] = line
            top.value.append(node.value)
            return
        if is_key:
            self._key(top, node.value, line)
            return
        top.has_key = False
        if top.merging:
            top.merging = False
            sources = node.value if isinstance(node.value, list) else [node.value]
            if not sources or not all(isinstance(s, dict) for s in sources):
                raise self.error(
                    line,
                    loc,
                    f"a merge key (<<) takes a mapping or a list of mappings, got "
                    f"{describe(node.value)}",
                    "<<: *anchor of a mapping",
                )
            top.merges.extend(sources)
            return
        top.value[top.key] = node.value

    def _key(self, top: _Frame, key: Any, line: int) -> None:
        if not isinstance(key, (str, int, float, bool)):
            raise self.error(
                line,
                top.loc,
                f"expected a plain key (text or a number), got {describe(key)}",
                "a plain key",
            )
        child: Loc = (*top.loc, _part(key))
        if key in top.value:
            raise self.error(
                line,
                child,
                f"duplicate key {describe(key)} (first given on line {self.lines.get(child, '?')})",
                "each key once per mapping",
            )
        self.lines[child] = line
        top.key = key
        top.has_key = True


def _part(key: Any) -> str | int:
    return key if isinstance(key, (str, int)) else str(key)


def check_size(text: str, path: Path | None, limits: ScenarioLimits) -> None:
    """Refuse a text longer than ``limits.max_bytes`` (before any parsing)."""
    if len(text) * 4 <= limits.max_bytes:
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_bytes:
        raise ScenarioError(
            f"the file has {size:,} bytes, more than the {limits.max_bytes:,} a scenario may have",
            path=path,
            line=text.count("\n", 0, limits.max_bytes) + 1,
            expected="a smaller file (ScenarioLimits.max_bytes sets the bound)",
        )


#: libyaml reads fast; its messages differ from PyYAML's, so a small file with an error is
#: read again by PyYAML for the message (the same in every install). Larger files keep
#: libyaml's message rather than pay PyYAML's pace (about 100 kB/s) a second time.
_FAST = getattr(yaml, "CSafeLoader", None) if yaml.__with_libyaml__ else None
_REREAD_BELOW = 64 * 1024


def build(
    text: str, path: Path | None, limits: ScenarioLimits, *, check_text: bool, fast: bool = True
) -> tuple[Any, dict[Loc, int]]:
    builder = _Builder(path, limits, check_text=check_text)
    use_fast = fast and _FAST is not None
    try:
        _feed(builder, _FAST(text) if use_fast else yaml.SafeLoader(text), path)  # type: ignore[misc] # _FAST is a loader class here
    except (yaml.YAMLError, UnicodeEncodeError) as exc:
        if getattr(exc, "problem", None) == "exceeded maximum nesting depth":  # libyaml's bound
            mark = getattr(exc, "problem_mark", None)
            raise ScenarioError(
                f"nested deeper than {limits.max_depth} levels",
                path=path,
                line=_line(mark),
                expected="flatter lists and mappings (ScenarioLimits.max_depth sets the bound)",
            ) from None
        if use_fast and (isinstance(exc, UnicodeEncodeError) or len(text) <= _REREAD_BELOW):
            return build(text, path, limits, check_text=check_text, fast=False)
        raise _yaml_error(exc, text, path) from None
    if builder.root is None:
        return None, {}
    builder.lines[()] = builder.lines.get((), 1)
    return builder.root.value, builder.lines


def _feed(builder: _Builder, loader: Any, path: Path | None) -> None:
    """Every event of the stream into ``builder`` (one document at most)."""
    try:
        handlers: dict[type[Any], Any] = {
            yaml.ScalarEvent: builder.scalar,
            yaml.AliasEvent: builder.alias,
            yaml.MappingStartEvent: builder.start_mapping,
            yaml.SequenceStartEvent: builder.start_sequence,
            yaml.MappingEndEvent: builder.end,
            yaml.SequenceEndEvent: builder.end,
        }
        documents = 0
        while True:
            event = loader.get_event()
            handler = handlers.get(type(event))
            if handler is not None:
                handler(event)
            elif isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise ScenarioError(
                        "a second YAML document (after ---): a scenario file holds one",
                        path=path,
                        line=_line(event.start_mark),
                        expected="one document per file",
                    )
            elif isinstance(event, yaml.StreamEndEvent):
                return
    finally:
        loader.dispose()


def _yaml_error(exc: BaseException, text: str, path: Path | None) -> ScenarioError:
    if isinstance(exc, yaml.reader.ReaderError):
        character = exc.character if isinstance(exc.character, str) else chr(exc.character)
        return ScenarioError(
            f"the character U+{ord(character):04X} is not allowed in a YAML file",
            path=path,
            line=text.count("\n", 0, max(exc.position, 0)) + 1,
            expected="printable text (write control characters as escapes inside double "
            'quotes, e.g. "\\a")',
        )
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "unreadable YAML"
        context = f" ({exc.context})" if exc.context and exc.problem else ""
        return ScenarioError(
            f"invalid YAML: {problem}{context}",
            path=path,
            line=None if mark is None else mark.line + 1,
            expected="a YAML document (see docs/scenarios.md)",
        )
    return ScenarioError(f"invalid YAML: {exc}", path=path, line=1)


def parse_yaml(
    text: str, path: Path | None, limits: ScenarioLimits = DEFAULT_LIMITS
) -> tuple[Any, dict[Loc, int]]:
    """YAML text → (plain data, line of every key and item); a located error otherwise."""
    check_size(text, path, limits)
    return build(text, path, limits, check_text=True)
