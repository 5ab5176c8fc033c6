"""Stage 5, ``--engine both``: compare the two engines' transcripts, stream by stream.

What must match exactly is compared exactly: each event's kind, virtual time and data —
messages, tool calls and results, counts, statuses, JSON shapes, which tool answered
with an error. Three things are set aside, each for a stated reason:

* **Model-facing sentences.** The built-in engine words them in loopsim's own words
  (``loopsim._wording.WORDING``), the package in upstream's; a text of the built-in
  engine that a WORDING template made is compared by its facts
  (:func:`loopsim._wording.agrees`: error or not, every field value), not its prose.
* **How ids are spelled.** Sessions are ``session-0001`` on one engine and uuid-shaped on
  the other (both deterministic); an id is compared by which one it is — the first,
  second... id of its kind on its side — not by its spelling.
* **How same-instant observations interleave.** Events come in streams (one agent's model
  calls, its tool calls, each call's result, one task's statuses, one loop's decisions,
  the sessions, the host's restarts); each stream is compared in order, and the first divergence
  reported is the earliest one in virtual time. Where the tracing of the real package
  notices a status change (after a tool call returns) is not behaviour of the code under
  test; the order within each stream is. ``clock_jump`` events are the scheduler's, not
  the code's: every compared event carries its own virtual time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .._transcript import Transcript, TranscriptEvent
from .._wording import agrees

__all__ = ["EngineDivergence", "compare_engines"]

#: Data keys whose values are ids, numbered per kind by first appearance on each side.
ID_KEYS = {"session": "session", "session_id": "session", "response_id": "response"}
#: Events that are the scheduler's, not the code under test's.
IGNORED = frozenset({"clock_jump"})
#: Fields set aside per event kind: a request's instructions are the system prompt, built
#: of model-facing sentences (loopsim's WORDING on one side, upstream's prose on the
#: other) around the user's own text; how they are joined is checked by the fidelity tests.
IGNORED_FIELDS = {"model_request": frozenset({"instructions"})}


def _stream(event: TranscriptEvent) -> tuple[str, ...]:
    data = event.data
    kind = event.kind
    if kind.startswith("model_"):
        return ("model calls of", str(data.get("agent")))
    if kind == "tool_call":
        return ("tool calls of", str(data.get("agent")))
    if kind == "tool_result":  # upstream runs one turn's calls together, loopsim in turn:
        # which result is in first is scheduling; each call's result is compared, and the
        # model's next request holds them all in call order
        return ("tool result of", str(data.get("agent")), "call", str(data.get("call_id")))
    if kind.startswith(("loop_", "evaluator_")):
        return ("loop", str(data.get("loop")))
    if kind in ("task_status", "task_finished"):
        return ("task", str(data.get("task_id")))
    if kind.startswith("session_"):
        return ("sessions of", str(data.get("agent")))
    return ("host",)


class _Ids:
    """Each side's ids, renamed to ``<kind>#<n>`` in order of first appearance."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], str] = {}

    def name(self, kind: str, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        key = (kind, value)
        if key not in self.seen:
            count = sum(1 for k in self.seen if k[0] == kind)
            self.seen[key] = f"{kind}#{count + 1}"
        return self.seen[key]


def _normalized(value: Any, ids: _Ids, key: str | None = None) -> Any:
    if key in ID_KEYS:
        return ids.name(ID_KEYS[key], value)
    if isinstance(value, dict):
        return {k: _normalized(v, ids, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalized(v, ids) for v in value]
    return value


def _agree(ours: Any, theirs: Any) -> bool:
    """Deep equality, with built-in-engine sentences compared by their facts."""
    if isinstance(ours, str) and isinstance(theirs, str):
        return ours == theirs or agrees(ours, theirs) or _agree_by_line(ours, theirs)
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(_agree(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(
            _agree(a, b) for a, b in zip(ours, theirs, strict=True)
        )
    return bool(ours == theirs and type(ours) is type(theirs))


def _agree_by_line(ours: str, theirs: str) -> bool:
    """A text made of several WORDING lines (a heading, then one line per task) agrees
    line by line."""
    mine, other = ours.split("\n"), theirs.split("\n")
    return (
        len(mine) > 1
        and len(mine) == len(other)
        and all(a == b or agrees(a, b) for a, b in zip(mine, other, strict=True))
    )


def _where(ours: Any, theirs: Any, path: str = "") -> tuple[str, Any, Any]:
    """The first place (a dotted path into the data) where the two sides disagree."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            if key not in ours or key not in theirs or not _agree(ours[key], theirs[key]):
                inner = f"{path}.{key}" if path else str(key)
                return _where(ours.get(key, _MISSING), theirs.get(key, _MISSING), inner)
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            if not _agree(a, b):
                return _where(a, b, f"{path}[{index}]")
    return path or "the data", ours, theirs


class _Missing:
    def __repr__(self) -> str:
        return "<absent>"


_MISSING = _Missing()


def _shown(value: Any) -> str:
    if isinstance(value, _Missing):
        return repr(value)
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    return text if len(text) <= 300 else text[:297] + "..."


@dataclass(frozen=True, slots=True)
class _Entry:
    event: TranscriptEvent
    data: dict[str, Any]


def _streams(transcript: Transcript) -> dict[tuple[str, ...], list[_Entry]]:
    ids = _Ids()
    streams: dict[tuple[str, ...], list[_Entry]] = {}
    for event in transcript.events:
        if event.kind in IGNORED:
            continue
        dropped = IGNORED_FIELDS.get(event.kind, frozenset())
        data = _normalized({k: v for k, v in event.data.items() if k not in dropped}, ids)
        streams.setdefault(_stream(event), []).append(_Entry(event, data))
    return streams


@dataclass(frozen=True, slots=True)
class EngineDivergence:
    """The earliest point where the engines disagree: the stream, its n-th event, both sides.

    ``field`` is the first place inside the event's data where they differ (after
    normalizing), with each side's value there.
    """

    stream: str
    position: int
    time: float
    loopsim_event: TranscriptEvent | None
    agent_framework_event: TranscriptEvent | None
    field: str
    loopsim_value: Any
    agent_framework_value: Any

    def __str__(self) -> str:
        def side(event: TranscriptEvent | None) -> str:
            if event is None:
                return "<no such event: the stream ended>"
            return f"t={event.time:g} {event.kind} (event {event.seq} of its transcript)"

        return (
            f"first divergence in {self.stream}, event {self.position + 1}, at virtual time "
            f"{self.time:g}s\n"
            f"      loopsim:         {side(self.loopsim_event)}\n"
            f"      agent_framework: {side(self.agent_framework_event)}\n"
            f"      at {self.field}:\n"
            f"        loopsim:         {_shown(self.loopsim_value)}\n"
            f"        agent_framework: {_shown(self.agent_framework_value)}"
        )


def _divergences(
    ours: dict[tuple[str, ...], list[_Entry]], theirs: dict[tuple[str, ...], list[_Entry]]
) -> Iterator[EngineDivergence]:
    for stream in [*ours, *(s for s in theirs if s not in ours)]:
        left, right = ours.get(stream, []), theirs.get(stream, [])
        for position in range(max(len(left), len(right))):
            a = left[position] if position < len(left) else None
            b = right[position] if position < len(right) else None
            if (
                a is not None
                and b is not None
                and a.event.kind == b.event.kind
                and a.event.time == b.event.time
                and _agree(a.data, b.data)
            ):
                continue
            time = min(e.event.time for e in (a, b) if e is not None)
            field: str
            mine: Any
            other: Any
            if a is None or b is None:
                field, mine, other = "the event", _MISSING, _MISSING
                if a is not None:
                    mine = a.event.kind
                if b is not None:
                    other = b.event.kind
            elif a.event.kind != b.event.kind:
                field, mine, other = "kind", a.event.kind, b.event.kind
            elif a.event.time != b.event.time:
                field, mine, other = "time", a.event.time, b.event.time
            else:
                field, mine, other = _where(a.data, b.data)
            yield EngineDivergence(
                " ".join(stream),
                position,
                time,
                None if a is None else a.event,
                None if b is None else b.event,
                field,
                mine,
                other,
            )
            break


def compare_engines(
    loopsim_run: Transcript, agent_framework_run: Transcript
) -> EngineDivergence | None:
    """The earliest divergence between the engines' transcripts (None when they agree)."""
    found = list(_divergences(_streams(loopsim_run), _streams(agent_framework_run)))
    if not found:
        return None
    return min(found, key=lambda d: (d.time, d.stream, d.position))
