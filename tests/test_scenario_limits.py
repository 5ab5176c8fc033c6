"""Scenario runs against hostile horizons and hostile user code (issue 14, items 1, 2, 5):
huge ``advance`` steps, the ``limits:`` block, and custom evaluators that raise
``SystemExit``, ``KeyboardInterrupt`` or ``CancelledError``, spin or never return.

Each run has a small ``limits.real_time``, so a regression fails instead of hanging CI.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _cli import loopsim_cli

from loopsim import ScenarioError
from loopsim._errors import RealTimeLimitError, UserCodeAbortError, VirtualTimeLimitError
from loopsim._scenario import ScenarioResult, load_scenario, load_scenario_text, run_scenario

BACKENDS = ["asyncio", "trio"]
_REAL = (time.perf_counter,)

EVALUATORS = textwrap.dedent(
    """\
    import asyncio
    import signal
    import sys

    import anyio
    import loopsim


    class Exits(loopsim.LoopEvaluator):
        async def evaluate(self, context):
            sys.exit(0)


    class Interrupts(loopsim.LoopEvaluator):
        async def evaluate(self, context):
            raise KeyboardInterrupt


    class Cancels(loopsim.LoopEvaluator):
        async def evaluate(self, context):
            raise asyncio.CancelledError


    class Spins(loopsim.LoopEvaluator):
        async def evaluate(self, context):
            while True:
                await anyio.sleep(0)


    class Sleeps(loopsim.LoopEvaluator):
        async def evaluate(self, context):
            await anyio.sleep(10**6)
            return loopsim.LoopEvaluation.stop()


    class PressesCtrlC(loopsim.LoopEvaluator):
        async def evaluate(self, context):
            signal.raise_signal(signal.SIGINT)  # as a real Ctrl-C would arrive
            await anyio.sleep(1)
            return loopsim.LoopEvaluation.stop()


    class Ticks(loopsim.LoopEvaluator):
        async def evaluate(self, context):
            while True:
                await anyio.sleep(3600)
    """
)
MODULE = "hostile_runtime_evaluators"


@pytest.fixture
def evaluators(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / f"{MODULE}.py").write_text(EVALUATORS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    return folder


def scenario(evaluator: str | None = None, *, limits: str = "", steps: str = "- run: go") -> str:
    loop = f"loop:\n  evaluators:\n    - {MODULE}:{evaluator}\n" if evaluator else ""
    return (
        "version: 1\nname: hostile\n"
        "agents:\n  w:\n    script:\n      - reply: hi DONE\n"
        "parent: {agent: w}\n"
        f"{loop}{limits}"
        f"steps:\n  {steps}\n"
        "expect: {unused_turns: true}\n"
    )


def run(text: str, backend: str) -> tuple[ScenarioResult, float]:
    began = _REAL[0]()
    result = run_scenario(load_scenario_text(text), backend=backend)
    return result, _REAL[0]() - began


# --- huge horizons and the virtual-time budget -------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_advance_of_two_to_the_24_seconds_runs(backend: str) -> None:
    text = scenario(steps="- advance: 16777216\n  - run: go", limits="limits: {real_time: 10}\n")

    result, took = run(text, backend)

    assert result.passed, result.report()
    assert result.elapsed == 16777216.0
    assert took < 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_trillion_seconds_run_once_the_budget_allows_them(backend: str) -> None:
    text = scenario(
        steps="- advance: 1000000000000\n  - run: go",
        limits="limits: {virtual_time: null, real_time: 10}\n",
    )

    result, _ = run(text, backend)

    assert result.passed, result.report()
    assert result.elapsed == 1e12


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_default_budget_stops_a_billion_second_advance(backend: str) -> None:
    result, took = run(scenario(steps="- advance: 1000000000\n  - run: go"), backend)

    assert not result.passed
    assert isinstance(result.error, VirtualTimeLimitError)
    assert result.error.limit == "virtual_time"
    assert result.error.value == 365 * 86400
    assert result.elapsed == 0.0
    report = result.report()
    assert "limits: {virtual_time" in report
    assert took < 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_evaluator_call_is_bounded_in_virtual_time(backend: str, evaluators: Path) -> None:
    text = scenario("Sleeps", limits="limits: {evaluator_call: 600, real_time: 10}\n")

    result, _ = run(text, backend)

    assert isinstance(result.error, VirtualTimeLimitError)
    assert result.error.limit == "evaluator_call"
    assert f"evaluator loop.evaluators[0] ({MODULE}:Sleeps)" in str(result.error)
    assert "limits: {evaluator_call" in str(result.error)
    assert result.elapsed == 600.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_ticking_evaluator_meets_the_default_evaluator_bound(
    backend: str, evaluators: Path
) -> None:
    result, took = run(scenario("Ticks", limits="limits: {real_time: 10}\n"), backend)

    assert isinstance(result.error, VirtualTimeLimitError)
    assert result.error.value == 3600.0
    assert result.elapsed == 3600.0
    assert took < 10


# --- busy user code ----------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_watchdog_stops_a_busy_evaluator(backend: str, evaluators: Path) -> None:
    result, took = run(scenario("Spins", limits="limits: {real_time: 0.5}\n"), backend)

    assert not result.passed
    assert isinstance(result.error, RealTimeLimitError)
    assert "in Spins.evaluate awaiting sleep" in str(result.error)
    assert "limits: {real_time" in str(result.error)
    assert took < 5


# --- BaseExceptions from user code -------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("evaluator", "shown", "line"),
    [
        ("Exits", "SystemExit(0)", 11),
        ("Interrupts", "KeyboardInterrupt()", 16),
        ("Cancels", "CancelledError()", 21),
    ],
)
def test_a_base_exception_from_an_evaluator_fails_the_scenario(
    backend: str, evaluator: str, shown: str, line: int, evaluators: Path
) -> None:
    result, _ = run(scenario(evaluator, limits="limits: {real_time: 10}\n"), backend)

    assert not result.passed
    assert isinstance(result.error, UserCodeAbortError)
    assert result.error.origin == f"{MODULE}.py:{line} in {evaluator}.evaluate"
    report = result.report()
    assert f"user code raised {shown} at {MODULE}.py:{line} in {evaluator}.evaluate" in report
    assert len(report.splitlines()) < 40


def run_cli(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return loopsim_cli(
        "run", *argv, "-p", "no:cacheprovider", cwd=folder, env={"PYTHONPATH": str(folder)}
    )


@pytest.mark.usefixtures("default_sigint")
def test_a_ctrl_c_ends_loopsim_run_and_says_so(evaluators: Path) -> None:
    # The evaluator sends the process SIGINT, as a Ctrl-C in the terminal would: the first
    # one cancels the running scenario, and the run stops there (the second file never
    # runs) instead of reporting a failure of user code and going on.
    (evaluators / "a_hostile.loopsim.yaml").write_text(scenario("PressesCtrlC"), "utf-8")
    (evaluators / "b_fine.loopsim.yaml").write_text(
        scenario().replace("name: hostile", "name: fine"), "utf-8"
    )

    done = run_cli(evaluators, ".")

    assert done.returncode == 2, done.stdout + done.stderr
    assert "KeyboardInterrupt" in done.stdout
    assert "loopsim: 0 scenarios: 0 passed, then interrupted" in done.stdout
    assert "loopsim run: interrupted (Ctrl-C)" in done.stderr
    assert "b_fine" not in done.stdout


@pytest.mark.parametrize("evaluator", ["Exits", "Interrupts", "Cancels"])
def test_loopsim_run_reports_a_failed_scenario_not_zero_scenarios(
    evaluator: str, evaluators: Path
) -> None:
    (evaluators / "hostile.loopsim.yaml").write_text(
        scenario(evaluator, limits="limits: {real_time: 20}\n"), encoding="utf-8"
    )

    done = run_cli(evaluators, "hostile.loopsim.yaml")

    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "loopsim: 1 scenario: 0 passed, 1 failed" in done.stdout
    assert f"in {evaluator}.evaluate" in done.stdout
    assert "Traceback" not in output
    assert len(output.splitlines()) < 80  # it was 1,300 lines of event-loop traceback


# --- the limits block ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ("limits: {real_time: 0}\n", "limits.real_time"),
        ("limits: {virtual_time: -5}\n", "limits.virtual_time"),
        ("limits: {evaluator_call: forever}\n", "limits.evaluator_call"),
        ("limits: {wall_time: 5}\n", "limits"),
    ],
)
def test_bad_limits_are_located_errors(limits: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as caught:
        load_scenario_text(scenario(limits=limits))
    assert caught.value.line == 8


def test_the_limits_of_docs_limits_md_load(tmp_path: Path) -> None:
    docs = Path(__file__).resolve().parent.parent / "docs" / "limits.md"
    block = docs.read_text(encoding="utf-8").split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "limits.loopsim.yaml"
    path.write_text(scenario(limits=block), encoding="utf-8")

    limits = load_scenario(path).scenario.limits

    assert (limits.virtual_time, limits.real_time, limits.evaluator_call) == (604800, 20, 600)
