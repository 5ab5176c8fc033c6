"""What each engine can build: a scenario asks for a feature, the engine has it or says so.

A feature one engine cannot build is a located :class:`~loopsim.ScenarioError` naming the
engine — never a silent fallback to the other engine. The loader checks the file's own
``engine:``; the run stage checks again when ``--engine`` picks another one.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._schema import Engine, Scenario
from ._source import Loc, Located

__all__ = ["check_engine", "engine_problems"]


def engine_problems(scenario: Scenario, engine: Engine) -> Iterator[tuple[Loc, str, str]]:
    """``(location, problem, expected)`` for every part of ``scenario`` ``engine`` cannot build."""
    if engine == "loopsim":
        return
    if scenario.backend != "asyncio":
        yield (
            ("backend",),
            (
                f"the agent_framework engine runs on asyncio only (the package is asyncio code), "
                f"and this scenario asks for {scenario.backend}"
            ),
            "backend: asyncio, or engine: loopsim",
        )
    if scenario.ties:
        yield (
            ("ties",),
            (
                "agent_framework's provider observes same-instant completions in its own "
                "order (asyncio.wait), so `ties:` cannot choose one"
            ),
            "no ties: list, or engine: loopsim",
        )
    parent = scenario.parent
    loop = scenario.loop
    if loop is not None and parent.harness and loop.evaluators:
        yield (
            ("loop", "evaluators"),
            (
                "agent_framework's harness agent loops on a should_continue predicate only: "
                "the Python package has no evaluator list (no LoopAgent)"
            ),
            "loop.should_continue with parent.harness, or engine: loopsim",
        )


def check_engine(scenario: Scenario, where: Located, engine: Engine) -> None:
    """Raise a located error for the first feature ``engine`` cannot build."""
    for loc, problem, expected in engine_problems(scenario, engine):
        raise where.error(loc, f"engine {engine}: {problem}", expected=expected)
