"""Where each part of a scenario document came from, and the loaded scenario itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import ScenarioError
from ._limits import ScenarioLimits
from ._schema import Scenario

__all__ = ["LoadedScenario", "Loc", "Located", "combine", "format_location"]

Loc = tuple["str | int", ...]


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


def combine(problems: Sequence[ScenarioError], limits: ScenarioLimits) -> ScenarioError:
    """One error to raise for several: the first, the rest (up to the cap) as ``others``."""
    first = problems[0]
    shown = list(problems[: limits.max_errors])
    first.others = tuple(shown[1:])
    first.omitted = max(len(problems) - len(shown), 0)
    return first


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
    #: where its user code is imported from (see ``_imports``): base folder, rootdir
    folders: tuple[Path, ...] = ()

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
