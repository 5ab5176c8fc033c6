"""Compare two transcripts: the first divergent event, both sides, a readable diff."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from ._model import Transcript, TranscriptEvent
from ._render import _RequestTails, describe_event

__all__ = ["Divergence", "diff_transcripts"]

_CONTEXT = 3


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


def _same(a: TranscriptEvent, b: TranscriptEvent) -> bool:
    return a.kind == b.kind and a.time == b.time and a.data == b.data


def _line(event: TranscriptEvent | None, tails: _RequestTails) -> str:
    if event is None:
        return "<no event: the transcript ended>"
    return f"t={event.time:9.3f}  {event.kind}  {describe_event(event, tails)}"


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
    context: list[str] = []
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        if a is not None and b is not None and _same(a, b):
            context.append(f"  {_line(a, tails_a)}")
            describe_event(b, tails_b)  # keeps the live side's "new tail" state in step
            context = context[-_CONTEXT:]
            continue
        line_a, line_b = _line(a, tails_a), _line(b, tails_b)
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
