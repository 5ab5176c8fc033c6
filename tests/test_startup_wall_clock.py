"""The virtual wall clock across tests: entered once for consecutive tests that use it.

The plugin holds freezegun's patch from the first marked test (or scenario file) with the
wall clock until a test without it, or the end of the session. These tests show what
must not change (each simulation its own instant, real time outside, real functions for
other tests and after the session) and that the patch really is held (else each test
pays milliseconds again). Nothing here times anything (benchmarks/bench_startup.py).
"""

from __future__ import annotations

import datetime as dt
import time
from datetime import datetime, timezone

import anyio
import pytest

import loopsim
from loopsim._clock import DEFAULT_START

pytest_plugins = ["pytester"]

# Captured in a container: freezegun rewrites module-level references to real functions.
_REAL = (time.time, dt.datetime)

SUITE = """
import datetime as dt
import time
from datetime import datetime, timedelta, timezone

import anyio
import freezegun.api
import pytest

from loopsim._clock import DEFAULT_START
from loopsim._clock import _wall

REAL = (time.time, dt.datetime)
CAPTURED = []


@pytest.fixture
def real_now() -> float:
    # a marked test's fixture runs outside its simulation: real time, held patch or not
    CAPTURED.append(_wall.held())
    return time.time()


def test_plain_first():
    assert (time.time, dt.datetime) == REAL
    assert not _wall.held()


@pytest.mark.loopsim
async def test_marked_one(real_now):
    assert abs(real_now - freezegun.api.real_time()) < 60
    await anyio.sleep(90)
    assert datetime.now(timezone.utc) == DEFAULT_START + timedelta(seconds=90)


@pytest.mark.loopsim
async def test_marked_two(real_now):
    assert abs(real_now - freezegun.api.real_time()) < 60
    assert datetime.now(timezone.utc) == DEFAULT_START  # its own instant, not the last one
    await anyio.sleep(5)
    assert time.time() == (DEFAULT_START + timedelta(seconds=5)).timestamp()


def test_plain_between():
    assert (time.time, dt.datetime) == REAL
    assert datetime.now(timezone.utc) > DEFAULT_START + timedelta(days=30)
    assert not _wall.held()
    assert CAPTURED == [False, True]  # the second marked test found the patch held


@pytest.mark.loopsim(wall_clock=False)
async def test_marked_without_wall_clock():
    assert not _wall.held()
    assert (time.time, dt.datetime) == REAL


@pytest.mark.loopsim
async def test_marked_last():
    await anyio.sleep(1)
    assert datetime.now(timezone.utc) == DEFAULT_START + timedelta(seconds=1)
"""


def test_the_patch_is_held_across_marked_tests_and_real_elsewhere(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=6)


def test_after_a_session_the_real_functions_are_back(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_last="""
import anyio, pytest

@pytest.mark.loopsim
async def test_marked():
    await anyio.sleep(1)
"""
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    from loopsim._clock import _wall

    assert not _wall.held()
    assert (time.time, dt.datetime) == _REAL


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_record_takes_wall_clock(backend: str) -> None:
    async def main() -> tuple[datetime, bool]:
        await anyio.sleep(60)
        return datetime.now(timezone.utc), time.time is _REAL[0]

    (virtual, patched_not), _ = loopsim.record(main, backend=backend)  # type: ignore[arg-type]
    assert virtual == DEFAULT_START + dt.timedelta(seconds=60)
    assert not patched_not
    before = datetime.now(timezone.utc)
    (real, unpatched), transcript = loopsim.record(
        main,
        backend=backend,  # type: ignore[arg-type]
        wall_clock=False,
    )
    assert real >= before
    assert unpatched
    assert transcript.backend == backend
