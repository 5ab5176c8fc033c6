"""The collector's thresholds during a simulation (benchmarks/bench_scale.py measures why).

Never timing: these pin that a simulation raises the thresholds only while it runs, keeps
a user's higher setting, and always restores the one it found.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

import loopsim
from loopsim._clock._gc import SIMULATION_THRESHOLDS


@pytest.fixture(autouse=True)
def _thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


async def _seen() -> tuple[int, ...]:
    return gc.get_threshold()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_simulation_raises_the_thresholds_and_restores_them(backend: str) -> None:
    gc.set_threshold(700, 10, 10)
    inside = loopsim.simulate(_seen, backend=backend, wall_clock=False)
    assert inside == SIMULATION_THRESHOLDS
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_user_setting_is_kept() -> None:
    gc.set_threshold(50_000, 5, 100)
    inside = loopsim.simulate(_seen, wall_clock=False)
    assert inside == (50_000, 10, 100)
    assert gc.get_threshold() == (50_000, 5, 100)


def test_thresholds_come_back_after_a_failing_simulation() -> None:
    gc.set_threshold(700, 10, 10)

    async def boom() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        loopsim.simulate(boom, wall_clock=False)
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_simulations_in_threads_restore_the_first_setting() -> None:
    gc.set_threshold(700, 10, 10)
    started = threading.Event()
    release = threading.Event()
    seen: list[tuple[int, ...]] = []

    async def hold() -> None:
        import anyio

        started.set()
        while not release.is_set():
            await anyio.to_thread.run_sync(release.wait, 0.01)
        seen.append(gc.get_threshold())

    thread = threading.Thread(target=loopsim.simulate, args=(hold,), kwargs={"wall_clock": False})
    thread.start()
    assert started.wait(10)
    # a second simulation ends while the first still runs: the raised setting stays
    assert loopsim.simulate(_seen, wall_clock=False) == SIMULATION_THRESHOLDS
    assert gc.get_threshold() == SIMULATION_THRESHOLDS
    release.set()
    thread.join(10)
    assert seen == [SIMULATION_THRESHOLDS]
    assert gc.get_threshold() == (700, 10, 10)
