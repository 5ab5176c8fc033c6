"""YAML (safe loading only) and JSON into plain data, keeping the line of every key and item.

YAML is composed into PyYAML's node tree with ``SafeLoader`` and converted by hand, so
every mapping key and sequence item keeps its line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .._errors import ScenarioError
from ._schema import describe
from ._source import Loc, format_location

__all__ = ["parse_json", "parse_yaml"]


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


def parse_yaml(text: str, path: Path | None) -> tuple[Any, dict[Loc, int]]:
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


def parse_json(text: str, path: Path | None) -> tuple[Any, dict[Loc, int]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            f"invalid JSON: {exc.msg}", path=path, line=exc.lineno, expected="a JSON object"
        ) from None
    try:  # JSON is (nearly) YAML: compose it again only to learn the lines
        _, lines = parse_yaml(text, path)
    except ScenarioError:
        lines = {}
    return data, lines
