"""The exception tree of loopsim.

```
LoopsimError(Exception)
├── ScenarioError(LoopsimError, ValueError)        file, line, field path, expected
├── SimulationError(LoopsimError, RuntimeError)    .virtual_time, .seed
│   ├── ScriptExhaustedError                       client, turn, last request
│   ├── HostedToolError                            client, agent, turn, tool, call id
│   ├── SimulationDeadlock                         what each task waits on
│   ├── SimulationLimitError                       .limit, .value, what each task waits on
│   │   ├── VirtualTimeLimitError                  virtual-time budget / wall-clock range
│   │   ├── RealTimeLimitError                     the real-time watchdog
│   │   └── RunawayLoopError                       steps at one instant / model calls, .agent
│   └── UserCodeAbortError                              a BaseException from user code, .origin
├── ReplayMismatchError(LoopsimError, AssertionError)  first divergent event, both sides
├── ReplayedModelError(LoopsimError, RuntimeError)  a recorded model failure, raised again
└── TranscriptError(LoopsimError, ValueError)      unreadable / wrong version
```

Every error keeps its context as attributes; ``__str__`` renders them. Tests and the CLI
read the attributes, never parse the message. Constructor misuse elsewhere raises plain
``ValueError``/``TypeError`` as upstream does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "HostedToolError",
    "LoopsimError",
    "RealTimeLimitError",
    "ReplayMismatchError",
    "ReplayedModelError",
    "RunawayLoopError",
    "ScenarioError",
    "ScriptExhaustedError",
    "SimulationDeadlock",
    "SimulationError",
    "SimulationLimitError",
    "TranscriptError",
    "UserCodeAbortError",
    "VirtualTimeLimitError",
]


class LoopsimError(Exception):
    """Base class of every error loopsim raises on its own account."""


class ScenarioError(LoopsimError, ValueError):
    """A scenario file is invalid.

    Attributes:
        path: the file (None for an in-memory scenario).
        line: 1-based line of the offending value, when known.
        location: dotted field path such as ``agents.web_search.script[2].delay``.
        expected: what would have been valid, in words.
        problem: the full sentence describing what is wrong.
        others: further errors found in the same file, in document order (``validate``
            reports them all; ``str()`` is this first one alone).
        omitted: how many more errors there were past the reporting cap.
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        location: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.problem = problem
        self.path = None if path is None else Path(path)
        self.line = line
        self.location = location
        self.expected = expected
        self.others: tuple[ScenarioError, ...] = ()
        self.omitted = 0
        super().__init__(self._render())

    @property
    def errors(self) -> tuple[ScenarioError, ...]:
        """This error and the others found in the same file, in document order."""
        return (self, *self.others)

    def _render(self) -> str:
        where = ""
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        field = f"{self.location}: " if self.location else ""
        return f"{where}{field}{self.problem}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_scenario_error,
            (self.problem, self.path, self.line, self.location, self.expected),
            {"others": self.others, "omitted": self.omitted},
        )


def _rebuild_scenario_error(
    problem: str, path: Path | None, line: int | None, location: str | None, expected: str | None
) -> ScenarioError:
    return ScenarioError(problem, path=path, line=line, location=location, expected=expected)


class SimulationError(LoopsimError, RuntimeError):
    """A simulation could not go on.

    Attributes:
        virtual_time: virtual seconds since the simulation started, when known.
        seed: the simulation's seed, when known.
    """

    def __init__(
        self, message: str, *, virtual_time: float | None = None, seed: int | None = None
    ) -> None:
        self.message = message
        self.virtual_time = virtual_time
        self.seed = seed
        super().__init__(message)

    def __str__(self) -> str:
        parts = [self.message]
        if self.virtual_time is not None:
            parts.append(f"(at virtual t={self.virtual_time:g}s)")
        if self.seed is not None:
            parts.append(f"(seed {self.seed})")
        return " ".join(parts)


class ScriptExhaustedError(SimulationError):
    """A scripted chat client was asked for more turns than its script holds.

    Attributes:
        client: the client's name.
        turn: the 1-based number of the turn that had no script entry.
        last_request: the request that could not be answered (a ``ChatRequest``).
    """

    def __init__(
        self,
        client: str,
        turn: int,
        last_request: Any,
        *,
        virtual_time: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.client = client
        self.turn = turn
        self.last_request = last_request
        summary = _summarize_request(last_request)
        super().__init__(
            f"scripted client {client!r} has no reply for turn {turn}: its script held "
            f"{turn - 1} turn(s). Last request: {summary}. Add a turn to the script, or check "
            "why the agent asked again.",
            virtual_time=virtual_time,
            seed=seed,
        )


class HostedToolError(SimulationError):
    """A model's answer holds a hosted tool call that no service could have answered so:
    the script gives no result for it, a result for no call, or calls a hosted tool the
    request did not offer.

    Attributes:
        client: the fake client's name.
        agent: the agent that asked, when known.
        turn: the 1-based turn of the client that answered so.
        tool: the hosted tool's name (``web_search``...).
        call_id: the hosted call's id.
        problem: what is wrong, in words.
    """

    def __init__(
        self,
        problem: str,
        *,
        client: str,
        agent: str | None,
        turn: int,
        tool: str,
        call_id: str,
        virtual_time: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.client = client
        self.agent = agent
        self.turn = turn
        self.tool = tool
        self.call_id = call_id
        self.problem = problem
        who = f"agent {agent!r}, " if agent else ""
        super().__init__(
            f"hosted tool {tool!r} (call {call_id!r}; {who}client {client!r}, turn {turn}): "
            f"{problem}",
            virtual_time=virtual_time,
            seed=seed,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {
            "client": self.client,
            "agent": self.agent,
            "turn": self.turn,
            "tool": self.tool,
            "call_id": self.call_id,
            "virtual_time": self.virtual_time,
            "seed": self.seed,
        }
        return (_rebuild_hosted_error, (self.problem, fields))


def _rebuild_hosted_error(problem: str, fields: dict[str, Any]) -> HostedToolError:
    return HostedToolError(problem, **fields)


def _summarize_request(request: Any) -> str:
    messages = getattr(request, "messages", None)
    if not messages:
        return "<no messages>"
    last = messages[-1]
    text = getattr(last, "text", "")
    role = getattr(last, "role", "?")
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{len(messages)} message(s), last {role}: {text!r}"


class SimulationDeadlock(SimulationError):  # noqa: N818 - public name fixed by design.md
    """Every task waits and nothing can ever wake them.

    Attributes:
        waiting: one line per waiting task: its name and what it awaits.
    """

    def __init__(
        self,
        waiting: Sequence[str],
        *,
        virtual_time: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.waiting = tuple(waiting)
        lines = "\n".join(f"  - {w}" for w in self.waiting) or "  (no task could be inspected)"
        super().__init__(
            "simulation deadlock: every task is waiting, with no deadline, thread or I/O "
            f"that could wake it. Waiting:\n{lines}\n",
            virtual_time=virtual_time,
            seed=seed,
        )


class SimulationLimitError(SimulationError):
    """A run reached one of its limits and was stopped (see ``docs/limits.md``).

    Attributes:
        limit: which limit: ``"virtual_time"``, ``"wall_clock_range"`` or ``"real_time"``.
        value: the limit, in seconds (virtual or real, as ``limit`` says).
        waiting: one line per task still running when the limit was reached: its name,
            where it is and what it awaits.
        setting: how to change the limit, in words.
    """

    def __init__(
        self,
        problem: str,
        *,
        limit: str,
        value: float,
        waiting: Sequence[str] = (),
        setting: str = "",
        virtual_time: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.problem = problem
        self.limit = limit
        self.value = value
        self.waiting = tuple(waiting)
        self.setting = setting
        lines = "".join(f"\n  - {w}" for w in self.waiting)
        running = f" Still running:{lines}" if lines else ""
        hint = f"\n{setting}" if setting else ""
        super().__init__(f"{problem}.{running}{hint}\n", virtual_time=virtual_time, seed=seed)


class VirtualTimeLimitError(SimulationLimitError):
    """Virtual time would pass the run's budget, or the range the virtual wall clock can show."""


class RealTimeLimitError(SimulationLimitError):
    """The real-time watchdog stopped a run that took too long in real seconds (a busy loop,
    a task that swallows cancellation, blocking code)."""


class RunawayLoopError(SimulationLimitError):
    """A run went round without end: too many steps at one virtual instant, or too many
    model calls in all (counts, so it ends the same way on any machine).

    Attributes (besides :class:`SimulationLimitError`'s; ``value`` is the count allowed):
        limit: ``"steps_per_instant"`` or ``"model_calls"``.
        agent: the agent whose model call crossed the limit, or the agent that last called
            its model before the steps ran away (None when no model was called yet).
        loop: the loop agent whose iteration was running then (None outside any loop).
        iteration: that loop's iteration (None outside any loop).
        task: the task that was spinning (``steps_per_instant``; its name and where it
            is), or None.
    """

    def __init__(
        self,
        problem: str,
        *,
        limit: str,
        value: float,
        agent: str | None = None,
        loop: str | None = None,
        iteration: int | None = None,
        task: str | None = None,
        waiting: Sequence[str] = (),
        setting: str = "",
        virtual_time: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.agent = agent
        self.loop = loop
        self.iteration = iteration
        self.task = task
        super().__init__(
            problem,
            limit=limit,
            value=value,
            waiting=waiting,
            setting=setting,
            virtual_time=virtual_time,
            seed=seed,
        )


class UserCodeAbortError(SimulationError):
    """User code (an evaluator, a tool, a chat function) raised a ``BaseException`` such as
    ``SystemExit``, ``KeyboardInterrupt`` or a stray ``CancelledError`` during a run.

    Where loopsim runs other people's code for a verdict (scenario runs, ``loopsim run``,
    ``check-evaluator``) such an exception must not end the process or pass for a
    cancellation: it becomes this error, chained to the original (``__cause__``).

    Attributes:
        original: the exception user code raised.
        origin: where it was raised: ``file:line in function``, or None when unknown.
    """

    def __init__(
        self,
        original: BaseException,
        origin: str | None,
        *,
        virtual_time: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.original = original
        self.origin = origin
        where = f" at {origin}" if origin else ""
        shown = repr(original)
        if len(shown) > 200:
            shown = shown[:197] + "..."
        super().__init__(
            f"user code raised {shown}{where}; loopsim stopped the run and reports it as a failure",
            virtual_time=virtual_time,
            seed=seed,
        )


class ReplayMismatchError(LoopsimError, AssertionError):
    """A replayed request differs from the recorded one.

    Attributes:
        agent: the agent whose request diverged.
        event_index: index of the first divergent event in the recorded transcript.
        expected: the recorded side (rendered text).
        actual: the live side (rendered text).
    """

    def __init__(self, agent: str, event_index: int | None, expected: str, actual: str) -> None:
        self.agent = agent
        self.event_index = event_index
        self.expected = expected
        self.actual = actual
        where = f"event {event_index}" if event_index is not None else "the end of the recording"
        super().__init__(
            f"replay of agent {agent!r} diverged at {where}:\n"
            f"  recorded: {expected}\n  live:     {actual}"
        )


class ReplayedModelError(LoopsimError, RuntimeError):
    """A model call that failed in the recording, failing again in a replay.

    ``ReplayChatClient`` raises a subclass named like the recorded exception, with the
    recorded message as its text, so whatever reported the original failure (a failed
    background task's error text, a ``model_error`` event) reports it the same way.

    Attributes:
        recorded_type: the class name of the recorded exception.
    """

    def __init__(self, message: str, *, recorded_type: str) -> None:
        self.recorded_type = recorded_type
        super().__init__(message)


class TranscriptError(LoopsimError, ValueError):
    """A transcript file cannot be read: truncated, corrupted or of an unknown version.

    Attributes:
        path: the file, when known.
        problem: what is wrong.
    """

    def __init__(self, problem: str, *, path: str | Path | None = None) -> None:
        self.problem = problem
        self.path = None if path is None else Path(path)
        prefix = f"{self.path}: " if self.path is not None else ""
        super().__init__(f"{prefix}{problem}")
