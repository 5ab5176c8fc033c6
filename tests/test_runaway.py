# The programs below are runaway loops on purpose (busy loops, loops that never await).
# ruff: noqa: ASYNC110, ASYNC115, ASYNC251, PERF203, PT018, SIM105
"""Runaway loops end deterministically (issue 21 item 11).

* more than ``max_steps_per_instant`` steps at one virtual instant, or more than
  ``max_model_calls`` model calls in all, end a run with ``RunawayLoopError`` naming the
  task, the agent and the loop: counts, so the same on any machine, on both backends and
  both engines (Python parameters and scenario ``limits:``);
* the real-time watchdog ends code that never suspends (``while True: pass``) by
  interrupting it between bytecodes in the main thread (SIGALRM handler, restored
  afterwards); off it, a run is stopped at its next suspension;
* a long loop keeps no more objects per iteration than its history needs.
"""

from __future__ import annotations

import gc
import signal
import threading
import time
from typing import Any, Literal

import anyio
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import (
    DelegateLoopEvaluator,
    LoopAgent,
    LoopAgentOptions,
    LoopEvaluation,
    RealTimeLimitError,
    RunawayLoopError,
    simulate,
)
from loopsim._scenario import load_scenario_text, run_scenario

Backend = Literal["asyncio", "trio"]
backends = pytest.mark.parametrize("backend", ["asyncio", "trio"])
_REAL = (time.perf_counter,)  # freezegun rewrites module-level references to real time


async def spin() -> None:
    while True:
        await anyio.sleep(0)


def _endless_loop(client: Any, *, name: str = "writer") -> LoopAgent:
    agent = loopsim.Agent(client, name=name)
    again = DelegateLoopEvaluator(lambda _context: LoopEvaluation.continue_with_feedback("more"))
    return LoopAgent(agent, [again], LoopAgentOptions(max_iterations=10**9))


def _zero_delay_model() -> loopsim.FunctionChatClient:
    return loopsim.FunctionChatClient(lambda *_args, **_kwargs: "again")


# -- steps at one instant ----------------------------------------------------------------


@backends
def test_a_loop_that_never_lets_time_move_ends_at_the_step_limit(backend: Backend) -> None:
    clock = loopsim.VirtualClock(max_steps_per_instant=2_000, real_time_limit=30)
    with pytest.raises(RunawayLoopError) as caught:
        clock.run(spin, backend=backend)
    error = caught.value
    assert error.limit == "steps_per_instant"
    assert error.value == 2_000
    assert error.task is not None
    assert "Task 'spin'" in error.task
    assert "in spin" in error.task
    assert "max_steps_per_instant" in str(error)
    assert "steps_per_instant" in error.setting
    assert clock.elapsed == 0.0


@settings(max_examples=10, deadline=None)
@given(limit=st.integers(50, 400), naps=st.integers(1, 30))
def test_the_step_count_starts_again_whenever_time_moves(limit: int, naps: int) -> None:
    # Each nap moves time, so a program of many short bursts never reaches the limit,
    # while one burst longer than the limit always does, on both backends alike.
    async def bursts() -> int:
        for _ in range(naps):
            for _ in range(limit // 4):
                await anyio.sleep(0)
            await anyio.sleep(1)
        return naps

    async def one_long_burst() -> None:
        for _ in range(limit * 2):
            await anyio.sleep(0)

    for backend in ("asyncio", "trio"):
        assert simulate(bursts, backend=backend, max_steps_per_instant=limit) == naps
        with pytest.raises(RunawayLoopError):
            simulate(one_long_burst, backend=backend, max_steps_per_instant=limit)


@backends
def test_the_step_limit_can_be_lifted(backend: Backend) -> None:
    async def many_steps() -> int:
        for _ in range(3_000):
            await anyio.sleep(0)
        return 3_000

    with pytest.raises(RunawayLoopError):
        simulate(many_steps, backend=backend, max_steps_per_instant=1_000)
    assert simulate(many_steps, backend=backend, max_steps_per_instant=None) == 3_000


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_limits_are_checked(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="max_steps_per_instant"):
        loopsim.VirtualClock(max_steps_per_instant=bad)  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError), match="max_model_calls"):
        loopsim.VirtualClock(max_model_calls=bad)  # type: ignore[arg-type]


# -- model calls --------------------------------------------------------------------------


@backends
def test_an_uncapped_loop_against_a_zero_delay_model_ends_at_the_call_limit(
    backend: Backend,
) -> None:
    # The case: this loop never suspends, so neither the step count nor the
    # event loop ever gets control; the call count does, on every model call.
    client = _zero_delay_model()
    loop = _endless_loop(client)
    began = _REAL[0]()
    with pytest.raises(RunawayLoopError) as caught:
        simulate(loop.run, "go", backend=backend, max_model_calls=40, real_time_limit=30)
    assert _REAL[0]() - began < 10
    error = caught.value
    assert error.limit == "model_calls"
    assert error.value == 40
    assert (error.agent, error.loop, error.iteration) == ("writer", loop._loop_name, 41)
    assert len(client.requests) == 40  # the 41st call was refused before the model saw it
    assert f"call 41 was by agent 'writer' (loop {loop._loop_name!r}, iteration 41)" in str(error)


def test_the_call_limit_ends_the_same_way_on_every_run_and_backend() -> None:
    texts = set()
    for backend in ("asyncio", "trio", "asyncio"):
        with pytest.raises(RunawayLoopError) as caught:
            simulate(
                _endless_loop(_zero_delay_model()).run, "go", backend=backend, max_model_calls=9
            )
        texts.add(str(caught.value))
    assert len(texts) == 1


def test_a_limit_error_swallowed_by_user_code_still_ends_the_run() -> None:
    async def stubborn() -> str:
        agent = loopsim.Agent(_zero_delay_model(), name="stubborn")
        for _ in range(100):
            try:
                await agent.run("again")
            except RunawayLoopError:
                pass  # hostile: carry on regardless
        return "finished"

    with pytest.raises(RunawayLoopError) as caught:
        simulate(stubborn, max_model_calls=5)
    assert caught.value.agent == "stubborn"


def test_record_takes_the_limits() -> None:
    with pytest.raises(RunawayLoopError) as caught:
        loopsim.record(_endless_loop(_zero_delay_model()).run, "go", max_model_calls=3)
    assert caught.value.value == 3
    with pytest.raises(TypeError, match="max_model_cals"):
        loopsim.record(_endless_loop(_zero_delay_model()).run, "go", max_model_cals=3)


SCENARIO = """\
version: 1
engine: {engine}
backend: {backend}
agents:
  writer:
    script: [{script}]
parent: {{agent: writer}}
loop:
  evaluators: [completion_marker]
  max_iterations: 30
limits:
  model_calls: 7
steps:
  - run: write
expect:
  iterations: 30
"""


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
@backends
def test_a_scenario_file_sets_the_call_limit_on_both_engines(engine: str, backend: Backend) -> None:
    if engine == "agent_framework" and backend == "trio":
        pytest.skip("the agent_framework engine runs on asyncio only")
    text = SCENARIO.format(engine=engine, backend=backend, script=", ".join(["draft"] * 30))
    result = run_scenario(load_scenario_text(text))
    assert isinstance(result.error, RunawayLoopError), result.error
    assert result.error.limit == "model_calls"
    assert result.error.agent == "writer"
    assert "limits: {model_calls: ...}" in result.error.setting
    # the same file with the limit lifted runs all 30 iterations
    lifted = run_scenario(load_scenario_text(text.replace("model_calls: 7", "model_calls: null")))
    assert lifted.error is None and lifted.passed, lifted.failures


def test_a_scenario_file_refuses_a_bad_count() -> None:
    text = SCENARIO.format(engine="loopsim", backend="asyncio", script="a").replace(
        "model_calls: 7", "steps_per_instant: 0"
    )
    with pytest.raises(loopsim.ScenarioError) as caught:
        load_scenario_text(text)
    assert "limits.steps_per_instant" in str(caught.value)


# -- the watchdog interrupts code that never suspends --------------------------------------


def busy() -> None:
    while True:
        pass


@backends
def test_the_watchdog_interrupts_a_tool_that_never_suspends(backend: Backend) -> None:
    @loopsim.tool
    def forever(city: str) -> str:
        busy()
        return city  # pragma: no cover - never reached

    call = loopsim.FunctionCallContent(call_id="c1", name="forever", arguments={"city": "Oslo"})
    client = loopsim.ScriptedChatClient([loopsim.Message("assistant", [call])])
    agent = loopsim.Agent(client, name="looper", tools=[forever])
    began = _REAL[0]()
    with pytest.raises(RealTimeLimitError) as caught:
        simulate(agent.run, "go", backend=backend, real_time_limit=0.2)
    took = _REAL[0]() - began
    assert took < 1.8, took
    assert "test_runaway.py" in caught.value.problem
    assert "in busy" in caught.value.problem
    assert caught.value.waiting
    assert "in busy" in caught.value.waiting[0]


@backends
def test_the_watchdog_interrupts_an_evaluator_that_never_suspends(backend: Backend) -> None:
    def never_decides(_context: Any) -> LoopEvaluation:
        busy()
        return LoopEvaluation.stop()  # pragma: no cover - never reached

    agent = loopsim.Agent(loopsim.ScriptedChatClient(["draft"]), name="writer")
    loop = LoopAgent(agent, [DelegateLoopEvaluator(never_decides)])
    with pytest.raises(RealTimeLimitError) as caught:
        simulate(loop.run, "go", backend=backend, real_time_limit=0.2)
    assert "in busy" in caught.value.problem


def test_off_the_main_thread_a_run_is_stopped_at_its_next_suspension() -> None:
    # no interruption there (signal handlers run in the main thread only): code that spins
    # for a while past the limit is stopped once it lets the loop run again
    async def main() -> None:
        end = _REAL[0]() + 0.6
        while _REAL[0]() < end:
            pass
        while True:
            await anyio.sleep(0)

    outcome: list[BaseException] = []

    def in_a_thread() -> None:
        try:
            simulate(main, real_time_limit=0.2)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    assert isinstance(outcome[0], RealTimeLimitError)


def test_the_sigalrm_handler_is_restored_and_real_alarms_pass_through() -> None:
    seen: list[int] = []

    def mine(signum: int, _frame: object) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGALRM, mine)
    try:

        async def raise_a_real_alarm() -> str:
            signal.raise_signal(signal.SIGALRM)  # not loopsim's: goes to `mine`
            await anyio.sleep(1)
            return "ok"

        assert simulate(raise_a_real_alarm) == "ok"
        assert seen == [signal.SIGALRM]
        assert signal.getsignal(signal.SIGALRM) is mine
        with pytest.raises(RealTimeLimitError):
            simulate(_busy_main, real_time_limit=0.2)
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no timer was set
    finally:
        signal.signal(signal.SIGALRM, previous)


async def _busy_main() -> None:
    busy()


def test_no_interruption_reaches_code_after_the_run() -> None:
    # A run that ends just as the watchdog would interrupt it leaves nothing pending.
    async def blocks_then_ends() -> str:
        time.sleep(0.5)  # blocking: the loop cannot take the alarm
        return "done"

    with pytest.raises(RealTimeLimitError):
        simulate(blocks_then_ends, real_time_limit=0.1)
    for _ in range(200_000):  # plenty of bytecodes for a stray interruption to land in
        pass
    assert simulate(spin_briefly) == "done"


async def spin_briefly() -> str:
    await anyio.sleep(1)
    return "done"


def test_the_watchdog_does_not_fire_in_a_normal_run() -> None:
    async def slow_but_fine() -> str:
        for _ in range(5):
            await anyio.sleep(3600)
            await trio_free_yield()
        return "fine"

    assert simulate(slow_but_fine, real_time_limit=0.5) == "fine"


async def trio_free_yield() -> None:
    await anyio.lowlevel.checkpoint()


# -- memory of a long loop ----------------------------------------------------------------


def _retained_after(iterations: int, *, recorded: bool) -> int:
    client = loopsim.FunctionChatClient(lambda *_args, **_kwargs: "again")
    agent = loopsim.Agent(client, name="writer")
    again = DelegateLoopEvaluator(lambda _context: LoopEvaluation.continue_with_feedback("more"))
    loop = LoopAgent(agent, [again], LoopAgentOptions(max_iterations=iterations))
    gc.collect()
    before = len(gc.get_objects())
    result = loopsim.record(loop.run, "go") if recorded else simulate(loop.run, "go")
    gc.collect()
    after = len(gc.get_objects())
    del result, client, agent, loop
    return after - before


@pytest.mark.parametrize("recorded", [False, True])
def test_a_long_loop_keeps_a_fixed_number_of_objects_per_iteration(recorded: bool) -> None:
    # Objects still alive after the run (the response, the client's request log, the
    # transcript) grow linearly with iterations, never faster: the growth from 100 to 400
    # iterations is about three times that from 0 to 100 (with slack), not 15 times.
    _retained_after(10, recorded=recorded)  # warm caches and imports
    small = _retained_after(100, recorded=recorded)
    large = _retained_after(400, recorded=recorded)
    per_small = small / 100
    per_large = (large - small) / 300
    assert per_large <= per_small * 1.5 + 5, (small, large)


def test_trio_is_installed() -> None:
    assert trio.__version__


def _af_retained_after(iterations: int) -> int:
    import agent_framework as af

    from loopsim.agent_framework import as_chat_client

    def more(*, iteration: int, **_: Any) -> bool:
        return iteration < iterations

    agent = af.Agent(
        client=as_chat_client(loopsim.FunctionChatClient(lambda *_args, **_kwargs: "again")),
        name="writer",
        middleware=[af.AgentLoopMiddleware(more, max_iterations=iterations)],
    )

    async def main() -> str:
        session = agent.create_session()
        return (await agent.run("go", session=session)).text

    gc.collect()
    before = len(gc.get_objects())
    simulate(main)
    gc.collect()
    return len(gc.get_objects()) - before


@pytest.mark.filterwarnings("ignore")
def test_a_long_agent_framework_loop_keeps_a_fixed_number_of_objects_per_iteration() -> None:
    # agent_framework sends shallow copies of the whole history on every model call; the
    # adapter used to convert (and keep) every copy: objects per iteration grew with the
    # loop's length (about 1,200 per iteration from 20 to 60 iterations, 300 up to 20).
    _af_retained_after(3)
    small = _af_retained_after(20)
    large = _af_retained_after(60)
    per_small = small / 20
    per_large = (large - small) / 40
    assert per_large <= per_small * 1.5 + 5, (small, large)


def test_the_limits_block_of_docs_limits_md_sets_the_runaway_limits() -> None:
    from pathlib import Path

    docs = Path(__file__).resolve().parent.parent / "docs" / "limits.md"
    block = docs.read_text(encoding="utf-8").split("```yaml\n", 1)[1].split("```", 1)[0]
    text = SCENARIO.format(engine="loopsim", backend="asyncio", script="a").replace(
        "limits:\n  model_calls: 7\n", block
    )
    limits = load_scenario_text(text).scenario.limits
    assert (limits.model_calls, limits.steps_per_instant) == (500, 50_000)
