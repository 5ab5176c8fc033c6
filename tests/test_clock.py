"""Tests of the virtual clock (loopsim._clock) on both backends.

Every test calls ``clock.run`` / ``simulate`` from plain synchronous code: the clock owns
the event loop. Real durations are measured outside the run (inside, freezegun makes
``time.perf_counter`` virtual too).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import doctest
import os
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Literal

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim._clock
from loopsim import _trace
from loopsim._clock import DEFAULT_START, VirtualClock, current_clock, simulate
from loopsim._errors import SimulationDeadlock
from loopsim._trace import Event, Trace

Backend = Literal["asyncio", "trio"]
BACKENDS: list[Backend] = ["asyncio", "trio"]
backends = pytest.mark.parametrize("backend", BACKENDS)

# Captured in containers: freezegun rewrites module-level references to the real time
# functions while a run freezes the wall clock, but not references held in a tuple.
_REAL = (time.perf_counter, time.time, dt.datetime)


def real_perf_counter() -> float:
    return _REAL[0]()


def blocking_work() -> str:
    time.sleep(0.05)  # a real sleep in a worker thread (freezegun leaves time.sleep alone)
    return "thread done"


# --- virtual time -------------------------------------------------------------------


@backends
def test_an_hour_of_sleep_takes_no_real_time(backend: Backend) -> None:
    clock = VirtualClock()

    async def main() -> float:
        await anyio.sleep(3600)
        return anyio.current_time()

    began = real_perf_counter()
    inner_time = clock.run(main, backend=backend)
    real = real_perf_counter() - began

    assert real < 1.0
    assert clock.elapsed == 3600.0
    assert inner_time == 3600.0
    assert clock.now() == DEFAULT_START + timedelta(hours=1)


@backends
def test_time_starts_at_zero_and_moves_only_by_jumps(backend: Backend) -> None:
    async def main() -> list[float]:
        seen = [anyio.current_time()]
        for delay in (0.25, 1e-6, 86_400 * 3):  # sub-µs exact near 0; > asyncio's 24 h cap
            await anyio.sleep(delay)
            seen.append(anyio.current_time())
        return seen

    assert simulate(main, backend=backend) == [0.0, 0.25, 0.25 + 1e-6, 0.25 + 1e-6 + 86_400 * 3]


@backends
def test_fail_after_and_move_on_after_use_virtual_time(backend: Backend) -> None:
    async def main() -> tuple[float, float, bool]:
        with pytest.raises(TimeoutError):
            with anyio.fail_after(2):
                await anyio.sleep(10)
        timed_out_at = anyio.current_time()
        with anyio.move_on_after(3) as scope:
            await anyio.Event().wait()  # would deadlock without the deadline
        return timed_out_at, anyio.current_time(), scope.cancelled_caught

    assert simulate(main, backend=backend) == (2.0, 5.0, True)


@backends
def test_ready_work_runs_before_time_jumps(backend: Backend) -> None:
    # The trap looptime and trio's autojump avoid: a timeout must not fire while the
    # work it races is runnable. Scheduled work takes no virtual time at all.
    async def main() -> tuple[str, float]:
        done = anyio.Event()

        async def worker() -> None:
            for _ in range(50):
                await anyio.lowlevel.checkpoint()
            done.set()

        with anyio.fail_after(1e-9):
            async with anyio.create_task_group() as tg:
                tg.start_soon(worker)
                await done.wait()
        return "finished in time", anyio.current_time()

    assert simulate(main, backend=backend) == ("finished in time", 0.0)


def test_asyncio_callback_chains_run_before_time_jumps() -> None:
    async def main() -> str:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()

        def hop(n: int) -> None:
            if n == 0:
                future.set_result("resolved")
            else:
                loop.call_soon(hop, n - 1)

        loop.call_soon(hop, 50)
        return await asyncio.wait_for(future, timeout=1e-9)

    assert simulate(main, backend="asyncio") == "resolved"


def test_asyncio_sleep_and_wait_for_are_virtual() -> None:
    async def main() -> tuple[float, float]:
        await asyncio.sleep(5)
        after_sleep = asyncio.get_running_loop().time()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.sleep(100), timeout=3)
        return after_sleep, asyncio.get_running_loop().time()

    began = real_perf_counter()
    assert simulate(main, backend="asyncio") == (5.0, 8.0)
    assert real_perf_counter() - began < 1.0


def test_trio_sleep_and_fail_after_are_virtual() -> None:
    async def main() -> tuple[float, float]:
        await trio.sleep(5)
        after_sleep = trio.current_time()
        with pytest.raises(trio.TooSlowError), trio.fail_after(3):
            await trio.sleep_forever()
        return after_sleep, trio.current_time()

    assert simulate(main, backend="trio") == (5.0, 8.0)


def test_asyncio_run_uses_a_fresh_loop_that_is_closed_and_never_installed() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def main() -> None:
        loops.append(asyncio.get_running_loop())

    simulate(main)
    simulate(main)

    first, second = loops
    assert first is not second
    assert first.is_closed()
    assert second.is_closed()
    assert type(first).__name__ == "VirtualEventLoop"


# --- wall clock ---------------------------------------------------------------------


@backends
def test_wall_clock_follows_virtual_time(backend: Backend) -> None:
    start = datetime(2030, 5, 17, 8, 30, tzinfo=timezone.utc)

    async def main() -> list[tuple[datetime, datetime, float]]:
        seen = []
        for _ in range(2):
            naive = datetime.now()  # noqa: DTZ005 - the naive reading is under test too
            seen.append((datetime.now(timezone.utc), naive, time.time()))
            await anyio.sleep(90.5)
        return seen

    seen = simulate(main, backend=backend, start=start)

    for i, (aware, naive, epoch) in enumerate(seen):
        expected = start + timedelta(seconds=90.5 * i)
        assert aware == expected
        assert naive == expected.replace(tzinfo=None)  # freezegun's local zone is UTC
        assert epoch == expected.timestamp()


@backends
def test_wall_clock_is_real_again_after_the_run(backend: Backend) -> None:
    async def main() -> None:
        await anyio.sleep(1)

    simulate(main, backend=backend, start=datetime(2001, 1, 1, tzinfo=timezone.utc))

    assert time.time is _REAL[1]
    assert dt.datetime is _REAL[2]
    assert datetime.now(timezone.utc).year > 2020


@backends
def test_wall_clock_false_leaves_real_time_alone(backend: Backend) -> None:
    async def main() -> tuple[int, bool]:
        await anyio.sleep(1)
        return datetime.now(timezone.utc).year, time.time is _REAL[1]

    year, real_time_function = simulate(
        main, backend=backend, start=datetime(2001, 1, 1, tzinfo=timezone.utc), wall_clock=False
    )
    assert year > 2020
    assert real_time_function


def test_start_must_be_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        VirtualClock(datetime(2026, 1, 1))  # noqa: DTZ001 - the naive value is the point


def test_aware_start_in_another_zone_is_converted_to_utc() -> None:
    paris_summer = timezone(timedelta(hours=2))
    clock = VirtualClock(datetime(2026, 7, 1, 12, 0, tzinfo=paris_summer))

    assert clock.now() == datetime(2026, 7, 1, 10, 0, tzinfo=timezone.utc)
    assert clock.now().utcoffset() == timedelta(0)


# --- ties ---------------------------------------------------------------------------


async def wake_order(checkpoints: list[int]) -> list[int]:
    """Task i passes checkpoints[i] scheduling points, then sleeps 1 s; all wake at t=1."""
    woke: list[int] = []

    async def sleeper(i: int) -> None:
        for _ in range(checkpoints[i]):
            await anyio.lowlevel.checkpoint()
        await anyio.sleep(1)
        woke.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(len(checkpoints)):
            tg.start_soon(sleeper, i)
    assert anyio.current_time() == 1.0
    return woke


TIE_CASES = {
    "same-start": [0] * 12,
    "staggered-starts": [3, 0, 2, 0, 1, 3, 1, 2, 0, 4, 2, 1],
}


@pytest.mark.parametrize("checkpoints", TIE_CASES.values(), ids=TIE_CASES.keys())
@backends
def test_equal_deadlines_wake_first_to_sleep_first(
    backend: Backend, checkpoints: list[int]
) -> None:
    expected = sorted(range(len(checkpoints)), key=lambda i: (checkpoints[i], i))

    orders = [simulate(wake_order, checkpoints, backend=backend) for _ in range(5)]

    assert orders == [expected] * 5


@pytest.mark.parametrize("checkpoints", TIE_CASES.values(), ids=TIE_CASES.keys())
def test_equal_deadlines_agree_across_backends(checkpoints: list[int]) -> None:
    on_asyncio = simulate(wake_order, checkpoints, backend="asyncio")
    on_trio = simulate(wake_order, checkpoints, backend="trio")

    assert on_asyncio == on_trio


async def wake_order_at(plan: list[tuple[int, int]]) -> list[int]:
    """Task i passes plan[i][1] scheduling points, then sleeps plan[i][0] seconds."""
    woke: list[int] = []

    async def sleeper(i: int) -> None:
        delay, checkpoints = plan[i]
        for _ in range(checkpoints):
            await anyio.lowlevel.checkpoint()
        await anyio.sleep(delay)
        woke.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(len(plan)):
            tg.start_soon(sleeper, i)
    return woke


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=40))
def test_timers_fire_by_deadline_then_by_who_slept_first(plan: list[tuple[int, int]]) -> None:
    expected = sorted(range(len(plan)), key=lambda i: (plan[i][0], plan[i][1], i))

    assert simulate(wake_order_at, plan, wall_clock=False) == expected
    assert simulate(wake_order_at, plan, backend="trio", wall_clock=False) == expected


async def ping_pong_log() -> list[tuple[float, str]]:
    """A little concurrent program: timeouts, events, a stream, ties; logs what happens."""
    log: list[tuple[float, str]] = []
    send, receive = anyio.create_memory_object_stream[int](1)
    ready = anyio.Event()

    def note(what: str) -> None:
        log.append((anyio.current_time(), what))

    async def producer() -> None:
        async with send:
            for n in range(3):
                await anyio.sleep(0.5 * n)
                await send.send(n)
                note(f"sent {n}")

    async def consumer() -> None:
        async with receive:
            async for n in receive:
                note(f"got {n}")
        ready.set()

    async def watcher(k: int) -> None:
        with anyio.move_on_after(1.5):
            await ready.wait()
            note(f"watcher {k} saw ready")
            return
        note(f"watcher {k} timed out")

    async with anyio.create_task_group() as tg:
        tg.start_soon(producer)
        tg.start_soon(consumer)
        for k in range(3):
            tg.start_soon(watcher, k)
    return log


def test_a_concurrent_program_runs_the_same_on_both_backends_every_time() -> None:
    runs = [simulate(ping_pong_log, backend=b) for b in BACKENDS for _ in range(3)]

    assert all(run == runs[0] for run in runs)
    # At t=1.5 the watchers' deadlines (set at t=0) tie with the producer's last sleep
    # (set at t=0.5): first scheduled, first fired.
    assert runs[0] == [
        (0.0, "sent 0"),
        (0.0, "got 0"),
        (0.5, "sent 1"),
        (0.5, "got 1"),
        (1.5, "watcher 0 timed out"),
        (1.5, "watcher 1 timed out"),
        (1.5, "watcher 2 timed out"),
        (1.5, "sent 2"),
        (1.5, "got 2"),
    ]


# --- deadlocks ----------------------------------------------------------------------


async def never_set_event() -> None:
    async def wait_for_reply(event: anyio.Event) -> None:
        await event.wait()

    event = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(wait_for_reply, event, name="child-1")
        await anyio.sleep(7)


async def receive_without_sender() -> None:
    send, receive = anyio.create_memory_object_stream[str]()
    async with send, receive:
        await anyio.sleep(2)
        await receive.receive()


@backends
def test_deadlock_on_an_event_nobody_sets(backend: Backend) -> None:
    with pytest.raises(SimulationDeadlock, match="simulation deadlock") as caught:
        VirtualClock(seed=42).run(never_set_event, backend=backend)

    error = caught.value
    assert error.virtual_time == 7.0
    assert error.seed == 42
    assert len(error.waiting) == 2
    child = next(line for line in error.waiting if "'child-1'" in line)
    assert "test_clock.py:" in child
    assert "in never_set_event.<locals>.wait_for_reply awaiting Event.wait" in child
    main = next(line for line in error.waiting if "'never_set_event'" in line)
    assert "TaskGroup.__aexit__" in main


@backends
def test_deadlock_on_a_stream_without_sender(backend: Backend) -> None:
    with pytest.raises(SimulationDeadlock, match=r"MemoryObjectReceiveStream\.receive") as caught:
        simulate(receive_without_sender, backend=backend)

    assert caught.value.virtual_time == 2.0
    (only,) = caught.value.waiting
    assert "in receive_without_sender awaiting MemoryObjectReceiveStream.receive" in only


def test_deadlock_on_an_asyncio_future_never_resolved() -> None:
    async def main() -> None:
        await asyncio.get_running_loop().create_future()

    with pytest.raises(SimulationDeadlock, match=r"Task 'test_deadlock_on_an_asyncio.*Future"):
        simulate(main, backend="asyncio")


def test_deadlock_on_a_trio_event() -> None:
    async def main() -> None:
        await trio.Event().wait()

    with pytest.raises(SimulationDeadlock, match=r"awaiting Event.wait"):
        simulate(main, backend="trio")


@backends
def test_deadlock_inside_a_shielded_scope_still_ends_the_run(backend: Backend) -> None:
    async def main() -> None:
        async def stuck() -> None:
            with anyio.CancelScope(shield=True):
                await anyio.Event().wait()

        async with anyio.create_task_group() as tg:
            tg.start_soon(stuck, name="stuck")

    with pytest.raises(SimulationDeadlock, match=r"Task 'stuck' .* awaiting Event.wait"):
        simulate(main, backend=backend)


@backends
def test_a_task_waiting_on_real_io_is_not_a_deadlock(backend: Backend) -> None:
    # The writer is a plain thread the clock cannot see; the watched socket is what
    # keeps the loop waiting for real instead of declaring a deadlock.
    left, right = socket.socketpair()
    writer = threading.Timer(0.05, right.send, args=(b"x",))

    async def main() -> bytes:
        writer.start()
        await anyio.wait_readable(left)
        return left.recv(1)

    try:
        assert simulate(main, backend=backend) == b"x"
    finally:
        writer.join()
        left.close()
        right.close()


# --- threads ------------------------------------------------------------------------


@backends
def test_time_stands_still_while_a_worker_thread_works(backend: Backend) -> None:
    async def main() -> list[tuple[str, float]]:
        done: list[tuple[str, float]] = []

        async def in_thread() -> None:
            done.append((await anyio.to_thread.run_sync(blocking_work), anyio.current_time()))

        async def sleeper() -> None:
            await anyio.sleep(10)
            done.append(("slept", anyio.current_time()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(in_thread)
            tg.start_soon(sleeper)
        return done

    assert simulate(main, backend=backend) == [("thread done", 0.0), ("slept", 10.0)]


@pytest.mark.parametrize("own_limiter", [False, True], ids=["default-limiter", "own-limiter"])
@backends
def test_waiting_only_for_a_thread_is_not_a_deadlock(backend: Backend, own_limiter: bool) -> None:
    async def main() -> str:
        limiter = anyio.CapacityLimiter(1) if own_limiter else None
        return await anyio.to_thread.run_sync(blocking_work, limiter=limiter)

    assert simulate(main, backend=backend) == "thread done"


@pytest.mark.parametrize(
    "offload",
    [
        pytest.param(lambda: asyncio.to_thread(blocking_work), id="asyncio.to_thread"),
        pytest.param(
            lambda: asyncio.get_running_loop().run_in_executor(None, blocking_work),
            id="run_in_executor",
        ),
    ],
)
def test_asyncio_executor_jobs_hold_time_too(offload: Callable[[], asyncio.Future[str]]) -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        done: list[tuple[str, float]] = []

        async def in_thread() -> None:
            done.append((await offload(), loop.time()))

        async def sleeper() -> None:
            await asyncio.sleep(10)
            done.append(("slept", loop.time()))

        await asyncio.gather(in_thread(), sleeper())
        return done

    assert simulate(main, backend="asyncio") == [("thread done", 0.0), ("slept", 10.0)]


# --- results, errors, state -----------------------------------------------------------


class ScenarioFailedError(Exception):
    pass


@pytest.mark.parametrize(
    "error_type", [ScenarioFailedError, ValueError, KeyboardInterrupt, SystemExit]
)
@backends
def test_exceptions_propagate_unchanged(backend: Backend, error_type: type[BaseException]) -> None:
    async def main() -> None:
        await anyio.sleep(1)
        raise error_type("boom at t=1")

    clock = VirtualClock()
    with pytest.raises(error_type, match="boom at t=1") as caught:
        clock.run(main, backend=backend)

    assert type(caught.value) is error_type
    assert clock.elapsed == 1.0


@backends
def test_elapsed_and_now_are_live_during_and_kept_after_the_run(backend: Backend) -> None:
    clock = VirtualClock(seed=3)

    async def main(seconds: float) -> tuple[float, datetime, VirtualClock | None]:
        await anyio.sleep(seconds)
        return clock.elapsed, clock.now(), current_clock()

    elapsed, now, seen_clock = clock.run(main, 12.5, backend=backend)

    assert (elapsed, now, seen_clock) == (12.5, DEFAULT_START + timedelta(seconds=12.5), clock)
    assert clock.elapsed == 12.5
    assert clock.now() == now
    assert clock.seed == 3
    assert current_clock() is None
    assert "elapsed=12.5s" in repr(clock)


@backends
def test_a_second_run_continues_the_timeline(backend: Backend) -> None:
    clock = VirtualClock()

    async def main() -> tuple[float, float]:
        began = anyio.current_time()
        await anyio.sleep(10)
        return began, anyio.current_time()

    assert clock.run(main, backend=backend) == (0.0, 10.0)
    assert clock.run(main, backend=backend) == (10.0, 20.0)
    assert clock.elapsed == 20.0


@backends
def test_a_clock_runs_one_simulation_at_a_time(backend: Backend) -> None:
    clock = VirtualClock(wall_clock=False)

    async def nested() -> None:
        await anyio.sleep(1)

    async def main() -> None:
        await anyio.to_thread.run_sync(clock.run, nested)

    with pytest.raises(RuntimeError, match="already running"):
        clock.run(main, backend=backend)


@backends
def test_current_clock_is_seen_by_tasks_and_worker_threads(backend: Backend) -> None:
    clock = VirtualClock()

    async def main() -> list[VirtualClock | None]:
        seen: list[VirtualClock | None] = []

        async def child() -> None:
            seen.append(current_clock())

        async with anyio.create_task_group() as tg:
            tg.start_soon(child)
        seen.append(await anyio.to_thread.run_sync(current_clock))
        return seen

    assert current_clock() is None
    assert clock.run(main, backend=backend) == [clock, clock]


@backends
def test_run_binds_a_trace_that_reads_the_clock(backend: Backend) -> None:
    clock = VirtualClock(seed=7)

    async def main() -> tuple[bool, float]:
        await anyio.sleep(4)
        trace = _trace.current()
        return trace is clock.trace, trace.time()

    assert clock.run(main, backend=backend) == (True, 4.0)
    assert clock.trace is not None
    assert clock.trace.seed == 7
    assert _trace.active() is None


@backends
def test_a_given_trace_records_clock_jumps(backend: Backend) -> None:
    trace = Trace(seed=1)
    events: list[Event] = []
    trace.subscribe(events.append)

    async def main() -> None:
        await anyio.sleep(2)
        _trace.emit("halfway", note="x")
        await anyio.sleep(3)

    clock = VirtualClock()
    clock.run(main, backend=backend, trace=trace)

    assert clock.trace is trace
    assert [(e.kind, e.time, e.data) for e in events] == [
        ("clock_jump", 2.0, {"from": 0.0, "to": 2.0}),
        ("halfway", 2.0, {"note": "x"}),
        ("clock_jump", 5.0, {"from": 2.0, "to": 5.0}),
    ]


def test_unknown_backend_is_rejected() -> None:
    async def main() -> None:
        return None

    with pytest.raises(ValueError, match="unknown backend 'curio'"):
        simulate(main, backend="curio")  # type: ignore[arg-type]


@backends
def test_simulate_passes_arguments_and_options(backend: Backend) -> None:
    async def main(a: int, b: int) -> tuple[int, float, int]:
        await anyio.sleep(a)
        return a + b, datetime.now(timezone.utc).timestamp(), _trace.rng().randint(0, 10**6)

    start = datetime(2027, 3, 4, tzinfo=timezone.utc)
    first = simulate(main, 2, 3, backend=backend, start=start, seed=99)
    again = simulate(main, 2, 3, backend=backend, start=start, seed=99)

    assert first == again
    assert first[:2] == (5, start.timestamp() + 2)


def test_docstring_examples_run() -> None:
    results = doctest.testmod(loopsim._clock, optionflags=doctest.ELLIPSIS)

    assert results.attempted >= 4
    assert results.failed == 0


def test_trio_tasks_that_exited_are_not_kept_alive() -> None:
    import gc

    import trio

    def tasks() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, trio.lowlevel.Task))

    async def main() -> int:
        async def child() -> None:
            await anyio.sleep(1)

        before = tasks()  # earlier tests' runs may have left tasks of their own
        for _ in range(3):
            async with anyio.create_task_group() as tg:
                for _ in range(200):
                    tg.start_soon(child)
        return tasks() - before

    assert simulate(main, backend="trio") < 20


def test_a_finished_asyncio_run_is_freed_without_the_cycle_collector() -> None:
    # The session must not keep the user's function (and all it reaches) after the run:
    # otherwise every simulation lingers as cyclic garbage and full collections land in
    # later runs. (trio's own runner keeps cycles; the collector frees those.)
    import gc
    import weakref

    class Payload:
        pass

    payload = Payload()
    ref = weakref.ref(payload)

    async def main(kept: Payload = payload) -> int:
        return 1

    gc.collect()
    gc.disable()
    try:
        simulate(main, backend="asyncio", wall_clock=False)
        del payload, main
        assert ref() is None
    finally:
        gc.enable()


# --- the end of an asyncio run ----------------------------------------------------------


def test_tasks_left_running_are_cancelled_when_the_run_ends() -> None:
    clock = VirtualClock(wall_clock=False)
    seen: list[str] = []

    async def forgotten() -> None:
        try:
            await asyncio.sleep(100)
        finally:
            seen.append(f"cleaned up at t={asyncio.get_running_loop().time()}")

    async def main() -> str:
        asyncio.get_running_loop().create_task(forgotten())
        await asyncio.sleep(2)
        return "main done"

    assert clock.run(main) == "main done"
    assert seen == ["cleaned up at t=2.0"]
    assert clock.elapsed == 2.0


def test_a_left_task_that_fails_while_cancelled_is_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def stubborn() -> None:
        try:
            await asyncio.sleep(100)
        finally:
            raise ValueError("broke while being cancelled")

    async def main() -> None:
        asyncio.get_running_loop().create_task(stubborn())
        await asyncio.sleep(1)

    with caplog.at_level("ERROR", logger="asyncio"):
        simulate(main, wall_clock=False)

    errors = [r.exc_info[1] for r in caplog.records if r.exc_info is not None]
    assert [(type(e), str(e)) for e in errors] == [(ValueError, "broke while being cancelled")]


def test_async_generators_left_open_are_finalized_when_the_run_ends() -> None:
    closed: list[str] = []

    async def numbers() -> AsyncIterator[int]:
        try:
            for n in range(10):
                yield n
        finally:
            closed.append("finalized")

    async def main() -> int:
        stream = numbers()
        first = await stream.__anext__()  # left suspended, never closed by the program
        await asyncio.sleep(1)
        return first

    assert simulate(main, wall_clock=False) == 0
    assert closed == ["finalized"]


def test_the_default_executor_is_joined_when_the_run_ends() -> None:
    workers: list[threading.Thread] = []

    def job() -> str:
        workers.append(threading.current_thread())
        return "ran"

    async def main() -> str:
        return await asyncio.get_running_loop().run_in_executor(None, job)

    assert simulate(main, wall_clock=False) == "ran"
    assert len(workers) == 1
    assert not workers[0].is_alive()


def test_sniffio_sees_asyncio_inside_the_run_and_nothing_after() -> None:
    sniffio = pytest.importorskip("sniffio")

    async def main() -> str:
        return str(sniffio.current_async_library())

    assert simulate(main, wall_clock=False) == "asyncio"
    with pytest.raises(sniffio.AsyncLibraryNotFoundError):
        sniffio.current_async_library()


def test_a_run_inside_a_running_event_loop_is_a_clear_error() -> None:
    async def outer() -> None:
        simulate(asyncio.sleep, 1, wall_clock=False)

    with pytest.raises(RuntimeError, match="cannot start inside a running event loop"):
        asyncio.run(outer())


# --- the asyncio loop's self-pipe (made when the loop first blocks for real) --------------


def test_a_signal_handler_runs_in_the_simulation() -> None:
    async def main() -> tuple[str, float]:
        loop = asyncio.get_running_loop()
        got = asyncio.Event()
        loop.add_signal_handler(signal.SIGUSR1, got.set)
        try:
            os.kill(os.getpid(), signal.SIGUSR1)
            await asyncio.wait_for(got.wait(), timeout=3600)
        finally:
            loop.remove_signal_handler(signal.SIGUSR1)
        return "signalled", loop.time()

    assert simulate(main, wall_clock=False) == ("signalled", 0.0)


def test_the_loops_own_wake_up_pipe_is_not_the_programs_io() -> None:
    # Waiting for an anyio worker thread blocks the loop for real, which makes its
    # self-pipe; a wait that nothing can end afterwards is still a deadlock, not a wait
    # on real I/O (which would run into the real-time limit instead).
    async def main() -> None:
        assert await anyio.to_thread.run_sync(blocking_work) == "thread done"
        await anyio.Event().wait()

    with pytest.raises(SimulationDeadlock, match=r"awaiting Event\.wait"):
        simulate(main, wall_clock=False, real_time_limit=10)


def test_the_event_loop_internals_the_virtual_loop_relies_on_still_exist() -> None:
    # The virtual loop overrides or reads these CPython internals of the selector loop;
    # an upgrade that renames one must fail here, not deep inside a run.
    loop = asyncio.SelectorEventLoop()
    try:
        for name in ("_make_self_pipe", "_close_self_pipe", "_write_to_self", "_run_once"):
            assert callable(getattr(loop, name, None)), name
        for name in ("_ssock", "_csock", "_ready", "_scheduled", "_asyncgens"):
            assert hasattr(loop, name), name
        assert isinstance(loop._clock_resolution, float)  # type: ignore[attr-defined]
        timer = loop.call_at(12.5, print)
        assert timer._when == 12.5  # type: ignore[attr-defined]  # the heap's sort key
    finally:
        loop.close()


# --- Ctrl-C during an asyncio run (asyncio.run's behaviour) -------------------------------


def ctrl_c_program(presses: int, seen: list[str]) -> Callable[[], Awaitable[None]]:
    async def main() -> None:
        try:
            for _ in range(presses):
                signal.raise_signal(signal.SIGINT)
            await asyncio.sleep(10)
        except BaseException as exc:
            seen.append(f"{type(exc).__name__} at t={asyncio.get_running_loop().time()}")
            raise

    return main


@pytest.mark.usefixtures("default_sigint")
def test_a_first_ctrl_c_cancels_the_program_then_raises_keyboard_interrupt() -> None:
    seen: list[str] = []

    with pytest.raises(KeyboardInterrupt):
        simulate(ctrl_c_program(1, seen), wall_clock=False)

    assert seen == ["CancelledError at t=0.0"]  # the program unwound from its await
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("default_sigint")
def test_a_second_ctrl_c_raises_at_once() -> None:
    seen: list[str] = []

    with pytest.raises(KeyboardInterrupt):
        simulate(ctrl_c_program(2, seen), wall_clock=False)

    assert seen == ["KeyboardInterrupt at t=0.0"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_sigint_handler_of_the_programs_own_is_left_alone() -> None:
    calls: list[int] = []

    def own(signum: int, _frame: object) -> None:
        calls.append(signum)

    previous = signal.signal(signal.SIGINT, own)
    try:
        seen: list[str] = []
        with pytest.raises(SimulationDeadlock):  # the signal did not end the program
            simulate(lambda: _ctrl_c_then_wait(seen), wall_clock=False)
        assert seen == ["still running"]
        assert calls == [signal.SIGINT]
        assert signal.getsignal(signal.SIGINT) is own
    finally:
        signal.signal(signal.SIGINT, previous)


async def _ctrl_c_then_wait(seen: list[str]) -> None:
    signal.raise_signal(signal.SIGINT)
    seen.append("still running")
    await anyio.Event().wait()
