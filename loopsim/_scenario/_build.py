"""Stage 3 of the scenario pipeline: build a scenario's agents, provider and loop.

Chat clients are the "remote models" of a run (scripts, built-in policies, scripted
judges and delegate decisions); they survive a simulated process restart, while agents,
the background provider and the loop are rebuilt by :meth:`World.build`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from .. import _supervise, _trace
from .._agents import Agent, ApprovalMode, FunctionTool
from .._clients import (
    ChatClient,
    FaultyChatClient,
    ReplayChatClient,
    ScriptedChatClient,
    Turn,
    faulty_tool,
)
from .._errors import SimulationError
from .._messages import (
    AgentResponse,
    FunctionCallContent,
    HostedTool,
    Message,
    TextContent,
    Usage,
    hosted_call,
)
from .._usercode import bound_evaluate
from ._factories import FactoryParts
from ._imports import import_object
from ._model import ModelClient
from ._policies import coordinator_client, echo_client
from ._schema import (
    AgentSpec,
    AIJudgeSpec,
    BackgroundTaskCompletionSpec,
    CompletionMarkerSpec,
    CoordinatorPolicy,
    CustomEvaluatorSpec,
    DelegateSpec,
    EchoPolicy,
    ToolSpec,
    TurnSpec,
)
from ._source import LoadedScenario

__all__ = ["ModelOverride", "ScriptedFailure", "World"]

#: ``models(agent_name, scenario_client) -> client``: what each agent's model really is.
ModelOverride = Callable[[str, ChatClient], ChatClient]


class ScriptedFailure(Exception):  # noqa: N818 - it is what the script says: a failure
    """The error a scripted ``failure:`` turn (or a tool's ``error:``) raises."""


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
        elif turn.fault is not None:
            item = turn.fault.build(rule=False)
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
        if turn.hosted_call is not None:
            hosted = _hosted_contents(name, number, turn)
            if isinstance(item, Message):
                item = Message("assistant", [*hosted, *item.contents])
            else:
                item = Message("assistant", [*hosted, TextContent(text=item)])
        turns.append(Turn(item, delay=turn.delay, usage=_usage(turn), **turn.response_fields))
    return turns


def _hosted_contents(name: str, number: int, turn: TurnSpec) -> list[Any]:
    """A turn's hosted calls, each followed by its result, as the service answers."""
    contents: list[Any] = []
    for index, call in enumerate(turn.hosted_calls, start=1):
        contents.extend(
            hosted_call(
                call.tool,
                call.arguments,
                result=call.result,
                call_id=call.call_id or f"{name}-t{number}-h{index}",
            )
        )
    return contents


def _tool_function(spec: ToolSpec, name: str) -> Callable[..., Any]:
    def fn(**_: Any) -> Any:
        if spec.error is not None:
            raise ScriptedFailure(spec.error)
        return spec.result

    fn.__name__ = name
    if spec.faults:
        return faulty_tool(fn, [f.build() for f in spec.faults], name=name)
    return fn


def _arguments(tool: str, names: list[str]) -> type[BaseModel]:
    """The model of a scripted tool's arguments: every name optional, any value.

    Argument names are JSON keys, so ``class`` or ``file-name`` are fine; a name pydantic
    would take for a private attribute (``_x``) or that clashes with its own attributes
    gets a field of another name, with the argument's name as its alias.
    """
    fields: dict[str, Any] = {}
    taken = set(names)
    for index, arg in enumerate(names):
        if arg.startswith("_") or hasattr(BaseModel, arg):
            field_name = f"argument_{index}"
            while field_name in taken:
                field_name += "_"
            taken.add(field_name)
            fields[field_name] = (Any, Field(default=None, alias=arg))
        else:
            fields[arg] = (Any, None)
    model: type[BaseModel] = create_model(
        f"{tool}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


@dataclass(frozen=True, slots=True)
class ToolParts:
    """What every engine builds a scripted tool from."""

    name: str
    function: Callable[..., Any]
    description: str
    approval_mode: ApprovalMode
    arguments: type[BaseModel]


def tool_functions(agent: AgentSpec) -> list[ToolParts]:
    """The parts of each tool ``agent`` offers: the declared ones, and those its approval
    requests call (every engine builds its own tool objects from these)."""
    specs = dict(agent.tools)
    used: dict[str, set[str]] = {}
    for turn in agent.script or ():
        for call in turn.calls:
            used.setdefault(call.name, set()).update(call.arguments)
            if turn.approval_request is not None and call.name not in specs:
                specs[call.name] = ToolSpec(approval_required=True)
    return [
        ToolParts(
            name,
            _tool_function(spec, name),
            spec.description,
            "always_require" if spec.approval_required else "never_require",
            _arguments(name, sorted(set(spec.parameters) | used.get(name, set()))),
        )
        for name, spec in specs.items()
    ]


def _tools(agent: AgentSpec) -> list[Any]:
    return [
        *(HostedTool(declaration) for declaration in agent.hosted_tools),
        *_function_tools(agent),
    ]


def _function_tools(agent: AgentSpec) -> list[FunctionTool]:
    return [
        FunctionTool(
            part.function,
            name=part.name,
            description=part.description,
            approval_mode=part.approval_mode,
            input_model=part.arguments,
        )
        for part in tool_functions(agent)
    ]


def _tool_loop(agent: AgentSpec) -> dict[str, Any]:
    """The agent's ``function_invocation_configuration`` as Agent keyword arguments."""
    config = agent.function_invocation_configuration
    if config is None:
        return {}
    return {"function_invocation_configuration": config.model_dump()}


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


class World(FactoryParts):
    """Everything one scenario run builds. Chat clients are "remote models": they survive
    a simulated process restart; agents, provider and loop are rebuilt."""

    #: the engine this world builds with (the agent_framework world says so too)
    engine = "loopsim"

    def __init__(self, loaded: LoadedScenario, models: ModelOverride | None = None) -> None:
        self.loaded = loaded
        scenario = loaded.scenario
        self.scenario = scenario
        self.clients: dict[str, Any] = {}
        #: the real models of ``model:`` agents (closed at the end of the run)
        self.models: list[ModelClient] = []
        for name, spec in scenario.agents.items():
            if spec.model is not None:
                model = ModelClient(name, spec.model, loaded.where, loaded.folders)
                self.models.append(model)
                self.clients[name] = model
            elif spec.policy is None:
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
        for name, spec in scenario.agents.items():
            if (
                spec.faults
            ):  # the agent's model breaks as its `faults:` say (a remote model's faults)
                self.clients[name] = FaultyChatClient(
                    self.clients[name], [f.build() for f in spec.faults], name=name
                )
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
        agents: dict[str, Any] = {}
        for name, spec in scenario.agents.items():
            if name == parent.agent:
                continue
            agents[name] = self._agent(name, spec)
        spec = scenario.agents[parent.agent]
        children = [agents[n] for n in parent.background_agents]
        if spec.factory is not None and not parent.harness:
            inner: Any = self.from_factory(
                parent.agent, spec, self.clients[parent.agent], engine="loopsim", children=children
            )
            self.provider = self.attach_provider(inner, children)
            self.top = inner if scenario.loop is None else self._looped(inner)
            return
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
            **_tool_loop(spec),
        )
        self.top = inner if scenario.loop is None else self._looped(inner)

    def _agent(self, name: str, spec: AgentSpec) -> Any:
        """A child (or a factory-built parent) around the agent's model."""
        if spec.factory is None:
            return Agent(
                self.clients[name],
                name=name,
                instructions=spec.instructions,
                description=spec.description,
                tools=_tools(spec),
                **_tool_loop(spec),
            )
        return self.from_factory(name, spec, self.clients[name], engine="loopsim")

    def _looped(self, inner: Any) -> Any:
        from .._loop import LoopAgent  # noqa: PLC0415

        return LoopAgent(inner, self._evaluators(), self._loop_options())

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
        for position, evaluator in enumerate(self.evaluator_specs):
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
                evaluator_class = import_object(chosen.import_path, self.loaded.folders)
                with _supervise.phase(
                    "factory", module=chosen.import_path, bound=_supervise.bounds().factory
                ):
                    custom = evaluator_class(**chosen.options)
                limit = self.scenario.limits.evaluator_call
                if limit is not None:
                    where = f"loop.evaluators[{position}] ({chosen.import_path})"
                    bound_evaluate(custom, limit, where)
                built.append(custom)
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

    # -- what the run stage asks of every engine's world ----------------------------------

    def create_session(self) -> Any:
        """A new session of the top agent."""
        return self.top.create_session()

    async def respond(self, message: Any, session: Any) -> AgentResponse:
        """One host call into the top agent (streamed when the scenario says so)."""
        if not self.scenario.streaming:
            response: AgentResponse = await self.top.run(message, session=session)
            return response
        stream = self.top.run_stream(message, session=session)
        updates = [update async for update in stream]
        final = getattr(stream, "get_final_response", None)
        if final is not None:
            streamed: AgentResponse = await final()
            return streamed
        return AgentResponse.from_updates(updates)

    def snapshot(self, session: Any) -> Any:
        """The session as the host process saves it (its serialized form)."""
        return self.top.serialize_session(session)

    def restore(self, snapshot: Any) -> Any:
        """The saved session, restored into the (re)built agents: a new process's view."""
        return self.top.deserialize_session(snapshot)

    async def release(self, session: Any, *, cancel_running: bool) -> None:
        """Release the background runtime of ``session`` (nothing without background agents)."""
        if self.provider is not None:
            await self.provider.release_session(session, cancel_running=cancel_running)

    async def close_models(self) -> None:
        """End of the run: close what the ``model:`` agents' real clients opened."""
        for model in self.models:
            await model.aclose()

    def task_statuses(self, session: Any) -> dict[int, str]:
        """Task id → status of the session's background tasks (refreshed first)."""
        if self.provider is None:
            return {}
        return {t.task_id: t.status.value for t in self.provider.tasks(session)}

    def calls(self) -> dict[str, int]:
        counts = {name: len(client.requests) for name, client in self.clients.items()}
        counts["judge"] = sum(len(j.requests) for j in self.judges)
        return counts

    def _inner_clients(self) -> list[tuple[str, Any]]:
        """Each agent's client inside its fault wrapper (whose script turns count)."""
        return [
            (name, client.inner if isinstance(client, FaultyChatClient) else client)
            for name, client in self.clients.items()
        ]

    def unused(self) -> list[tuple[tuple[str | int, ...], str]]:
        out: list[tuple[tuple[str | int, ...], str]] = [
            (
                ("agents", name, "script", client.turn),
                (
                    f"{len(client.remaining)} scripted turn(s) of {name} were never used "
                    f"(from turn {client.turn + 1}); remove them, or set expect.unused_turns: true"
                ),
            )
            for name, client in self._inner_clients()
            if isinstance(client, ScriptedChatClient) and client.remaining
        ]
        out.extend(
            (
                ("agents", name),
                f"{len(client.unplayed)} recorded turn(s) of {name} were never replayed",
            )
            for name, client in self._inner_clients()
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
