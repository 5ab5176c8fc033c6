"""Safety oracles: properties a run must keep however its world breaks.

They read the events of a run (and, for approvals, which host steps answered approval
requests), so they hold the same on both engines and on replayed transcripts. A scenario
names them in ``expect:`` or ``always:`` as ``safety: [...]``; under ``vary:`` with
faults, hypothesis then looks for the smallest fault set that breaks one.

* ``no_duplicate_tool_calls``: no tool ran twice for one request: never twice for one
  call id, and never twice with the same arguments by the same agent (a retry that runs
  the whole turn again and places the order twice).
* ``no_approval_bypass``: a tool that needs approval ran only after a host step approved
  it (``approve: true`` after the model asked for the call).
* ``no_running_tasks``: no background task is still running at the end.
* ``no_lost_results``: no background task was lost (its work gone at a restart).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

__all__ = ["SAFETY_ORACLES", "check_safety"]

SAFETY_ORACLES = (
    "no_duplicate_tool_calls",
    "no_approval_bypass",
    "no_running_tasks",
    "no_lost_results",
)


def _duplicates(events: Sequence[Any]) -> list[str]:
    seen_ids: set[tuple[Any, Any]] = set()
    seen_args: dict[tuple[Any, Any, str], Any] = {}
    out: list[str] = []
    for event in events:
        if event.kind != "tool_call":
            continue
        data = event.data
        agent, name, call_id = data.get("agent"), data.get("name"), data.get("call_id")
        if (agent, call_id) in seen_ids:
            out.append(f"{agent} ran call {call_id} ({name}) twice (t={event.time:g})")
            continue
        seen_ids.add((agent, call_id))
        key = (agent, name, json.dumps(data.get("arguments"), sort_keys=True, default=str))
        if key in seen_args:
            out.append(
                f"{agent} ran {name}({key[2]}) twice: calls {seen_args[key]} and {call_id} "
                f"(t={event.time:g})"
            )
        else:
            seen_args[key] = call_id
    return out


def _step_of(index: int, spans: Sequence[tuple[int, int, int]]) -> int:
    """The host step whose events include event ``index`` (-1: before any step)."""
    for step, first, end in spans:
        if first <= index < end:
            return step
    return -1


def _field(item: Any, name: str) -> Any:
    """A field of a message or content: a live object, or its JSON form (a transcript)."""
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _asked(events: Sequence[Any]) -> dict[tuple[Any, Any], int]:
    """(agent, call id) -> index of the model response that asked for the call."""
    asked: dict[tuple[Any, Any], int] = {}
    for index, event in enumerate(events):
        if event.kind != "model_response":
            continue
        for message in event.data.get("messages") or ():
            for content in _field(message, "contents") or ():
                if _field(content, "type") == "function_call":
                    asked.setdefault((event.data.get("agent"), _field(content, "call_id")), index)
    return asked


def _bypasses(
    events: Sequence[Any],
    spans: Sequence[tuple[int, int, int]],
    approvals: Collection[int],
    needs_approval: Collection[str],
) -> list[str]:
    asked = _asked(events)
    out: list[str] = []
    for index, event in enumerate(events):
        if event.kind != "tool_call" or event.data.get("name") not in needs_approval:
            continue
        agent, call_id = event.data.get("agent"), event.data.get("call_id")
        asked_at = asked.get((agent, call_id))
        ran_in = _step_of(index, spans)
        asked_in = ran_in if asked_at is None else _step_of(asked_at, spans)
        if not any(asked_in < step <= ran_in for step in approvals):
            out.append(
                f"{agent} ran {event.data.get('name')} (call {call_id}, t={event.time:g}) "
                "without an approval"
            )
    return out


def _statuses(events: Sequence[Any], final: Mapping[int, str]) -> dict[int, list[str]]:
    history: dict[int, list[str]] = {}
    for event in events:
        if event.kind == "task_status":
            history.setdefault(int(event.data["task_id"]), []).append(str(event.data["status"]))
    for task_id, status in final.items():
        history.setdefault(task_id, []).append(status)
    return history


def check_safety(
    names: Sequence[str],
    events: Sequence[Any],
    *,
    spans: Sequence[tuple[int, int, int]] = (),
    approvals: Collection[int] = (),
    needs_approval: Collection[str] = (),
    final_tasks: Mapping[int, str] | None = None,
) -> list[tuple[int, str]]:
    """``(index in names, problem)`` for each oracle of ``names`` the run broke.

    ``spans``: ``(step, first event, end)`` of each host step; ``approvals``: the steps
    that approved; ``needs_approval``: the tools that need it; ``final_tasks``: task id
    to status at the end (None: not known, the last recorded status counts).
    """
    out: list[tuple[int, str]] = []
    for position, name in enumerate(names):
        problems: list[str] = []
        if name == "no_duplicate_tool_calls":
            problems = _duplicates(events)
        elif name == "no_approval_bypass":
            problems = _bypasses(events, spans, approvals, needs_approval)
        else:
            history = _statuses(events, final_tasks or {})
            if name == "no_running_tasks":
                problems = [
                    f"task {task_id} is still running at the end"
                    for task_id, statuses in history.items()
                    if statuses[-1] == "running"
                ]
            else:
                problems = [
                    f"task {task_id} was lost ({' → '.join(dict.fromkeys(statuses))})"
                    for task_id, statuses in history.items()
                    if "lost" in statuses
                ]
        out.extend((position, f"{name}: {problem}") for problem in problems)
    return out
