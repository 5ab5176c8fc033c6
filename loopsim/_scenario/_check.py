"""Stage 5 of the scenario pipeline: check a run against its expectations and the invariants.

Each :class:`Failure` names the line of the scenario file it came from.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._files import file_in, write_atomic
from .._invariants import check_invariants
from .._oracles import check_safety
from .._trace import Event
from .._trajectory import HostMark, TrajectoryStep, trajectory_of
from .._transcript import render_text
from ._run import Execution, Snapshot, response_text, surfaced_text
from ._schema import RangeSpec, Scenario, StepExpect
from ._source import LoadedScenario, format_location
from ._tool_errors import declared_problems, hint, tool_errors_of
from ._value_checks import check_elapsed, check_text, check_trajectories, check_usage
from ._weak import weak_expectations

__all__ = [
    "UPDATE_OPTION",
    "Failure",
    "Seen",
    "check_block",
    "check_expectations",
    "check_run",
    "check_steps",
    "snapshot_path",
    "warnings_of",
    "weak_of",
]


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed expectation or invariant: what, and where in the scenario file."""

    message: str
    location: str | None = None
    line: int | None = None
    #: or "invariant", "error", "tool_error", "unused", "strict", "warning", "weak"
    kind: str = "expectation"

    def render(self, path: Path | None) -> str:
        where = ""
        if path is not None:
            where = f"{path}:{self.line}: " if self.line else f"{path}: "
        field_path = f"{self.location}: " if self.location else ""
        return f"{where}{field_path}{self.message}"


#: The pytest option (and ``loopsim run`` option) that writes transcript snapshots.
UPDATE_OPTION = "--snapshot-update"
MAX_DIFF_LINES = 40


def snapshot_path(loaded: LoadedScenario) -> Path:
    """Where the ``transcript: snapshot`` text of this scenario lives:
    ``__snapshots__/<scenario file stem>.transcript.txt`` next to the scenario file."""
    folder = Path.cwd() if loaded.where.path is None else loaded.where.path.parent
    return file_in(folder / "__snapshots__", loaded.stem, ".transcript.txt")


@dataclass(frozen=True)
class Seen:
    """What an expectation block is compared with: the end of the run, or of one step."""

    iterations: int | None
    stop_reason: str | None
    calls: dict[str, int]
    tasks: dict[int, str]
    elapsed: float
    response: str | None
    surfaced: str | None
    error: BaseException | None
    error_step: int | None
    events: Sequence[Event]
    #: (step index, first event, end) of each step (the safety oracles read it)
    spans: Sequence[tuple[int, int, int]] = ()
    #: the final task statuses are known (the run ended), not only the recorded ones
    final: bool = False
    #: the host steps taken so far, and the first event of the part looked at
    hosts: Sequence[HostMark] = ()
    first: int = 0
    #: the token usage of the response looked at (None: none reported)
    usage: Any = None

    def trajectory(self) -> list[TrajectoryStep]:
        """The steps taken in the part of the run looked at (from :attr:`first` on)."""
        steps = trajectory_of(self.events, self.hosts)
        return [s for s in steps if s.position >= self.first]

    @classmethod
    def at_end(cls, run: Execution) -> Seen:
        outcome = run.outcome
        return cls(
            iterations=run.iterations,
            stop_reason=run.stop_reason,
            calls=run.calls,
            tasks=run.tasks,
            elapsed=run.elapsed,
            response=run.response_text,
            surfaced=run.surfaced_text,
            error=outcome.error,
            error_step=outcome.error_step,
            events=run.events,
            spans=outcome.spans,
            final=True,
            hosts=outcome.hosts,
            usage=None if outcome.response is None else outcome.response.usage,
        )

    @classmethod
    def after_step(cls, run: Execution, index: int, snapshot: Snapshot) -> Seen:
        events = run.events[: snapshot.events]
        stops = [e for e in events[snapshot.first :] if e.kind == "loop_stop"]
        stop = stops[-1] if stops else None
        return cls(
            iterations=None if stop is None else stop.data.get("iterations"),
            stop_reason=None if stop is None else stop.data.get("reason"),
            calls=snapshot.calls,
            tasks=snapshot.tasks,
            elapsed=snapshot.elapsed,
            response=response_text(snapshot.response),
            surfaced=surfaced_text(snapshot.response),
            error=snapshot.error,
            error_step=index if snapshot.error is not None else None,
            events=events,
            spans=[span for span in run.outcome.spans if span[0] <= index],
            hosts=[
                h for h in run.outcome.hosts if h.index == index or h.position < snapshot.events
            ],
            first=snapshot.first,
            usage=None if snapshot.response is None else snapshot.response.usage,
        )


def _history(events: Sequence[Event]) -> dict[int, list[str]]:
    """Per task id: the statuses it was recorded with, in order, repeats collapsed."""
    history: dict[int, list[str]] = {}
    for event in events:
        if event.kind == "task_status":
            statuses = history.setdefault(int(event.data["task_id"]), [])
            status = str(event.data["status"])
            if not statuses or statuses[-1] != status:
                statuses.append(status)
    return history


def _needs_approval(scenario: Scenario) -> set[str]:
    """The scripted tools that need an approval (declared so, or asked for by an
    ``approval_request`` turn)."""
    names: set[str] = set()
    for agent in scenario.agents.values():
        names.update(n for n, spec in agent.tools.items() if spec.approval_required)
        for turn in agent.script or ():
            if turn.approval_request is not None:
                names.add(turn.approval_request.name)
    return names


def _safety(loaded: LoadedScenario, expect: StepExpect, seen: Seen) -> list[tuple[int, str]]:
    if not expect.safety:
        return []
    steps = loaded.scenario.steps
    return check_safety(
        expect.safety,
        seen.events,
        spans=seen.spans,
        approvals=[i for i, step in enumerate(steps) if getattr(step, "approve", False) is True],
        needs_approval=_needs_approval(loaded.scenario),
        final_tasks=seen.tasks if seen.final else None,
    )


def check_expectations(
    loaded: LoadedScenario,
    result: Execution,
    update_snapshots: bool,
    key: str = "expect",
) -> list[Failure]:
    """Check the ``expect:`` block (or, with ``key="always"``, the ``always:`` block)."""
    expect = getattr(loaded.scenario, key)
    if expect is None:
        return []
    failures = check_block(loaded, expect, Seen.at_end(result), (key,))
    if expect.transcript == "snapshot" and result.engine == loaded.scenario.engine:
        # the snapshot is the file's own engine's transcript; on the other engine the
        # `--engine both` comparison holds the run to it, normalized through WORDING
        where = loaded.where

        def fail(loc: tuple[str | int, ...], message: str) -> None:
            loc = (key, *loc[1:])
            failures.append(Failure(message, format_location(loc), where.line(loc)))

        _check_snapshot(loaded, result, update_snapshots, fail)
    return failures


def check_steps(loaded: LoadedScenario, result: Execution) -> list[Failure]:
    """Check each step's own ``expect:`` against what held when that step ended."""
    failures: list[Failure] = []
    for index, step in enumerate(loaded.scenario.steps):
        expect = getattr(step, "expect", None)
        if expect is None:
            continue
        snapshot = result.outcome.snapshots.get(index)
        loc: tuple[str | int, ...] = ("steps", index, "expect")
        if snapshot is None:
            if result.outcome.error is None:
                failures.append(
                    Failure(
                        "this step never ended (the run stopped before it)",
                        format_location(loc),
                        loaded.where.line(loc),
                    )
                )
            continue
        failures.extend(check_block(loaded, expect, Seen.after_step(result, index, snapshot), loc))
    return failures


def check_block(
    loaded: LoadedScenario, expect: StepExpect, seen: Seen, base: tuple[str | int, ...]
) -> list[Failure]:
    """Every failing key of one expectation block (``base`` is where the block is)."""
    where = loaded.where
    failures: list[Failure] = []

    def fail(loc: tuple[str | int, ...], message: str, kind: str = "expectation") -> None:
        if loc and loc[0] == "expect":
            loc = (*base, *loc[1:])
        failures.append(Failure(message, format_location(loc), where.line(loc), kind))

    error = seen.error
    if expect.error is not None:
        if error is None:
            fail(("expect", "error"), f"expected the run to fail with {expect.error!r}, it did not")
        elif expect.error not in f"{type(error).__name__}: {error}":
            fail(
                ("expect", "error"),
                f"expected an error containing {expect.error!r}, got "
                f"{type(error).__name__}: {error}",
            )
    elif error is not None and not _expected_elsewhere(loaded, seen.error_step):
        loc: tuple[str | int, ...] = (
            ("steps", seen.error_step) if seen.error_step is not None else ()
        )
        fail(loc, f"the run raised {type(error).__name__}: {error}", "error")

    if expect.iterations is not None and seen.iterations != expect.iterations:
        fail(
            ("expect", "iterations"),
            f"expected {expect.iterations} iteration(s), got {seen.iterations}",
        )
    if expect.stop_reason is not None and seen.stop_reason != expect.stop_reason:
        fail(
            ("expect", "stop_reason"),
            f"expected stop reason {expect.stop_reason}, got {seen.stop_reason}",
        )
    for agent, count in (expect.calls or {}).items():
        got = seen.calls.get(agent, 0)
        if got != count:
            fail(
                ("expect", "calls", agent), f"expected {count} model call(s) of {agent}, got {got}"
            )
    for task_id, status in (expect.tasks or {}).items():
        got_status = seen.tasks.get(task_id)
        if got_status != status:
            shown = "no such task" if got_status is None else got_status
            fail(("expect", "tasks", task_id), f"expected task {task_id} {status}, got {shown}")
    if expect.task_counts is not None:
        for status, count in expect.task_counts.items():
            having = sorted(t for t, s in seen.tasks.items() if s == status)
            if len(having) != count:
                ids = f" (task {', '.join(map(str, having))})" if having else ""
                fail(
                    ("expect", "task_counts", status),
                    f"expected {count} task(s) {status}, got {len(having)}{ids}",
                )
    if expect.task_history is not None:
        history = _history(seen.events)
        for task_id, statuses in expect.task_history.items():
            got_history = history.get(task_id)
            if got_history != list(statuses):
                shown = "no such task" if got_history is None else " → ".join(got_history)
                fail(
                    ("expect", "task_history", task_id),
                    f"expected task {task_id} to go {' → '.join(statuses)}, got {shown}",
                )
    for index, counted in enumerate(expect.events or ()):
        got_count = sum(1 for e in seen.events if counted.matches(e.kind, e.data))
        wanted = counted.count
        ok = wanted.holds(got_count) if isinstance(wanted, RangeSpec) else got_count == wanted
        if not ok:
            said = wanted.render() if isinstance(wanted, RangeSpec) else str(wanted)
            fields = ", ".join(f"{k}={v!r}" for k, v in counted.where.items())
            fail(
                ("expect", "events", index, "count"),
                f"expected {said} {counted.kind} event(s)"
                + (f" with {fields}" if fields else "")
                + f", got {got_count}",
            )
    if expect.tool_errors is not None:
        errors = tool_errors_of(seen.events, seen.first)
        for at, problem in declared_problems(expect.tool_errors, errors):
            fail(("expect", "tool_errors", *at), problem)
    for position, problem in _safety(loaded, expect, seen):
        fail(("expect", "safety", position), problem)
    if expect.elapsed is not None:
        check_elapsed(expect.elapsed, seen.elapsed, fail)
    for key, text in (("response", seen.response), ("surfaced", seen.surfaced)):
        spec = getattr(expect, key)
        if spec is not None:
            check_text(key, spec, text, fail)
    check_trajectories(expect, seen, fail)
    if expect.usage is not None:
        check_usage(expect.usage, seen, fail)
    return failures


def _expected_elsewhere(loaded: LoadedScenario, step: int | None) -> bool:
    """Whether the step that raised expects an error itself (its own ``expect.error``)."""
    if step is None:
        return False
    expect = getattr(loaded.scenario.steps[step], "expect", None)
    return expect is not None and expect.error is not None


def _check_snapshot(loaded: LoadedScenario, result: Execution, update: bool, fail: Any) -> None:
    if result.transcript is None:
        fail(
            ("expect", "transcript"), "no transcript was recorded (the transcript layer is missing)"
        )
        return
    text = render_text(result.transcript)
    path = snapshot_path(loaded)
    stored = path.read_text(encoding="utf-8") if path.is_file() else None
    if update:
        if stored != text:
            write_atomic(path, text)
        return
    if stored is None:
        fail(
            ("expect", "transcript"),
            f"no transcript snapshot at {path}; create it by running this scenario once with "
            f"{UPDATE_OPTION} (e.g. `loopsim run {loaded.where.path or loaded.name} "
            f"{UPDATE_OPTION}`), review it and commit it",
        )
        return
    if stored == text:
        return
    scenario = loaded.scenario
    overridden = (result.seed, result.backend) != (scenario.seed, scenario.backend)
    if overridden and stored.partition("\n")[2] == text.partition("\n")[2]:
        # Only the header differs (it names the seed and backend, overridden on the command
        # line); the events, which the snapshot is about, are the same.
        return
    diff = list(
        difflib.unified_diff(
            stored.splitlines(),
            text.splitlines(),
            fromfile=f"{path} (snapshot)",
            tofile="this run",
            lineterm="",
            n=2,
        )
    )
    shown = diff[:MAX_DIFF_LINES]
    if len(diff) > MAX_DIFF_LINES:
        shown.append(f"... {len(diff) - MAX_DIFF_LINES} more diff line(s)")
    body = "\n".join(f"      {line}" for line in shown)
    fail(
        ("expect", "transcript"),
        f"the transcript differs from its snapshot (if the change is intended, rerun with "
        f"{UPDATE_OPTION}):\n{body}",
    )


def check_run(
    loaded: LoadedScenario,
    run: Execution,
    keys: Sequence[str],
    *,
    update_snapshots: bool = False,
    steps_unchecked: Callable[[LoadedScenario], Sequence[tuple[int, str]]] | None = None,
) -> list[Failure]:
    """Every failure of ``run``: the expectation blocks ``keys``, the scenario's ``ties:``,
    the invariants (unless a block turns them off) and unused script turns; under
    ``strict:``, also the steps ``steps_unchecked`` finds that nothing checks (it re-runs
    the scenario without each, so it comes from the stage that runs scenarios)."""
    scenario = loaded.scenario
    where = loaded.where
    specs = [spec for spec in (getattr(scenario, key) for key in keys) if spec is not None]
    failures: list[Failure] = []
    found = [
        *(f for key in keys for f in check_expectations(loaded, run, update_snapshots, key)),
        *check_steps(loaded, run),
    ]
    for failure in found:
        if failure.kind == "error" and any(f.kind == "error" for f in failures):
            continue  # an unexpected error is reported once, not once per block
        failures.append(failure)
    failures.extend(_undeclared_tool_errors(loaded, run, specs))
    if scenario.strict:
        failures.extend(
            Failure(
                f"{w.message} (strict: true makes this an error)", w.location, w.line, kind="strict"
            )
            for w in (*warnings_of(loaded, run), *weak_of(loaded, run))
        )
        failures.extend(
            Failure(
                f"{message} (strict: true makes this an error)",
                format_location(("steps", index)),
                where.line(("steps", index)),
                kind="strict",
            )
            for index, message in (
                () if steps_unchecked is None else steps_unchecked(_not_strict(loaded))
            )
            if index not in {i for i, _ in run.outcome.warnings}  # said once: it did nothing
        )
    ties = run.ties
    for position, problem in ties.problems:
        failures.append(
            Failure(problem, format_location(("ties", position)), where.line(("ties", position)))
        )
    if all(spec.invariants for spec in specs):
        loop = scenario.loop
        problems = check_invariants(
            run.events,
            max_iterations=None if loop is None else (loop.max_iterations or 10),
            fresh_context=bool(loop and loop.fresh_context_per_iteration),
            wait_timeout=float(scenario.parent.wait_timeout),
            evaluator_count=_evaluator_count(scenario),
        )
        failures.extend(_invariant_failure(loaded, run, message) for message in problems)
    if not any(spec.unused_turns for spec in specs) and run.outcome.error is None:
        unused = run.world.unused()
        if len(ties.chosen) < len(scenario.ties):
            loc: tuple[str | int, ...] = ("ties", len(ties.chosen))
            unused.append(
                (
                    loc,
                    (
                        f"{len(scenario.ties) - len(ties.chosen)} tie choice(s) were never used "
                        f"(the run had {len(ties.chosen)} same-instant tie(s))"
                    ),
                )
            )
        for loc, message in unused:
            failures.append(Failure(message, format_location(loc), where.line(loc), kind="unused"))
    return failures


def _undeclared_tool_errors(
    loaded: LoadedScenario, run: Execution, specs: Sequence[StepExpect]
) -> list[Failure]:
    """Each tool error that neither a whole-run block nor the step it happened in
    declares (``tool_errors``), located at that step."""
    if any(spec.tool_errors is not None for spec in specs):
        return []  # a whole-run block says what the run's tools raise (checked there)
    windows = []
    for index, step in enumerate(loaded.scenario.steps):
        expect = getattr(step, "expect", None)
        snapshot = run.outcome.snapshots.get(index)
        if expect is not None and expect.tool_errors is not None and snapshot is not None:
            windows.append((snapshot.first, snapshot.events))
    failures = []
    for error in tool_errors_of(run.events):
        if any(begin <= error.position < end for begin, end in windows):
            continue
        at = _step_at(run, error.position)
        loc: tuple[str | int, ...] = () if at is None else ("steps", at)
        failures.append(
            Failure(
                f"{error.describe()}: a tool that raises fails the scenario unless it is "
                f"declared; if it is meant to, add {hint(error)} under expect: (or the "
                "step's expect:)",
                format_location(loc) or None,
                loaded.where.line(loc),
                kind="tool_error",
            )
        )
    return failures


def _not_strict(loaded: LoadedScenario) -> LoadedScenario:
    # the runs without a step are checked as plain runs (and do not look for steps again)
    return dataclasses.replace(
        loaded, scenario=loaded.scenario.model_copy(update={"strict": False})
    )


def warnings_of(loaded: LoadedScenario, run: Execution) -> list[Failure]:
    """The steps of ``run`` that changed nothing, as located warnings."""
    where = loaded.where
    return [
        Failure(
            message,
            format_location(("steps", index)),
            where.line(("steps", index)),
            kind="warning",
        )
        for index, message in run.outcome.warnings
    ]


def weak_of(loaded: LoadedScenario, run: Execution) -> list[Failure]:
    """What the expectations leave unchecked of ``run``, located at ``expect``."""
    where = loaded.where
    return [
        Failure(message, format_location(("expect",)), where.line(("expect",)), kind="weak")
        for message in weak_expectations(loaded.scenario, run.events)
    ]


def _invariant_failure(loaded: LoadedScenario, run: Execution, message: str) -> Failure:
    """An invariant violation, located at the step during which it was seen (when known)."""
    where = loaded.where
    event = getattr(message, "event", None)
    if event is not None:
        position = next((i for i, e in enumerate(run.events) if e is event), None)
        if position is not None:
            index = _step_at(run, position)
            if index is not None:
                loc = ("steps", index)
                return Failure(
                    f"{message} (at t={event.time:g}s, event {event.seq})",
                    f"invariants ({format_location(loc)})",
                    where.line(loc),
                    kind="invariant",
                )
    return Failure(message, location="invariants", line=where.line(()), kind="invariant")


def _step_at(run: Execution, position: int) -> int | None:
    """The step during which the event at ``position`` was recorded."""
    best: int | None = None
    for index, begin, end in run.outcome.spans:
        if begin <= position < end and (best is None or index > best):
            best = index
    return best


def _evaluator_count(scenario: Scenario) -> int | None:
    """How many evaluators every loop of the scenario asks (None: it has two different loops)."""
    loop = scenario.loop
    if loop is None:
        return None
    if loop.should_continue is not None:
        # The harness's predicate loop asks one "evaluator", the predicate. With evaluators
        # as well there are two loops with different counts: the invariant then reads each
        # loop's count from the indices it saw.
        return None if loop.evaluators else 1
    return len(loop.evaluators)
