"""check_evaluator for agent_framework-style loops: a predicate, or an AgentLoopMiddleware.

An agent_framework loop decides with ``should_continue(**loop_kwargs)`` (``bool`` or
``(bool, feedback)``) and words the next input with an optional ``next_message``. Here
such a loop becomes a :class:`~loopsim.LoopEvaluator` for the five context checks (the
generated context is handed over as agent_framework's loop keywords: ``iteration``,
``last_result``, ``messages``, ``original_messages``, ``session``, ``agent``,
``progress``, ``feedback``), and ``lets_loop_stop`` runs it for real: an
``agent_framework.Agent`` over a scripted model, looped by ``AgentLoopMiddleware``.

agent_framework is imported only when such a loop is checked.
"""

from __future__ import annotations

import copy
import inspect
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import yaml

from .. import _trace
from .._agents._base import maybe_await
from .._clients import ScriptedChatClient
from .._clock import simulate
from .._errors import SimulationDeadlock
from .._invariants import check_invariants
from .._loop import LoopContext, LoopEvaluation, LoopEvaluator
from .._loop._evaluation import FeedbackView

__all__ = [
    "AgentFrameworkLoop",
    "PredicateEvaluator",
    "af_case_yaml",
    "af_loop_case",
    "af_provider",
    "check_af_loop_stops",
    "resolve_af_loop",
]

#: the keywords agent_framework's AgentLoopMiddleware passes to its callables
LOOP_KEYWORDS = frozenset(
    {
        "iteration",
        "last_result",
        "messages",
        "original_messages",
        "session",
        "agent",
        "progress",
        "feedback",
    }
)


@dataclass(frozen=True)
class AgentFrameworkLoop:
    """How to get a fresh agent_framework loop: its predicate, next_message and middleware.

    ``build()`` returns ``(should_continue, next_message, middleware_or_None)``; a factory
    (a ``with_judge`` setup) is called again for each fresh instance.
    """

    build: Callable[[], tuple[Callable[..., Any], Callable[..., Any] | None, Any]]


def _is_loop_middleware(value: Any) -> bool:
    af = sys.modules.get("agent_framework")
    return af is not None and isinstance(value, af.AgentLoopMiddleware)


def _looks_like_predicate(fn: Any) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    names = set()
    for parameter in parameters:
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return True
        names.add(parameter.name)
    return bool(names) and names <= LOOP_KEYWORDS


def resolve_af_loop(
    target: Any, options: Mapping[str, Any], next_message: Callable[..., Any] | None
) -> AgentFrameworkLoop | None:
    """The agent_framework loop ``target`` stands for, or None for a LoopEvaluator factory.

    ``target`` may be an ``AgentLoopMiddleware``, a zero-argument (or ``options``-taking)
    factory returning one (e.g. a ``with_judge`` setup), or a ``should_continue``
    predicate (recognised by taking ``**kwargs`` or only loop keywords, or because
    ``next_message`` is given).
    """
    if isinstance(target, type) and issubclass(target, LoopEvaluator):
        if next_message is not None:
            msg = "next_message belongs to an agent_framework-style predicate, not a LoopEvaluator"
            raise TypeError(msg)
        return None
    if _is_loop_middleware(target):
        return AgentFrameworkLoop(lambda: (target.should_continue, target.next_message, target))
    if next_message is not None or _looks_like_predicate(target):
        if options:
            msg = "options are keyword arguments for a class or factory, not for a predicate"
            raise TypeError(msg)
        return AgentFrameworkLoop(lambda: (target, next_message, None))
    if not callable(target):
        msg = f"cannot check {type(target).__name__}: expected a LoopEvaluator class, an "
        msg += "agent_framework should_continue predicate or an AgentLoopMiddleware"
        raise TypeError(msg)
    probe = target(**options)
    if isinstance(probe, LoopEvaluator):
        return None
    if _is_loop_middleware(probe):

        def build() -> tuple[Callable[..., Any], Callable[..., Any] | None, Any]:
            middleware = target(**options)
            return middleware.should_continue, middleware.next_message, middleware

        return AgentFrameworkLoop(build)
    msg = (
        f"{getattr(target, '__qualname__', target)!r} returned {type(probe).__name__}: expected "
        "a LoopEvaluator or an agent_framework AgentLoopMiddleware"
    )
    raise TypeError(msg)


# -- the five context checks: the loop as an evaluator ----------------------------------------


def _verdict(value: Any) -> tuple[bool, str | None]:
    if isinstance(value, bool):
        return value, None
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], bool)
        and (value[1] is None or isinstance(value[1], str))
    ):
        return value[0], value[1]
    msg = (
        f"should_continue returned {value!r} ({type(value).__name__}); expected a bool or a "
        "(bool, feedback-or-None) tuple"
    )
    raise TypeError(msg)


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


class PredicateEvaluator(LoopEvaluator):
    """An agent_framework loop's decision as a LoopEvaluator over a loopsim LoopContext.

    The context is handed over as agent_framework's loop keywords; what the callables
    change there is written back to the loopsim context, so the mutation check sees it.
    """

    def __init__(self, loop: AgentFrameworkLoop) -> None:
        self.should_continue, self.next_message, _ = loop.build()

    async def evaluate(self, context: LoopContext) -> LoopEvaluation:
        import agent_framework as af  # noqa: PLC0415 - only for agent_framework loops

        from ..agent_framework import as_chat_client  # noqa: PLC0415
        from ..agent_framework._convert import (  # noqa: PLC0415
            to_af_agent_response,
            to_af_messages,
            to_loopsim_agent_response,
            to_loopsim_messages,
        )

        session = af.AgentSession()
        session.state = context.session.state  # shared: a change shows on the loopsim side
        original = to_af_messages(list(context.initial_messages))
        last = to_af_agent_response(context.last_response)
        progress = [f for f in context.feedback if f]
        kwargs: dict[str, Any] = {
            "iteration": context.iteration,
            "last_result": last,
            "messages": list(original),
            "original_messages": original,
            "session": session,
            "agent": af.Agent(
                client=as_chat_client(ScriptedChatClient([])),
                name="agent",
                context_providers=_af_providers(context.agent),
            ),
            "progress": progress,
            "feedback": None,
        }
        before = (_dump([m.to_dict() for m in original]), _dump(last.to_dict()), list(progress))
        try:
            keep_going, feedback = _verdict(await maybe_await(self.should_continue(**kwargs)))
            next_input: Any = None
            if keep_going and self.next_message is not None:
                next_input = await maybe_await(
                    self.next_message(**{**kwargs, "feedback": feedback})
                )
        finally:
            # write what the callables changed back into the loopsim context
            if _dump([m.to_dict() for m in original]) != before[0]:
                context._initial_messages = to_loopsim_messages(original)
            if _dump(last.to_dict()) != before[1]:
                context._last_response = to_loopsim_agent_response(last)
            if progress != before[2]:
                context._feedback = FeedbackView(list(progress))
        if not keep_going:
            return LoopEvaluation.stop()
        if next_input is None:
            return LoopEvaluation.continue_with_feedback(feedback)
        return LoopEvaluation.continue_with_messages(
            to_loopsim_messages(af.normalize_messages(next_input))
        )


def _af_providers(agent: Any) -> list[Any]:
    """agent_framework's BackgroundAgentsProvider in place of the context agent's own
    (same source id, so agent_framework's helpers read the same persisted tasks)."""
    from .._background import BackgroundAgentsProvider  # noqa: PLC0415

    found = agent.get_service(BackgroundAgentsProvider) if agent is not None else None
    if found is None:
        return []
    return [af_provider(found.source_id, [str(a.name) for a in found.agents])]


def af_provider(source_id: str, names: list[str]) -> Any:
    import agent_framework as af  # noqa: PLC0415

    from ..agent_framework import as_chat_client  # noqa: PLC0415

    children = [af.Agent(client=as_chat_client(ScriptedChatClient([])), name=n) for n in names]
    return af.BackgroundAgentsProvider(children, source_id=source_id)


# -- lets_loop_stop: the real AgentLoopMiddleware ---------------------------------------------


def _middleware(loop: AgentFrameworkLoop, cap: int) -> Any:
    import agent_framework as af  # noqa: PLC0415

    should_continue, next_message, middleware = loop.build()
    if middleware is None:
        return af.AgentLoopMiddleware(
            should_continue, next_message=next_message, max_iterations=cap
        )
    fresh = copy.copy(middleware)
    fresh.max_iterations = cap
    return fresh


def af_loop_case(  # noqa: PLR0917 - one loop case, spelled out
    loop: AgentFrameworkLoop,
    script: list[str],
    cap: int,
    streaming: bool,
    budget: float,
    background: bool = False,
) -> tuple[str | None, int]:
    """Run the loop on a real agent over ``script``; returns (problem or None, iterations).

    ``background``: the agent carries a BackgroundAgentsProvider (with no tasks)."""
    import agent_framework as af  # noqa: PLC0415

    from ..agent_framework import as_chat_client, instrument  # noqa: PLC0415

    events: list[_trace.Event] = []
    client = ScriptedChatClient(script, name="worker")
    agent = instrument(
        af.Agent(
            client=as_chat_client(client),
            name="worker",
            middleware=[_middleware(loop, cap)],
            context_providers=[af_provider("background_agents", ["helper"])] if background else [],
        )
    )

    async def main() -> None:
        _trace.current().subscribe(events.append)
        session = agent.create_session()
        with anyio.fail_after(budget * cap):
            if streaming:
                async for _ in agent.run("do the task", stream=True, session=session):
                    pass
            else:
                await agent.run("do the task", session=session)

    try:
        simulate(main)
    except TimeoutError:
        return f"the loop did not finish within {budget * cap:g} virtual seconds", 0
    except SimulationDeadlock as exc:
        return f"the loop deadlocked: {exc}", 0
    except Exception as exc:  # noqa: BLE001 - the user's loop failing is a finding
        return f"the loop raised {type(exc).__name__}: {exc}", 0
    iterations = len(client.requests)
    if not streaming:
        problems = check_invariants(events, max_iterations=cap, evaluator_count=1)
        if problems:
            return "; ".join(problems), iterations
    decisions = [e.data["decision"] for e in events if e.kind == "evaluator_decision"]
    if not decisions or decisions[-1] != "stop":
        return "", iterations  # ran to the cap: the caller words it
    return None, iterations


def check_af_loop_stops(
    loop: AgentFrameworkLoop,
    *,
    path: str,
    script: list[str],
    done_at: int,
    cap: int,
    streaming: bool,
    marker: str,
    budget: float,
    background: bool = False,
) -> tuple[str, str] | None:
    """``lets_loop_stop`` for an agent_framework loop: (problem, counterexample) or None."""
    problem, _ = af_loop_case(loop, script, cap, streaming, budget, background)
    if problem is None:
        return None
    if not problem:
        problem = (
            f"the agent replied with {marker!r} from iteration {done_at} on, but the loop ran "
            f"all {cap} iterations (should_continue never returned False)"
        )
    return problem, af_case_yaml(path, script, cap, streaming)


def af_case_yaml(path: str, script: list[str], cap: int, streaming: bool) -> str:
    """The failing loop case as text: the real agent, its script and the loop's cap."""
    data = {
        "engine": "agent_framework",
        "loop": path,
        "agent": {"name": "worker", "script": script},
        "max_iterations": cap,
        "streaming": streaming,
        "run": "do the task",
        "expected": "the loop stops (should_continue returns False) before max_iterations",
    }
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
