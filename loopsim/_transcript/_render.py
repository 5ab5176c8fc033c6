"""Readable renderings of a transcript: text lines, Mermaid sequence diagram, task timeline."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._clients._recording import message_summary
from .._clients._replay import comparable_message
from ._model import Transcript, TranscriptEvent

__all__ = ["describe_event", "render_mermaid", "render_text", "render_timeline"]

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

    def request(
        self, data: Mapping[str, Any]
    ) -> tuple[int, list[dict[str, Any]], list[str] | None]:
        key = (data.get("agent"), data.get("session"))
        messages: list[dict[str, Any]] = list(data.get("messages") or ())
        before = self.seen.get(key, [])
        common = 0
        for a, b in zip(before, messages, strict=False):
            if comparable_message(a) != comparable_message(b):
                break
            common += 1
        self.seen[key] = list(messages)
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


def describe_event(
    event: TranscriptEvent, tails: _RequestTails | None = None, *, max_text: int | None = None
) -> str:
    """The details part of one event's text line (without time and kind)."""
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
        return f"{who}  {text}{_usage(d.get('usage'))}"
    if kind == "model_error":
        return f"{who}  {d.get('error')}: {_clip(_j(d.get('message')), max_text)}"
    if kind == "tool_call":
        return f"{who}  {d.get('name')}({_j(d.get('arguments', {}))}) #{d.get('call_id')}"
    if kind == "tool_result":
        if d.get("error") is not None:
            outcome = f"error {_clip(_j(d.get('error')), max_text)}"
        else:
            outcome = f"= {_clip(_j(d.get('result')), max_text)}"
        return f"{who}  {d.get('name')} #{d.get('call_id')} {outcome}"
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
    if kind == "task_status":
        text = (
            f"{d.get('provider')}  {d.get('session')}  task {d.get('task_id')} "
            f"{d.get('agent')} {d.get('status')}  {_clip(_j(d.get('description')), max_text)}"
        )
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


def _lines(transcript: Transcript, max_text: int | None) -> Iterator[str]:
    tails = _RequestTails()
    for event in transcript.events:
        details = describe_event(event, tails, max_text=max_text)
        line = f"t={event.time:9.3f}  {event.kind:<{_KIND_WIDTH}}  {details}"
        yield line.rstrip()


def render_text(transcript: Transcript, *, max_text: int | None = None) -> str:
    """One line per event, virtual time first; a header line names the run.

    A ``model_request`` shows only what is new for that agent and session since its
    last turn (``(+N earlier)`` counts the rest); tools are listed when they change.
    ``max_text`` clips long texts (None keeps them whole, as snapshots need).

    Example:
        >>> import loopsim
        >>> agent = loopsim.Agent(loopsim.ScriptedChatClient(["hi"]), name="a")
        >>> print(loopsim.render_text(loopsim.record(agent.run, "hello", seed=3)[1]), end="")
        # loopsim transcript: scenario=None seed=3 backend=asyncio events=3
        t=    0.000  session_created       a  session-0001
        t=    0.000  model_request         a  session-0001  user: "hello"
        t=    0.000  model_response        a  session-0001  assistant: "hi"
    """
    header = (
        f"# loopsim transcript: scenario={transcript.scenario} seed={transcript.seed} "
        f"backend={transcript.backend} events={len(transcript.events)}"
    )
    return "\n".join([header, *_lines(transcript, max_text)]) + "\n"


# -- Mermaid -----------------------------------------------------------------------------

_MERMAID_ESCAPES = {"#": "#35;", ";": "#59;", "<": "#lt;", ">": "#gt;"}


def _m(text: str, limit: int = 60) -> str:
    text = _clip(re.sub(r"\s+", " ", text), limit)
    return "".join(_MERMAID_ESCAPES.get(c, c) for c in text)


@dataclass
class _Cast:
    loops: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    evaluators: list[str] = field(default_factory=list)
    session_owner: dict[str, str] = field(default_factory=dict)
    loop_inner: dict[str, str] = field(default_factory=dict)

    def ids(self) -> dict[tuple[str, str], str]:
        out: dict[tuple[str, str], str] = {}
        for n, name in enumerate(self.loops, start=1):
            out[("loop", name)] = f"L{n}"
        parents = [a for a in self.agents if a not in self.children]
        for n, name in enumerate([*parents, *self.children], start=1):
            out[("agent", name)] = f"A{n}"
        for n, name in enumerate(self.evaluators, start=1):
            out[("evaluator", name)] = f"E{n}"
        return out


def _add(seq: list[str], value: Any) -> None:
    if value is not None and str(value) not in seq:
        seq.append(str(value))


_AGENT_KINDS = frozenset(
    {
        "model_request",
        "model_response",
        "model_error",
        "session_created",
        "session_restored",
        "tool_call",
        "tool_result",
    }
)


def _cast(events: Sequence[TranscriptEvent]) -> _Cast:
    cast = _Cast()
    waiting: list[str] = []
    for event in events:
        d = event.data
        if event.kind == "loop_iteration_start":
            _add(cast.loops, d.get("loop"))
            if str(d.get("loop")) not in cast.loop_inner:
                waiting.append(str(d.get("loop")))
        elif event.kind in _AGENT_KINDS:
            _add(cast.agents, d.get("agent"))
            if event.kind == "model_request":
                if d.get("session") is not None:
                    cast.session_owner.setdefault(str(d["session"]), str(d.get("agent")))
                for loop in waiting:
                    cast.loop_inner.setdefault(loop, str(d.get("agent")))
                waiting.clear()
        elif event.kind == "task_status":
            _add(cast.children, d.get("agent"))
            _add(cast.agents, d.get("agent"))
        elif event.kind == "evaluator_decision":
            _add(cast.evaluators, d.get("evaluator"))
            _add(cast.loops, d.get("loop"))  # a file may lack the loop's start event
        elif event.kind == "loop_stop":
            _add(cast.loops, d.get("loop"))
    return cast


def render_mermaid(transcript: Transcript) -> str:
    """A Mermaid ``sequenceDiagram``: caller, loops, parent and child agents, evaluators.

    Loops invoke their inner agent per iteration and ask evaluators; a parent starts
    background tasks on children (async arrows) and the children report back; final
    model replies are notes; tool calls are self-arrows. Renders on GitHub in a
    ```` ```mermaid ```` block.
    """
    events = transcript.events
    cast = _cast(events)
    ids = cast.ids()

    def pid(role: str, name: Any) -> str:
        return ids[(role, str(name))]

    lines = ["sequenceDiagram", "    actor caller"]
    for (role, name), ident in ids.items():
        lines.append(f"    participant {ident} as {_m(name if role != 'loop' else f'loop {name}')}")
    started: set[str] = set()
    for event in events:
        d = event.data
        kind = event.kind
        t = f"t={event.time:g} "
        if kind == "loop_iteration_start":
            loop = pid("loop", d.get("loop"))
            if loop not in started:
                started.add(loop)
                lines.append(f"    caller->>{loop}: {_m(t)}run")
            inner = cast.loop_inner.get(str(d.get("loop")))
            if inner is not None:
                lines.append(
                    f"    {loop}->>{pid('agent', inner)}: {_m(t)}iteration {d.get('iteration')}"
                )
        elif kind == "evaluator_decision":
            loop, evaluator = pid("loop", d.get("loop")), pid("evaluator", d.get("evaluator"))
            lines.append(
                f"    {loop}->>{evaluator}: {_m(t)}evaluate iteration {d.get('iteration')}"
            )
            reply = str(d.get("decision"))
            if d.get("feedback"):
                reply += f": {d['feedback']}"
            lines.append(f"    {evaluator}-->>{loop}: {_m(reply)}")
        elif kind == "loop_stop":
            loop = pid("loop", d.get("loop"))
            lines.append(
                f"    {loop}-->>caller: {_m(t)}{d.get('reason')} "
                f"after {d.get('iterations')} iteration(s)"
            )
        elif kind == "tool_call":
            agent = pid("agent", d.get("agent"))
            call = f"{t}{d.get('name')}({_j(d.get('arguments', {}))})"
            lines.append(f"    {agent}->>{agent}: {_m(call)}")
        elif kind == "model_response":
            messages = d.get("messages") or ()
            calls = any(
                c.get("type") == "function_call" for m in messages for c in m.get("contents", ())
            )
            if not calls:
                text = " ".join(
                    str(c.get("text", ""))
                    for m in messages
                    for c in m.get("contents", ())
                    if c.get("type") == "text"
                )
                lines.append(f"    Note over {pid('agent', d.get('agent'))}: {_m(t + _j(text))}")
        elif kind == "model_error":
            agent = pid("agent", d.get("agent"))
            lines.append(
                f"    Note over {agent}: {_m(t + str(d.get('error')) + ' ' + _j(d.get('message')))}"
            )
        elif kind == "task_status":
            child = pid("agent", d.get("agent"))
            owner = cast.session_owner.get(str(d.get("session")))
            parent = pid("agent", owner) if owner is not None else "caller"
            status = str(d.get("status"))
            if status == "running":
                lines.append(
                    f"    {parent}-){child}: {_m(t)}task {d.get('task_id')} "
                    f"{_m(_j(d.get('description')))}"
                )
            else:
                detail = d.get("error") if d.get("error") is not None else d.get("result")
                text = f"{t}task {d.get('task_id')} {status}"
                if detail is not None:
                    text += f" {_j(detail)}"
                lines.append(f"    {child}--){parent}: {_m(text)}")
        elif kind == "process_restart":
            first = lines[1].split()[-1]
            last = next(reversed(ids.values()), first)
            lines.append(f"    Note over {first},{last}: {_m(t)}process restart")
    return "\n".join(lines) + "\n"


# -- timeline ----------------------------------------------------------------------------


def _secs(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _gantt(text: str) -> str:
    # Gantt lines split on ":" and "," and treat "#"/";" specially: keep labels plain.
    cleaned = "".join(" " if c in ":;#," else c for c in " ".join(text.split()))
    return _clip(" ".join(cleaned.split()), 50)


def render_timeline(transcript: Transcript) -> str:
    """A Mermaid ``gantt`` of loop iterations and background tasks on the virtual clock.

    The axis is virtual seconds (``dateFormat X``, ``axisFormat %s``). Completed tasks
    are ``done``, failed or lost ones ``crit``, tasks still running at the end
    ``active``.
    """
    events = transcript.events
    end = events[-1].time if events else 0.0
    lines = [
        "gantt",
        "    title Virtual time (seconds)",
        "    dateFormat X",
        "    axisFormat %s",
    ]
    iterations: dict[str, list[tuple[Any, float, float | None]]] = {}
    for event in events:
        d = event.data
        if event.kind == "loop_iteration_start":
            runs = iterations.setdefault(str(d.get("loop")), [])
            if runs and runs[-1][2] is None:
                runs[-1] = (runs[-1][0], runs[-1][1], event.time)
            runs.append((d.get("iteration"), event.time, None))
        elif event.kind == "loop_stop":
            runs = iterations.get(str(d.get("loop")), [])
            if runs and runs[-1][2] is None:
                runs[-1] = (runs[-1][0], runs[-1][1], event.time)
    for loop, runs in iterations.items():
        lines.append(f"    section loop {_gantt(loop)}")
        for iteration, start, stop in runs:
            lines.append(
                f"    iteration {iteration} : "
                f"{_secs(start)}, {_secs(end if stop is None else stop)}"
            )
    tasks: dict[tuple[str, str, str], dict[str, Any]] = {}
    for event in events:
        if event.kind != "task_status":
            continue
        d = event.data
        key = (str(d.get("provider")), str(d.get("session")), str(d.get("task_id")))
        task = tasks.setdefault(
            key, {"agent": d.get("agent"), "start": event.time, "end": None, "status": None}
        )
        task["status"] = d.get("status")
        task["description"] = d.get("description")
        if d.get("status") != "running":
            task["end"] = event.time
    by_agent: dict[str, list[tuple[tuple[str, str, str], dict[str, Any]]]] = {}
    for key, task in tasks.items():
        by_agent.setdefault(str(task["agent"]), []).append((key, task))
    for agent, items in by_agent.items():
        lines.append(f"    section {_gantt(agent)}")
        for (_, _, task_id), task in items:
            status = str(task["status"])
            tag = {"completed": "done, ", "running": "active, "}.get(status, "crit, ")
            stop = end if task["end"] is None else task["end"]
            label = _gantt(f"task {task_id} {status} - {task.get('description') or ''}")
            lines.append(f"    {label} : {tag}{_secs(task['start'])}, {_secs(stop)}")
    return "\n".join(lines) + "\n"
