"""Report entries from scenario results, and their JSON form (to cross pytest-xdist)."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._transcript import Transcript
from ._html import ReportEntry

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._scenario import ScenarioResult

__all__ = ["entry_from_dict", "entry_from_result", "entry_to_dict"]

_SNAPSHOT_FIELD = "expect.transcript"  # where a snapshot expectation fails


def _divergence(result: ScenarioResult) -> str | None:
    """The first differing lines of a failed snapshot, or a replay's mismatch."""
    for failure in result.failures:
        if failure.location != _SNAPSHOT_FIELD:
            continue
        lines = [line.strip() for line in failure.message.splitlines()]
        changed = [
            n
            for n, line in enumerate(lines)
            if line[:1] in ("+", "-") and not line.startswith(("+++", "---"))
        ]
        if changed:
            first = changed[0]
            return "\n".join(lines[max(first - 2, 0) : first + 4])
    error = result.error
    if error is not None and type(error).__name__ == "ReplayMismatchError":
        return str(error)
    return None


def _relative_to(root: Path) -> Callable[[str], str]:
    """Drop ``root/`` from the paths in a text (a report is read on other machines)."""
    prefixes = sorted({f"{root}{os.sep}", f"{root.resolve()}{os.sep}"}, key=len, reverse=True)

    def relative(text: str) -> str:
        for prefix in prefixes:
            text = text.replace(prefix, "")
        return text

    return relative


def entry_from_result(
    result: ScenarioResult,
    *,
    description: str = "",
    real_time: float | None = None,
    root: Path | None = None,
) -> ReportEntry:
    """A report entry for a scenario run: its verdict, facts, failures and transcript.

    Paths in the failures are shown relative to ``root`` (pytest's rootdir; the working
    folder when None).
    """
    relative = _relative_to(Path.cwd() if root is None else root)
    failures = [relative(f.render(result.path)) for f in result.failures]
    # an error the scenario expected (expect: error) is its behaviour, not a failure
    if result.error is not None and not failures and not result.passed:
        failures.append(relative(f"the run raised {type(result.error).__name__}: {result.error}"))
    divergence = _divergence(result)
    return ReportEntry(
        name=result.name,
        result="passed" if result.passed else "failed",
        transcript=result.transcript,
        description=description,
        engine=str(getattr(result, "engine", "loopsim")),
        iterations=result.iterations,
        stop_reason=result.stop_reason,
        virtual_time=result.elapsed,
        real_time=real_time,
        seed=result.seed,
        backend=result.backend,
        failures=failures,
        divergence=None if divergence is None else relative(divergence),
    )


def entry_to_dict(entry: ReportEntry) -> dict[str, Any]:
    """JSON data for ``entry`` (the transcript in its file form)."""
    data = asdict(entry)
    data["transcript"] = None if entry.transcript is None else entry.transcript.to_dict()
    return data


def entry_from_dict(data: dict[str, Any]) -> ReportEntry:
    """The entry :func:`entry_to_dict` described."""
    fields = dict(data)
    raw = fields.pop("transcript", None)
    transcript = None if raw is None else Transcript.from_dict(raw)
    return ReportEntry(transcript=transcript, **fields)
