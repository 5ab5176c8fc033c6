"""Stage 5: the errors a run's tools raised, and whether the scenario declares them.

A tool that raises does not stop a run: on both engines the agent's function layer turns
the exception into an error result for the model and goes on. A scenario that did not
mean it would then pass with a broken tool, so every such error fails the scenario
unless an ``expect: tool_errors:`` block (the whole run's, or the step's own) declares
it, and a declared error that did not happen fails too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .._trace import Event
from ._schema import RangeSpec, ToolErrorSpec

__all__ = ["ToolErrorInfo", "declared_problems", "tool_errors_of"]

#: Tool errors named in one failure message before "... and N more".
SHOWN = 3


@dataclass(frozen=True, slots=True)
class ToolErrorInfo:
    """One exception a tool raised during a run (``ScenarioResult.tool_errors``).

    ``error`` is the exception's class name, ``message`` its text; ``time`` the virtual
    time of the call's result; ``arguments`` those the model called it with. ``position``
    is the index of its ``tool_result`` event in the run's events.
    """

    agent: str | None
    tool: str
    call_id: str | None
    arguments: Any
    error: str
    message: str
    time: float
    position: int = 0

    @property
    def text(self) -> str:
        """``ClassName: message``, as a declared ``error`` is matched against."""
        return f"{self.error}: {self.message}" if self.message else self.error

    def describe(self) -> str:
        """One line: which tool raised what, with which arguments, when, for whom."""
        arguments = json.dumps(self.arguments, sort_keys=True, default=repr)
        return (
            f"tool {self.tool} raised {self.text} (agent {self.agent}, arguments "
            f"{arguments}, at t={self.time:g}s)"
        )


def tool_errors_of(events: Sequence[Event], first: int = 0) -> list[ToolErrorInfo]:
    """The tool errors among ``events`` from position ``first`` on, in order."""
    arguments: dict[tuple[Any, Any], Any] = {}
    found: list[ToolErrorInfo] = []
    for position, event in enumerate(events):
        data = event.data
        key = (data.get("agent"), data.get("call_id"))
        if event.kind == "tool_call":
            arguments[key] = data.get("arguments")
        elif event.kind == "tool_result" and data.get("error_type") is not None:
            if position < first:
                continue
            message = data.get("error")
            found.append(
                ToolErrorInfo(
                    agent=None if data.get("agent") is None else str(data.get("agent")),
                    tool=str(data.get("name")),
                    call_id=None if data.get("call_id") is None else str(data.get("call_id")),
                    arguments=arguments.get(key),
                    error=str(data["error_type"]),
                    message="" if message is None else str(message),
                    time=event.time,
                    position=position,
                )
            )
    return found


def listed(errors: Sequence[ToolErrorInfo]) -> str:
    """The first few errors, one clause each."""
    shown = "; ".join(e.describe() for e in errors[:SHOWN])
    more = len(errors) - SHOWN
    return shown + (f"; ... and {more} more" if more > 0 else "")


def hint(error: ToolErrorInfo) -> str:
    """What to write to declare ``error``."""
    return f"`tool_errors: [{{tool: {error.tool}, error: {error.error}}}]`"


def declared_problems(
    declared: int | list[ToolErrorSpec], errors: Sequence[ToolErrorInfo]
) -> Iterable[tuple[tuple[str | int, ...], str]]:
    """(where under ``tool_errors``, what is wrong) for each way ``errors`` (those of the
    block's part of the run) differ from what the block declares."""
    if isinstance(declared, int):
        if len(errors) != declared:
            got = f": {listed(errors)}" if errors else ""
            yield (), f"expected {declared} tool error(s), got {len(errors)}{got}"
        return
    covered: set[int] = set()
    for index, item in enumerate(declared):
        matched = [e for e in errors if item.matches(e.tool, e.agent, e.text)]
        covered.update(e.position for e in matched)
        wanted = item.count
        if wanted is None:
            ok, said = bool(matched), "at least 1"
        elif isinstance(wanted, RangeSpec):
            ok, said = wanted.holds(len(matched)), wanted.render()
        else:
            ok, said = len(matched) == wanted, str(wanted)
        if not ok:
            loc: tuple[str | int, ...] = (index,) if wanted is None else (index, "count")
            got = f": {listed(matched)}" if matched else ""
            seen = ""
            if errors and not matched:
                seen = f" (the tool errors there were: {listed(errors)})"
            yield (
                loc,
                f"expected {said} tool error(s) of {item.render()}, got {len(matched)}{got}{seen}",
            )
    for error in errors:
        if error.position not in covered:
            yield (
                (),
                (
                    f"{error.describe()}, and no item of tool_errors declares it; add one, "
                    f"e.g. {hint(error)}"
                ),
            )
