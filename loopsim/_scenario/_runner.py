"""Build a scenario's agents, run its steps on the virtual clock and check what happened.

``run_scenario(loaded)`` → :class:`ScenarioResult` (passed/failed with reasons and the
line of each failing expectation, stop reason, iterations, virtual elapsed time, the
recorded events and the transcript). The eight invariants of design.md are checked on
every run and reported like failed expectations.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .. import _trace
from .._agents import Agent, FunctionTool
from .._clients import ChatClient, ReplayChatClient, ScriptedChatClient, Turn
from .._clock import VirtualClock
from .._errors import SimulationError
from .._messages import (
    AgentResponse,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    Message,
    Usage,
)
from .._trace import Event, Trace
from .._transcript import Recorder, Transcript, render_text, write_transcript
from ._loader import LoadedScenario, format_location
from ._policies import coordinator_client, echo_client
from ._schema import (
    AdvanceStep,
    AgentSpec,
    AIJudgeSpec,
    ApprovalStep,
    Backend,
    BackgroundTaskCompletionSpec,
    CompletionMarkerSpec,
    CoordinatorPolicy,
    CustomEvaluatorSpec,
    DelegateSpec,
    EchoPolicy,
    ReleaseStep,
    RestartStep,
    RunStep,
    Scenario,
    ToolSpec,
    TurnSpec,
)

if TYPE_CHECKING:
    from .._background._ties import TieBreaker

__all__ = ["Failure", "ModelOverride", "ScenarioResult", "ScriptedFailure", "run_scenario"]

#: ``models(agent_name, scenario_client) -> client``: what each agent's model really is.
ModelOverride = Callable[[str, ChatClient], ChatClient]


class ScriptedFailure(Exception):  # noqa: N818 - it is what the script says: a failure
    """The error a scripted ``failure:`` turn (or a tool's ``error:``) raises."""


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


# -- building -----------------------------------------------------------------------------------


def _usage(turn: TurnSpec) -> Usage | None:
    if turn.usage is None:
        return None
    return Usage(**turn.usage.model_dump())


def _call_id(agent: str, turn: int, index: int) -> str:
    return f"{agent}-t{turn}-c{index}"


def _script(name: str, agent: AgentSpec) -> list[Turn]:
    turns: list[Turn] = []
    for number, turn in enumerate(agent.script or (), start=1):
        item: Any
        if turn.reply is not None:
            item = turn.reply
        elif turn.failure is not None:
            item = ScriptedFailure(turn.failure)
        else:
            calls = [
                FunctionCallContent(
                    call_id=call.call_id or _call_id(name, number, index),
                    name=call.name,
                    arguments=dict(call.arguments),
                )
                for index, call in enumerate(turn.calls, start=1)
            ]
            item = Message("assistant", list(calls))
        turns.append(Turn(item, delay=turn.delay, usage=_usage(turn)))
    return turns


def _tool(name: str, spec: ToolSpec, argument_names: set[str]) -> FunctionTool:
    def fn(**_: Any) -> Any:
        if spec.error is not None:
            raise ScriptedFailure(spec.error)
        return spec.result

    parameters = [
        inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=None)
        for arg in sorted(set(spec.parameters) | argument_names)
    ]
    fn.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined] # declared arguments
    fn.__name__ = name
    return FunctionTool(
        fn,
        name=name,
        description=spec.description,
        approval_mode="always_require" if spec.approval_required else "never_require",
    )


def _tools(agent: AgentSpec) -> list[FunctionTool]:
    specs = dict(agent.tools)
    used: dict[str, set[str]] = {}
    for turn in agent.script or ():
        for call in turn.calls:
            used.setdefault(call.name, set()).update(call.arguments)
            if turn.approval_request is not None and call.name not in specs:
                specs[call.name] = ToolSpec(approval_required=True)
    return [_tool(name, spec, used.get(name, set())) for name, spec in specs.items()]


def _verdict(verdict: Any) -> str:
    if verdict == "done":
        return json.dumps({"answered": True, "gapAnalysis": ""})
    if verdict == "more":
        return json.dumps({"answered": False, "gapAnalysis": "the answer is not complete yet"})
    return json.dumps(
        {"answered": verdict["answered"], "gapAnalysis": verdict.get("gap_analysis", "")}
    )


class _Decisions:
    """A scripted DelegateLoopEvaluator function: one decision per call, loud at the end."""

    def __init__(self, index: int, decisions: Sequence[Any]) -> None:
        self.index = index
        self.decisions = list(decisions)
        self.used = 0

    def __call__(self, context: Any) -> Any:  # noqa: ARG002 - decisions are scripted
        from .._loop import LoopEvaluation  # noqa: PLC0415

        if self.used >= len(self.decisions):
            trace = _trace.active()
            msg = (
                f"delegate evaluator loop.evaluators[{self.index}] has no decision for "
                f"evaluation {self.used + 1}: its list holds {len(self.decisions)}"
            )
            raise SimulationError(
                msg,
                virtual_time=None if trace is None else trace.time(),
                seed=None if trace is None else trace.seed,
            )
        decision = self.decisions[self.used]
        self.used += 1
        if decision == "stop":
            return LoopEvaluation.stop()
        if decision == "continue":
            return LoopEvaluation.continue_with_feedback(None)
        return LoopEvaluation.continue_with_feedback(decision["continue"])


class _World:
    """Everything one scenario run builds. Chat clients are "remote models": they survive
    a simulated process restart; agents, provider and loop are rebuilt."""

    def __init__(self, loaded: LoadedScenario, models: ModelOverride | None = None) -> None:
        self.loaded = loaded
        scenario = loaded.scenario
        self.scenario = scenario
        self.clients: dict[str, Any] = {}
        for name, spec in scenario.agents.items():
            if spec.policy is None:
                self.clients[name] = ScriptedChatClient(_script(name, spec), name=name)
            else:
                chosen = spec.policy.chosen
                if isinstance(chosen, EchoPolicy):
                    self.clients[name] = echo_client(name, chosen)
                else:
                    assert isinstance(chosen, CoordinatorPolicy)  # noqa: S101 - two policies
                    self.clients[name] = coordinator_client(
                        name, chosen, scenario.parent.background_agents
                    )
        if models is not None:
            self.clients = {name: models(name, client) for name, client in self.clients.items()}
        self.judges: list[ScriptedChatClient] = []
        self.decisions: list[_Decisions] = []
        self.evaluator_specs = [] if scenario.loop is None else scenario.loop.evaluators
        for index, evaluator in enumerate(self.evaluator_specs):
            kind = evaluator.chosen
            if isinstance(kind, AIJudgeSpec):
                self.judges.append(
                    ScriptedChatClient([_verdict(v) for v in kind.verdicts], name=f"judge{index}")
                )
            elif isinstance(kind, DelegateSpec):
                self.decisions.append(_Decisions(index, kind.decisions))
        self.provider: Any = None
        self.top: Any = None

    def build(self) -> None:
        """(Re)build agents, the background provider and the loop around the parent."""
        from .._background import BackgroundAgentsProvider  # noqa: PLC0415

        scenario = self.scenario
        parent = scenario.parent
        agents: dict[str, Agent] = {}
        for name, spec in scenario.agents.items():
            if name == parent.agent:
                continue
            agents[name] = Agent(
                self.clients[name],
                name=name,
                instructions=spec.instructions,
                description=spec.description,
                tools=_tools(spec),
            )
        spec = scenario.agents[parent.agent]
        children = [agents[n] for n in parent.background_agents]
        if parent.harness:
            self.top = self._harness(spec, children)
            self.provider = getattr(self.top, "background_agents_provider", None)
            return
        providers = []
        self.provider = None
        if children:
            self.provider = BackgroundAgentsProvider(
                children,
                wait_timeout_seconds=parent.wait_timeout,
                instructions=parent.background_agents_instructions,
            )
            providers.append(self.provider)
        inner = Agent(
            self.clients[parent.agent],
            name=parent.agent,
            instructions=spec.instructions,
            description=spec.description,
            tools=_tools(spec),
            context_providers=providers,
            history_store=parent.history_store,
        )
        loop = scenario.loop
        if loop is None:
            self.top = inner
            return
        from .._loop import LoopAgent  # noqa: PLC0415

        self.top = LoopAgent(inner, self._evaluators(), self._loop_options())

    def _loop_options(self) -> Any:
        from .._loop import LoopAgentOptions  # noqa: PLC0415

        loop = self.scenario.loop
        assert loop is not None  # noqa: S101 - only called with a loop
        return LoopAgentOptions(
            max_iterations=loop.max_iterations,
            fresh_context_per_iteration=loop.fresh_context_per_iteration,
            on_behalf_of_author_name=loop.on_behalf_of_author_name,
            exclude_on_behalf_of_messages=loop.exclude_on_behalf_of_messages,
            non_streaming_returns_last_response_only=loop.non_streaming_returns_last_response_only,
        )

    def _evaluators(self) -> list[Any]:
        from .. import _loop  # noqa: PLC0415
        from .._background import (  # noqa: PLC0415
            BackgroundTaskCompletionLoopEvaluator,
            BackgroundTaskCompletionLoopEvaluatorOptions,
        )

        judges = iter(self.judges)
        decisions = iter(self.decisions)
        built: list[Any] = []
        for evaluator in self.evaluator_specs:
            chosen = evaluator.chosen
            if isinstance(chosen, CompletionMarkerSpec):
                built.append(
                    _loop.CompletionMarkerLoopEvaluator(
                        chosen.marker,
                        _loop.CompletionMarkerLoopEvaluatorOptions(
                            feedback_message_template=chosen.feedback_message_template
                        ),
                    )
                )
            elif isinstance(chosen, BackgroundTaskCompletionSpec):
                built.append(
                    BackgroundTaskCompletionLoopEvaluator(
                        BackgroundTaskCompletionLoopEvaluatorOptions(
                            feedback_message_template=chosen.feedback_message_template
                        )
                    )
                )
            elif isinstance(chosen, AIJudgeSpec):
                built.append(
                    _loop.AIJudgeLoopEvaluator(
                        next(judges),
                        _loop.AIJudgeLoopEvaluatorOptions(
                            instructions=chosen.instructions,
                            criteria=chosen.criteria or None,
                            feedback_message_template=chosen.feedback_message_template,
                        ),
                    )
                )
            elif isinstance(chosen, DelegateSpec):
                built.append(_loop.DelegateLoopEvaluator(next(decisions)))
            else:
                assert isinstance(chosen, CustomEvaluatorSpec)  # noqa: S101 - five kinds
                built.append(_import(chosen.import_path)(**chosen.options))
        return built

    def _harness(self, spec: AgentSpec, children: list[Agent]) -> Any:
        from .._background import (  # noqa: PLC0415
            background_tasks_running,
            background_tasks_running_message,
        )
        from .._harness import create_harness_agent  # noqa: PLC0415

        scenario = self.scenario
        parent = scenario.parent
        loop = scenario.loop
        kwargs: dict[str, Any] = {}
        if loop is not None:
            if loop.should_continue is not None:
                kwargs["loop_should_continue"] = background_tasks_running()
                kwargs["loop_next_message"] = background_tasks_running_message
                if loop.max_iterations is not None:
                    kwargs["loop_max_iterations"] = loop.max_iterations
            if loop.evaluators:
                kwargs["loop_evaluators"] = self._evaluators()
                kwargs["loop_options"] = self._loop_options()
        if parent.background_agents_instructions is not None:
            kwargs["background_agents_instructions"] = parent.background_agents_instructions
        return create_harness_agent(
            self.clients[parent.agent],
            name=parent.agent,
            background_agents=children,
            background_agents_wait_timeout_seconds=parent.wait_timeout,
            instructions=spec.instructions,
            description=spec.description,
            tools=_tools(spec),
            **kwargs,
        )

    def calls(self) -> dict[str, int]:
        counts = {name: len(client.requests) for name, client in self.clients.items()}
        counts["judge"] = sum(len(j.requests) for j in self.judges)
        return counts

    def unused(self) -> list[tuple[tuple[str | int, ...], str]]:
        out: list[tuple[tuple[str | int, ...], str]] = [
            (
                ("agents", name, "script", client.turn),
                (
                    f"{len(client.remaining)} scripted turn(s) of {name} were never used "
                    f"(from turn {client.turn + 1}); remove them, or set expect.unused_turns: true"
                ),
            )
            for name, client in self.clients.items()
            if isinstance(client, ScriptedChatClient) and client.remaining
        ]
        out.extend(
            (
                ("agents", name),
                f"{len(client.unplayed)} recorded turn(s) of {name} were never replayed",
            )
            for name, client in self.clients.items()
            if isinstance(client, ReplayChatClient) and client.unplayed
        )
        index = 0
        for position, evaluator in enumerate(self.evaluator_specs):
            chosen = evaluator.chosen
            if isinstance(chosen, AIJudgeSpec):
                judge = self.judges[index]
                index += 1
                if judge.remaining:
                    out.append(
                        (
                            ("loop", "evaluators", position, "ai_judge", "verdicts"),
                            f"{len(judge.remaining)} judge verdict(s) were never used",
                        )
                    )
        out.extend(
            (
                ("loop", "evaluators", decisions.index, "delegate", "decisions"),
                f"{len(decisions.decisions) - decisions.used} delegate decision(s) were never used",
            )
            for decisions in self.decisions
            if decisions.used < len(decisions.decisions)
        )
        return out


def _import(import_path: str) -> Callable[..., Any]:
    import importlib  # noqa: PLC0415

    module_name, _, attr = import_path.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target  # type: ignore[no-any-return] # checked by the loader


# -- running ----------------------------------------------------------------------------------


@dataclass
class _Outcome:
    response: AgentResponse | None = None
    error: BaseException | None = None
    error_step: int | None = None
    tasks: dict[int, str] = field(default_factory=dict)


async def _drive(world: _World, outcome: _Outcome) -> None:
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


async def _run(world: _World, session: Any, message: Any, outcome: _Outcome, index: int) -> bool:
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
    from .._background._ties import TIE_BREAKER  # noqa: PLC0415 - keep imports light
    from .._invariants import check_invariants  # noqa: PLC0415
    from ._expect import check_expectations  # noqa: PLC0415

    scenario = loaded.scenario
    seed = scenario.seed if seed is None else seed
    backend = backend or scenario.backend
    keys = tuple(blocks) if blocks is not None else ("expect", "always")
    specs = [spec for spec in (getattr(scenario, key) for key in keys) if spec is not None]
    trace = Trace(seed=seed)
    ties = _Ties(scenario.ties, trace, tie_breaker)
    trace.resources[TIE_BREAKER] = ties
    recorder = Recorder(trace, scenario=loaded.name, seed=seed, backend=backend)
    events: list[Event] = []
    unsubscribe = trace.subscribe(events.append)
    world = _World(loaded, models)
    outcome = _Outcome()
    clock = VirtualClock(seed=seed, wall_clock=scenario.wall_clock)
    try:
        clock.run(_drive, world, outcome, backend=backend, trace=trace)
    except Exception as exc:  # noqa: BLE001 - a simulation error is a failed scenario
        outcome.error = exc
    finally:
        unsubscribe()
        recorder.close()
    result = ScenarioResult(
        name=loaded.name,
        path=loaded.where.path,
        seed=seed,
        backend=backend,
        elapsed=clock.elapsed,
        events=events,
        response_text=None if outcome.response is None else outcome.response.text,
        calls=world.calls(),
        tasks=outcome.tasks,
        error=outcome.error,
        transcript=recorder.transcript,
        ties=list(ties.chosen),
    )
    stops = [e for e in events if e.kind == "loop_stop"]
    if stops:
        result.stop_reason = stops[-1].data.get("reason")
        result.iterations = stops[-1].data.get("iterations")
    for key in keys:
        for failure in check_expectations(loaded, result, outcome, update_snapshots, key):
            if failure.kind == "error" and any(f.kind == "error" for f in result.failures):
                continue  # an unexpected error is reported once, not once per block
            result.failures.append(failure)
    where = loaded.where
    for position, problem in ties.problems:
        result.failures.append(
            Failure(problem, format_location(("ties", position)), where.line(("ties", position)))
        )
    if all(spec.invariants for spec in specs):
        loop = scenario.loop
        for message in check_invariants(
            events,
            max_iterations=None if loop is None else (loop.max_iterations or 10),
            fresh_context=bool(loop and loop.fresh_context_per_iteration),
            wait_timeout=float(scenario.parent.wait_timeout),
            evaluator_count=_evaluator_count(scenario),
        ):
            result.failures.append(
                Failure(message, location="invariants", line=where.line(()), kind="invariant")
            )
    if not any(spec.unused_turns for spec in specs) and outcome.error is None:
        unused = world.unused()
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
            result.failures.append(
                Failure(message, format_location(loc), loaded.where.line(loc), kind="unused")
            )
    return result


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
