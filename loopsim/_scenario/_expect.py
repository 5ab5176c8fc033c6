"""Check a scenario run's ``expect:`` block; each failure names the line it came from."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._files import write_atomic
from ._loader import LoadedScenario, format_location
from ._schema import RangeSpec

if TYPE_CHECKING:
    from ._runner import Failure, ScenarioResult, _Outcome

__all__ = ["check_expectations", "snapshot_path"]

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
    result: ScenarioResult,
    outcome: _Outcome,
    update_snapshots: bool,
    key: str = "expect",
) -> list[Failure]:
    """Check the ``expect:`` block (or, with ``key="always"``, the ``always:`` block)."""
    from ._runner import Failure  # noqa: PLC0415 - circular at import time

    expect = getattr(loaded.scenario, key)
    where = loaded.where
    failures: list[Failure] = []
    if expect is None:
        return failures

    def fail(loc: tuple[str | int, ...], message: str, kind: str = "expectation") -> None:
        if loc and loc[0] == "expect":
            loc = (key, *loc[1:])
        failures.append(Failure(message, format_location(loc), where.line(loc), kind))

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


def _check_snapshot(
    loaded: LoadedScenario, result: ScenarioResult, update: bool, fail: Any
) -> None:
    if result.transcript is None:
        fail(
            ("expect", "transcript"), "no transcript was recorded (the transcript layer is missing)"
        )
        return
    from .._transcript import render_text  # noqa: PLC0415

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
