"""The scripted loop of ``lets_loop_stop``: a worker agent that completes, looped by LoopAgent.

Split from ``_checker`` (which runs the checks): the script, one run of the loop on either
engine, and the scenario file that reproduces a failing case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio

from .. import _trace
from .._agents import Agent
from .._background import BackgroundAgentsProvider
from .._clients import ScriptedChatClient
from .._clock import simulate
from .._errors import RealTimeLimitError, SimulationDeadlock, UserCodeAbortError
from .._invariants import check_invariants
from .._loop import LoopAgent, LoopAgentOptions, LoopEvaluator
from .._scenario import Scenario
from .._usercode import user_code_failure

__all__ = ["_loop_case", "_loop_scenario", "_script"]


def _script(case: tuple[int, int, int, bool], marker: str) -> list[str]:
    done_at, cap, noise, _ = case
    words = ["working on it", "draft ready", "still fixing the tests", "almost"]
    replies = [words[(n + noise) % len(words)] for n in range(done_at - 1)]
    replies += [f"all finished {marker}"] * (cap - done_at + 1)
    return replies


def _loop_case(
    make: Callable[[], LoopEvaluator],
    case: tuple[int, int, int, bool],
    marker: str,
    budget: float,
    engine: str = "loopsim",
    *,
    real_time_limit: float | None = None,
    on_busy: Callable[[], None] | None = None,
    background: bool = False,
) -> str | None:
    """Run the scripted loop of ``case``; the problem it shows, or None.

    ``real_time_limit`` is the run's watchdog; when it stops the run, ``on_busy`` is
    told (and no problem is returned), else the limit is the problem.
    """
    done_at, cap, _, streaming = case
    events: list[_trace.Event] = []
    client = ScriptedChatClient(_script(case, marker), name="worker")
    # background: the worker carries a provider (no tasks), for a task-aware evaluator
    providers = [_provider()] if background else []
    inner: Any = Agent(client, name="worker", context_providers=providers)
    if engine == "agent_framework":
        import agent_framework as af  # noqa: PLC0415 - only on this engine

        from ..agent_framework import as_agent, as_chat_client  # noqa: PLC0415
        from ._af_loops import af_provider  # noqa: PLC0415

        af_providers = [af_provider("background_agents", ["helper"])] if background else []
        inner = as_agent(
            af.Agent(client=as_chat_client(client), name="worker", context_providers=af_providers)
        )
    agent = LoopAgent(inner, [make()], LoopAgentOptions(max_iterations=cap))

    async def main() -> None:
        _trace.current().subscribe(events.append)
        with anyio.fail_after(budget * cap):
            if streaming:
                stream = agent.run_stream("do the task")
                async for _ in stream:
                    pass
            else:
                await agent.run("do the task")

    try:
        simulate(main, real_time_limit=real_time_limit)
    except TimeoutError:
        return f"the loop did not finish within {budget * cap:g} virtual seconds"
    except SimulationDeadlock as exc:
        return f"the loop deadlocked: {exc}"
    except RealTimeLimitError as exc:
        if on_busy is None:
            return f"the loop was stopped: {exc}"
        on_busy()
        return None
    except BaseException as exc:  # noqa: BLE001 - the user's evaluator failing is a finding
        error = user_code_failure(exc)  # a real Ctrl-C is re-raised
        if isinstance(error, UserCodeAbortError):
            return f"the loop stopped: {error.message}"
        return f"the loop raised {type(error).__name__}: {error}"
    stops = [e.data for e in events if e.kind == "loop_stop"]
    stop = stops[-1] if stops else {}
    problems = check_invariants(events, max_iterations=cap, evaluator_count=1)
    if problems:
        return "; ".join(problems)
    if stop.get("reason") != "evaluators_stopped":
        return (
            f"the agent replied with {marker!r} from iteration {done_at} on, but the loop ran "
            f"all {cap} iterations (stop reason {stop.get('reason')})"
        )
    return None


def _provider() -> BackgroundAgentsProvider:
    return BackgroundAgentsProvider([Agent(ScriptedChatClient([]), name="helper")])


def _loop_scenario(
    path: str,
    options: Mapping[str, Any],
    case: tuple[int, int, int, bool],
    marker: str,
    background: bool = False,
) -> Scenario:
    _, cap, _, streaming = case
    agents: dict[str, Any] = {"worker": {"script": _script(case, marker)}}
    parent: dict[str, Any] = {"agent": "worker"}
    if background:
        agents["helper"] = {"script": []}
        parent["background_agents"] = ["helper"]
    return Scenario.model_validate(
        {
            "version": 1,
            "name": "check-evaluator-lets-loop-stop",
            "streaming": streaming,
            "agents": agents,
            "parent": parent,
            "loop": {"evaluators": [{path: dict(options)}], "max_iterations": cap},
            "steps": [{"run": "do the task"}],
            "expect": {"stop_reason": "evaluators_stopped", "unused_turns": True},
        }
    )
