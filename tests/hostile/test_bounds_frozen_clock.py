"""A busy wait on the frozen virtual clock ends with the real-time limit (issue 26, item 2).

Inside a simulation with a virtual wall clock, ``time.perf_counter``, ``time.monotonic``
and ``time.time`` follow virtual time, which stands still while code runs without
awaiting. Code that times itself by them (``while perf_counter() - t0 < 1: pass``) spun
for ever: the watchdog hands its stop to the event loop, which such code never lets run.
Now every read of the frozen clock fails once the run is past its real-time limit.

Each program runs in a daemon thread joined with a bound, so a regression fails here
instead of hanging the suite.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

import loopsim
from loopsim import RealTimeLimitError, simulate
from loopsim.testing import check_evaluator

_REAL = (time.perf_counter,)
BOUND = 15.0  # real seconds before the test gives up on a run


def bounded(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()``'s result (or exception) and its real duration; fails the test past BOUND."""
    out: list[Any] = []

    def target() -> None:
        began = _REAL[0]()
        try:
            out.append(fn())
        except Exception as exc:  # the error is the result
            out.append(exc)
        out.append(_REAL[0]() - began)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), f"still running after {BOUND} real seconds"
    return out[0], out[1]


# Lambdas: the functions are looked up when called, as freezegun patches them.
CLOCKS: dict[str, Callable[[], float]] = {
    "perf_counter": lambda: time.perf_counter(),  # noqa: PLW0108
    "monotonic": lambda: time.monotonic(),  # noqa: PLW0108
    "time": lambda: time.time(),  # noqa: PLW0108
}


@pytest.mark.parametrize("read", CLOCKS.values(), ids=CLOCKS.keys())
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_busy_wait_on_a_frozen_clock_ends_with_the_real_time_limit(
    backend: str, read: Callable[[], float]
) -> None:
    async def spin() -> str:
        began = read()
        while read() - began < 1:
            pass
        return "waited a second"

    error, took = bounded(lambda: simulate(spin, backend=backend, real_time_limit=0.3))

    assert isinstance(error, RealTimeLimitError)
    assert error.limit == "real_time"
    assert "frozen virtual clock" in str(error)
    assert took < 3


def test_the_frozen_clock_is_virtual_time_before_the_limit() -> None:
    async def timed_sleep() -> float:
        began = time.perf_counter()
        await anyio.sleep(3600)
        return time.perf_counter() - began

    assert simulate(timed_sleep) == pytest.approx(3600)


def test_a_swallowed_frozen_clock_error_still_fails_the_run() -> None:
    async def stubborn() -> str:
        began = time.perf_counter()
        while True:
            try:
                if time.perf_counter() - began >= 1:
                    return "waited"
            except RealTimeLimitError:  # noqa: PERF203 - swallowing it is the point
                return "swallowed"

    error, _ = bounded(lambda: simulate(stubborn, real_time_limit=0.3))

    assert isinstance(error, RealTimeLimitError)


class TimedByPerfCounter(loopsim.LoopEvaluator):
    """Waits one second by the clock, as code that times itself does."""

    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        began = time.perf_counter()
        while time.perf_counter() - began < 1:
            pass
        return loopsim.LoopEvaluation.stop()


def test_check_evaluator_ends_an_evaluator_that_waits_on_perf_counter() -> None:
    report, took = bounded(
        lambda: check_evaluator(TimedByPerfCounter, max_examples=3, call_time_limit=0.2)
    )

    assert not isinstance(report, Exception), report
    assert not report.passed
    assert not report["within_budget"].passed
    assert took < 8
