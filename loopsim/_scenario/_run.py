"""Stage 4 of the scenario pipeline: run the host's steps on a fresh virtual clock.

:func:`execute` records every event and the transcript; what the run did is an
:class:`Execution`, which the check stage reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from .. import _trace
from .._clock import VirtualClock
from .._messages import (
    AgentResponse,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    Message,
)
from .._trace import Event, Trace
from .._trajectory import HostMark
from .._transcript import Recorder, Transcript
from .._usercode import is_cancellation, user_code_failure
from ._build import ModelOverride, World
from ._engines import check_engine
from ._schema import (
    AdvanceStep,
    ApprovalStep,
    Backend,
    Engine,
    ReleaseStep,
    RestartStep,
    RunStep,
)
from ._source import LoadedScenario

if TYPE_CHECKING:
    from .._background._ties import TieBreaker

__all__ = [
    "Execution",
    "Outcome",
    "Snapshot",
    "execute",
    "recorded_statuses",
    "response_text",
    "surfaced_text",
]


@dataclass
class Snapshot:
    """What held when one step with its own ``expect:`` had ended."""

    response: AgentResponse | None
    error: BaseException | None
    tasks: dict[int, str]
    calls: dict[str, int]
    elapsed: float
    #: how many events had been recorded when the step began, and when it ended
    first: int
    events: int


@dataclass
class Outcome:
    response: AgentResponse | None = None
    error: BaseException | None = None
    error_step: int | None = None
    tasks: dict[int, str] = field(default_factory=dict)
    #: the events recorded so far (the run stage reads task statuses from them)
    events: list[Event] = field(default_factory=list)
    #: step index -> what held when it ended (steps with their own ``expect:``)
    snapshots: dict[int, Snapshot] = field(default_factory=dict)
    #: (step index, what it did not do): steps that changed nothing
    warnings: list[tuple[int, str]] = field(default_factory=list)
    #: (step index, number of events before it began, number when it ended)
    spans: list[tuple[int, int, int]] = field(default_factory=list)
    #: each host step as it began (for trajectories: ``host:`` steps and approvals)
    hosts: list[HostMark] = field(default_factory=list)
    #: a BaseException (not an Exception) a host call raised: re-raised by the host
    #: itself once the calls are stopped, as if there were no task of its own
    escaped: BaseException | None = None


def recorded_statuses(events: Sequence[Event]) -> dict[int, str]:
    """The latest status each task was recorded with (``cleared`` included)."""
    statuses: dict[int, str] = {}
    for event in events:
        if event.kind == "task_status":
            statuses[int(event.data["task_id"])] = str(event.data["status"])
    return statuses


def _now() -> float:
    trace = _trace.active()
    return 0.0 if trace is None else trace.time()


class _Call:
    """One host call in flight: its step, input, and how it ended."""

    def __init__(self, index: int, message: Any, begin: int) -> None:
        self.index = index
        self.message = message
        self.begin = begin
        self.scope = anyio.CancelScope()
        self.finished = anyio.Event()
        self.interrupted = False
        self.ended_at: float | None = None
        self.failed = False

    async def run(self, world: World, session: Any, outcome: Outcome) -> None:
        try:
            with self.scope:
                self.failed = not await _run(world, session, self.message, outcome, self.index)
                self.ended_at = _now()
                if not self.interrupted:
                    outcome.spans.append((self.index, self.begin, len(outcome.events)))
                    _snapshot(world, outcome, self.index, self.begin)
        except BaseException as exc:
            if is_cancellation(exc, self.scope):
                raise
            self.failed = True
            outcome.escaped = exc  # not wrapped in a task group's exception group
        finally:
            self.finished.set()


def _snapshot(world: World, outcome: Outcome, index: int, begin: int) -> None:
    step = world.scenario.steps[index]
    if getattr(step, "expect", None) is None:
        return
    outcome.snapshots[index] = Snapshot(
        response=outcome.response,
        error=outcome.error if outcome.error_step == index else None,
        tasks=recorded_statuses(outcome.events),
        calls=world.calls(),
        elapsed=_now(),
        first=begin,
        events=len(outcome.events),
    )


_HOST_NAMES: dict[type, str] = {
    RunStep: "run",
    AdvanceStep: "advance",
    ApprovalStep: "approve",
    RestartStep: "restart",
    ReleaseStep: "release_session",
}


class _Host:
    """The host process: its session, the call in flight, the steps it takes."""

    def __init__(self, world: World, outcome: Outcome) -> None:
        self.world = world
        self.outcome = outcome
        self.session: Any = None
        self.inflight: _Call | None = None
        self.last_call: _Call | None = None
        self.group: Any = None

    def running_tasks(self) -> list[int]:
        statuses = recorded_statuses(self.outcome.events)
        return sorted(t for t, s in statuses.items() if s == "running")

    def warn(self, index: int, message: str) -> None:
        self.outcome.warnings.append((index, message))

    def start(self, index: int, message: Any, begin: int | None = None) -> None:
        call = _Call(index, message, self.begin if begin is None else begin)
        self.inflight = self.last_call = call
        self.group.start_soon(call.run, self.world, self.session, self.outcome)

    @property
    def begin(self) -> int:
        return len(self.outcome.events)

    async def settle(self) -> bool:
        """Wait for the call in flight; False when it failed (the steps stop there)."""
        call = self.inflight
        if call is None:
            return True
        await call.finished.wait()
        self.inflight = None
        return not call.failed

    def ended(self) -> bool:
        """Forget a call that has ended on its own; False when it failed."""
        call = self.inflight
        if call is not None and call.finished.is_set():
            self.inflight = None
            return not call.failed
        return True

    async def step(self, index: int, step: Any) -> bool:
        at = getattr(step, "at", None)
        if at is None:
            if not await self.settle():
                return False
        else:
            now = _now()
            if at > now:
                if not await self._wait_until(at):
                    return False
            elif isinstance(step, AdvanceStep):
                self.warn(
                    index,
                    f"advance until t={at:g}s changed nothing: the clock was already at t={now:g}s",
                )
            if not self.ended():
                return False
        begin = self.begin
        self.outcome.hosts.append(
            HostMark(begin, _now(), _HOST_NAMES[type(step)], getattr(step, "approve", None), index)
        )
        if isinstance(step, RunStep):
            self.start(index, step.run)
            return True
        if isinstance(step, ApprovalStep):
            message = _approval_answer(self.outcome.response, approved=step.approve)
            if not message.contents:
                self.warn(index, "no approval request was pending, so there was nothing to answer")
            self.start(index, message)
            return True
        if isinstance(step, AdvanceStep):
            if step.advance is not None:
                if step.advance == 0:
                    self.warn(index, "advance: 0 lets no virtual time pass")
                await anyio.sleep(step.advance)
        elif isinstance(step, RestartStep):
            await self.restart(index, step)
        elif isinstance(step, ReleaseStep):
            if not self.running_tasks():
                self.warn(
                    index,
                    f"release_session at t={_now():g}s found no background task running, "
                    "so there was nothing to release",
                )
            await self.world.release(self.session, cancel_running=step.cancel_running)
        self.outcome.spans.append((index, begin, self.begin))
        return True

    async def _wait_until(self, at: float) -> bool:
        """Sleep until the instant ``at``; False as soon as the call in flight fails."""
        call = self.inflight
        if call is not None:
            with anyio.move_on_after(at - _now()):
                await call.finished.wait()
            if call.finished.is_set() and call.failed:
                return False
        remaining = at - _now()
        if remaining > 0:
            await anyio.sleep(remaining)
        return True

    async def restart(self, index: int, step: RestartStep) -> None:
        world = self.world
        call = self.inflight
        running = self.running_tasks()
        kept = [s for s in recorded_statuses(self.outcome.events).values() if s != "cleared"]
        timed = step.at is not None
        if call is None and not running and (timed or (world.provider is not None and not kept)):
            ended = self.last_call.ended_at if self.last_call is not None else None
            after = "" if ended is None else f" (the last host call had returned at t={ended:g}s)"
            self.warn(
                index,
                f"the restart at t={_now():g}s found nothing running: no host call in flight "
                f"and no background task running, so nothing was lost{after}",
            )
        snapshot = world.snapshot(self.session)
        if step.at is None:
            _trace.emit("process_restart")
        else:
            _trace.emit("process_restart", at=step.at, interrupted=call is not None)
        if call is not None:
            # the host call dies with the process; the host makes it again afterwards
            call.interrupted = True
            call.scope.cancel()
            await call.finished.wait()
            self.inflight = None
        # the old process is gone: its child runs die with it
        await world.release(self.session, cancel_running=True)
        world.build()
        self.session = world.restore(snapshot)
        if call is not None:
            self.start(call.index, call.message, call.begin)


async def _drive(world: World, outcome: Outcome) -> None:
    world.build()
    host = _Host(world, outcome)
    host.session = world.create_session()
    try:
        async with anyio.create_task_group() as group:
            host.group = group
            for index, step in enumerate(world.scenario.steps):
                if not await host.step(index, step):
                    break
            await host.settle()
        if outcome.escaped is not None:
            raise outcome.escaped
        if world.provider is not None:
            tasks = world.task_statuses(host.session)
            cleared = {t: s for t, s in recorded_statuses(outcome.events).items() if s == "cleared"}
            outcome.tasks = dict(sorted({**cleared, **tasks}.items()))
    finally:
        # End of the host process: stop what still runs so nothing leaks.
        with anyio.CancelScope(shield=True):
            try:
                await world.release(host.session, cancel_running=True)
            finally:
                await world.close_models()


async def _run(world: World, session: Any, message: Any, outcome: Outcome, index: int) -> bool:
    try:
        outcome.response = await world.respond(message, session)
    except Exception as exc:  # noqa: BLE001 - reported (or expected) by the scenario
        where = world.loaded.where
        line = where.line(("steps", index))
        add_note = getattr(exc, "add_note", None)  # Python 3.11+
        if add_note is not None:
            add_note(
                f"loopsim: raised by step {index + 1} (steps[{index}]"
                f"{f', line {line}' if line else ''}) of {where.path or 'the scenario'}, "
                f"on the {world.engine} engine"
            )
        outcome.error = exc
        outcome.error_step = index
        return False
    return True


def _approval_answer(response: AgentResponse | None, *, approved: bool) -> Message:
    requests = [
        c
        for m in (response.messages if response is not None else ())
        for c in m.contents
        if isinstance(c, FunctionApprovalRequestContent)
    ]
    answers = [
        FunctionApprovalResponseContent(id=r.id, approved=approved, function_call=r.function_call)
        for r in requests
    ]
    return Message("user", list(answers))


class _Ties:
    """The tie breaker a scenario run installs: its ``ties:`` list first, then ``fallback``
    (hypothesis draws), else upstream's rule (the first requested of those finished, as
    agent_framework's wait tool reports it). Records every choice."""

    def __init__(self, listed: Sequence[int], fallback: TieBreaker | None) -> None:
        self.listed = list(listed)
        self.fallback = fallback
        self.chosen: list[int] = []
        self.problems: list[tuple[int, str]] = []

    def __call__(self, task_ids: Sequence[int]) -> int:
        position = len(self.chosen)
        if position < len(self.listed):
            index = self.listed[position]
            if index >= len(task_ids):
                self.problems.append(
                    (
                        position,
                        (
                            f"tie {position + 1} has {len(task_ids)} tasks finishing together "
                            f"(ids {', '.join(map(str, task_ids))}), so index {index} is out of "
                            "range; the first was taken"
                        ),
                    )
                )
                index = 0
        elif self.fallback is not None:
            index = self.fallback(task_ids)
        else:
            index = 0
        self.chosen.append(index)
        return index


@dataclass
class Execution:
    """What one run of a scenario did: the built world, the outcome, the recorded events."""

    loaded: LoadedScenario
    seed: int
    backend: Backend
    engine: Engine
    world: World
    outcome: Outcome
    ties: _Ties
    elapsed: float
    events: list[Event]
    transcript: Transcript | None

    @property
    def _last_stop(self) -> Event | None:
        stops = [e for e in self.events if e.kind == "loop_stop"]
        return stops[-1] if stops else None

    @property
    def stop_reason(self) -> str | None:
        stop = self._last_stop
        return None if stop is None else stop.data.get("reason")

    @property
    def iterations(self) -> int | None:
        stop = self._last_stop
        return None if stop is None else stop.data.get("iterations")

    @property
    def response_text(self) -> str | None:
        return response_text(self.outcome.response)

    @property
    def surfaced_text(self) -> str | None:
        return surfaced_text(self.outcome.response)

    @property
    def calls(self) -> dict[str, int]:
        return self.world.calls()

    @property
    def tasks(self) -> dict[int, str]:
        return self.outcome.tasks


def response_text(response: AgentResponse | None) -> str | None:
    """The response's own text: its messages' texts joined by newlines, without the
    messages the loop injected (its feedback prompts, written as the user)."""
    if response is None:
        return None
    return "\n".join(m.text for m in response.messages if m.role != "user" and m.text)


def surfaced_text(response: AgentResponse | None) -> str | None:
    """Every message the host was shown, the loop's injected ones too, joined by newlines."""
    if response is None:
        return None
    return "\n".join(m.text for m in response.messages if m.text)


def _world(loaded: LoadedScenario, engine: Engine, models: ModelOverride | None) -> World:
    if engine == "agent_framework":
        from ._build_af import AgentFrameworkWorld  # noqa: PLC0415 - the optional extra

        return AgentFrameworkWorld(loaded, models)
    return World(loaded, models)


def execute(
    loaded: LoadedScenario,
    *,
    seed: int | None = None,
    backend: Backend | None = None,
    tie_breaker: TieBreaker | None = None,
    models: ModelOverride | None = None,
    engine: Engine | None = None,
    record: bool = True,
) -> Execution:
    """Build the scenario's world and run its steps on a fresh virtual clock, recording.

    ``engine`` overrides the file's ``engine:``; a feature that engine cannot build is a
    located :class:`~loopsim.ScenarioError` (raised, not a failed run). ``record=False``
    keeps the events but builds no transcript (``Execution.transcript`` is None): for runs
    whose transcript nothing reads.
    """
    from .._background._ties import TIE_BREAKER  # noqa: PLC0415 - keep imports light

    scenario = loaded.scenario
    engine = engine or scenario.engine
    if engine != scenario.engine:
        check_engine(scenario, loaded.where, engine)
    seed = scenario.seed if seed is None else seed
    backend = backend or scenario.backend
    trace = Trace(seed=seed)
    ties = _Ties(scenario.ties, tie_breaker)
    trace.resources[TIE_BREAKER] = ties
    recorder = (
        Recorder(trace, scenario=loaded.name, seed=seed, backend=backend, engine=engine)
        if record
        else None
    )
    outcome = Outcome()
    events = outcome.events
    unsubscribe = trace.subscribe(events.append)
    world = _world(loaded, engine, models)
    limits = scenario.limits
    clock = VirtualClock(
        seed=seed,
        wall_clock=scenario.wall_clock,
        virtual_time_limit=limits.virtual_time,
        real_time_limit=limits.real_time,
        max_steps_per_instant=limits.steps_per_instant,
        max_model_calls=limits.model_calls,
    )
    try:
        clock.run(_drive, world, outcome, backend=backend, trace=trace)
    except BaseException as exc:  # noqa: BLE001 - a failed scenario; user code's BaseExceptions too
        outcome.error = user_code_failure(exc, virtual_time=clock.elapsed, seed=seed)
    finally:
        unsubscribe()
        if recorder is not None:
            recorder.close()
    return Execution(
        loaded=loaded,
        seed=seed,
        backend=backend,
        engine=engine,
        world=world,
        outcome=outcome,
        ties=ties,
        elapsed=clock.elapsed,
        events=events,
        transcript=None if recorder is None else recorder.transcript,
    )
