"""Readable text rendering of a transcript (the Mermaid ones are in ``_mermaid``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._clients._recording import ANSWER_FIELDS, message_summary
from .._clients._replay import comparable_message
from ._model import Transcript, TranscriptEvent

__all__ = ["answer_field_parts", "describe_event", "render_text"]

_KIND_WIDTH = 20  # len("loop_iteration_start")


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: max(limit - 3, 1)] + "..."


@dataclass
class _RequestTails:
    """Per (agent, session): what the model already saw, to show only the new tail."""

    seen: dict[tuple[Any, Any], list[dict[str, Any]]] = field(default_factory=dict)
    tools: dict[tuple[Any, Any], list[str]] = field(default_factory=dict)
    sent: dict[tuple[Any, Any], list[dict[str, Any]]] = field(default_factory=dict)

    def request(
        self, data: Mapping[str, Any]
    ) -> tuple[int, list[dict[str, Any]], list[str] | None]:
        key = (data.get("agent"), data.get("session"))
        messages: list[dict[str, Any]] = list(data.get("messages") or ())
        before = self.seen.get(key, [])
        common = 0
        # A request resends the one before it: when that is its prefix (a quick test,
        # since a transcript shares one object per resent message) only what came after
        # is compared, so a long loop renders in linear time.
        sent = self.sent.get(key, [])
        if len(sent) <= min(len(before), len(messages)) and messages[: len(sent)] == sent:
            common = len(sent)
        for a, b in zip(before[common:], messages[common:], strict=False):
            if comparable_message(a) != comparable_message(b):
                break
            common += 1
        self.seen[key] = list(messages)
        self.sent[key] = messages
        tools = list(data.get("tools") or ())
        changed = None if self.tools.get(key) == tools else tools
        self.tools[key] = tools
        return common, messages[common:], changed

    def response(self, data: Mapping[str, Any]) -> None:
        key = (data.get("agent"), data.get("session"))
        self.seen.setdefault(key, []).extend(data.get("messages") or ())


def _usage(usage: Mapping[str, Any] | None) -> str:
    if not usage:
        return ""
    names = {"input_tokens": "in", "output_tokens": "out", "total_tokens": "total"}
    parts = [f"{short}={usage[k]}" for k, short in names.items() if usage.get(k) is not None]
    return f"  [{' '.join(parts)}]" if parts else ""


#: a text shown as it is in ``name=value`` (no quotes needed: no space, quote or bracket)
_BARE = re.compile(r"[\w.:/+@-]+")


def answer_field_parts(
    data: Mapping[str, Any], *, max_text: int | None = None
) -> list[tuple[str, str]]:
    """``(name, value as shown)`` for each answer field a ``model_response`` event's data
    sets (``finish_reason``, ``model``...; in the order they are recorded), none when it
    sets none. A plain word stays bare; other texts and the JSON objects are JSON."""
    parts = []
    for name in ANSWER_FIELDS:
        value = data.get(name)
        if value is None or (name == "additional_properties" and not value):
            continue
        shown = value if isinstance(value, str) and _BARE.fullmatch(value) else _printable(value)
        parts.append((name, _clip(shown, max_text)))
    return parts


def _printable(value: Any) -> str:
    r"""``value`` as JSON on one line: characters that are not printable (``\x85``,
    ``\u2028``..., which ``splitlines`` breaks at) become ``\uXXXX`` escapes too."""
    return "".join(c if c.isprintable() else _escaped(c) for c in _j(value))


def _escaped(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a character past the BMP as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _answer_fields(data: Mapping[str, Any], max_text: int | None) -> str:
    parts = answer_field_parts(data, max_text=max_text)
    if not parts:
        return ""
    return "  (" + " ".join(f"{name}={value}" for name, value in parts) + ")"


def describe_event(
    event: TranscriptEvent,
    tails: _RequestTails | None = None,
    *,
    max_text: int | None = None,
    answer_fields: bool = True,
) -> str:
    """The details part of one event's text line (without time and kind); an answer's
    fields are left out with ``answer_fields=False`` (a diff names the differing ones)."""
    d = event.data
    kind = event.kind
    who = f"{d.get('agent')}  {d.get('session')}"
    if kind in ("session_created", "session_restored"):
        return who
    if kind == "model_request":
        tails = tails or _RequestTails()
        earlier, tail, tools = tails.request(d)
        text = " | ".join(_clip(message_summary(m), max_text) for m in tail) or "<no new messages>"
        if earlier:
            text += f" (+{earlier} earlier)"
        if tools:
            text += f"  tools: {', '.join(tools)}"
        return f"{who}  {text}"
    if kind == "model_response":
        if tails is not None:
            tails.response(d)
        messages = d.get("messages") or ()
        text = " | ".join(_clip(message_summary(m), max_text) for m in messages) or "<empty>"
        fields = _answer_fields(d, max_text) if answer_fields else ""
        return f"{who}  {text}{_usage(d.get('usage'))}{fields}"
    if kind == "model_error":
        return f"{who}  {d.get('error')}: {_clip(_j(d.get('message')), max_text)}"
    if kind == "tool_call":
        return f"{who}  {d.get('name')}({_j(d.get('arguments', {}))}) #{d.get('call_id')}"
    if kind == "tool_result":
        if d.get("error_type") is not None:  # the tool raised
            outcome = f"raised {d.get('error_type')} {_clip(_j(d.get('error')), max_text)}"
        elif d.get("error") is not None:
            outcome = f"error {_clip(_j(d.get('error')), max_text)}"
        else:
            outcome = f"= {_clip(_j(d.get('result')), max_text)}"
        return f"{who}  {d.get('name')} #{d.get('call_id')} {outcome}"
    if kind == "hosted_tool":  # the service ran it: call and result come together
        return (
            f"{who}  {d.get('name')}({_j(d.get('arguments', {}))}) #{d.get('call_id')}"
            f" = {_clip(_j(d.get('result')), max_text)}"
        )
    if kind == "loop_iteration_start":
        return f"{d.get('loop')}  iteration {d.get('iteration')}"
    if kind == "evaluator_decision":
        feedback = d.get("feedback")
        suffix = f"  feedback: {_clip(_j(feedback), max_text)}" if feedback is not None else ""
        return (
            f"{d.get('loop')}  iteration {d.get('iteration')}  evaluator {d.get('index')} "
            f"{d.get('evaluator')}: {d.get('decision')}{suffix}"
        )
    if kind == "loop_stop":
        return f"{d.get('loop')}  {d.get('reason')} after {d.get('iterations')} iteration(s)"
    if kind in ("task_status", "task_finished"):
        what = d.get("status") if kind == "task_status" else f"run {d.get('outcome')}"
        text = f"{d.get('provider')}  {d.get('session')}  task {d.get('task_id')} "
        text += f"{d.get('agent')} {what}"
        if kind == "task_status":
            text += f"  {_clip(_j(d.get('description')), max_text)}"
        if d.get("error") is not None:
            text += f"  error: {_clip(_j(d.get('error')), max_text)}"
        elif d.get("result") is not None:
            text += f"  result: {_clip(_j(d.get('result')), max_text)}"
        return text
    if kind == "clock_jump":
        return f"{_num(d.get('from', d.get('start')))} -> {_num(d.get('to', d.get('end')))}"
    return "  ".join(f"{k}={_clip(_j(v), max_text)}" for k, v in sorted(d.items()))


def _num(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{float(value):.3f}"
    return str(value)


#: ``render_text(times=...)``: seconds since the previous event, or since the start.
TextTimes = Literal["delta", "absolute"]
_DELTA_WIDTH = 9  # "+86400.5s"


def _delta(seconds: float) -> str:
    """``+30s``, ``+0.25s``; blank when no virtual time passed (at millisecond precision)."""
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    if text in ("0", "-0"):
        return " " * _DELTA_WIDTH
    return f"+{text}s".ljust(_DELTA_WIDTH)


def _lines(transcript: Transcript, max_text: int | None, times: TextTimes) -> Iterator[str]:
    tails = _RequestTails()
    previous = 0.0
    for event in transcript.events:
        if times == "absolute":
            stamp = f"t={event.time:9.3f}"
            details = describe_event(event, tails, max_text=max_text)
        else:
            stamp = _delta(event.time - previous)
            # the jump's size is the time column; its ends are absolute times, left out
            # so that a timing change touches only the lines where time passes differently
            details = (
                ""
                if event.kind == "clock_jump"
                else describe_event(event, tails, max_text=max_text)
            )
        previous = event.time
        yield f"{stamp}  {event.kind:<{_KIND_WIDTH}}  {details}".rstrip()


def render_text(
    transcript: Transcript, *, max_text: int | None = None, times: TextTimes = "delta"
) -> str:
    """One line per event, the time first; a header line names the run.

    The time column is the virtual time that passed since the previous event (``+30s``,
    blank when none did), so that changing one delay changes only the lines where time
    passes differently, not every later line; ``times="absolute"`` shows the virtual
    time since the start instead (``t=   30.000``). A ``model_request`` shows only what
    is new for that agent and session since its last turn (``(+N earlier)`` counts the
    rest); tools are listed when they change. A ``model_response`` ends with the answer
    fields the model set, in parentheses (``(finish_reason=length model=gpt-4o-mini)``;
    nothing when it set none). ``max_text`` clips long texts (None keeps them whole, as
    snapshots need).

    Example:
        >>> import loopsim
        >>> client = loopsim.ScriptedChatClient([loopsim.Turn("hi", delay=2)])
        >>> agent = loopsim.Agent(client, name="a")
        >>> transcript = loopsim.record(agent.run, "hello", seed=3)[1]
        >>> print(loopsim.render_text(transcript), end="")
        # loopsim transcript: scenario=None seed=3 backend=asyncio events=4 times=since-previous
                   session_created       a  session-0001
                   model_request         a  session-0001  user: "hello"
        +2s        clock_jump
                   model_response        a  session-0001  assistant: "hi"
        >>> print(loopsim.render_text(transcript, times="absolute").splitlines()[3])
        t=    2.000  clock_jump            0.000 -> 2.000
    """
    header = (
        f"# loopsim transcript: scenario={transcript.scenario} seed={transcript.seed} "
        f"backend={transcript.backend} events={len(transcript.events)}"
    )
    if times == "delta":
        header += " times=since-previous"
    elif times != "absolute":
        msg = f"render_text: times must be 'delta' or 'absolute', got {times!r}"
        raise ValueError(msg)
    return "\n".join([header, *_lines(transcript, max_text, times)]) + "\n"
