"""Stage 6 of the scenario pipeline: the result of a scenario run, and the driver.

``run_scenario(loaded)`` → :class:`ScenarioResult` (passed/failed with reasons and the
line of each failing expectation, stop reason, iterations, virtual elapsed time, the
recorded events and the transcript). The eight invariants of design.md are checked on
every run and reported like failed expectations.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ScenarioError
from .._files import file_in
from .._trace import Event
from .._trajectory import HostMark
from .._transcript import Transcript, render_text, write_transcript
from ._build import ModelOverride
from ._check import Failure, check_run, warnings_of, weak_of
from ._compare import compare_engines
from ._model import replay_cassette
from ._run import execute
from ._schema import ENGINES, Backend, Engine
from ._source import LoadedScenario, format_location
from ._tool_errors import ToolErrorInfo, tool_errors_of
from ._weak import STEP_WORDS

if TYPE_CHECKING:
    from .._background._ties import TieBreaker

__all__ = ["EngineChoice", "ScenarioResult", "run_scenario"]

#: An engine, or ``both`` (run on each, compare).
EngineChoice = Literal["loopsim", "agent_framework", "both"]


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
    #: the last response's own text: its messages joined by newlines, without the
    #: messages the loop injected (its feedback prompts)
    response_text: str | None = None
    calls: dict[str, int] = field(default_factory=dict)
    #: final status per task id (``cleared`` included)
    tasks: dict[int, str] = field(default_factory=dict)
    error: BaseException | None = None
    transcript: Transcript | None = None
    #: the index chosen at each same-instant tie of background tasks, in order
    ties: list[int] = field(default_factory=list)
    #: for a ``vary:`` scenario's failing draw: path → drawn value (after shrinking)
    draw: dict[str, Any] | None = None
    #: where the concrete reproducer scenario of a failing draw was written
    reproducer: Path | None = None
    #: steps that changed nothing (a restart that found nothing running, ...); with
    #: ``strict: true`` they are failures instead
    warnings: list[Failure] = field(default_factory=list)
    #: what the expectations leave unchecked (tools called, an answer given, that nothing
    #: looks at); with ``strict: true`` they are failures instead
    weak: list[Failure] = field(default_factory=list)
    #: every exception a tool raised (the agent's function layer answered the model
    #: with an error result and went on): tool, agent, arguments, class name, text, time
    tool_errors: list[ToolErrorInfo] = field(default_factory=list)
    #: agents that reached their tool-round limit: (agent, limit, virtual time)
    tool_round_limits: list[tuple[str, int, float]] = field(default_factory=list)
    #: what ran it: ``loopsim``, ``agent_framework``, or ``both`` (then :attr:`other` holds
    #: the agent_framework run, and this result's fields describe the loopsim run)
    engine: str = "loopsim"
    other: ScenarioResult | None = None
    #: ``both`` only: why the engines were not compared (one of them cannot build it)
    not_compared: str | None = None
    #: ``both`` only: the divergence the file declares as known (not a failure)
    divergence: str | None = None
    #: why a transcript or reproducer could not be written (shown in the report)
    write_problem: str | None = None
    #: the host steps as they began (``assert_trajectory`` reads them for ``host:`` steps
    #: and approvals)
    host_steps: list[HostMark] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    def write_transcript(
        self, folder: Path, *, name: str | None = None, durable: bool = True
    ) -> Path | None:
        """Write ``<name>.transcript.json`` into ``folder`` (None when unavailable);
        ``name`` replaces the scenario's name in the file name (two scenarios of one
        name in a run); ``durable`` as for :func:`~loopsim.write_transcript`."""
        if self.transcript is None:
            return None
        return write_transcript(  # (write_atomic makes the folder when it is missing)
            file_in(folder, self.name if name is None else name, ".transcript.json"),
            self.transcript,
            durable=durable,
        )

    def tail(self, count: int) -> list[str]:
        """The last ``count`` events as text lines (absolute virtual times: a tail has no
        earlier line to count from)."""
        if self.transcript is not None:
            lines = render_text(self.transcript, max_text=100, times="absolute").splitlines()
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
        lines.extend(f"  warning: {w.render(self.path)}" for w in self.warnings)
        lines.extend(
            f"  note: agent {agent!r} reached its tool-round limit at t={time:g}s "
            f"(function_invocation_configuration.max_iterations = {limit}): its last "
            "request offered no tools"
            for agent, limit, time in self.tool_round_limits
        )
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
        if self.write_problem is not None:
            lines.append(self.write_problem)
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
    engine: EngineChoice | None = None,
    compare: bool = True,
    check_steps_matter: bool = False,
    record: bool = True,
) -> ScenarioResult:
    """Run a loaded scenario on a fresh virtual clock and check its expectations.

    Args:
        loaded: from :func:`~loopsim._scenario.load_scenario`.
        seed, backend: override the scenario's own.
        update_snapshots: (re)write the transcript snapshot instead of comparing.
        blocks: which expectation blocks to check (default ``expect`` and, when given,
            ``always``; a ``vary:`` draw checks ``always`` only).
        tie_breaker: decides same-instant ties of background tasks once the scenario's
            ``ties:`` list is used up (default: upstream's rule, the first requested of
            the tasks finished together).
        models: ``models(agent_name, scenario_client)`` returns the chat client that
            agent talks to instead, e.g. a :class:`~loopsim.ReplayChatClient` to feed a
            recording back (``loopsim replay``) or a recording wrapper. Without it, a
            scenario with a real model (``model:``) replays its cassette
            (``cassettes/<name>.transcript.json`` next to the file) and never calls the
            model; a missing cassette raises ``CassetteMissingError``.
        engine: ``loopsim`` or ``agent_framework`` overrides the file's ``engine:``;
            ``both`` runs the scenario on each engine, checks the expectations on each,
            then compares the two transcripts event by event (model-facing sentences
            normalized through ``WORDING``) and reports the first divergence.
        compare: with ``both``, compare the transcripts (``vary:`` draws check each
            engine's ``always:`` but compare only the file as written).
        check_steps_matter: when the run passes, run it again once without each
            ``advance``, ``approve``, ``restart`` and ``release_session`` step; a step
            whose removal still passes is weak. ``loopsim run`` and the pytest plugin
            ask for it; a ``strict: true`` file is always checked (such a step fails it).
            Files without such steps pay nothing. Only with ``expect`` among
            ``blocks``: a ``vary:`` draw (``blocks=("always",)``) is never run again.
        record: False keeps the events but builds no transcript (``result.transcript``
            is None; a ``transcript: snapshot`` check then fails): ``vary:`` draws, whose
            transcripts only a failing draw needs, and that one is run again.
    """
    keys = tuple(blocks) if blocks is not None else ("expect", "always")
    if engine == "both":

        def half(one: Engine) -> ScenarioResult | ScenarioError:
            try:
                return run_scenario(
                    loaded,
                    seed=seed,
                    backend=backend,
                    update_snapshots=update_snapshots and one == loaded.scenario.engine,
                    blocks=blocks,
                    tie_breaker=tie_breaker,
                    models=models,
                    engine=one,
                    check_steps_matter=check_steps_matter and one == "loopsim",  # the base of _both
                    record=record,
                )
            except ScenarioError as exc:  # that engine cannot build it: said, not hidden
                return exc

        return _both(loaded, {one: half(one) for one in ENGINES}, compare=compare)
    cassette = replay_cassette(loaded) if models is None else None
    if cassette is not None:
        models = cassette.client
    run = execute(
        loaded,
        seed=seed,
        backend=backend,
        tie_breaker=tie_breaker,
        models=models,
        engine=engine,
        record=record,
    )
    result = ScenarioResult(
        name=loaded.name,
        path=loaded.where.path,
        seed=run.seed,
        backend=run.backend,
        failures=check_run(
            loaded,
            run,
            keys,
            update_snapshots=update_snapshots,
            # strict files only (check_run), and only where `expect:` is checked: a step
            # matters to the file's expectations, which a `vary:` draw does not check
            steps_unchecked=steps_that_do_not_matter if "expect" in keys else None,
        ),
        warnings=[] if loaded.scenario.strict else warnings_of(loaded, run),
        weak=[] if loaded.scenario.strict else weak_of(loaded, run),
        tool_errors=tool_errors_of(run.events),
        tool_round_limits=[
            (str(e.data.get("agent")), int(e.data.get("max_iterations", 0)), e.time)
            for e in run.events
            if e.kind == "tool_round_limit"
        ],
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
        engine=run.engine,
        host_steps=list(run.outcome.hosts),
    )
    if cassette is not None and result.passed:
        cassette.finish()  # every recorded turn was answered (ReplayMismatchError if not)
    if check_steps_matter and result.passed and not loaded.scenario.strict:
        result.weak.extend(_unchecked_steps(loaded, {i for i, _ in run.outcome.warnings}))
    return result


def _unchecked_steps(loaded: LoadedScenario, said: set[int]) -> list[Failure]:
    """The steps nothing checks, as weak expectations located at each step (a step that
    changed nothing at all is a warning already, and not said twice)."""
    where = loaded.where
    return [
        Failure(
            message, format_location(("steps", index)), where.line(("steps", index)), kind="weak"
        )
        for index, message in steps_that_do_not_matter(loaded, skip=said)
    ]


def _both(
    loaded: LoadedScenario,
    halves: dict[Engine, ScenarioResult | ScenarioError],
    *,
    compare: bool = True,
) -> ScenarioResult:
    """One result for ``--engine both``: each engine's failures, then the first divergence.

    An engine that cannot build the scenario leaves the comparison undone: the result says
    so in :attr:`ScenarioResult.not_compared` (the other engine's run is still checked).
    A divergence the file declares as ``known_divergence`` is kept in
    :attr:`ScenarioResult.divergence` instead of failing; a declared one that did not
    happen fails (the declaration is stale).
    """
    built = {name: half for name, half in halves.items() if isinstance(half, ScenarioResult)}
    failures: list[Failure] = []
    for name, half in built.items():
        failures.extend(_tagged(f, name) for f in half.failures)
    base = built.get("loopsim") or built.get("agent_framework")
    if base is None:  # neither engine can build it: the loopsim error is the one to fix
        raise halves["loopsim"]  # type: ignore[misc] # a ScenarioError here
    unbuilt = [
        f"{half.problem} (line {half.line})" if half.line else half.problem
        for half in halves.values()
        if isinstance(half, ScenarioError)
    ]
    result = replace(base, failures=failures, engine="both", other=built.get("agent_framework"))
    if unbuilt:
        result.not_compared = "; ".join(unbuilt)
        return result
    if not compare:
        return result
    mine, theirs = built["loopsim"], built["agent_framework"]
    known = loaded.scenario.known_divergence
    divergence = None
    if mine.transcript is not None and theirs.transcript is not None:
        divergence = compare_engines(mine.transcript, theirs.transcript)
    line = loaded.where.line(("known_divergence",) if known else ())
    if divergence is not None and known is None:
        failures.append(
            Failure(
                f"the engines disagree (normalized through WORDING): {divergence}",
                line=line,
                kind="divergence",
            )
        )
    elif divergence is not None:
        result.divergence = f"known divergence ({known}): {divergence}"
    elif known is not None:
        failures.append(
            Failure(
                "the engines agree, so this known_divergence is stale: remove it (and its "
                "entry in docs/engines.md)",
                location="known_divergence",
                line=line,
                kind="divergence",
            )
        )
    return result


def _tagged(failure: Failure, engine: str) -> Failure:
    return replace(failure, message=f"[engine {engine}] {failure.message}")


def steps_that_do_not_matter(
    loaded: LoadedScenario, *, skip: Collection[int] = ()
) -> list[tuple[int, str]]:
    """The ``advance``, ``approve``, ``restart`` and ``release_session`` steps whose
    removal leaves every expectation passing: ``(step index, warning)``.

    Found with the product's own machinery: the scenario is run once per such step with
    that step removed (so it costs one run per step; only files with such steps pay).
    The steps in ``skip`` are not tried (the callers say those steps another way: each
    changed nothing at all, a warning already). Each run without a step is checked as
    :func:`run_scenario` checks it, for its verdict only (:func:`_passes`).
    """
    scenario = loaded.scenario
    found: list[tuple[int, str]] = []
    for index, step in enumerate(scenario.steps):
        word = STEP_WORDS.get(type(step).__name__)
        if word is None or index in skip:
            continue
        steps = [s for n, s in enumerate(scenario.steps) if n != index]
        dropped = replace(loaded, scenario=scenario.model_copy(update={"steps": steps}))
        try:
            passed = _passes(dropped)
        except Exception:  # noqa: BLE001 - a run that cannot go without the step: it matters
            passed = False
        if passed:
            message = (
                f"nothing checks what this {word} changes: every expectation still passes "
                "with the step removed; expect what it changes (a task status, a trajectory "
                "step, the response or elapsed time)"
            )
            found.append((index, message))
    return found


def _passes(loaded: LoadedScenario) -> bool:
    """``run_scenario(loaded).passed``, without what only a report reads: the warnings,
    weak expectations and tool errors (none of them fails a plain file, and a strict one
    checks its own in ``check_run``), and the transcript unless a snapshot compares it."""
    scenario = loaded.scenario
    snapshot = any(
        block is not None and block.transcript is not None
        for block in (scenario.expect, scenario.always)
    )
    cassette = replay_cassette(loaded)
    run = execute(loaded, models=None if cassette is None else cassette.client, record=snapshot)
    if check_run(loaded, run, ("expect", "always"), steps_unchecked=steps_that_do_not_matter):
        return False
    if cassette is not None:
        cassette.finish()  # every recorded turn was answered (ReplayMismatchError if not)
    return True
