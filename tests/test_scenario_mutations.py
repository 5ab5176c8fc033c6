"""Every expectation key each shipped scenario uses catches a change of the outcome it checks.

For each shipped scenario (``scenarios/*.loopsim.yaml``) the real run is taken, then its
outcome is changed one aspect at a time — a task in another status, one more iteration,
another stop reason, one more model call, a different response, another elapsed time, one
more event — and the check must fail at the key that looks at that aspect.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopsim._scenario import load_scenario
from loopsim._scenario._check import Seen, check_block
from loopsim._scenario._run import execute
from loopsim._scenario._schema import STOP_REASONS, TASK_STATUSES, RangeSpec, StepExpect
from loopsim._trace import Event
from loopsim._trajectory import Equals, HostMark, StepPattern, Trajectory, TrajectoryStep


def _without(seen: Seen, step: TrajectoryStep) -> Seen:
    """The outcome without one step the run took (its event, or its host step)."""
    if step.kind == "host":
        hosts = [h for h in seen.hosts if (h.position, h.name) != (step.position, step.name)]
        return dataclasses.replace(seen, hosts=hosts)
    events = [e for i, e in enumerate(seen.events) if i != step.position]
    return dataclasses.replace(seen, events=events)


def _twice(seen: Seen, step: TrajectoryStep) -> Seen:
    """The outcome with one step the run took taken once more (its event repeated)."""
    if step.kind == "host":
        extra = next(h for h in seen.hosts if h.position == step.position and h.name == step.name)
        return dataclasses.replace(seen, hosts=[*seen.hosts, extra])
    event = seen.events[step.position]
    if step.kind == "task":  # a repeated status collapses: go elsewhere and come back
        other = dataclasses.replace(event, data={**event.data, "status": "lost"})
        if event.data.get("status") == "lost":
            other = dataclasses.replace(event, data={**event.data, "status": "failed"})
        return dataclasses.replace(seen, events=[*seen.events, other, event])
    return dataclasses.replace(seen, events=[*seen.events, event])


def _trajectory_mutation(spec: Trajectory, seen: Seen) -> Seen:
    """A change of the run the trajectory must catch: a step it names dropped (or, for
    ``subset``, which allows fewer, taken once more); a counted step pushed past its bound."""
    steps = seen.trajectory()
    ordered = spec.ordered
    if ordered:
        first = next(s for s in steps if ordered[0].mismatch(s) is None)
        return _twice(seen, first) if spec.mode == "subset" else _without(seen, first)
    counted = spec.steps[0]
    hits = [s for s in steps if counted.mismatch(s) is None]
    if counted.at_least is not None:
        for hit in reversed(hits):
            seen = _without(seen, hit)
        return seen
    for _ in range((counted.at_most or 0) + 1 - len(hits) + 1):
        seen = _twice(seen, hits[0])
    return seen


def _forbidden_event(pattern: StepPattern, seen: Seen) -> Seen:
    """The outcome with one call of the forbidden tool added: asked for by the model, then
    (when the step names an approved call) approved by the host, then made."""
    name = pattern.fields["tool"]
    assert isinstance(name, Equals), "a shipped never: step names its tool exactly"
    args = {k: m.value for k, m in (pattern.args or {}).items() if isinstance(m, Equals)}
    last = seen.events[-1]
    agent = pattern.fields.get("agent")
    data = {
        "agent": agent.value if isinstance(agent, Equals) else "someone",
        "call_id": "planted-call",
        "name": name.value,
        "arguments": args,
    }
    call = {"type": "function_call", "call_id": "planted-call", "name": name.value}
    ask = Event(last.seq + 1, last.time, "model_response", {
        "agent": data["agent"], "messages": [{"role": "assistant", "contents": [call]}],
    })  # fmt: skip
    made = Event(last.seq + 2, last.time, "tool_call", data)
    approved = pattern.fields.get("approved")
    hosts = list(seen.hosts)
    if isinstance(approved, Equals) and approved.value is True:
        hosts.append(HostMark(len(seen.events) + 1, last.time, "approve", approved=True))
    return dataclasses.replace(seen, events=[*seen.events, ask, made], hosts=hosts)


SCENARIOS = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.loopsim.yaml"))
CHECKING_KEYS = (
    "iterations",
    "stop_reason",
    "calls",
    "tasks",
    "task_counts",
    "task_history",
    "events",
    "elapsed",
    "response",
    "surfaced",
    "error",
    "safety",
    "trajectory",
    "trajectories",
    "never",
    "tool_errors",
    "usage",
)


def _other(value: str, choices: tuple[str, ...]) -> str:
    return next(c for c in choices if c != value)


def _text_mutations(key: str, spec: Any, text: str | None) -> Iterator[tuple[str, Any]]:
    if spec.equals is not None:
        yield f"{key}.equals", (text or "") + " (changed)"
    for index, part in enumerate(spec.contains or ()):
        yield f"{key}.contains[{index}]", (text or "").replace(part, "")
    for index, part in enumerate(spec.not_contains or ()):
        yield f"{key}.not_contains[{index}]", (text or "") + part


def _task_event(seen: Seen, task_id: int, status: str) -> Event:
    last = seen.events[-1] if seen.events else None
    seq = 1 if last is None else last.seq + 1
    return Event(
        seq,
        0.0 if last is None else last.time,
        "task_status",
        {"task_id": task_id, "status": status},
    )


def mutations(expect: StepExpect, seen: Seen) -> Iterator[tuple[str, Seen]]:
    """(the key that must catch it, the changed outcome) for every key ``expect`` uses."""
    change = dataclasses.replace
    if expect.iterations is not None:
        yield "iterations", change(seen, iterations=(seen.iterations or 0) + 1)
    if expect.stop_reason is not None:
        yield "stop_reason", change(seen, stop_reason=_other(expect.stop_reason, STOP_REASONS))
    for agent in expect.calls or {}:
        yield (
            f"calls.{agent}",
            change(seen, calls={**seen.calls, agent: seen.calls.get(agent, 0) + 1}),
        )
    for task_id, status in (expect.tasks or {}).items():
        yield (
            f"tasks[{task_id}]",
            change(seen, tasks={**seen.tasks, task_id: _other(status, TASK_STATUSES)}),
        )
    for status in expect.task_counts or {}:
        extra = max(seen.tasks, default=0) + 1
        yield f"task_counts.{status}", change(seen, tasks={**seen.tasks, extra: status})
    for task_id, statuses in (expect.task_history or {}).items():
        after = _other(statuses[-1], ("failed", "lost"))
        yield (
            f"task_history[{task_id}]",
            change(seen, events=[*seen.events, _task_event(seen, task_id, after)]),
        )
    for index, counted in enumerate(expect.events or ()):
        matching = [e for e in seen.events if counted.matches(e.kind, e.data)]
        wanted = counted.count
        if isinstance(wanted, RangeSpec) and wanted.max is None:
            changed = [e for e in seen.events if e not in matching]  # below the min
        else:
            template = matching[0] if matching else Event(1, 0.0, counted.kind, dict(counted.where))
            changed = [*seen.events, *([template] * (len(matching) + 1))]
        yield f"events[{index}].count", change(seen, events=changed)
    if expect.elapsed is not None:
        elapsed = expect.elapsed
        if isinstance(elapsed, RangeSpec):
            if elapsed.max is not None:
                yield "elapsed.max", change(seen, elapsed=elapsed.max + 1)
            if elapsed.min is not None:
                yield "elapsed.min", change(seen, elapsed=elapsed.min - 1)
        else:
            yield "elapsed", change(seen, elapsed=seen.elapsed + 1)
    if expect.response is not None:
        for key, text in _text_mutations("response", expect.response, seen.response):
            yield key, change(seen, response=text)
    if expect.surfaced is not None:
        for key, text in _text_mutations("surfaced", expect.surfaced, seen.surfaced):
            yield key, change(seen, surfaced=text)
    if expect.error is not None:
        yield "error", change(seen, error=None)
    for index, oracle in enumerate(expect.safety or ()):
        yield f"safety[{index}]", _break(oracle, seen)
    if expect.trajectory is not None:
        yield "trajectory", _trajectory_mutation(expect.trajectory.trajectory(), seen)
    for index, spec in enumerate(expect.trajectories or ()):
        yield f"trajectories[{index}]", _trajectory_mutation(spec.trajectory(), seen)
    for index, step in enumerate(expect.never or ()):
        yield f"never[{index}]", _forbidden_event(step.pattern(never=True), seen)
    yield from _tool_error_mutations(expect, seen)
    yield from _usage_mutations(expect, seen)


def _usage_mutations(expect: StepExpect, seen: Seen) -> Iterator[tuple[str, Seen]]:
    """Each counter checked, one token more (the host's response; each agent's calls)."""
    spec = expect.usage
    if spec is None:
        return
    change = dataclasses.replace
    host = seen.usage
    for key, _ in spec.named():
        counts = host.model_dump() if hasattr(host, "model_dump") else dict(host or {})
        counts[key] = (counts.get(key) or 0) + 1
        yield f"usage.{key}", change(seen, usage=counts)
    last = seen.events[-1]
    for agent, agent_counts in (spec.agents or {}).items():
        for key, _ in agent_counts.named():
            planted = Event(last.seq + 1, last.time, "model_response", {
                "agent": agent, "usage": {key: 1},
            })  # fmt: skip
            yield f"usage.agents.{agent}.{key}", change(seen, events=[*seen.events, planted])


def _tool_error_mutations(expect: StepExpect, seen: Seen) -> Iterator[tuple[str, Seen]]:
    """One more tool error than declared, or (for an item of "at least") none of its own."""
    declared = expect.tool_errors
    if declared is None:
        return
    change = dataclasses.replace
    raised = [e for e in seen.events if e.kind == "tool_result" and e.data.get("error_type")]
    last = seen.events[-1]
    planted = Event(last.seq + 1, last.time, "tool_result", {
        "agent": "someone", "call_id": "planted", "name": "planted", "error": "boom",
        "error_type": "PlantedError",
    })  # fmt: skip
    if isinstance(declared, int):
        yield "tool_errors", change(seen, events=[*seen.events, planted])
        return
    for index, item in enumerate(declared):
        mine = [e for e in raised if item.matches(str(e.data["name"]), e.data.get("agent"),
                f"{e.data['error_type']}: {e.data.get('error')}")]  # fmt: skip
        wanted = item.count
        if wanted is None or (isinstance(wanted, RangeSpec) and wanted.max is None):
            yield (
                f"tool_errors[{index}]",
                change(seen, events=[e for e in seen.events if e not in mine]),
            )
        else:
            yield f"tool_errors[{index}]", change(seen, events=[*seen.events, mine[0]])


def _break(oracle: str, seen: Seen) -> Seen:
    """``seen`` changed so that the safety oracle ``oracle`` no longer holds."""
    change = dataclasses.replace
    if oracle == "no_duplicate_tool_calls":
        calls = [e for e in seen.events if e.kind == "tool_call"]
        again = calls[0] if calls else Event(1, 0.0, "tool_call", {"name": "t", "call_id": "c"})
        return change(seen, events=[*seen.events, again, again])
    if oracle == "no_approval_bypass":  # no host step approved anything
        return change(seen, spans=[])
    extra = max(seen.tasks, default=0) + 1
    status = "running" if oracle == "no_running_tasks" else "lost"
    return change(
        seen,
        tasks={**seen.tasks, extra: status},
        events=[*seen.events, _task_event(seen, extra, status)],
    )


def _cases() -> Iterator[Any]:
    for path in SCENARIOS:
        yield pytest.param(path, id=path.name.removesuffix(".loopsim.yaml"))


@pytest.mark.parametrize("path", list(_cases()))
def test_each_key_a_shipped_scenario_uses_catches_a_changed_outcome(path: Path) -> None:
    loaded = load_scenario(path)
    run = execute(loaded)
    seen = Seen.at_end(run)
    blocks = [(key, getattr(loaded.scenario, key)) for key in ("expect", "always")]
    used = 0
    for block, expect in blocks:
        if expect is None:
            continue
        assert check_block(loaded, expect, seen, (block,)) == [], "the real run must pass"
        for key, changed in mutations(expect, seen):
            used += 1
            caught = [f.location for f in check_block(loaded, expect, changed, (block,))]
            # other keys may see the same change (an extra lost event is a history too)
            # a trajectory failure points at its step inside the key (``.steps[2]``)
            assert any(c == f"{block}.{key}" or c.startswith(f"{block}.{key}.") for c in caught), (
                f"{block}.{key} did not catch its change"
            )
    keys = {
        k for _, e in blocks if e is not None for k in CHECKING_KEYS if getattr(e, k) is not None
    }
    assert used >= len(keys) >= 1, f"{path.name} checks nothing of its outcome"


def test_the_table_covers_every_checking_key() -> None:
    # A key added to the expectations but not to this table would go unexercised here.
    fields = set(StepExpect.model_fields)
    assert fields == set(CHECKING_KEYS)
