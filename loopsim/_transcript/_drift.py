"""The drift report: what a real model answers now, call by call, against a recording.

``loopsim replay RECORDING --scenario FILE --report-drift NEW`` runs the scenario against
its real models again, records that run into ``NEW`` (never into the recording), and
compares the two per model call: the request the code sent and the answer it got. It is
how you see whether a model upgrade changed the behaviour before re-recording.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._clients._recording import ANSWER_FIELDS, RecordedTurn, message_summary
from .._clients._replay import comparable_message, request_difference, turns_from_events
from ._model import Transcript

__all__ = ["DRIFT_FIELDS", "CallDrift", "DriftReport", "answer_difference", "drift_report"]

#: The answer fields a drift report compares: what the model decided (why it stopped,
#: which model answered). The others (conversation id, continuation token, creation
#: time, additional properties, like the response id) are what the service stamps on
#: each call afresh, so a new recording always differs in them.
DRIFT_FIELDS = ("finish_reason", "model")


def _shown(value: Any) -> str:
    if value is None:
        return "<unset>"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def answer_difference(
    recorded: RecordedTurn, live: RecordedTurn, names: Sequence[str] = ANSWER_FIELDS
) -> tuple[str, str, str] | None:
    """The first of ``names`` (answer fields) in which two answers differ, as (name,
    recorded value, live value) in words; None when they agree in all of them."""
    old, new = recorded.answer_fields, live.answer_fields
    for name in names:
        if old.get(name) != new.get(name):
            return name, _shown(old.get(name)), _shown(new.get(name))
    return None


@dataclass(frozen=True, slots=True)
class CallDrift:
    """One model call of one agent: what changed between the recording and the new run."""

    agent: str
    number: int  # 1-based, per agent
    changes: tuple[str, ...]

    @property
    def line(self) -> str:
        head = f"{self.agent} model call {self.number}"
        if not self.changes:
            return f"{head}: same request, same answer"
        return f"{head}: " + "; ".join(self.changes)


@dataclass(frozen=True, slots=True)
class DriftReport:
    """Per model call, what changed (see :func:`drift_report`)."""

    calls: tuple[CallDrift, ...]

    @property
    def drifted(self) -> bool:
        return any(c.changes for c in self.calls)

    @property
    def text(self) -> str:
        changed = sum(1 for c in self.calls if c.changes)
        head = (
            f"drift: {changed} of {len(self.calls)} model call(s) changed"
            if changed
            else f"no drift: {len(self.calls)} model call(s), the same requests and answers"
        )
        return "\n".join([head, *(f"  {c.line}" for c in self.calls)]) + "\n"


def _answer(turn: RecordedTurn) -> str:
    if turn.error is not None:
        return f"error {turn.error}"
    if turn.response is None:
        return "<no answer>"
    return " | ".join(message_summary(m) for m in turn.response) or "<empty>"


def _same_answer(a: RecordedTurn, b: RecordedTurn) -> bool:
    if a.error is not None or b.error is not None:
        return a.error == b.error
    left = [comparable_message(m) for m in a.response or ()]
    right = [comparable_message(m) for m in b.response or ()]
    return left == right


def _compare(recorded: RecordedTurn, new: RecordedTurn) -> list[str]:
    changes: list[str] = []
    difference = request_difference(recorded, new.messages, new.tools, new.instructions)
    if difference is not None:
        changes.append(f"request changed: recorded {difference[0]}; new {difference[1]}")
    if not _same_answer(recorded, new):
        changes.append(f"answer changed: recorded {_answer(recorded)}; new {_answer(new)}")
    if recorded.response is not None and new.response is not None:
        # only the fields the recording has: one made before loopsim kept a field (or
        # from a model that never gives it) says nothing about it
        for name in (n for n in DRIFT_FIELDS if n in recorded.answer_fields):
            differs = answer_difference(recorded, new, (name,))
            if differs is not None:
                changes.append(f"{name} changed: recorded {differs[1]}; new {differs[2]}")
    if (recorded.usage or {}) != (new.usage or {}) and recorded.usage and new.usage:
        changes.append(f"usage changed: recorded {recorded.usage}; new {new.usage}")
    return changes


def _agents(transcripts: Sequence[Transcript]) -> list[str]:
    names: list[str] = []
    for transcript in transcripts:
        for event in transcript.events:
            agent = event.data.get("agent")
            if event.kind == "model_request" and isinstance(agent, str) and agent not in names:
                names.append(agent)
    return names


def drift_report(recorded: Transcript, new: Transcript) -> DriftReport:
    """Compare ``new`` (a fresh recording against the real model) with ``recorded``.

    Model calls are paired per agent in order; each pair reports a changed request (the
    code sent something else, usually because an earlier answer changed), a changed answer,
    a changed finish reason or model (:data:`DRIFT_FIELDS`, when the recording has them)
    and changed usage. Calls only one side has are reported as missing or new.

    Example:
        >>> import loopsim
        >>> from loopsim._transcript._drift import drift_report
        >>> def run(answer):
        ...     return loopsim.record(
        ...         loopsim.Agent(loopsim.ScriptedChatClient([answer]), name="a").run, "hi"
        ...     )[1]
        >>> print(drift_report(run("hello"), run("hello")).text, end="")
        no drift: 1 model call(s), the same requests and answers
          a model call 1: same request, same answer
        >>> print(drift_report(run("hello"), run("bye")).text, end="")
        drift: 1 of 1 model call(s) changed
          a model call 1: answer changed: recorded assistant: "hello"; new assistant: "bye"
    """
    calls: list[CallDrift] = []
    for agent in _agents([recorded, new]):
        before = turns_from_events(recorded.events, agent)
        after = turns_from_events(new.events, agent)
        for number, index in enumerate(range(max(len(before), len(after))), start=1):
            if index >= len(after):
                change = f"missing in the new run (recorded: {before[index].summary})"
                calls.append(CallDrift(agent, number, (change,)))
            elif index >= len(before):
                change = f"new in this run (not recorded: {after[index].summary})"
                calls.append(CallDrift(agent, number, (change,)))
            else:
                calls.append(CallDrift(agent, number, tuple(_compare(before[index], after[index]))))
    return DriftReport(tuple(calls))
