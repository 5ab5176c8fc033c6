"""Expectations: what must hold at the end (``expect:``), for every draw (``always:``) or
after one step (a step's own ``expect:``).

No form checks nothing: an empty mapping or list where it would check nothing is an error
(with a hint at what to write instead), and event counts name known event kinds and
fields, so a typo cannot make ``count: 0`` pass vacuously.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ..._clients._recording import ANSWER_FIELDS
from ..._oracles import SAFETY_ORACLES
from ._base import TASK_STATUSES, Count, Flag, Name, Seconds, StrictModel, Text, describe
from ._trajectory import StepPatternSpec, TrajectorySpec, check_never_steps

# -- expectations ---------------------------------------------------------------------------

TaskStatus = Literal["running", "completed", "failed", "lost", "cleared"]

SafetyOracle = Literal[SAFETY_ORACLES]  # type: ignore[valid-type] # a Literal of the names tuple

#: Transcript event kinds an ``events:`` count may name, with the fields ``where:`` may
#: match (scalar fields only: ids of sessions and messages are the simulation's own).
#: A model answer's JSON-object fields are matched whole (``{}`` or a mapping, or null
#: for an answer that does not set it).
OBJECT_FIELDS = frozenset(
    {("model_response", "continuation_token"), ("model_response", "additional_properties")}
)
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "model_request": ("agent",),
    "model_response": ("agent", "response_id", *ANSWER_FIELDS),
    "model_error": ("agent", "error", "message"),
    "tool_call": ("agent", "call_id", "name"),
    "tool_result": ("agent", "call_id", "name", "result", "error", "error_type"),
    "tool_round_limit": ("agent", "max_iterations"),
    "hosted_tool": ("agent", "call_id", "name", "result"),
    "task_status": ("task_id", "agent", "description", "status", "result", "error"),
    "task_finished": ("task_id", "agent", "description", "outcome", "result", "error"),
    "loop_iteration_start": ("loop", "iteration"),
    "loop_stop": ("loop", "reason", "iterations"),
    "evaluator_decision": ("loop", "iteration", "index", "evaluator", "decision", "feedback"),
    "session_created": ("agent",),
    "session_restored": ("agent",),
    "process_restart": ("at", "interrupted"),
    "clock_jump": ("from", "to"),
    "fault": ("agent", "tool", "fault"),
}


def _not_empty(what: str, hint: str) -> Any:
    def check(value: Any) -> Any:
        if isinstance(value, (dict, list)) and not value:
            raise PydanticCustomError(
                "vacuous",
                "an empty {what} checks nothing; {hint}",
                {"what": what, "hint": hint},
            )
        return value

    return check


class RangeSpec(StrictModel):
    """A closed range (virtual seconds, or a count): at least ``min``, at most ``max``."""

    min: Seconds | None = None
    max: Seconds | None = None

    @model_validator(mode="after")
    def _some_bound(self) -> RangeSpec:
        if self.min is None and self.max is None:
            raise PydanticCustomError(
                "vacuous", "a range without min or max checks nothing; give min, max or both"
            )
        if self.max is None and self.min == 0:
            raise PydanticCustomError(
                "vacuous", "a range of at least 0 checks nothing; give a max, or a min above 0"
            )
        if self.min is not None and self.max is not None and self.min > self.max:
            raise PydanticCustomError(
                "range",
                "inverted range: min {low} > max {high}, so it can never hold",
                {"low": self.min, "high": self.max},
            )
        return self

    def holds(self, value: float, tolerance: float = 1e-6) -> bool:
        """Whether ``value`` is inside the range (with a small tolerance)."""
        low_ok = self.min is None or value >= self.min - tolerance
        return low_ok and (self.max is None or value <= self.max + tolerance)

    def render(self) -> str:
        if self.min is not None and self.max is not None:
            return f"between {self.min:g} and {self.max:g}"
        return f"at least {self.min:g}" if self.min is not None else f"at most {self.max:g}"


def _range_first(value: Any) -> Any:
    # a mapping is a range: validated as one first, so a bad {min, max} gets the range's
    # own message, not the number's
    if isinstance(value, dict):
        return RangeSpec.model_validate(value)
    return value


#: A whole number or a ``{min, max}`` range of them.
CountOrRange = Annotated[Count | RangeSpec, BeforeValidator(_range_first)]
#: Virtual seconds or a ``{min, max}`` range of them.
SecondsOrRange = Annotated[Seconds | RangeSpec, BeforeValidator(_range_first)]


_TEXT_HINT = "give the text(s), or leave the key out"


class ResponseExpect(StrictModel):
    """What a response's text must be, or contain (every item, in order)."""

    equals: Text | None = None
    contains: list[Text] | None = None
    not_contains: list[Text] | None = None

    @model_validator(mode="before")
    @classmethod
    def _contains_one(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for key in ("contains", "not_contains"):
                if isinstance(value.get(key), str):
                    value = {**value, key: [value[key]]}
        return value

    @field_validator("contains", "not_contains")
    @classmethod
    def _some_text(cls, value: list[str] | None) -> list[str] | None:
        return _not_empty("list", _TEXT_HINT)(value)  # type: ignore[no-any-return] # list in, list out

    @model_validator(mode="after")
    def _checks_something(self) -> ResponseExpect:
        if self.equals is None and self.contains is None and self.not_contains is None:
            raise PydanticCustomError(
                "vacuous",
                "an empty response expectation checks nothing; give equals, contains or "
                "not_contains",
            )
        return self


class EventCount(StrictModel):
    """How many transcript events of one ``kind`` (whose ``where`` fields equal the given
    values) the run recorded: ``count`` is a whole number or ``{min, max}``."""

    kind: Name
    where: dict[Name, Any] = Field(default_factory=dict)
    count: Count | RangeSpec

    @model_validator(mode="after")
    def _known(self) -> EventCount:
        fields = EVENT_FIELDS.get(self.kind)
        if fields is None:
            raise PydanticCustomError(
                "event_kind",
                "unknown event kind {kind}; expected one of: {known}",
                {"kind": describe(self.kind), "known": ", ".join(EVENT_FIELDS)},
            )
        for name, value in self.where.items():
            if name not in fields:
                near = difflib.get_close_matches(name, fields, n=1)
                raise PydanticCustomError(
                    "event_field",
                    "events of kind {kind} have no field {name} to match{hint}; fields: {known}",
                    {
                        "kind": self.kind,
                        "name": describe(name),
                        "hint": f"; did you mean {describe(near[0])}?" if near else "",
                        "known": ", ".join(fields),
                    },
                )
            if isinstance(value, dict) and (self.kind, name) in OBJECT_FIELDS:
                continue
            if isinstance(value, (dict, list)):
                raise PydanticCustomError(
                    "event_field",
                    "where.{name}: expected a text, number, true/false or null to compare "
                    "with, got {got}",
                    {"name": name, "got": describe(value)},
                )
        return self

    def matches(self, kind: str, data: dict[str, Any]) -> bool:
        """Whether an event of ``kind`` with ``data`` is one this count counts."""
        return kind == self.kind and all(
            _same(data.get(name), value) for name, value in self.where.items()
        )


def _same(got: Any, wanted: Any) -> bool:
    if isinstance(got, bool) or isinstance(wanted, bool):
        return got is wanted
    return bool(got == wanted)


class ToolErrorSpec(StrictModel):
    """Tool errors the scenario means to happen: those a tool raised, of ``tool`` (by
    ``agent``), whose ``error`` (``Type: message``) contains the text given; ``count`` is
    a whole number or ``{min, max}`` (default: at least one). ``- fetch`` is short for
    ``- {tool: fetch}``."""

    tool: Name | None = None
    agent: Name | None = None
    #: the exception's class name, or any part of ``ClassName: message``
    error: Text | None = None
    count: CountOrRange | None = None

    @model_validator(mode="before")
    @classmethod
    def _short(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"tool": value}
        return value

    @model_validator(mode="after")
    def _names_something(self) -> ToolErrorSpec:
        if self.tool is None and self.agent is None and self.error is None and self.count is None:
            raise PydanticCustomError(
                "vacuous",
                "an empty tool error declares nothing; give tool, agent, error or count "
                "(`- {tool: fetch, error: TimeoutError}`)",
            )
        return self

    def matches(self, tool: str, agent: str | None, error: str) -> bool:
        """Whether a tool error of ``tool`` (by ``agent``, ``error`` being
        ``Type: message``) is one this item declares."""
        return (
            (self.tool is None or self.tool == tool)
            and (self.agent is None or self.agent == agent)
            and (self.error is None or self.error in error)
        )

    def render(self) -> str:
        parts = [f"tool {self.tool}" if self.tool else "any tool"]
        if self.agent is not None:
            parts.append(f"of agent {self.agent}")
        if self.error is not None:
            parts.append(f"raising {self.error!r}")
        return " ".join(parts)


def _tool_errors(value: Any) -> Any:
    if isinstance(value, list) and not value:
        raise PydanticCustomError(
            "vacuous",
            "an empty list of tool errors declares nothing; write `tool_errors: 0` to say "
            "no tool may raise (the default), or list {tool, error, count} items",
        )
    return value


#: the token counters a ``usage:`` expectation may name
USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")


class TokenCounts(StrictModel):
    """Token counts: each a whole number or ``{min, max}``; the ones not named are not
    checked."""

    input_tokens: CountOrRange | None = None
    output_tokens: CountOrRange | None = None
    total_tokens: CountOrRange | None = None

    def named(self) -> list[tuple[str, int | RangeSpec]]:
        """The counters given, in order."""
        return [(k, getattr(self, k)) for k in USAGE_KEYS if getattr(self, k) is not None]

    @model_validator(mode="after")
    def _checks_something(self) -> TokenCounts:
        if not self.named() and not getattr(self, "agents", None):
            raise PydanticCustomError(
                "vacuous",
                "an empty usage expectation checks nothing; give {keys}",
                {"keys": ", ".join(USAGE_KEYS)},
            )
        return self


class UsageExpect(TokenCounts):
    """Token usage: the counters at the top are the usage of the response the host got
    (the run's sum, as the agent reports it); ``agents`` are per agent, summed over that
    agent's model calls in the transcript."""

    agents: dict[Name, TokenCounts] | None = None

    @field_validator("agents")
    @classmethod
    def _some_agents(cls, value: Any) -> Any:
        return _not_empty("mapping", "name an agent and its token counts")(value)


_TASKS_HINT = (
    "to say that no task is left running write `task_counts: {running: 0}`; "
    "to check a task, map its id to a status (`tasks: {1: completed}`)"
)


class StepExpect(StrictModel):
    """What must hold after one step (a step's own ``expect:``); the base of ExpectSpec.

    See docs/scenarios.md (Expectations) for what each key compares with.
    """

    iterations: Count | None = None
    stop_reason: (
        Literal["evaluators_stopped", "max_iterations", "approval_pending", "error", "cancelled"]
        | None
    ) = None
    calls: dict[Name, Count] | None = None
    #: final status per task id
    tasks: dict[int, TaskStatus] | None = None
    #: how many tasks end in each status (statuses not named are not checked)
    task_counts: dict[TaskStatus, Count] | None = None
    #: per task id: the statuses it went through, in order (repeats collapsed)
    task_history: dict[int, list[TaskStatus]] | None = None
    #: counts of transcript events by kind and fields
    events: list[EventCount] | None = None
    elapsed: SecondsOrRange | None = None
    response: ResponseExpect | None = None
    #: the text of every message the host was shown (the loop's injected messages too)
    surfaced: ResponseExpect | None = None
    error: Text | None = None
    #: the tool errors that must happen (a tool that raises fails the scenario unless
    #: declared here): how many in all, or {tool, agent, error, count} items
    tool_errors: Count | list[ToolErrorSpec] | None = None

    @field_validator("tool_errors", mode="before")
    @classmethod
    def _some_tool_errors(cls, value: Any) -> Any:
        return _tool_errors(value)

    #: token usage of the host's response, and per agent (UsageExpect)
    usage: UsageExpect | None = None
    #: safety oracles (loopsim._oracles): no_duplicate_tool_calls, no_approval_bypass,
    #: no_running_tasks, no_lost_results
    safety: list[SafetyOracle] | None = None

    @field_validator("safety")
    @classmethod
    def _some_oracles(cls, value: Any) -> Any:
        return _not_empty("list", f"name safety oracles: {', '.join(SAFETY_ORACLES)}")(value)

    #: the steps the run must take, in a mode (docs/trajectories.md)
    trajectory: TrajectorySpec | None = None
    #: several trajectories, each with its own mode and scope
    trajectories: list[TrajectorySpec] | None = None
    #: steps the run must never take
    never: list[StepPatternSpec] | None = None

    @field_validator("trajectories")
    @classmethod
    def _some_trajectories(cls, value: Any) -> Any:
        return _not_empty("list", "give {mode, steps} items, or use trajectory:")(value)

    @field_validator("never")
    @classmethod
    def _never_steps(cls, value: Any) -> Any:
        return check_never_steps(value)

    @field_validator("calls")
    @classmethod
    def _some_calls(cls, value: Any) -> Any:
        return _not_empty("mapping", "name an agent and its number of model calls")(value)

    @field_validator("tasks")
    @classmethod
    def _some_tasks(cls, value: Any) -> Any:
        return _not_empty("mapping", _TASKS_HINT)(value)

    @field_validator("task_counts")
    @classmethod
    def _some_counts(cls, value: Any) -> Any:
        return _not_empty("mapping", f"name a status ({', '.join(TASK_STATUSES)}) and a count")(
            value
        )

    @field_validator("task_history")
    @classmethod
    def _some_history(cls, value: Any) -> Any:
        value = _not_empty("mapping", "map a task id to its statuses, e.g. {1: [running, lost]}")(
            value
        )
        for task_id, statuses in (value or {}).items():
            if not statuses:
                raise PydanticCustomError(
                    "vacuous",
                    "task {task} has an empty history, which checks nothing; list its "
                    "statuses, e.g. [running, completed]",
                    {"task": task_id},
                )
        return value

    @field_validator("events")
    @classmethod
    def _some_events(cls, value: Any) -> Any:
        return _not_empty("list", "give {kind, where, count} items")(value)


class ExpectSpec(StepExpect):
    """What must hold when the steps are done (``expect:``) or for every draw (``always:``)."""

    transcript: Literal["snapshot"] | None = None
    unused_turns: Flag = False
    invariants: Flag = True
