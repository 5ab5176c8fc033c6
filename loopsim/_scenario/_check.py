"""Stage 5 of the scenario pipeline: check a run against its expectations and the invariants.

Each :class:`Failure` names the line of the scenario file it came from.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._files import write_atomic
from .._invariants import check_invariants
from .._transcript import render_text
from ._run import Execution
from ._schema import RangeSpec, Scenario
from ._source import LoadedScenario, format_location

__all__ = ["UPDATE_OPTION", "Failure", "check_expectations", "check_run", "snapshot_path"]


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed expectation or invariant: what, and where in the scenario file."""

    message: str
    location: str | None = None
    line: int | None = None
    kind: str = "expectation"  # or "invariant", "error", "unused"

    def render(self, path: Path | None) -> str:
        where = ""
        if path is not None:
            where = f"{path}:{self.line}: " if self.line else f"{path}: "
        field_path = f"{self.location}: " if self.location else ""
        return f"{where}{field_path}{self.message}"


TOLERANCE = 1e-6
#: The pytest option (and ``loopsim run`` option) that writes transcript snapshots.
UPDATE_OPTION = "--loopsim-update-snapshots"
MAX_DIFF_LINES = 40


def snapshot_path(loaded: LoadedScenario) -> Path:
    """Where the ``transcript: snapshot`` text of this scenario lives:
    ``__snapshots__/<scenario file stem>.transcript.txt`` next to the scenario file."""
    folder = Path.cwd() if loaded.where.path is None else loaded.where.path.parent
    return folder / "__snapshots__" / f"{loaded.stem}.transcript.txt"


def check_expectations(
    loaded: LoadedScenario,
    result: Execution,
    update_snapshots: bool,
    key: str = "expect",
) -> list[Failure]:
    """Check the ``expect:`` block (or, with ``key="always"``, the ``always:`` block)."""
    expect = getattr(loaded.scenario, key)
    where = loaded.where
    failures: list[Failure] = []
    if expect is None:
        return failures

    def fail(loc: tuple[str | int, ...], message: str, kind: str = "expectation") -> None:
        if loc and loc[0] == "expect":
            loc = (key, *loc[1:])
        failures.append(Failure(message, format_location(loc), where.line(loc), kind))

    outcome = result.outcome
    error = outcome.error
    if expect.error is not None:
        if error is None:
            fail(("expect", "error"), f"expected the run to fail with {expect.error!r}, it did not")
        elif expect.error not in f"{type(error).__name__}: {error}":
            fail(
                ("expect", "error"),
                f"expected an error containing {expect.error!r}, got "
                f"{type(error).__name__}: {error}",
            )
    elif error is not None:
        loc: tuple[str | int, ...] = (
            ("steps", outcome.error_step) if outcome.error_step is not None else ()
        )
        fail(loc, f"the run raised {type(error).__name__}: {error}", "error")

    if expect.iterations is not None and result.iterations != expect.iterations:
        fail(
            ("expect", "iterations"),
            f"expected {expect.iterations} iteration(s), got {result.iterations}",
        )
    if expect.stop_reason is not None and result.stop_reason != expect.stop_reason:
        fail(
            ("expect", "stop_reason"),
            f"expected stop reason {expect.stop_reason}, got {result.stop_reason}",
        )
    for agent, count in expect.calls.items():
        got = result.calls.get(agent, 0)
        if got != count:
            fail(
                ("expect", "calls", agent), f"expected {count} model call(s) of {agent}, got {got}"
            )
    for task_id, status in expect.tasks.items():
        got_status = result.tasks.get(task_id)
        if got_status != status:
            shown = "no such task" if got_status is None else got_status
            fail(("expect", "tasks", task_id), f"expected task {task_id} {status}, got {shown}")
    if expect.elapsed is not None:
        _check_elapsed(expect.elapsed, result.elapsed, fail)
    if expect.response is not None:
        text = result.response_text
        response = expect.response
        if text is None:
            fail(("expect", "response"), "expected a response, but no run returned one")
        else:
            if response.equals is not None and text != response.equals:
                fail(
                    ("expect", "response", "equals"),
                    f"expected the response {response.equals!r}, got {text!r}",
                )
            position = 0
            for index, part in enumerate(response.contains):
                found = text.find(part, position)
                if found < 0:
                    where_found = "at all" if part not in text else "after the previous item"
                    fail(
                        ("expect", "response", "contains", index),
                        f"expected the response to contain {part!r} ({where_found}); got {text!r}",
                    )
                    break
                position = found + len(part)
            for index, part in enumerate(response.not_contains):
                if part in text:
                    fail(
                        ("expect", "response", "not_contains", index),
                        f"expected the response not to contain {part!r}; got {text!r}",
                    )
    if expect.transcript == "snapshot":
        _check_snapshot(loaded, result, update_snapshots, fail)
    return failures


def _check_elapsed(expected: float | RangeSpec, elapsed: float, fail: Any) -> None:
    if isinstance(expected, RangeSpec):
        if expected.min is not None and elapsed < expected.min - TOLERANCE:
            fail(
                ("expect", "elapsed", "min"),
                f"expected at least {expected.min:g}s of virtual time, got {elapsed:g}s",
            )
        if expected.max is not None and elapsed > expected.max + TOLERANCE:
            fail(
                ("expect", "elapsed", "max"),
                f"expected at most {expected.max:g}s of virtual time, got {elapsed:g}s",
            )
    elif abs(elapsed - expected) > TOLERANCE:
        fail(("expect", "elapsed"), f"expected {expected:g}s of virtual time, got {elapsed:g}s")


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
    loaded: LoadedScenario, run: Execution, keys: Sequence[str], *, update_snapshots: bool = False
) -> list[Failure]:
    """Every failure of ``run``: the expectation blocks ``keys``, the scenario's ``ties:``,
    the invariants (unless a block turns them off) and unused script turns."""
    scenario = loaded.scenario
    where = loaded.where
    specs = [spec for spec in (getattr(scenario, key) for key in keys) if spec is not None]
    failures: list[Failure] = []
    for key in keys:
        for failure in check_expectations(loaded, run, update_snapshots, key):
            if failure.kind == "error" and any(f.kind == "error" for f in failures):
                continue  # an unexpected error is reported once, not once per block
            failures.append(failure)
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
        failures.extend(
            Failure(message, location="invariants", line=where.line(()), kind="invariant")
            for message in problems
        )
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
