# The programs below are hostile on purpose (huge sleeps, busy loops, swallowed
# cancellation): the async lint rules that flag exactly those patterns do not apply.
# ruff: noqa: ASYNC110, ASYNC115, ASYNC116, PERF203, S110, SIM105
"""Hostile programs on the virtual clock: huge horizons, sleep_forever, livelocks, busy
loops, the limits of a run, and the wall clock of other threads (issue 14, items 1, 2, 11).

Every program here would hang (or spin forever) without the fix it tests; each run has
a real-time limit of a few seconds, so a regression fails with ``RealTimeLimitError``
instead of hanging CI. Real durations are measured outside the runs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim import SimulationDeadlock, VirtualClock, simulate
from loopsim._errors import RealTimeLimitError, SimulationLimitError, VirtualTimeLimitError

Backend = Literal["asyncio", "trio"]
BACKENDS: list[Backend] = ["asyncio", "trio"]
backends = pytest.mark.parametrize("backend", BACKENDS)

# Captured in a container: freezegun rewrites module-level references to real time.
_REAL = (time.perf_counter, dt.datetime)
#: Real seconds any run here may take; a hang of the clock becomes RealTimeLimitError.
BOUND = 10.0


def real_now() -> float:
    return _REAL[0]()


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    began = real_now()
    try:
        result: Any = fn()
    except Exception as exc:  # the error is the result
        result = exc
    return result, real_now() - began


def run(
    fn: Callable[[], Awaitable[Any]], backend: Backend, **options: Any
) -> tuple[VirtualClock, Any, float]:
    options.setdefault("real_time_limit", BOUND)
    options.setdefault("wall_clock", False)
    clock = VirtualClock(**options)
    result, took = timed(lambda: clock.run(fn, backend=backend))
    return clock, result, took


# --- item 1: any horizon ------------------------------------------------------------------

HORIZONS = [2.0**24, 2.0**24 + 0.5, 1e9, 123_456_789_012.25, 1e12]


@backends
@pytest.mark.parametrize("horizon", HORIZONS, ids=[f"{h:g}" for h in HORIZONS])
def test_sleeping_to_a_huge_horizon_ends_there(backend: Backend, horizon: float) -> None:
    async def main() -> list[float]:
        await anyio.sleep(horizon)
        seen = [anyio.current_time()]
        for _ in range(3):  # keep going past the horizon: each timer must still be due
            await anyio.sleep(1)
            seen.append(anyio.current_time())
        return seen

    clock, seen, took = run(main, backend)

    assert seen == [horizon, horizon + 1, horizon + 2, horizon + 3]
    assert clock.elapsed == horizon + 3
    assert took < BOUND


@backends
def test_a_huge_advance_in_a_tool_and_a_timeout_after_it(backend: Backend) -> None:
    async def main() -> str:
        await anyio.sleep(1e9)  # a tool that sleeps a billion seconds
        with anyio.move_on_after(30) as scope:
            await anyio.sleep(60)
        return f"timed out: {scope.cancelled_caught}"

    clock, result, _ = run(main, backend)

    assert result == "timed out: True"
    assert clock.elapsed == 1e9 + 30


@settings(max_examples=25, deadline=None)
@given(
    start=st.floats(0, 1e12, allow_nan=False),
    delays=st.lists(st.floats(1e-6, 1e6, allow_nan=False), min_size=1, max_size=4),
)
def test_both_backends_agree_at_any_horizon(start: float, delays: list[float]) -> None:
    async def main() -> list[float]:
        await anyio.sleep(start)
        seen = [anyio.current_time()]
        for delay in delays:
            await anyio.sleep(delay)
            seen.append(anyio.current_time())
        return seen

    results = [run(main, backend)[1] for backend in BACKENDS]

    assert results[0] == results[1]
    assert results[0][0] == start
    assert all(later >= earlier for earlier, later in zip(results[0], results[0][1:], strict=False))


def test_a_timer_is_due_exactly_at_its_deadline_near_zero_too() -> None:
    # asyncio's own test is `when < now + 1e-9`: a deadline 1e-10 away fired without time
    # moving. Virtual time now reaches the deadline on asyncio as it does on trio.
    async def main() -> list[float]:
        seen = []
        for delay in (1e-10, 5e-324, 1e-10):
            await anyio.sleep(delay)
            seen.append(anyio.current_time())
        return seen

    assert run(main, "asyncio")[1] == run(main, "trio")[1] == [1e-10, 1e-10 + 5e-324, 2e-10]


@backends
@pytest.mark.parametrize("wall_clock", [False, True], ids=["wall-real", "wall-virtual"])
def test_sleep_forever_is_a_deadlock(backend: Backend, wall_clock: bool) -> None:
    async def main() -> None:
        await anyio.sleep_forever()

    clock, error, took = run(main, backend, wall_clock=wall_clock)

    assert isinstance(error, SimulationDeadlock)
    assert clock.elapsed == 0.0
    assert error.virtual_time == 0.0
    assert any("awaiting sleep_forever" in line for line in error.waiting), error.waiting
    assert took < BOUND


def test_an_asyncio_timer_at_infinity_is_no_deadline() -> None:
    async def main() -> None:
        await asyncio.sleep(float("inf"))

    clock, error, _ = run(main, "asyncio", wall_clock=True)

    assert isinstance(error, SimulationDeadlock)
    assert clock.elapsed == 0.0


@backends
def test_the_wall_clock_follows_a_horizon_of_half_a_year(backend: Backend) -> None:
    async def main() -> datetime:
        await anyio.sleep(2.0**24)
        return dt.datetime.now(timezone.utc)

    clock, seen, _ = run(main, backend, wall_clock=True)

    assert seen == clock.start + dt.timedelta(seconds=2**24)


@backends
def test_the_wall_clock_cannot_go_past_year_9999(backend: Backend) -> None:
    async def main() -> None:
        await anyio.sleep(100)
        await anyio.sleep(1e12)

    clock, error, _ = run(main, backend, wall_clock=True)

    assert isinstance(error, VirtualTimeLimitError)
    assert error.limit == "wall_clock_range"
    assert clock.elapsed == 100.0  # time never moved past what the wall clock can show
    assert error.value == (datetime.max.replace(tzinfo=timezone.utc) - clock.start).total_seconds()
    assert "wall_clock=False" in str(error)
    assert any("main awaiting sleep" in line for line in error.waiting), error.waiting


def test_now_past_year_9999_says_so_and_repr_still_works() -> None:
    async def main() -> None:
        await anyio.sleep(1e12)

    clock, _, _ = run(main, "asyncio")

    with pytest.raises(OverflowError, match=r"t=1e\+12s is past the last instant"):
        clock.now()
    assert "past year 9999" in repr(clock)


# --- the virtual-time budget ---------------------------------------------------------------


@backends
def test_a_run_may_move_time_up_to_its_budget_and_no_further(backend: Backend) -> None:
    async def ticker() -> None:
        while True:
            await anyio.sleep(7)

    clock, error, took = run(ticker, backend, virtual_time_limit=100)

    assert isinstance(error, VirtualTimeLimitError)
    assert (error.limit, error.value) == ("virtual_time", 100.0)
    assert clock.elapsed == 98.0  # the last tick within the budget; t=105 was refused
    assert error.virtual_time == 98.0
    text = str(error)
    assert "virtual_time_limit" in text
    assert "limits: {virtual_time" in text
    assert "next wake-up is at t=105s" in text
    assert any("ticker awaiting sleep" in line for line in error.waiting), error.waiting
    assert took < BOUND


@backends
def test_a_deadline_exactly_at_the_budget_is_allowed(backend: Backend) -> None:
    async def main() -> float:
        await anyio.sleep(100)
        return anyio.current_time()

    assert run(main, backend, virtual_time_limit=100)[1] == 100.0


@backends
def test_the_budget_is_per_run(backend: Backend) -> None:
    async def main() -> float:
        await anyio.sleep(60)
        return anyio.current_time()

    clock = VirtualClock(wall_clock=False, virtual_time_limit=60, real_time_limit=BOUND)

    assert clock.run(main, backend=backend) == 60.0
    assert clock.run(main, backend=backend) == 120.0  # a second run continues the timeline


def test_simulate_takes_the_limits() -> None:
    async def main() -> None:
        await anyio.sleep(10)

    with pytest.raises(VirtualTimeLimitError, match="by 5 s at most"):
        simulate(main, virtual_time_limit=5, real_time_limit=BOUND)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"virtual_time_limit": 0}, ValueError),
        ({"virtual_time_limit": -1.0}, ValueError),
        ({"virtual_time_limit": float("nan")}, ValueError),
        ({"real_time_limit": 0}, ValueError),
        ({"real_time_limit": "60"}, TypeError),
        ({"real_time_limit": True}, TypeError),
    ],
)
def test_limits_are_checked(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error, match="_time_limit must be"):
        VirtualClock(**options)


def test_the_default_watchdog_is_about_a_minute_and_can_be_turned_off() -> None:
    assert VirtualClock().real_time_limit == 60.0
    assert VirtualClock(real_time_limit=None).real_time_limit is None
    assert VirtualClock().virtual_time_limit is None


# --- item 2: livelocks and busy loops --------------------------------------------------------


async def swallow_cancellation() -> None:
    event = anyio.Event()
    while True:
        try:
            await event.wait()
        except anyio.get_cancelled_exc_class():
            pass  # swallowed: wait again


async def swallowing_child() -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(swallow_cancellation)


async def plain_asyncio_swallowing_child() -> None:
    async def child() -> None:
        while True:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                pass

    await asyncio.create_task(child())


async def plain_trio_swallowing_child() -> None:
    async def child() -> None:
        while True:
            try:
                await trio.Event().wait()
            except trio.Cancelled:
                pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(child)


LIVELOCKS = [
    ("asyncio", swallow_cancellation),
    ("trio", swallow_cancellation),
    ("asyncio", swallowing_child),
    ("trio", swallowing_child),
    ("asyncio", plain_asyncio_swallowing_child),
    ("trio", plain_trio_swallowing_child),
]


@pytest.mark.parametrize(
    ("backend", "program"), LIVELOCKS, ids=[f"{b}-{p.__name__}" for b, p in LIVELOCKS]
)
def test_a_deadlock_that_swallows_cancellation_still_ends(
    backend: Backend, program: Callable[[], Awaitable[None]]
) -> None:
    clock, error, took = run(program, backend, real_time_limit=None)

    assert isinstance(error, SimulationDeadlock), error
    assert clock.elapsed == 0.0
    assert any("awaiting Event.wait" in line for line in error.waiting), error.waiting
    assert took < BOUND  # two unwind grace periods of 0.5 s each, in practice


async def spin() -> None:
    while True:
        await anyio.sleep(0)


async def spin_and_swallow() -> None:
    while True:
        try:
            await anyio.sleep(0)
        except BaseException:  # the hostile part: it swallows everything
            pass


async def tick_forever() -> None:
    while True:
        await anyio.sleep(1)  # no cap: virtual time runs away, one jump at a time


BUSY = [spin, spin_and_swallow, tick_forever]


@backends
@pytest.mark.parametrize("program", BUSY, ids=[p.__name__ for p in BUSY])
def test_the_watchdog_stops_a_busy_loop(
    backend: Backend, program: Callable[[], Awaitable[None]]
) -> None:
    clock, error, took = run(program, backend, real_time_limit=0.5, wall_clock=True)

    assert isinstance(error, RealTimeLimitError), error
    assert isinstance(error, SimulationLimitError)
    assert (error.limit, error.value) == ("real_time", 0.5)
    assert error.virtual_time == clock.elapsed
    assert any(f"in {program.__name__} awaiting sleep" in line for line in error.waiting), (
        error.waiting
    )
    text = str(error)
    assert "real_time_limit" in text
    assert "limits: {real_time" in text
    assert 0.5 <= took < 0.5 + BOUND / 2


@backends
def test_a_quick_run_never_meets_its_watchdog(backend: Backend) -> None:
    async def main() -> str:
        await anyio.sleep(3600)
        return "done"

    for _ in range(20):
        assert run(main, backend, real_time_limit=0.05)[1] == "done"
    time.sleep(0.15)  # the alarms of the finished runs must stay silent
    assert run(main, backend, real_time_limit=0.05)[1] == "done"


@backends
def test_work_in_a_thread_counts_against_the_watchdog(backend: Backend) -> None:
    async def main() -> None:
        await anyio.to_thread.run_sync(time.sleep, 1.0)

    _, error, took = run(main, backend, real_time_limit=0.3)

    # The thread cannot be interrupted: the run ends when it returns, as a failure.
    assert isinstance(error, RealTimeLimitError)
    assert took < 1.0 + BOUND / 2


# --- item 11: another thread's frozen wall clock ---------------------------------------------


@backends
def test_a_real_time_simulation_does_not_see_another_threads_frozen_clock(
    backend: Backend,
) -> None:
    frozen_at = datetime(2000, 1, 1, tzinfo=timezone.utc)
    holding = threading.Event()
    release = threading.Event()
    seen: dict[str, Any] = {}

    async def frozen_main() -> tuple[datetime, datetime]:
        def in_worker() -> datetime:
            holding.set()
            release.wait(BOUND)
            return dt.datetime.now(timezone.utc)  # the simulation's own worker thread

        worker = await anyio.to_thread.run_sync(in_worker)
        return dt.datetime.now(timezone.utc), worker

    def other_thread() -> None:
        seen["frozen"] = simulate(frozen_main, start=frozen_at, real_time_limit=BOUND)

    async def real_main() -> tuple[datetime, float, float]:
        return dt.datetime.now(timezone.utc), time.time(), time.monotonic()

    thread = threading.Thread(target=other_thread)
    thread.start()
    try:
        assert holding.wait(BOUND)
        monotonic_before = time.monotonic()
        now, epoch, monotonic = simulate(
            real_main, backend=backend, wall_clock=False, real_time_limit=BOUND
        )
        outside = dt.datetime.now(timezone.utc)
    finally:
        release.set()
        thread.join(BOUND)

    real = _REAL[1].now(timezone.utc)
    assert abs((real - now).total_seconds()) < 60
    assert abs(real.timestamp() - epoch) < 60
    assert 0 <= monotonic - monotonic_before < 60
    assert abs((real - outside).total_seconds()) < 60  # plain code in this thread, too
    assert seen["frozen"] == (frozen_at, frozen_at)  # the frozen run and its worker thread


def test_an_executor_job_of_a_frozen_simulation_sees_its_clock() -> None:
    async def main() -> datetime:
        await asyncio.sleep(90)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: dt.datetime.now(timezone.utc))

    clock = VirtualClock(real_time_limit=BOUND)

    assert clock.run(main) == clock.start + dt.timedelta(seconds=90)


# --- docs/limits.md ------------------------------------------------------------------------

LIMITS_DOC = Path(__file__).resolve().parent.parent / "docs" / "limits.md"


@pytest.mark.parametrize(
    "code",
    re.findall(r"```python\n(.*?)```", LIMITS_DOC.read_text(encoding="utf-8"), flags=re.DOTALL),
    ids=lambda code: code.splitlines()[-1].strip()[:40],
)
def test_the_examples_of_docs_limits_run(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, "docs/limits.md", "exec"), {"__name__": "limits_doc"})  # noqa: S102
    capsys.readouterr()
