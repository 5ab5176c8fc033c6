"""Stage 3, a scenario's ``factory:`` agents: the user's own agents, built and checked.

A factory is ``function(client, name)``; a parent's factory may also take
``background_agents`` (the children loopsim built). A factory-built parent keeps the
``BackgroundAgentsProvider`` its agent has, or gets one for ``parent.background_agents``.
Each engine's world says how to find, make and read a provider of its package.
"""

from __future__ import annotations

import inspect
from typing import Any

from .. import _supervise
from ._imports import UserCodeError, import_object
from ._schema import AgentSpec

__all__ = ["FactoryParts"]


class FactoryParts:
    """The factory half of a :class:`~loopsim._scenario._build.World`."""

    loaded: Any
    scenario: Any

    def from_factory(
        self,
        name: str,
        spec: AgentSpec,
        client: Any,
        *,
        engine: str,
        children: list[Any] | None = None,
    ) -> Any:
        """``factory(client, name)``: the user's own agent, checked to be one.

        A parent's factory that takes ``background_agents`` also gets the child agents
        loopsim built for ``parent.background_agents`` (to put in a provider of its own).
        """
        loc: tuple[str | int, ...] = ("agents", name, "factory")
        assert spec.factory is not None  # noqa: S101 - only called for factory agents
        try:
            factory = import_object(spec.factory, self.loaded.folders)
        except UserCodeError as exc:
            raise self.loaded.where.error(
                loc, str(exc), expected="module:function of an importable module"
            ) from None
        extra = {"background_agents": children} if children and _takes_children(factory) else {}
        try:
            with _supervise.phase(
                "factory", module=spec.factory, bound=_supervise.bounds().factory
            ):
                built = factory(client, name, **extra)
        except Exception as exc:  # user code: a located report, the cause kept
            raise self.loaded.where.error(
                loc,
                f"factory {spec.factory} raised {type(exc).__name__}: {exc}",
                expected="a factory(client, name) that returns an agent",
            ) from exc
        if not (
            callable(getattr(built, "run", None))
            and callable(getattr(built, "create_session", None))
        ):
            raise self.loaded.where.error(
                loc,
                f"factory {spec.factory} returned {type(built).__name__}, not an agent "
                f"(an object with run() and create_session()) for the {engine} engine",
                expected=f"an agent of the {engine} engine built around the client it was given",
            )
        return built

    # -- a factory parent's background agents -------------------------------------------

    def find_provider(self, agent: Any) -> Any:
        """The engine's BackgroundAgentsProvider among ``agent``'s context providers."""
        from .._background import BackgroundAgentsProvider  # noqa: PLC0415

        for provider in getattr(agent, "context_providers", None) or ():
            if isinstance(provider, BackgroundAgentsProvider):
                return provider
        return None

    def new_provider(self, children: list[Any]) -> Any:
        """A provider for ``parent.background_agents``, as a non-factory parent gets."""
        from .._background import BackgroundAgentsProvider  # noqa: PLC0415

        parent = self.scenario.parent
        return BackgroundAgentsProvider(
            children,
            wait_timeout_seconds=parent.wait_timeout,
            instructions=parent.background_agents_instructions,
        )

    def provider_children(self, provider: Any) -> list[str]:
        """The names of the child agents a provider knows."""
        return [str(agent.name) for agent in provider.agents]

    def attach_provider(self, agent: Any, children: list[Any]) -> Any:
        """The provider of a factory-built parent: its own, or one loopsim adds for the
        scenario's ``parent.background_agents`` (None when there is neither)."""
        provider = self.find_provider(agent)
        parent = self.scenario.parent
        if provider is None:
            if not children:
                return None
            provider = self.new_provider(children)
            agent.context_providers.append(provider)
            return provider
        known = {name.casefold(): name for name in self.provider_children(provider)}
        for index, child in enumerate(parent.background_agents):
            if child.casefold() not in known:
                raise self.loaded.where.error(
                    ("parent", "background_agents", index),
                    f"the agent factory {self.scenario.agents[parent.agent].factory} built "
                    f"has a BackgroundAgentsProvider that does not know {child!r} (it knows: "
                    f"{', '.join(sorted(known.values())) or 'no agents'})",
                    expected="the names of the provider's child agents, or a factory that "
                    "takes background_agents and gives them to its provider",
                )
        return provider


def _takes_children(factory: Any) -> bool:
    """Whether ``factory`` accepts a ``background_agents`` keyword."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: call it the plain way
        return False
    return any(
        p.name == "background_agents" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
    )
