"""Stage 3 without a run: ``loopsim validate`` builds a scenario's ``factory:`` agents.

Loading a file checks what the file alone can tell. A ``factory:`` agent is the user's
own code, so only building it tells whether the module and function exist, whether it
returns an agent, whether the provider it brings knows the scenario's background agents
and whether it offers the tools the script calls. :func:`factory_problems` builds the
scenario's agents as a run would (on its engine, on a virtual clock, each factory call
bounded by ``LOOPSIM_FACTORY_TIMEOUT`` under the supervising CLI) and runs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import _trace
from .._clock import VirtualClock
from .._errors import ScenarioError
from ._build import World
from ._references import BACKGROUND_TOOLS, _did_you_mean
from ._schema import AgentSpec
from ._source import LoadedScenario

__all__ = ["factory_problems", "offered_tools"]

#: Wrappers unwrapped to find the agent that holds the tools (loopsim's LoopAgent,
#: HarnessAgent and other delegating agents keep the wrapped one in ``inner``).
MAX_WRAPPERS = 8


def _world(loaded: LoadedScenario) -> World:
    if loaded.scenario.engine == "agent_framework":
        from ._build_af import AgentFrameworkWorld  # noqa: PLC0415 - the optional extra

        return AgentFrameworkWorld(loaded)
    return World(loaded)


def _is_background_provider(provider: Any) -> bool:
    from .._background import BackgroundAgentsProvider  # noqa: PLC0415

    if isinstance(provider, BackgroundAgentsProvider):
        return True
    try:
        import agent_framework as af  # noqa: PLC0415 - the optional extra
    except ImportError:
        return False
    return isinstance(provider, af.BackgroundAgentsProvider)


def offered_tools(agent: Any) -> set[str] | None:
    """The names of the tools ``agent`` offers its model, or None when that cannot be
    told without running it (a context provider other than the background agents', MCP
    servers, an agent type loopsim does not know)."""
    from .._agents import Agent  # noqa: PLC0415
    from .._agents._base import DelegatingAgent  # noqa: PLC0415

    for _ in range(MAX_WRAPPERS):
        if not isinstance(agent, DelegatingAgent):
            break
        agent = agent.inner
    if isinstance(agent, Agent):
        tools: Any = agent.tools
    else:
        options = getattr(agent, "default_options", None)  # an agent_framework Agent
        if not isinstance(options, dict) or getattr(agent, "mcp_tools", None):
            return None
        tools = options.get("tools") or []
    names = {str(t.name) for t in tools if isinstance(getattr(t, "name", None), str)}
    for provider in getattr(agent, "context_providers", None) or ():
        if not _is_background_provider(provider):
            return None  # it may add tools of its own when the agent runs
        names.update(BACKGROUND_TOOLS)
    return names


def _script_problems(
    loaded: LoadedScenario, name: str, spec: AgentSpec, agent: Any
) -> Iterator[ScenarioError]:
    offered = offered_tools(agent)
    if offered is None:
        return
    choices = sorted(offered)
    for index, turn in enumerate(spec.script or ()):
        for call_index, call in enumerate(turn.calls):
            if call.name in offered:
                continue
            if turn.kind == "approval_request":
                loc: tuple[str | int, ...] = ("agents", name, "script", index, "approval_request")
            else:
                loc = ("agents", name, "script", index, "tool_call")
                if isinstance(turn.tool_call, list):
                    loc = (*loc, call_index)
            yield loaded.where.error(
                (*loc, "name"),
                f"the agent factory {spec.factory} built offers no tool {call.name!r}"
                f"{_did_you_mean(call.name, choices)} (its tools: "
                f"{', '.join(choices) or 'none'})",
                expected=f"a tool the agent of {spec.factory} offers",
            )


def factory_problems(loaded: LoadedScenario) -> list[ScenarioError]:
    """Build the scenario's agents as a run would and report, located: a factory's missing
    module or function, a factory that raises or does not return an agent, a background
    agent its provider does not know, a scripted call of a tool its agent does not offer.

    Returns nothing for a scenario without ``factory:`` agents (nothing to import).
    """
    scenario = loaded.scenario
    if not any(spec.factory is not None for spec in scenario.agents.values()):
        return []
    try:
        world = _world(loaded)
    except ScenarioError as exc:
        return [exc]
    built: dict[str, Any] = {}
    build_one = world.from_factory

    def capture(name: str, spec: AgentSpec, client: Any, **options: Any) -> Any:
        agent = build_one(name, spec, client, **options)
        built[name] = agent
        return agent

    world.from_factory = capture  # type: ignore[method-assign] # keeps what each factory built

    async def build() -> None:
        world.build()

    clock = VirtualClock(seed=scenario.seed, wall_clock=scenario.wall_clock)
    try:
        clock.run(build, backend=scenario.backend, trace=_trace.Trace(seed=scenario.seed))
    except ScenarioError as exc:
        return [exc]
    except Exception as exc:  # noqa: BLE001 - user code while building: reported, located
        return [
            loaded.where.error(
                ("agents",),
                f"building the scenario's agents raised {type(exc).__name__}: {exc}",
                expected="agents that build as they do in a run",
            )
        ]
    problems: list[ScenarioError] = []
    for name, spec in scenario.agents.items():
        if name in built:
            problems.extend(_script_problems(loaded, name, spec, built[name]))
    return problems
