"""Load scenario files (YAML, safe loading only, or JSON) with file:line errors.

YAML is composed into PyYAML's node tree with ``SafeLoader`` and converted by hand, so
every mapping key and sequence item keeps its line; pydantic's error locations are then
mapped back to those lines. Every problem becomes one :class:`~loopsim.ScenarioError`
naming the file, the line, the dotted field path and what was expected — pydantic's
``ValidationError`` never reaches the user (pydantic_evals' ``Dataset.from_file`` wraps
its errors the same way).
"""

from __future__ import annotations

import difflib
import importlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from .._errors import ScenarioError
from ._schema import (
    BUILTIN_EVALUATORS,
    SCHEMA_VERSION,
    AgentSpec,
    CoordinatorPolicy,
    CustomEvaluatorSpec,
    ReleaseStep,
    Scenario,
    describe,
)

__all__ = [
    "BACKGROUND_TOOLS",
    "LoadedScenario",
    "Located",
    "format_location",
    "load_scenario",
    "load_scenario_text",
]

Loc = tuple["str | int", ...]

BACKGROUND_TOOLS = (
    "background_agents_start_task",
    "background_agents_wait_for_first_completion",
    "background_agents_get_task_results",
    "background_agents_get_all_tasks",
    "background_agents_continue_task",
    "background_agents_clear_completed_task",
)


def format_location(loc: Sequence[str | int]) -> str:
    """``("agents", "web", "script", 2, "delay")`` → ``agents.web.script[2].delay``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out and ("." in str(part) or "[" in str(part)):
            out += f"[{part}]"  # a dotted key, e.g. a `vary:` path: vary[agents.w.delay]
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclass(frozen=True, slots=True)
class Located:
    """Where each part of a loaded document came from (1-based lines by field path)."""

    path: Path | None
    lines: Mapping[Loc, int] = field(default_factory=dict)

    def line(self, loc: Sequence[str | int]) -> int | None:
        """The line of ``loc``, else of its nearest located parent."""
        key = tuple(loc)
        while True:
            found = self.lines.get(key)
            if found is not None:
                return found
            if not key:
                return None
            key = key[:-1]

    def error(
        self, loc: Sequence[str | int], problem: str, *, expected: str | None = None
    ) -> ScenarioError:
        return ScenarioError(
            problem,
            path=self.path,
            line=self.line(loc),
            location=format_location(loc) or None,
            expected=expected,
        )


@dataclass(frozen=True, slots=True)
class LoadedScenario:
    """A validated scenario and where its parts are in the file."""

    scenario: Scenario
    where: Located
    source: str
    #: the document as plain data (what ``vary:`` paths point into)
    data: Any = None

    @property
    def name(self) -> str:
        if self.scenario.name:
            return self.scenario.name
        if self.where.path is not None:
            return _stem(self.where.path)
        return "scenario"

    @property
    def stem(self) -> str:
        """The file name without its suffix (``name`` when the text came from no file)."""
        return self.name if self.where.path is None else _stem(self.where.path)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".loopsim.yaml", ".loopsim.yml", ".loopsim.json", ".yaml", ".yml", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


# -- YAML with lines ------------------------------------------------------------------------


class _Converter:
    """Node tree → plain Python values, recording the line of every key and item."""

    def __init__(self, loader: yaml.SafeLoader, where: Path | None) -> None:
        self.loader = loader
        self.path = where
        self.lines: dict[Loc, int] = {}

    def convert(self, node: yaml.Node, loc: Loc) -> Any:
        if isinstance(node, yaml.MappingNode):
            self.loader.flatten_mapping(node)  # YAML merge keys (<<)
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.loader.construct_object(key_node, deep=True)
                if not isinstance(key, (str, int, float, bool)) or key is None:
                    raise ScenarioError(
                        f"expected a plain key, got {describe(key)}",
                        path=self.path,
                        line=key_node.start_mark.line + 1,
                        location=format_location(loc) or None,
                    )
                part: str | int = key if isinstance(key, (str, int)) else str(key)
                if key in result:
                    raise ScenarioError(
                        f"duplicate key {describe(key)} (first given on line "
                        f"{self.lines.get((*loc, part), '?')})",
                        path=self.path,
                        line=key_node.start_mark.line + 1,
                        location=format_location((*loc, part)),
                        expected="each key once per mapping",
                    )
                child: Loc = (*loc, part)
                self.lines[child] = key_node.start_mark.line + 1
                result[key] = self.convert(value_node, child)
            return result
        if isinstance(node, yaml.SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                child = (*loc, index)
                self.lines[child] = item.start_mark.line + 1
                items.append(self.convert(item, child))
            return items
        return self.loader.construct_object(node, deep=True)


def _parse_yaml(text: str, path: Path | None) -> tuple[Any, dict[Loc, int]]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        converter = _Converter(loader, path)
        converter.lines[()] = node.start_mark.line + 1
        return converter.convert(node, ()), converter.lines
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "unreadable YAML"
        context = f" ({exc.context})" if exc.context and exc.problem else ""
        raise ScenarioError(
            f"invalid YAML: {problem}{context}",
            path=path,
            line=None if mark is None else mark.line + 1,
            expected="a YAML document (see docs/scenarios.md)",
        ) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"invalid YAML: {exc}", path=path) from None
    finally:
        loader.dispose()


def _parse_json(text: str, path: Path | None) -> tuple[Any, dict[Loc, int]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            f"invalid JSON: {exc.msg}", path=path, line=exc.lineno, expected="a JSON object"
        ) from None
    try:  # JSON is (nearly) YAML: compose it again only to learn the lines
        _, lines = _parse_yaml(text, path)
    except ScenarioError:
        lines = {}
    return data, lines


# -- pydantic errors → ScenarioError -------------------------------------------------------


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


def _from_validation(exc: ValidationError, where: Located, data: Any) -> ScenarioError:
    errors = exc.errors(include_url=False)

    # The first error in document order is the one a reader meets first.
    def order(err: Mapping[str, Any]) -> tuple[int, int, int]:
        loc = _user_loc(err["loc"], data)
        # deeper first: a union reports every member, and the deepest error is the specific one
        return (
            where.line(loc) or 0,
            err["type"] in ("list_type", "dict_type", "model_type"),
            -len(loc),
        )

    errors = sorted(errors, key=order)
    first = errors[0]
    loc = _user_loc(first["loc"], data)
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


# -- cross references ------------------------------------------------------------------------


def _check_references(scenario: Scenario, where: Located) -> None:
    names = list(scenario.agents)
    seen: dict[str, str] = {}
    for name in names:
        folded = name.casefold()
        if folded in seen:
            raise where.error(
                ("agents", name),
                f"duplicate agent name {describe(name)}: names are compared case-insensitively "
                f"and {describe(seen[folded])} is already defined",
                expected="unique agent names",
            )
        seen[folded] = name

    def known(name: str, loc: Loc) -> None:
        if name not in scenario.agents:
            hint = difflib.get_close_matches(name, names, n=1)
            more = f"; did you mean {describe(hint[0])}?" if hint else ""
            raise where.error(
                loc,
                f"unknown agent {describe(name)}{more} (defined agents: {', '.join(names)})",
                expected="the name of an agent under `agents`",
            )

    parent = scenario.parent
    known(parent.agent, ("parent", "agent"))
    children_seen: dict[str, int] = {}
    for index, child in enumerate(parent.background_agents):
        loc: Loc = ("parent", "background_agents", index)
        known(child, loc)
        if child == parent.agent:
            raise where.error(
                loc,
                f"the parent {describe(child)} cannot be its own background agent",
                expected="a different agent",
            )
        if child.casefold() in children_seen:
            raise where.error(
                loc,
                f"duplicate background agent {describe(child)} (names are compared "
                "case-insensitively)",
                expected="each background agent once",
            )
        children_seen[child.casefold()] = index

    has_background = bool(parent.background_agents)
    for name, agent in scenario.agents.items():
        _check_agent(name, agent, scenario, where, is_parent=name == parent.agent)

    if scenario.loop is not None:
        for index, evaluator in enumerate(scenario.loop.evaluators):
            chosen = evaluator.chosen
            loc = ("loop", "evaluators", index)
            if chosen.kind == "background_task_completion" and not has_background:
                raise where.error(
                    loc,
                    "background_task_completion needs background agents: list them in "
                    "parent.background_agents",
                    expected="parent.background_agents to be non-empty",
                )
            if isinstance(chosen, CustomEvaluatorSpec):
                _check_import(chosen.import_path, (*loc, chosen.import_path), where)

    if scenario.loop is not None and scenario.loop.should_continue and not parent.harness:
        raise where.error(
            ("loop", "should_continue"),
            "should_continue is the harness's predicate loop: set parent.harness: true",
            expected="parent.harness: true",
        )
    if scenario.loop is not None and scenario.loop.should_continue and not has_background:
        raise where.error(
            ("loop", "should_continue"),
            "background_tasks_running needs background agents (parent.background_agents)",
            expected="parent.background_agents to be non-empty",
        )
    for index, step in enumerate(scenario.steps):
        if isinstance(step, ReleaseStep) and not has_background:
            raise where.error(
                ("steps", index),
                "release_session needs background agents (parent.background_agents)",
                expected="parent.background_agents to be non-empty",
            )
    if not any(type(step).__name__ == "RunStep" for step in scenario.steps):
        raise where.error(
            ("steps",), "the steps never run the parent", expected="at least one `run:` step"
        )

    for key in ("expect", "always"):
        expect = getattr(scenario, key)
        if expect is None:
            continue
        for name in expect.calls:
            if name not in scenario.agents and name != "judge":
                known(name, (key, "calls", name))
        if expect.iterations is not None and scenario.loop is None:
            raise where.error(
                (key, "iterations"),
                "iterations are counted by a loop, and this scenario has no `loop`",
                expected=f"a `loop:` section, or no `{key}.iterations`",
            )
        if expect.stop_reason is not None and scenario.loop is None:
            raise where.error(
                (key, "stop_reason"),
                "a stop reason is reported by a loop, and this scenario has no `loop`",
                expected=f"a `loop:` section, or no `{key}.stop_reason`",
            )
        if expect.tasks and not has_background:
            raise where.error(
                (key, "tasks"),
                "task statuses need background agents (parent.background_agents)",
                expected="parent.background_agents to be non-empty",
            )
    if scenario.always is not None and scenario.always.transcript is not None:
        raise where.error(
            ("always", "transcript"),
            "a transcript snapshot is one run's transcript, and `always:` holds for every draw",
            expected="`transcript: snapshot` under `expect:` (the file as written)",
        )


def _check_agent(
    name: str, agent: AgentSpec, scenario: Scenario, where: Located, *, is_parent: bool
) -> None:
    parent = scenario.parent
    if agent.policy is not None:
        chosen = agent.policy.chosen
        if isinstance(chosen, CoordinatorPolicy):
            if not is_parent or not parent.background_agents:
                raise where.error(
                    ("agents", name, "policy"),
                    "the coordinator policy is for the parent agent, and needs "
                    "parent.background_agents",
                    expected="this agent to be parent.agent, with background agents",
                )
            for index, child in enumerate(chosen.children or ()):
                if child not in parent.background_agents:
                    raise where.error(
                        ("agents", name, "policy", "coordinator", "children", index),
                        f"unknown background agent {describe(child)}; the parent's background "
                        f"agents are: {', '.join(parent.background_agents)}",
                        expected="a name from parent.background_agents",
                    )
    offered = set(agent.tools)
    if is_parent and parent.background_agents:
        offered |= set(BACKGROUND_TOOLS)
    for index, turn in enumerate(agent.script or ()):
        for call_index, call in enumerate(turn.calls):
            if turn.kind == "approval_request":
                call_loc: Loc = ("agents", name, "script", index, "approval_request", "name")
                if call.name in agent.tools and not agent.tools[call.name].approval_required:
                    raise where.error(
                        call_loc,
                        f"tool {describe(call.name)} does not require approval, so the agent "
                        "would run it instead of asking",
                        expected=f"approval_required: true on tools.{call.name}",
                    )
                continue
            many = isinstance(turn.tool_call, list)
            call_loc = ("agents", name, "script", index, "tool_call")
            if many:
                call_loc = (*call_loc, call_index)
            if call.name not in offered:
                choices = sorted(offered)
                hint = difflib.get_close_matches(call.name, choices, n=1)
                more = f"; did you mean {describe(hint[0])}?" if hint else ""
                raise where.error(
                    (*call_loc, "name"),
                    f"unknown tool {describe(call.name)}{more} (tools of agent {name}: "
                    f"{', '.join(choices) or 'none'})",
                    expected=f"a tool declared under agents.{name}.tools"
                    + (" or a background_agents_* tool" if is_parent else ""),
                )


def _check_import(import_path: str, loc: Loc, where: Located) -> None:
    module_name, _, attr = import_path.partition(":")
    if not module_name or not attr or not all(p.isidentifier() for p in module_name.split(".")):
        raise where.error(
            loc,
            f"bad import path {describe(import_path)}",
            expected="module:Class, e.g. my_project.evaluators:MyEvaluator",
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise where.error(
            loc,
            f"cannot import module {describe(module_name)}: {exc}",
            expected="an importable module (is it on sys.path?)",
        ) from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise where.error(
                loc,
                f"module {describe(module_name)} has no attribute {describe(attr)}",
                expected="module:Class naming a LoopEvaluator subclass",
            )
    from .._loop import LoopEvaluator  # noqa: PLC0415 - the loop layer is only needed here

    if not (isinstance(target, type) and issubclass(target, LoopEvaluator)):
        raise where.error(
            loc,
            f"{import_path} is not a LoopEvaluator subclass",
            expected="module:Class naming a LoopEvaluator subclass",
        )


# -- entry points --------------------------------------------------------------------------


def load_scenario_text(
    text: str, *, path: str | Path | None = None, fmt: str = "yaml"
) -> LoadedScenario:
    """Validate a scenario given as text (``fmt``: ``yaml`` or ``json``)."""
    where_path = None if path is None else Path(path)
    data, lines = (_parse_json if fmt == "json" else _parse_yaml)(text, where_path)
    where = Located(where_path, lines)
    if not isinstance(data, dict):
        raise ScenarioError(
            f"expected a mapping at the top level, got {describe(data)}",
            path=where_path,
            line=lines.get((), 1),
            expected="a scenario mapping starting with `version: 1`",
        )
    if "version" not in data:
        raise ScenarioError(
            'missing required key "version"',
            path=where_path,
            line=1,
            location="version",
            expected=f"version: {SCHEMA_VERSION} as the first key",
        )
    version = data["version"]
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise where.error(
            ("version",),
            f"version {version} is newer than this loopsim understands (it reads version "
            f"{SCHEMA_VERSION}); upgrade loopsim",
            expected=f"version: {SCHEMA_VERSION}",
        )
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise where.error(
            ("version",),
            f"unsupported version {describe(version)}",
            expected=f"version: {SCHEMA_VERSION}",
        )
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise _from_validation(exc, where, data) from None
    _check_references(scenario, where)
    if scenario.vary:
        from ._vary import check_vary  # noqa: PLC0415 - the vary layer imports this module

        check_vary(scenario, where, data)
    return LoadedScenario(scenario, where, text, data)


def load_scenario(path: str | Path) -> LoadedScenario:
    """Load and validate one scenario file (``.yaml``/``.yml`` or ``.json``)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read the file: {exc.strerror or exc}", path=file) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"the file is not UTF-8 text: {exc.reason}", path=file) from None
    fmt = "json" if file.suffix.lower() == ".json" else "yaml"
    return load_scenario_text(text, path=file, fmt=fmt)


def known_evaluators() -> tuple[str, ...]:
    return BUILTIN_EVALUATORS
