"""Stage 6 of the scenario pipeline: the result of a scenario run, and the driver.

``run_scenario(loaded)`` → :class:`ScenarioResult` (passed/failed with reasons and the
line of each failing expectation, stop reason, iterations, virtual elapsed time, the
recorded events and the transcript). The eight invariants of design.md are checked on
every run and reported like failed expectations.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._trace import Event
from .._transcript import Transcript, render_text, write_transcript
from ._build import ModelOverride
from ._check import Failure, check_run
from ._run import execute
from ._schema import Backend
from ._source import LoadedScenario

if TYPE_CHECKING:
    from .._background._ties import TieBreaker

__all__ = ["ScenarioResult", "run_scenario"]


@dataclass
class ScenarioResult:
    """What a scenario run did and whether every expectation (and invariant) held."""

    name: str
    path: Path | None
    seed: int
    backend: Backend
    failures: list[Failure] = field(default_factory=list)
    stop_reason: str | None = None
    iterations: int | None = None
    elapsed: float = 0.0
    events: list[Event] = field(default_factory=list)
    response_text: str | None = None
    calls: dict[str, int] = field(default_factory=dict)
    tasks: dict[int, str] = field(default_factory=dict)
    error: BaseException | None = None
    transcript: Transcript | None = None
    #: the index chosen at each same-instant tie of background tasks, in order
    ties: list[int] = field(default_factory=list)
    #: for a ``vary:`` scenario's failing draw: path → drawn value (after shrinking)
    draw: dict[str, Any] | None = None
    #: where the concrete reproducer scenario of a failing draw was written
    reproducer: Path | None = None

    @property
    def passed(self) -> bool:
        return not self.failures

    def write_transcript(self, folder: Path) -> Path | None:
        """Write ``<name>.transcript.json`` into ``folder`` (None when unavailable)."""
        if self.transcript is None:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        return write_transcript(folder / f"{self.name}.transcript.json", self.transcript)

    def tail(self, count: int) -> list[str]:
        """The last ``count`` events as text lines."""
        if self.transcript is not None:
            lines = render_text(self.transcript, max_text=100).splitlines()
            return lines[-count:]
        return [f"t={e.time:g} {e.kind} {_short(e.data)}" for e in self.events[-count:]]

    def report(self, *, tail: int = 12, transcript_path: Path | None = None) -> str:
        """A readable failure report: each failure with file:line, seed, transcript tail."""
        status = "passed" if self.passed else f"failed ({len(self.failures)} problem(s))"
        lines = [
            (
                f"scenario {self.name!r} {status} — seed {self.seed}, backend {self.backend}, "
                f"virtual time {self.elapsed:g}s, stop reason {self.stop_reason}, "
                f"iterations {self.iterations}"
            ),
        ]
        if self.draw is not None:
            lines[0] += " — a draw of its `vary:` block"
        lines.extend(f"  {f.render(self.path)}" for f in self.failures)
        if self.error is not None:
            lines.append(f"  the run raised {type(self.error).__name__}: {self.error}")
        if self.draw is not None:
            lines.append("shrunk draw:")
            lines.extend(f"  {path}: {json.dumps(value)}" for path, value in self.draw.items())
            if self.ties:
                lines.append(f"  ties: {json.dumps(self.ties)}")
        if tail:
            lines.append(f"last {tail} events:")
            lines.extend(f"  {line}" for line in self.tail(tail))
        if transcript_path is not None:
            lines.append(f"transcript: {transcript_path}")
        if self.reproducer is not None:
            lines.append(f"reproducer (the draw as a concrete scenario): {self.reproducer}")
            lines.append(f"reproduce: loopsim run {self.reproducer}")
        else:
            lines.append(
                f"reproduce: loopsim run {self.path or self.name} --loopsim-seed={self.seed} "
                f"--loopsim-backend={self.backend}"
            )
        return "\n".join(lines)


def _short(data: dict[str, Any]) -> str:
    parts = []
    for key, value in data.items():
        if key in ("messages", "session"):
            continue
        text = str(value)
        parts.append(f"{key}={text[:40]}")
    return " ".join(parts)


def run_scenario(
    loaded: LoadedScenario,
    *,
    seed: int | None = None,
    backend: Backend | None = None,
    update_snapshots: bool = False,
    blocks: Sequence[str] | None = None,
    tie_breaker: TieBreaker | None = None,
    models: ModelOverride | None = None,
) -> ScenarioResult:
    """Run a loaded scenario on a fresh virtual clock and check its expectations.

    Args:
        loaded: from :func:`~loopsim._scenario.load_scenario`.
        seed, backend: override the scenario's own.
        update_snapshots: (re)write the transcript snapshot instead of comparing.
        blocks: which expectation blocks to check (default ``expect`` and, when given,
            ``always``; a ``vary:`` draw checks ``always`` only).
        tie_breaker: decides same-instant ties of background tasks once the scenario's
            ``ties:`` list is used up (default: the simulation's seeded rng).
        models: ``models(agent_name, scenario_client)`` returns the chat client that
            agent talks to instead, e.g. a :class:`~loopsim.ReplayChatClient` to feed a
            recording back (``loopsim replay``) or a recording wrapper.
    """
    keys = tuple(blocks) if blocks is not None else ("expect", "always")
    run = execute(loaded, seed=seed, backend=backend, tie_breaker=tie_breaker, models=models)
    return ScenarioResult(
        name=loaded.name,
        path=loaded.where.path,
        seed=run.seed,
        backend=run.backend,
        failures=check_run(loaded, run, keys, update_snapshots=update_snapshots),
        stop_reason=run.stop_reason,
        iterations=run.iterations,
        elapsed=run.elapsed,
        events=run.events,
        response_text=run.response_text,
        calls=run.calls,
        tasks=run.tasks,
        error=run.outcome.error,
        transcript=run.transcript,
        ties=list(run.ties.chosen),
    )
