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
from .._transcript import Recorder, Transcript
from ._build import ModelOverride, World
from ._schema import (
    AdvanceStep,
    ApprovalStep,
    Backend,
    ReleaseStep,
    RestartStep,
    RunStep,
)
from ._source import LoadedScenario

if TYPE_CHECKING:
    from .._background._ties import TieBreaker

__all__ = ["Execution", "Outcome", "execute"]


@dataclass
class Outcome:
    response: AgentResponse | None = None
    error: BaseException | None = None
    error_step: int | None = None
    tasks: dict[int, str] = field(default_factory=dict)


async def _drive(world: World, outcome: Outcome) -> None:
    world.build()
    top = world.top
    scenario = world.scenario
    session = top.create_session()
    try:
        for index, step in enumerate(scenario.steps):
            if isinstance(step, RunStep):
                if not await _run(world, session, step.run, outcome, index):
                    break
            elif isinstance(step, AdvanceStep):
                await anyio.sleep(step.advance)
            elif isinstance(step, ApprovalStep):
                message = _approval_answer(outcome.response, approved=step.approve)
                if not await _run(world, session, message, outcome, index):
                    break
            elif isinstance(step, RestartStep):
                snapshot = world.top.serialize_session(session)
                _trace.emit("process_restart")
                if world.provider is not None:
                    # the old process is gone: its child runs die with it
                    await world.provider.release_session(session, cancel_running=True)
                world.build()
                session = world.top.deserialize_session(snapshot)
            elif isinstance(step, ReleaseStep):
                await world.provider.release_session(session, cancel_running=step.cancel_running)
        if world.provider is not None:
            outcome.tasks = {t.task_id: t.status.value for t in world.provider.tasks(session)}
    finally:
        if world.provider is not None:
            # End of the host process: stop what still runs so nothing leaks.
            with anyio.CancelScope(shield=True):
                await world.provider.release_session(session, cancel_running=True)


async def _run(world: World, session: Any, message: Any, outcome: Outcome, index: int) -> bool:
    try:
        if world.scenario.streaming:
            stream = world.top.run_stream(message, session=session)
            async for _ in stream:
                pass
            outcome.response = await stream.get_final_response()
        else:
            outcome.response = await world.top.run(message, session=session)
    except Exception as exc:  # noqa: BLE001 - reported (or expected) by the scenario
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
    (hypothesis draws) or the simulation's seeded rng. Records every choice."""

    def __init__(self, listed: Sequence[int], trace: Trace, fallback: TieBreaker | None) -> None:
        self.listed = list(listed)
        self.trace = trace
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
            index = self.trace.rng.randrange(len(task_ids))
        self.chosen.append(index)
        return index


@dataclass
class Execution:
    """What one run of a scenario did: the built world, the outcome, the recorded events."""

    loaded: LoadedScenario
    seed: int
    backend: Backend
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
        response = self.outcome.response
        return None if response is None else response.text

    @property
    def calls(self) -> dict[str, int]:
        return self.world.calls()

    @property
    def tasks(self) -> dict[int, str]:
        return self.outcome.tasks


def execute(
    loaded: LoadedScenario,
    *,
    seed: int | None = None,
    backend: Backend | None = None,
    tie_breaker: TieBreaker | None = None,
    models: ModelOverride | None = None,
) -> Execution:
    """Build the scenario's world and run its steps on a fresh virtual clock, recording."""
    from .._background._ties import TIE_BREAKER  # noqa: PLC0415 - keep imports light

    scenario = loaded.scenario
    seed = scenario.seed if seed is None else seed
    backend = backend or scenario.backend
    trace = Trace(seed=seed)
    ties = _Ties(scenario.ties, trace, tie_breaker)
    trace.resources[TIE_BREAKER] = ties
    recorder = Recorder(trace, scenario=loaded.name, seed=seed, backend=backend)
    events: list[Event] = []
    unsubscribe = trace.subscribe(events.append)
    world = World(loaded, models)
    outcome = Outcome()
    clock = VirtualClock(seed=seed, wall_clock=scenario.wall_clock)
    try:
        clock.run(_drive, world, outcome, backend=backend, trace=trace)
    except Exception as exc:  # noqa: BLE001 - a simulation error is a failed scenario
        outcome.error = exc
    finally:
        unsubscribe()
        recorder.close()
    return Execution(
        loaded=loaded,
        seed=seed,
        backend=backend,
        world=world,
        outcome=outcome,
        ties=ties,
        elapsed=clock.elapsed,
        events=events,
        transcript=recorder.transcript,
    )
