"""Mermaid renderings of a transcript: the sequence diagram and the task timeline (gantt).

Both are checked in headless Chromium with Mermaid 11 by the test suite
(tests/browser/). Facts about Mermaid 11 they rely on, found in the browser:

* gantt ``dateFormat X`` (seconds) is parsed strictly by dayjs and most values fail, so
  bars fall back to the chart's start; ``dateFormat x`` (integer milliseconds) places
  every bar right, and ``axisFormat %s`` labels the axis in seconds;
* a milestone sits at the middle of its start and end, so both are the same instant;
* ``vert`` draws a vertical line across the chart (a process restart);
* in a sequence diagram ``<br/>`` breaks a line; ``#``, ``;``, ``<`` and ``>`` must be
  written as entity codes (``#35;`` ...), and ``--x`` draws a crossed (failed) arrow.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._clients._recording import message_summary
from .._escape import mermaid_text
from .._invariants import WAIT_TOOL, is_wait_timeout
from ._model import Transcript, TranscriptEvent
from ._render import _RequestTails
from ._spans import Span, spans

__all__ = ["HostCall", "host_calls", "render_mermaid", "render_timeline"]

_WAIT_SUFFIX = WAIT_TOOL.removeprefix("background_agents")  # "_wait_for_first_completion"
_QUIET_RESULTS = ("_start_task", "_clear_completed_task")  # their task_status arrow says it
_NOTE_LINES = 3


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 3, 1)] + "..."


def _m(text: str, limit: int = 60) -> str:
    """One line of Mermaid sequence text: whitespace folded, clipped, specials escaped."""
    return mermaid_text(_clip(" ".join(str(text).split()), limit))


def _note(text: str, limit: int = 60) -> str:
    """Note text: each line escaped and clipped, joined with ``<br/>`` (never a literal \\n)."""
    lines = [line for line in str(text).splitlines() if line.strip()] or [""]
    shown = [_m(line, limit) for line in lines[:_NOTE_LINES]]
    if len(lines) > _NOTE_LINES:
        shown.append(f"... {len(lines) - _NOTE_LINES} more line(s)")
    return "<br/>".join(shown)


def _t(time: float) -> str:
    return f"t={time:g}"


def _text_of(messages: Sequence[dict[str, Any]]) -> str:
    return "\n".join(
        str(c.get("text", ""))
        for m in messages
        for c in m.get("contents", ())
        if c.get("type") == "text"
    )


def _has_calls(messages: Sequence[dict[str, Any]]) -> bool:
    return any(c.get("type") == "function_call" for m in messages for c in m.get("contents", ()))


def _is_host_message(message: dict[str, Any]) -> bool:
    if message.get("role") != "user":
        return False
    return not any(c.get("type") == "function_result" for c in message.get("contents", ()))


def _host_input(message: dict[str, Any]) -> str:
    text = _text_of([message])
    if text:
        return text
    return message_summary(message).partition(": ")[2]


def _answers(messages: Sequence[dict[str, Any]], tail_from: int, ran: set[str]) -> str:
    """What the host answered, for a run whose new messages (``messages[tail_from:]``) hold
    no host message but tool results: an approval answer reaches the model as its call's
    result. A call that ran in this run before the request was approved; one that did
    not, rejected. Tool names come from the calls in the messages."""
    names = {
        c.get("call_id"): c.get("name")
        for m in messages
        for c in m.get("contents", ())
        if c.get("type") == "function_call"
    }
    return ", ".join(
        f"{'approved' if c.get('call_id') in ran else 'rejected'} "
        f"{names.get(c.get('call_id'), 'call')} #{c.get('call_id')}"
        for m in messages[tail_from:]
        if m.get("role") == "tool"
        for c in m.get("contents", ())
        if c.get("type") == "function_result"
    )


@dataclass(frozen=True)
class HostCall:
    """One call of the host (the caller) into the top agent or loop.

    ``index`` is the position in ``transcript.events`` where it starts (a loop's first
    iteration, else the top agent's first model request of that run); ``input`` is what
    the host sent (the last user message the model saw new, e.g. after context messages).
    """

    index: int
    time: float
    target: tuple[str, str]  # ("loop", name) or ("agent", name)
    input: str


def host_calls(events: Sequence[TranscriptEvent]) -> list[HostCall]:
    """Every run the host started, with its input, read from the transcript.

    The top session is the first one created; a run starts where a loop begins again
    at an iteration not after its last one, or (without loops) where the top session's
    model request brings a new user message that is not a tool result.
    """
    top_session: Any = None
    tails = _RequestTails()
    ran: set[str] = set()  # ids of the calls run since the last run began
    has_loop = any(e.kind == "loop_iteration_start" for e in events)
    last_iteration: dict[str, int] = {}
    pending: tuple[int, float, str] | None = None
    calls: list[HostCall] = []
    for index, event in enumerate(events):
        d = event.data
        if event.kind in ("session_created", "session_restored") and top_session is None:
            top_session = d.get("session")
        elif event.kind == "loop_iteration_start":
            loop = str(d.get("loop"))
            iteration = int(d.get("iteration") or 0)
            if iteration <= last_iteration.get(loop, 0) or loop not in last_iteration:
                pending = (index, event.time, loop)
                ran = set()
            last_iteration[loop] = iteration
        elif event.kind == "tool_call":
            ran.add(str(d.get("call_id")))
        elif event.kind == "model_request":
            earlier, tail, _ = tails.request(d)
            if top_session is None:
                top_session = d.get("session")
            if d.get("session") != top_session:
                continue
            fresh = [m for m in tail if _is_host_message(m)]
            if has_loop and pending is not None:
                given = (
                    _host_input(fresh[-1])
                    if fresh
                    else _answers(d.get("messages") or [], earlier, ran)
                )
                calls.append(HostCall(pending[0], pending[1], ("loop", pending[2]), given))
                pending = None
            elif not has_loop and fresh:
                target = ("agent", str(d.get("agent")))
                calls.append(HostCall(index, event.time, target, _host_input(fresh[-1])))
        elif event.kind == "model_response":
            tails.response(d)
    if pending is not None:
        calls.append(HostCall(pending[0], pending[1], ("loop", pending[2]), ""))
    return calls


# -- the cast ----------------------------------------------------------------------------


@dataclass
class _Cast:
    loops: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    evaluators: list[str] = field(default_factory=list)
    session_owner: dict[str, str] = field(default_factory=dict)
    loop_inner: dict[str, str] = field(default_factory=dict)
    ids: dict[tuple[str, str], str] = field(default_factory=dict)

    def number(self) -> None:
        parents = [a for a in self.agents if a not in self.children]
        groups = [
            ("loop", "L", self.loops),
            ("agent", "A", parents),
            ("provider", "P", self.providers),
            ("agent", "A", self.children),
            ("evaluator", "E", self.evaluators),
        ]
        counters: dict[str, int] = {}
        for role, letter, names in groups:
            for name in names:
                if (role, name) not in self.ids:
                    counters[letter] = counters.get(letter, 0) + 1
                    self.ids[(role, name)] = f"{letter}{counters[letter]}"

    def pid(self, role: str, name: Any) -> str:
        return self.ids.get((role, str(name)), "caller")

    def provider_of(self, tool: str) -> str | None:
        for provider in self.providers:
            if tool.startswith(f"{provider}_"):
                return provider
        return None


def _add(seq: list[str], value: Any) -> None:
    if value is not None and str(value) not in seq:
        seq.append(str(value))


def _cast(events: Sequence[TranscriptEvent]) -> _Cast:
    cast = _Cast()
    waiting: list[str] = []
    for event in events:
        d = event.data
        kind = event.kind
        if kind == "loop_iteration_start":
            _add(cast.loops, d.get("loop"))
            if str(d.get("loop")) not in cast.loop_inner:
                waiting.append(str(d.get("loop")))
        elif kind in ("model_request", "model_response", "model_error", "tool_call"):
            _add(cast.agents, d.get("agent"))
            if kind == "model_request":
                if d.get("session") is not None:
                    cast.session_owner.setdefault(str(d["session"]), str(d.get("agent")))
                for loop in waiting:
                    cast.loop_inner.setdefault(loop, str(d.get("agent")))
                waiting.clear()
        elif kind in ("task_status", "task_finished"):
            _add(cast.providers, d.get("provider"))
            _add(cast.children, d.get("agent"))
            _add(cast.agents, d.get("agent"))
        elif kind == "evaluator_decision":
            _add(cast.evaluators, d.get("evaluator"))
    cast.number()
    return cast


# -- the sequence diagram ----------------------------------------------------------------


@dataclass
class _Item:
    """One drawn line, with what folding needs to know about it."""

    line: str
    time: float
    tag: tuple[Any, ...] | None = None
    iteration: tuple[str, int] | None = None  # set on a loop iteration's first line


def _call_text(name: str, arguments: Any, provider: str | None) -> str:
    short = name.removeprefix(f"{provider}_") if provider else name
    args = arguments if isinstance(arguments, dict) else {}
    inner = ", ".join(f"{k}={_j(v)}" for k, v in sorted(args.items()))
    return f"{short}({inner})"


class _Sequence:
    def __init__(self, transcript: Transcript) -> None:
        self.events = transcript.events
        self.cast = _cast(self.events)
        self.hosts = {call.index: call for call in host_calls(self.events)}
        self.items: list[_Item] = []
        self.open_calls: dict[str, tuple[str, str | None, Any]] = {}
        self.own_calls: dict[str, tuple[int, str]] = {}
        #: task runs whose end was drawn at its instant (their record's update is not)
        self.finished_runs: set[tuple[str, str, str]] = set()

    def add(self, line: str, time: float, **extra: Any) -> None:
        self.items.append(_Item(f"    {line}", time, **extra))

    def event(self, index: int, event: TranscriptEvent) -> None:
        d, kind, t, cast = event.data, event.kind, _t(event.time), self.cast
        host = self.hosts.get(index)
        if host is not None:
            target = cast.pid(*host.target)
            given = f" {_m(_j(host.input), 50)}" if host.input else ""
            self.add(f"caller->>{target}: {t} run{given}", event.time)
        if kind == "loop_iteration_start":
            loop = cast.pid("loop", d.get("loop"))
            inner = cast.loop_inner.get(str(d.get("loop")))
            if inner is not None:
                self.add(
                    f"{loop}->>{cast.pid('agent', inner)}: {t} iteration {d.get('iteration')}",
                    event.time,
                    iteration=(loop, int(d.get("iteration") or 0)),
                )
        elif kind == "evaluator_decision":
            loop, evaluator = (
                cast.pid("loop", d.get("loop")),
                cast.pid("evaluator", d.get("evaluator")),
            )
            reply = f"{t} iteration {d.get('iteration')}: {d.get('decision')}"
            if d.get("feedback"):
                reply += f" - {d['feedback']}"
            self.add(f"{evaluator}-->>{loop}: {_m(reply)}", event.time)
        elif kind == "loop_stop":
            loop = cast.pid("loop", d.get("loop"))
            text = f"{t} {d.get('reason')} after {d.get('iterations')} iteration(s)"
            self.add(f"{loop}-->>caller: {_m(text)}", event.time)
        elif kind == "tool_call":
            self.tool_call(event)
        elif kind == "tool_result":
            self.tool_result(event)
        elif kind == "model_response":
            self.model_response(event)
        elif kind == "model_error":
            agent = cast.pid("agent", d.get("agent"))
            text = f"{t} {d.get('error')}: {d.get('message')}"
            self.add(f"Note over {agent}: {_note(text)}", event.time)
        elif kind == "task_status":
            self.task_status(event)
        elif kind == "task_finished":
            self.task_finished(event)
        elif kind == "process_restart":
            last = next(reversed(cast.ids.values()), "caller")
            self.add(f"Note over caller,{last}: {t} process restart", event.time)

    def tool_call(self, event: TranscriptEvent) -> None:
        d, t = event.data, _t(event.time)
        agent = self.cast.pid("agent", d.get("agent"))
        name = str(d.get("name"))
        provider = self.cast.provider_of(name)
        self.open_calls[str(d.get("call_id"))] = (name, provider, d.get("arguments"))
        call = f"{t} {_call_text(name, d.get('arguments'), provider)}"
        if provider is None:
            # A self-arrow; its result is added to it when it comes (see tool_result).
            self.own_calls[str(d.get("call_id"))] = (len(self.items), call)
            self.add(f"{agent}->>{agent}: {_m(call)}", event.time)
            return
        text = _m(call)
        tag = None
        if name.endswith(_WAIT_SUFFIX):
            tag = ("wait", agent, _j(d.get("arguments")))
        self.add(f"{agent}->>{self.cast.pid('provider', provider)}: {text}", event.time, tag=tag)

    def tool_result(self, event: TranscriptEvent) -> None:
        d, t = event.data, _t(event.time)
        name, provider, arguments = self.open_calls.pop(
            str(d.get("call_id")), (str(d.get("name")), None, None)
        )
        own = self.own_calls.pop(str(d.get("call_id")), None)
        if own is not None:
            index, call = own
            agent = self.cast.pid("agent", d.get("agent"))
            outcome = (
                f" raised {_j(d.get('error'))}"
                if d.get("error") is not None
                else f" = {_j(d.get('result'))}"
            )
            self.items[index].line = f"    {agent}->>{agent}: {_m(call + outcome, 80)}"
            return
        if provider is None or name.endswith(_QUIET_RESULTS):
            return
        agent = self.cast.pid("agent", d.get("agent"))
        source = self.cast.pid("provider", provider)
        result = d.get("error") if d.get("error") is not None else d.get("result")
        text = result if isinstance(result, str) else _j(result)
        if name.endswith(_WAIT_SUFFIX) and is_wait_timeout(text):
            tag = ("timeout", agent, _j(arguments))
            self.add(f"{source}--x{agent}: {_m(f'{t} timed out: {text}')}", event.time, tag=tag)
            return
        self.add(f"{source}-->>{agent}: {_m(f'{t} {text}')}", event.time)

    def model_response(self, event: TranscriptEvent) -> None:
        d, t = event.data, _t(event.time)
        messages = d.get("messages") or ()
        if _has_calls(messages):
            return
        agent_name = str(d.get("agent"))
        if agent_name in self.cast.children:
            return  # its result reaches the provider: the task_status arrow shows it
        agent = self.cast.pid("agent", agent_name)
        caller = "caller"
        for loop, inner in self.cast.loop_inner.items():
            if inner == agent_name:
                caller = self.cast.pid("loop", loop)
        text = _text_of(messages) or "<empty>"
        self.add(f"{agent}-->>{caller}: {t} {_m(chr(34) + text + chr(34), 60)}", event.time)

    def task_finished(self, event: TranscriptEvent) -> None:
        # Drawn at the instant the child ended; the record catches up later (task_status)
        # and is not drawn again.
        d, t, cast = event.data, _t(event.time), self.cast
        self.finished_runs.add(_task_key(d))
        child = cast.pid("agent", d.get("agent"))
        provider = cast.pid("provider", d.get("provider"))
        task = f"{t} task {d.get('task_id')}"
        outcome = str(d.get("outcome"))
        if outcome == "completed":
            text, arrow = f"{task} completed {_j(d.get('result'))}", "--)"
        elif outcome == "failed":
            text, arrow = f"{task} failed {_j(d.get('error'))}", "--x"
        else:
            text, arrow = f"{task} {outcome}", "--x"
        self.add(f"{child}{arrow}{provider}: {_m(text)}", event.time)

    def task_status(self, event: TranscriptEvent) -> None:
        d, t, cast = event.data, _t(event.time), self.cast
        child = cast.pid("agent", d.get("agent"))
        provider = cast.pid("provider", d.get("provider"))
        owner = cast.session_owner.get(str(d.get("session")))
        parent = cast.pid("agent", owner) if owner is not None else "caller"
        status = str(d.get("status"))
        task = f"{t} task {d.get('task_id')}"
        if status in ("completed", "failed") and _task_key(d) in self.finished_runs:
            self.finished_runs.discard(_task_key(d))
            return
        if status == "running":
            text = f"{task} start {_j(d.get('description'))}"
            self.add(f"{provider}-){child}: {_m(text)}", event.time)
        elif status == "completed":
            text = f"{task} completed {_j(d.get('result'))}"
            self.add(f"{child}--){provider}: {_m(text)}", event.time)
        elif status == "failed":
            text = f"{task} failed {_j(d.get('error'))}"
            self.add(f"{child}--x{provider}: {_m(text)}", event.time)
        elif status == "lost":
            self.add(f"{provider}--x{parent}: {_m(f'{task} lost')}", event.time)
        else:
            self.add(f"{provider}--){parent}: {_m(f'{task} {status}')}", event.time)


def _task_key(d: dict[str, Any]) -> tuple[str, str, str]:
    return (str(d.get("provider")), str(d.get("session")), str(d.get("task_id")))


def _fold_waits(items: list[_Item]) -> list[_Item]:
    """Collapse runs of the same timed-out wait (call, timeout, call, timeout, ...)."""
    out: list[_Item] = []
    i = 0
    while i < len(items):
        item = items[i]
        if item.tag is None or item.tag[0] != "wait":
            out.append(item)
            i += 1
            continue
        key = item.tag[1:]
        j = i
        while (
            j + 1 < len(items)
            and items[j].tag == ("wait", *key)
            and items[j + 1].tag == ("timeout", *key)
        ):
            j += 2
        pairs = (j - i) // 2
        if pairs < 2:
            out.append(item)
            i += 1
            continue
        first, last = items[i], items[j - 1]
        span = f"t={first.time:g}..{last.time:g}"
        call = re.sub(r"t=[0-9.e+-]+", span, first.line, count=1) + f" x{pairs}"
        out.append(_Item(call, first.time))
        timeout = re.sub(r"t=[0-9.e+-]+ timed out", f"{span} timed out {pairs} times", last.line)
        out.append(_Item(timeout, last.time))
        i = j
    return out


def _shape(lines: Sequence[_Item]) -> str:
    # Numbers vary from iteration to iteration, and with them where a text got clipped.
    numbers = (re.sub(r"[0-9]+(\.[0-9]+)?", "#", item.line) for item in lines)
    return "\n".join(line[:40] if line.endswith("...") else line for line in numbers)


def _fold_iterations(items: list[_Item]) -> list[_Item]:
    """Fold runs of 3+ iterations that draw alike into first, a note, and last."""
    blocks: list[list[_Item]] = [[]]
    for item in items:
        if item.iteration is not None:
            blocks.append([])
        blocks[-1].append(item)
    out: list[_Item] = list(blocks[0])
    i = 1
    while i < len(blocks):
        j = i
        while j + 1 < len(blocks) and _shape(blocks[j + 1]) == _shape(blocks[i]):
            j += 1
        if j - i >= 2:
            like, first, last = blocks[i][0], blocks[i + 1][0], blocks[j - 1][0]
            out.extend(blocks[i])
            if like.iteration and first.iteration and last.iteration:
                loop = like.iteration[0]
                out.append(
                    _Item(
                        f"    Note over {loop}: iterations {first.iteration[1]}-"
                        f"{last.iteration[1]} went like iteration {like.iteration[1]} "
                        f"({j - i - 1} folded, t={first.time:g}..{blocks[j - 1][-1].time:g})",
                        first.time,
                    )
                )
            out.extend(blocks[j])
            i = j + 1
        else:
            out.extend(blocks[i])
            i += 1
    return out


def render_mermaid(
    transcript: Transcript, *, max_events: int | None = None, fold: bool = True
) -> str:
    """A Mermaid ``sequenceDiagram``: the host, loops, agents, providers, evaluators.

    Every host call is drawn with its input (also after a restart); a loop invokes its
    inner agent per iteration and hears each evaluator's decision; background tools are
    calls to the provider, which starts the child tasks, hears their results and reports
    ``lost`` and ``cleared`` itself; timed-out waits are crossed arrows; other tools are
    self-arrows; the top agent's replies go back to its caller.

    Args:
        transcript: the run.
        max_events: draw only the first N events (a note says how many were left out).
        fold: collapse repeated timed-out waits and runs of alike iterations.
    """
    events = transcript.events
    shown = events if max_events is None else events[: max(max_events, 0)]
    drawing = _Sequence(transcript)
    for index, event in enumerate(shown):
        drawing.event(index, event)
    items = drawing.items
    if fold:
        items = _fold_iterations(_fold_waits(items))
    lines = ["sequenceDiagram", "    actor caller"]
    for (role, name), ident in drawing.cast.ids.items():
        label = f"loop {name}" if role == "loop" else name
        lines.append(f"    participant {ident} as {_m(label)}")
    lines.extend(item.line for item in items)
    if len(shown) < len(events):
        last = next(reversed(drawing.cast.ids.values()), "caller")
        lines.append(
            f"    Note over caller,{last}: {len(events) - len(shown)} more event(s) not drawn "
            f"(max {len(shown)})"
        )
    return "\n".join(lines) + "\n"


# -- the timeline ------------------------------------------------------------------------

#: gantt tags per status: running active (blue), completed done (grey), failed crit
#: (red), lost crit+done (grey, red border); the theme CSS below colours them further.
_TAGS = {
    "iteration": "",
    "running": "active, ",
    "completed": "done, ",
    "failed": "crit, ",
    "lost": "crit, done, ",
}
#: Distinct fills per status (by the bar id's status prefix), for renderers that apply
#: the diagram's theme CSS (Mermaid does); the tags above remain for those that don't.
_THEME_CSS = (
    "rect[id*=-completed_]{fill:#8fd19e;stroke:#2f7d3f}"
    " rect[id*=-failed_]{fill:#f28b82;stroke:#b3261e}"
    " rect[id*=-lost_]{fill:#fbbc04;stroke:#b06000;stroke-dasharray:4 2}"
    " rect[id*=-running_]{fill:#aecbfa;stroke:#1a73e8}"
)


def _gantt(text: str) -> str:
    # Gantt lines split on ":" and "," and treat "#"/";" specially: keep labels plain.
    cleaned = "".join(" " if c in ":;#," else c for c in " ".join(str(text).split()))
    return _clip(" ".join(cleaned.split()), 50)


def _ms(seconds: float) -> str:
    return str(round(seconds * 1000))


def render_timeline(transcript: Transcript) -> str:
    """A Mermaid ``gantt`` of loop iterations and background-task runs on the virtual clock.

    The axis is virtual seconds (``dateFormat x``: integer milliseconds; ``axisFormat
    %s``). Each task run is a bar labelled with how it ended (running, completed,
    failed, lost; a task continued later gets another bar), coloured by that status; an
    instant is a milestone; each process restart is a vertical line. Bar ids are
    ``<status>_<ident>`` (see :class:`~loopsim._transcript._spans.Span`).
    """
    found = spans(transcript.events)
    lines = [
        "%%{init: " + json.dumps({"themeCSS": _THEME_CSS}) + "}%%",
        "gantt",
        "    title Virtual time (seconds)",
        "    dateFormat x",
        "    axisFormat %s",
    ]
    lanes: dict[str, list[Span]] = {}
    for bar in found.bars:
        lanes.setdefault(bar.lane, []).append(bar)
    for lane, bars in lanes.items():
        lines.append(f"    section {_gantt(lane)}")
        lines.extend(_gantt_bar(bar) for bar in bars)
    if not lanes:
        # Mermaid draws an empty gantt with NaN grid lines (console errors): say so instead.
        lines.append("    section run")
        end = _ms(found.end)
        lines.append(f"    no loop iterations or background tasks : milestone, none, {end}, {end}")
    for n, when in enumerate(found.restarts, start=1):
        lines.append(f"    process restart : vert, restart_{n}, {_ms(when)}, {_ms(when)}")
    return "\n".join(lines) + "\n"


def _gantt_bar(bar: Span) -> str:
    ident = f"{bar.status}_{bar.ident}"
    start, stop = _ms(bar.start), _ms(bar.end)
    tags = _TAGS.get(bar.status, "")
    if start == stop:
        tags = f"milestone, {tags}"
    return f"    {_gantt(bar.label)} : {tags}{ident}, {start}, {stop}"
