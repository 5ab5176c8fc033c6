"""Stage 3, the agent_framework engine: the same scenario built from the real package.

The "remote models" (scripts, built-in policies, scripted judges and decisions) are the
ones :class:`~loopsim._scenario._build.World` makes for the built-in engine; here each
sits behind :func:`loopsim.agent_framework.as_chat_client`, so ``agent_framework.Agent``
talks to it as to a vendor's client. What is built from the package:

* every agent: ``agent_framework.Agent`` (or the user's ``factory:``);
* the parent's background agents: ``agent_framework.BackgroundAgentsProvider``;
* a harness parent: ``agent_framework.create_harness_agent`` with everything loopsim's
  harness does not have turned off (todo, mode, file memory, compaction, tool
  auto-approval), looping on ``background_tasks_running`` when the scenario says so; its
  default web search stays, as in production (the client has the vendor's
  ``get_web_search_tool``);
* a ``loop:`` with evaluators: loopsim's ``LoopAgent`` around the real agent (through
  :func:`~loopsim.agent_framework.as_agent`): the Python package has no LoopAgent.
  ``background_task_completion`` reads the real provider's task records.

A restart serializes the real session (``AgentSession.to_dict``) and restores it into new
provider and agent objects, as a new process would.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._agents import ServiceChatClient, ServiceKind
from .._agents._session import conversation_service
from ._build import World, tool_functions
from ._schema import AgentSpec
from ._source import LoadedScenario

__all__ = ["AgentFrameworkWorld"]


INSTALL = "pip install 'pytest-loopsim[agent-framework]'"


@contextmanager
def _quiet_experimental() -> Iterator[None]:
    """Building background agents and loops emits agent_framework's "[HARNESS]" feature
    warning; a scenario asked for the feature on purpose, and a user's suite may turn
    warnings into errors."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\[HARNESS\]", category=FutureWarning)
        yield


class AgentFrameworkWorld(World):
    """A scenario's world on the agent_framework engine (asyncio only)."""

    engine = "agent_framework"

    def __init__(self, loaded: LoadedScenario, models: Any = None) -> None:
        super().__init__(loaded, models)
        self.af_top: Any = None  # the real top agent (its providers are traced)
        try:
            import agent_framework  # noqa: F401, PLC0415 - the optional extra
        except ImportError as exc:
            raise loaded.where.error(
                ("engine",),
                f"the agent_framework engine needs the agent-framework-core package ({exc}); "
                f"install it with: {INSTALL}",
                expected="engine: loopsim, or the extra installed",
            ) from None

    # -- building ------------------------------------------------------------------------

    def build(self) -> None:
        """(Re)build the real agents, the real provider and the loop around the parent."""
        import agent_framework as af  # noqa: PLC0415 - the optional extra

        from ..agent_framework import as_agent, as_chat_client  # noqa: PLC0415
        from ..agent_framework._provider import find_provider  # noqa: PLC0415

        scenario = self.scenario
        parent = scenario.parent
        with _quiet_experimental():
            children = [
                self._af_agent(name, scenario.agents[name]) for name in parent.background_agents
            ]
            spec = scenario.agents[parent.agent]
            if parent.harness:
                top = self._af_harness(spec, children)
                self.provider = find_provider(top)
            elif spec.factory is not None:
                top = self.from_factory(
                    parent.agent,
                    spec,
                    as_chat_client(self.clients[parent.agent]),
                    engine="agent_framework",
                    children=children,
                )
                self.provider = self.attach_provider(top, children)
            else:
                self.provider = None
                providers: list[Any] = []
                if children:
                    self.provider = af.BackgroundAgentsProvider(
                        children,
                        wait_timeout_seconds=parent.wait_timeout,
                        instructions=parent.background_agents_instructions,
                    )
                    providers.append(self.provider)
                top = af.Agent(
                    client=as_chat_client(self._parent_client()),
                    name=parent.agent,
                    instructions=spec.instructions,
                    description=spec.description,
                    tools=_af_tools(spec),
                    context_providers=providers,
                )
        self.af_top = top
        # as_agent offers the real provider to loopsim's background-completion evaluator
        agent: Any = as_agent(top)
        loop = scenario.loop
        if loop is None or parent.harness:
            self.top = agent
            return
        self.top = self._looped(agent)

    def _parent_client(self) -> Any:
        """The parent's model; behind loopsim's simulated service for a ``service_*``
        history store, which the package's Agent then talks to as to any service that
        keeps the conversation (``conversation_id``, only new messages)."""
        client = self.clients[self.scenario.parent.agent]
        store = self.scenario.parent.history_store
        if store == "in_memory":
            return client
        kind: ServiceKind = "conversation" if store == "service_conversation" else "response_chain"
        return ServiceChatClient(client, kind=kind)

    def create_session(self) -> Any:
        """A new session of the top agent; for ``service_conversation``, on a conversation
        the simulated service opens now (as the built-in engine's session does), so a
        fresh-context clone continues that one conversation."""
        session = self.top.create_session()
        if self.scenario.parent.history_store == "service_conversation":
            session.service_session_id = conversation_service().new_conversation()
        return session

    def _af_agent(self, name: str, spec: AgentSpec) -> Any:
        import agent_framework as af  # noqa: PLC0415 - the optional extra

        from ..agent_framework import as_chat_client  # noqa: PLC0415

        client = as_chat_client(self.clients[name])
        if spec.factory is None:
            return af.Agent(
                client=client,
                name=name,
                instructions=spec.instructions,
                description=spec.description,
                tools=_af_tools(spec),
            )
        return self.from_factory(name, spec, client, engine="agent_framework")

    def find_provider(self, agent: Any) -> Any:
        from ..agent_framework._provider import find_provider  # noqa: PLC0415

        return find_provider(agent)

    def new_provider(self, children: list[Any]) -> Any:
        import agent_framework as af  # noqa: PLC0415 - the optional extra

        parent = self.scenario.parent
        return af.BackgroundAgentsProvider(
            children,
            wait_timeout_seconds=parent.wait_timeout,
            instructions=parent.background_agents_instructions,
        )

    def provider_children(self, provider: Any) -> list[str]:
        from ..agent_framework._upstream import provider_agents  # noqa: PLC0415

        return [str(agent.name) for agent in provider_agents(provider)]

    def _af_harness(self, spec: AgentSpec, children: list[Any]) -> Any:
        import agent_framework as af  # noqa: PLC0415 - the optional extra

        from ..agent_framework import as_chat_client  # noqa: PLC0415

        scenario = self.scenario
        parent = scenario.parent
        loop = scenario.loop
        kwargs: dict[str, Any] = {}
        if loop is not None and loop.should_continue is not None:
            kwargs["loop_should_continue"] = af.background_tasks_running()
            kwargs["loop_next_message"] = af.background_tasks_running_message
            if loop.max_iterations is not None:
                kwargs["loop_max_iterations"] = loop.max_iterations
        else:
            kwargs["loop_max_iterations"] = None  # no loop unless the scenario asks for one
        return af.create_harness_agent(
            as_chat_client(self.clients[parent.agent]),
            name=parent.agent,
            description=spec.description,
            harness_instructions="",
            agent_instructions=spec.instructions,
            tools=_af_tools(spec),
            background_agents=children or None,
            background_agents_instructions=parent.background_agents_instructions,
            background_agents_wait_timeout_seconds=parent.wait_timeout,
            disable_compaction=True,
            disable_todo=True,
            disable_mode=True,
            disable_file_memory=True,
            disable_tool_auto_approval=True,
            **kwargs,
        )

    # -- the run stage's questions ----------------------------------------------------------

    async def release(self, session: Any, *, cancel_running: bool) -> None:
        if self.provider is not None:
            await self.provider.release_session(session, cancel_running=cancel_running)

    def task_statuses(self, session: Any) -> dict[int, str]:
        if self.provider is None:
            return {}
        from ..agent_framework._tracing import report_tasks  # noqa: PLC0415
        from ..agent_framework._upstream import background_tasks  # noqa: PLC0415

        tasks = background_tasks(self.provider, session)
        # the refresh may change records (running -> lost after a release): traced, as the
        # built-in provider traces every change its refresh makes
        report_tasks(self.af_top, session)
        return {task.id: task.status.value for task in tasks}


def _af_tools(spec: AgentSpec) -> list[Any]:
    import agent_framework as af  # noqa: PLC0415 - the optional extra

    hosted: list[Any] = [dict(declaration) for declaration in spec.hosted_tools]
    return [
        *hosted,
        *(
            af.tool(
                part.function,
                name=part.name,
                description=part.description,
                approval_mode=part.approval_mode,
                schema=part.arguments,
            )
            for part in tool_functions(spec)
        ),
    ]
