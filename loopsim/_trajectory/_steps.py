"""A run's trajectory: the steps a transcript's events add up to.

Four kinds of step, each with its virtual time, agent and loop iteration:

- ``tool``: a tool call (``tool_call`` event): its name, arguments, result (from its
  ``tool_result``), whether the host approved it, and what the request that asked for
  it sent (``sent``, ``messages``, as for ``says``); a hosted tool the model's service
  ran (``hosted_tool`` event, before the answer that holds it) is one too, never approved;
- ``says``: a model turn that answered with text (``model_response`` with text), with
  what its request sent (``sent``: the messages after the model's last answer, as
  ``role(author): text`` lines; ``messages``: how many the request held);
- ``task``: a background task's status change (``task_status``; repeats collapsed);
- ``host``: a host call of a scenario (``run``, ``advance``, ``approve``, ``restart``,
  ``release_session``); on a bare transcript only ``restart`` is known (``process_restart``).

The iteration is that of the loop iteration running when the event was recorded (the
innermost loop running; None outside every loop). A tool call counts as *approved* when an
``approve: true`` host step came between the model turn that asked for it and the call; on
a bare transcript (no host steps known) a loop stop with reason ``approval_pending`` in
between counts as the pause for an approval, as it is the only trace an approval leaves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ._matchers import show

__all__ = ["HostMark", "TrajectoryStep", "trajectory_of"]

KINDS = ("tool", "says", "task", "host")


class _EventLike(Protocol):
    @property
    def time(self) -> float: ...
    @property
    def kind(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class HostMark:
    """A host step of a scenario run: where it began among the events, and when."""

    position: int
    time: float
    name: str
    approved: bool | None = None
    #: the scenario step's index
    index: int | None = None


class _Request:
    """A model request's messages. Its ``sent`` lines are made when first read: most
    checks never read them, and a step per request would otherwise build them."""

    __slots__ = ("_listed", "_sent", "count")

    def __init__(self, messages: Any) -> None:
        listed = messages if _is(messages, Sequence) else list(messages or ())
        self._listed: Sequence[Any] = listed
        self._sent: str | None = None
        self.count = len(listed)

    @property
    def sent(self) -> str:
        if self._sent is None:
            self._sent = _sent_lines(self._listed, self.count)
            self._listed = ()
        return self._sent

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Request):
            return NotImplemented
        return self.count == other.count and self.sent == other.sent

    def __hash__(self) -> int:
        return hash((self.count, self.sent))

    def __repr__(self) -> str:
        return f"_Request(count={self.count}, sent={self.sent!r})"


@dataclass(frozen=True, slots=True)
class TrajectoryStep:
    """One step a run took (see the module docstring for the four kinds)."""

    kind: str
    time: float
    agent: str | None = None
    iteration: int | None = None
    #: the tool's name (``tool``) or the host step's (``host``)
    name: str | None = None
    args: Mapping[str, Any] | None = None
    #: ``tool``: what the call returned (the text the model read), once it returned
    result: Any = None
    #: ``tool``: whether the host approved the call; ``host`` approve: the answer given
    approved: bool | None = None
    text: str | None = None
    #: ``says`` and ``tool``: the request that got this answer (or asked for this call);
    #: read through ``sent`` and ``messages``
    request: _Request | None = None
    task: int | None = None
    status: str | None = None
    #: the index of the event it came from (of the next event, for a host step)
    position: int = 0

    @property
    def sent(self) -> str | None:
        """The request's messages after the model's last answer, one line each
        (``user(reviewer): text``)."""
        return None if self.request is None else self.request.sent

    @property
    def messages(self) -> int | None:
        """How many messages the request held in all."""
        return None if self.request is None else self.request.count

    def field(self, key: str) -> Any:
        """The value a step pattern's ``key`` is compared with (only that one is read:
        ``sent`` is made when first read)."""
        if key in {"tool", "host"}:
            return self.name if self.kind == key else None
        return getattr(self, _FIELD_ATTRIBUTES[key])

    def render(self) -> str:
        """``tool get_quote({"symbol": "MSFT"})``, ``says "hi"``, ``task 2 completed``..."""
        if self.kind == "tool":
            args = show(dict(self.args or {}), 70)
            approval = " (approved)" if self.approved else ""
            result = "" if self.result is None else f" = {show(self.result, 50)}"
            return f"tool {self.name}({args}){approval}{result}"
        if self.kind == "says":
            return f"says {show(self.text, 70)}"
        if self.kind == "task":
            return f"task {self.task} {self.status}"
        answer = "" if self.approved is None else f": {str(self.approved).lower()}"
        return f"host {self.name}{answer}"

    def where(self) -> str:
        """``t=12s trader it 2``: when, who, which iteration."""
        parts = [f"t={self.time:g}s"]
        if self.agent is not None:
            parts.append(self.agent)
        if self.iteration is not None:
            parts.append(f"it {self.iteration}")
        return " ".join(parts)


#: the attribute a step pattern's key reads (besides ``tool`` and ``host``, see field)
_FIELD_ATTRIBUTES = {
    "says": "text",
    "sent": "sent",
    "messages": "messages",
    "agent": "agent",
    "iteration": "iteration",
    "approved": "approved",
    "result": "result",
    "task": "task",
    "status": "status",
}


#: whether each type met is a Mapping, a Sequence: the ABC check costs far more than a
#: dict lookup, and a run's events hold few types (dicts and lists in JSON form, messages,
#: contents and message views live)
_IS: dict[tuple[type, type], bool] = {(dict, Mapping): True, (list, Sequence): True}


def _is(item: Any, abc: type) -> bool:
    key = (type(item), abc)
    known = _IS.get(key)
    if known is None:
        known = _IS[key] = isinstance(item, abc)
    return known


def _get(item: Any, key: str, default: Any = None) -> Any:
    if _is(item, Mapping):
        return item.get(key, default)
    return getattr(item, key, default)


def _contents(messages: Any) -> Iterable[tuple[Any, Any]]:
    """(message, content) pairs of a message list in object or JSON form."""
    for message in messages or ():
        for content in _get(message, "contents", ()) or ():
            yield message, content


def _text_of(messages: Any) -> str:
    texts: list[str] = []
    for message in messages or ():
        if _get(message, "role") not in (None, "assistant"):
            continue
        parts = [
            str(_get(c, "text", ""))
            for c in _get(message, "contents", ()) or ()
            if _get(c, "type") == "text"
        ]
        if parts:
            texts.append("".join(parts))
    return "\n".join(t for t in texts if t)


def _line(message: Any) -> str:
    role = _get(message, "role") or "?"
    author = _get(message, "author_name")
    parts = [
        str(_get(c, "text", ""))
        for c in _get(message, "contents", ()) or ()
        if _get(c, "type") == "text"
    ]
    who = f"{role}({author})" if author else str(role)
    return f"{who}: {''.join(parts)}"


def _sent_lines(listed: Sequence[Any], count: int) -> str:
    """The messages after the last assistant one, one line each.

    Read from the end: a long run's requests carry its whole history."""
    start = count
    while start > 0 and _get(listed[start - 1], "role") != "assistant":
        start -= 1
    return "\n".join(_line(listed[i]) for i in range(start, count))


def _arguments(value: Any) -> Mapping[str, Any]:
    if isinstance(value, str):  # some clients keep arguments as their JSON text
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return dict(value) if isinstance(value, Mapping) else {}


def trajectory_of(
    events: Sequence[_EventLike], hosts: Sequence[HostMark] | None = None
) -> list[TrajectoryStep]:
    """The steps ``events`` add up to, in order; ``hosts`` are the scenario's host steps
    (None for a bare transcript)."""
    marks = sorted(hosts or (), key=lambda m: m.position)
    steps: list[TrajectoryStep] = []
    active: dict[str, int] = {}  # running loops, innermost last
    asked: dict[tuple[Any, Any], int] = {}  # (agent, call id) -> position of the ask
    paused: list[int] = []  # positions of approval_pending stops (bare transcripts)
    approvals: list[int] = []  # positions of approve: true host steps
    last_status: dict[Any, str] = {}
    calls: dict[tuple[Any, Any], int] = {}  # (agent, call id) -> index of its tool step
    requests: dict[Any, _Request] = {}  # agent -> its latest request
    turn_of: dict[tuple[Any, Any], _Request | None] = {}  # call -> its request
    next_mark = 0

    def iteration() -> int | None:
        return next(reversed(active.values())) if active else None

    for position, event in enumerate(events):
        while next_mark < len(marks) and marks[next_mark].position <= position:
            mark = marks[next_mark]
            next_mark += 1
            if mark.name == "approve" and mark.approved:
                approvals.append(mark.position)
            steps.append(
                TrajectoryStep(
                    "host", mark.time, name=mark.name, approved=mark.approved, position=position
                )
            )
        kind, data = event.kind, event.data
        agent = data.get("agent")
        if kind == "loop_iteration_start":
            loop = str(data.get("loop"))
            active.pop(loop, None)
            active[loop] = int(data.get("iteration", 0))
        elif kind == "loop_stop":
            active.pop(str(data.get("loop")), None)
            if data.get("reason") == "approval_pending":
                paused.append(position)
        elif kind == "model_request":
            requests[agent] = _Request(data.get("messages"))
        elif kind == "model_response":
            for _, content in _contents(data.get("messages")):
                if _get(content, "type") == "function_call":
                    asked[agent, _get(content, "call_id")] = position
                    turn_of[agent, _get(content, "call_id")] = requests.get(agent)
            text = _text_of(data.get("messages"))
            if text:
                steps.append(
                    TrajectoryStep(
                        "says",
                        event.time,
                        agent,
                        iteration(),
                        text=text,
                        request=requests.get(agent),
                        position=position,
                    )
                )
        elif kind == "tool_result":
            at = calls.pop((agent, data.get("call_id")), None)
            if at is not None:  # the step is this function's own until it returns
                object.__setattr__(steps[at], "result", data.get("result"))
        elif kind == "hosted_tool":  # the model's service ran it: call and result at once
            steps.append(
                TrajectoryStep(
                    "tool",
                    event.time,
                    agent,
                    iteration(),
                    name=data.get("name"),
                    args=_arguments(data.get("arguments")),
                    result=data.get("result"),
                    approved=False,
                    request=requests.get(agent),
                    position=position,
                )
            )
        elif kind == "tool_call":
            calls[agent, data.get("call_id")] = len(steps)
            ask = asked.get((agent, data.get("call_id")))
            between = paused if hosts is None else approvals
            approved = ask is not None and any(ask < p <= position for p in between)
            steps.append(
                TrajectoryStep(
                    "tool",
                    event.time,
                    agent,
                    iteration(),
                    name=data.get("name"),
                    args=_arguments(data.get("arguments")),
                    approved=approved,
                    request=turn_of.get((agent, data.get("call_id"))),
                    position=position,
                )
            )
        elif kind == "task_status":
            task: Any = data.get("task_id")
            status = str(data.get("status"))
            task_id: Any = int(task) if isinstance(task, int) or str(task).isdigit() else task
            if last_status.get(task_id) == status:
                continue
            last_status[task_id] = status
            steps.append(
                TrajectoryStep(
                    "task",
                    event.time,
                    agent,
                    iteration(),
                    task=task_id,
                    status=status,
                    position=position,
                )
            )
        elif kind == "process_restart" and hosts is None:
            steps.append(TrajectoryStep("host", event.time, name="restart", position=position))
    end = events[-1].time if events else 0.0
    steps.extend(
        TrajectoryStep(
            "host",
            max(mark.time, end),
            name=mark.name,
            approved=mark.approved,
            position=len(events),
        )
        for mark in marks[next_mark:]
    )
    return steps
