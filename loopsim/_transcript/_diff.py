"""Compare two transcripts: the first divergent event, both sides, a readable diff."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._model import Transcript, TranscriptEvent
from ._render import _RequestTails, describe_event

__all__ = ["Divergence", "diff_transcripts"]

_CONTEXT = 3
_CLIP = 120  # characters of a differing field's value shown on an event's line


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where two transcripts first differ.

    Attributes:
        index: 0-based index of the first divergent event.
        expected: that event in the first (recorded) transcript, None past its end.
        actual: that event in the second (live) transcript, None past its end.
        expected_line: ``expected`` rendered as a text line.
        actual_line: ``actual`` rendered as a text line.
        text: a readable report: a few events of shared context, then a unified diff of
            the two events' JSON.
    """

    index: int
    expected: TranscriptEvent | None
    actual: TranscriptEvent | None
    expected_line: str
    actual_line: str
    text: str

    def __str__(self) -> str:
        return self.text


class _Same:
    """Event equality on virtual time, kind and data, linear over a long loop.

    A request resends what its (agent, session) sent before. So the messages of the last
    pair of equal events of a kind and key are remembered, and a new pair only has its
    new tail compared deeply: its prefix equals the remembered one (a quick identity test,
    since a transcript shares one object per resent message), and that one was equal.
    """

    def __init__(self) -> None:
        self._equal: dict[tuple[object, ...], tuple[list[object], list[object]]] = {}

    def __call__(self, a: TranscriptEvent, b: TranscriptEvent) -> bool:
        if a.kind != b.kind or a.time != b.time:
            return False
        left, right = a.data.get("messages"), b.data.get("messages")
        if not isinstance(left, list) or not isinstance(right, list):
            return a.data == b.data
        if a.data.keys() != b.data.keys() or len(left) != len(right):
            return False
        if any(a.data[key] != b.data[key] for key in a.data if key != "messages"):
            return False
        key = (a.kind, _hashable(a.data.get("agent")), _hashable(a.data.get("session")))
        start = 0
        if (known := self._equal.get(key)) is not None:
            shared = min(len(known[0]), len(left))
            if left[:shared] == known[0][:shared] and right[:shared] == known[1][:shared]:
                start = shared  # both prefixes equal the pair found equal before
        if left[start:] != right[start:]:
            return False
        self._equal[key] = (left, right)
        return True


def _hashable(value: object) -> object:
    return value if value is None or isinstance(value, (str, int)) else repr(value)


def _line(event: TranscriptEvent | None, tails: _RequestTails) -> str:
    if event is None:
        return "<no event: the transcript ended>"
    # without the answer fields: when only they differ, the lines are alike and each side
    # names just the differing ones (below), not every field the answer set
    details = describe_event(event, tails, answer_fields=False)
    return f"t={event.time:9.3f}  {event.kind}  {details}"


def _differing(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, str]:
    """The data fields in which two events differ, each side with its own values (an
    absent one is ``<unset>``, a long one clipped): ``  {finish_reason: "length"}``."""
    names = [k for k in (*a, *(k for k in b if k not in a)) if a.get(k) != b.get(k)]

    def value(data: Mapping[str, Any], key: str) -> str:
        if key not in data:
            return "<unset>"
        text = json.dumps(data[key], ensure_ascii=False, sort_keys=True)
        return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."

    def shown(data: Mapping[str, Any]) -> str:
        values = ", ".join(f"{k}: {value(data, k)}" for k in names)
        return f"  {{{values}}}" if names else ""

    return shown(a), shown(b)


def _json_lines(event: TranscriptEvent | None) -> list[str]:
    if event is None:
        return []
    body = {"time": event.time, "kind": event.kind, "data": event.data}
    return json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True).splitlines()


def diff_transcripts(expected: Transcript, actual: Transcript) -> Divergence | None:
    """The first event where ``actual`` differs from ``expected`` (None when identical).

    Events are compared on virtual time, kind and data; the header (backend, loopsim
    version...) and the ``seq`` numbering are not compared.

    Example:
        >>> import loopsim
        >>> def answer(text):
        ...     agent = loopsim.Agent(loopsim.ScriptedChatClient([text]), name="a")
        ...     return loopsim.record(agent.run, "q")[1]
        >>> a, b = answer("x"), answer("y")
        >>> loopsim.diff_transcripts(a, a) is None, loopsim.diff_transcripts(a, b).index
        (True, 2)
    """
    left, right = expected.events, actual.events
    tails_a, tails_b = _RequestTails(), _RequestTails()
    same = _Same()
    context: list[str] = []
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        if a is not None and b is not None and same(a, b):
            context.append(f"  {_line(a, tails_a)}")
            # keeps the live side's "new tail" state in step
            describe_event(b, tails_b, answer_fields=False)
            context = context[-_CONTEXT:]
            continue
        line_a, line_b = _line(a, tails_a), _line(b, tails_b)
        if line_a == line_b and a is not None and b is not None:
            # the same line (a field the line does not show, such as an answer's
            # finish_reason): each side names the fields that differ
            shown_a, shown_b = _differing(a.data, b.data)
            line_a, line_b = line_a + shown_a, line_b + shown_b
        diff = difflib.unified_diff(
            _json_lines(a),
            _json_lines(b),
            fromfile=f"recorded event {index}",
            tofile=f"live event {index}",
            lineterm="",
        )
        text = "\n".join(
            [
                f"first divergence at event {index}:",
                *context,
                f"- {line_a}",
                f"+ {line_b}",
                "",
                *diff,
            ]
        )
        return Divergence(index, a, b, line_a, line_b, text + "\n")
    return None
