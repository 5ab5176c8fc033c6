"""``assert_trajectory`` and ``assert_never`` for any run or transcript, and hypothesis
strategies that draw trajectories (and the transcripts that took them)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from .._trajectory import (
    HostMark,
    TrajectoryStep,
    check_never,
    check_trajectory,
    pattern_of,
    spec_of,
    trajectory_of,
)
from .._transcript import Transcript, TranscriptEvent, read_transcript

__all__ = [
    "assert_never",
    "assert_trajectory",
    "steps_of",
    "trajectories",
    "transcript_of",
]


def steps_of(source: Any) -> list[TrajectoryStep]:
    """The trajectory of ``source``: a :class:`~loopsim.ScenarioResult`, a
    :class:`~loopsim.Transcript` (one recorded from agent_framework code too), the path of
    a transcript file, or a list of events."""
    if isinstance(source, (str, os.PathLike)):
        source = read_transcript(Path(source))
    hosts: Sequence[HostMark] | None = None
    if hasattr(source, "events"):
        # a ScenarioResult knows its host steps; a bare transcript does not
        hosts = getattr(source, "host_steps", None) or None
        events = source.events
    elif isinstance(source, Sequence):
        events = source
    else:
        msg = (
            "expected a ScenarioResult, a Transcript, a transcript file's path or a list of "
            f"events, got {type(source).__name__}"
        )
        raise TypeError(msg)
    return trajectory_of(events, hosts)


def assert_trajectory(
    result_or_transcript: Any,
    steps: Sequence[Any],
    *,
    mode: str = "in_order",
    agent: str | None = None,
    per_iteration: bool = False,
    by: float | None = None,
    after: float | None = None,
    kinds: Sequence[str] | None = None,
) -> None:
    """Fail (``AssertionError`` with the aligned table) unless the run took ``steps``.

    The steps are the mappings of the scenario format's ``trajectory:`` (values may be
    matcher objects: :class:`Contains`, :class:`Regex`, :class:`Anything`,
    :class:`Between`, :class:`OneOf`, :class:`Equals`); ``mode`` is ``exact``,
    ``in_order``, ``any_order``, ``subset`` or ``superset``; the run's tool, says and task
    steps are compared (and host steps, when one is named), or only ``kinds``. A step
    written wrong raises ``ValueError`` naming it (``steps.1.args.symbol: ...``).

    Example:
        result = loopsim.run_scenario("scenarios/tool_calls.loopsim.yaml")
        assert_trajectory(result, [{"tool": "add", "args": {"a": 2}}, {"says": Contains("5")}])
    """
    spec = spec_of(
        {
            "steps": list(steps),
            "mode": mode,
            "agent": agent,
            "per_iteration": per_iteration,
            "by": by,
            "after": after,
            "kinds": kinds,
        }
    )
    problems = check_trajectory(spec, steps_of(result_or_transcript))
    if problems:
        raise AssertionError("\n".join(problems))


def assert_never(result_or_transcript: Any, steps: Sequence[Any]) -> None:
    """Fail unless the run took none of ``steps`` (the ``never:`` of scenario files), e.g.
    ``[{"tool": "place_order", "approved": False}]``: a call made without its approval."""
    patterns = [_forbidden(step, index) for index, step in enumerate(steps)]
    found = check_never(patterns, steps_of(result_or_transcript))
    if found:
        raise AssertionError("\n".join(f"steps[{i}]: {m}" for i, m in found))


def _forbidden(step: Any, index: int) -> Any:
    try:
        return pattern_of(step, never=True)
    except ValueError as exc:
        msg = f"steps[{index}]: {exc}"
        raise ValueError(msg) from None


# -- strategies ------------------------------------------------------------------------------

_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=12).filter(
    lambda t: t.strip() == t and t != ""
)
_ARG_VALUES = st.one_of(
    st.integers(-5, 5), st.booleans(), _WORDS, st.lists(st.integers(0, 3), max_size=3)
)


@st.composite
def trajectories(
    draw: st.DrawFn,
    *,
    agents: Sequence[str] = ("coordinator", "researcher"),
    tools: Sequence[str] = ("search", "fetch", "place_order"),
    min_steps: int = 1,
    max_steps: int = 8,
) -> list[dict[str, Any]]:
    """Concrete trajectories: lists of step mappings (tool calls with arguments, model
    texts, task events), each step exact, so that ``transcript_of(t)`` takes exactly ``t``
    and ``assert_trajectory(transcript_of(t), t, mode="exact")`` holds."""
    count = draw(st.integers(min_steps, max_steps))
    steps: list[dict[str, Any]] = []
    task_ids = iter(range(1, max_steps + 1))
    for _ in range(count):
        agent = draw(st.sampled_from(list(agents)))
        kind = draw(st.sampled_from(["tool", "tool", "says", "task"]))
        if kind == "tool":
            args = draw(
                st.dictionaries(st.sampled_from(["q", "n", "url", "ok"]), _ARG_VALUES, max_size=3)
            )
            steps.append({"tool": draw(st.sampled_from(list(tools))), "agent": agent, "args": args})
        elif kind == "says":
            steps.append({"says": draw(_WORDS), "agent": agent})
        else:
            status = draw(st.sampled_from(["running", "completed", "failed", "lost"]))
            steps.append({"task": next(task_ids), "status": status, "agent": agent})
    for step in steps:
        if step.get("args") == {}:
            del step["args"]  # an empty args mapping checks nothing and is refused
    return steps


def transcript_of(steps: Sequence[Mapping[str, Any]], *, interval: float = 1.0) -> Transcript:
    """A transcript whose trajectory is exactly ``steps`` (concrete step mappings, as
    :func:`trajectories` draws them), one step every ``interval`` virtual seconds."""
    events: list[TranscriptEvent] = []

    def add(kind: str, time: float, **data: Any) -> None:
        events.append(TranscriptEvent(seq=len(events) + 1, time=time, kind=kind, data=data))

    for number, step in enumerate(steps, start=1):
        time = number * interval
        agent = str(step.get("agent", "agent"))
        if "tool" in step:
            call = {
                "type": "function_call",
                "call_id": f"call-{number}",
                "name": step["tool"],
                "arguments": dict(step.get("args", {})),
            }
            message = {"role": "assistant", "contents": [call]}
            add("model_response", time, agent=agent, messages=[message])
            add("tool_call", time, agent=agent, call_id=f"call-{number}",
                name=step["tool"], arguments=dict(step.get("args", {})))  # fmt: skip
            add("tool_result", time, agent=agent, call_id=f"call-{number}",
                name=step["tool"], result="ok")  # fmt: skip
        elif "says" in step:
            text = {"type": "text", "text": step["says"]}
            add("model_response", time, agent=agent,
                messages=[{"role": "assistant", "contents": [text]}])  # fmt: skip
        else:
            add("task_status", time, task_id=step["task"], agent=agent, status=step["status"])
    return Transcript(scenario="drawn trajectory", events=events)
