"""The virtual wall clock belongs to its simulation, in every thread (issue 26, item 9).

freezegun patches the whole process, so a simulation's virtual instant could show in
another thread: a ``wall_clock=False`` run read another thread's frozen date in 1 to 8 of
50 ``datetime.now()`` calls (while the other thread's freeze was being entered), and two
runs with a virtual wall clock could not overlap at all. Here two simulations run in two
threads at once and every read of each is checked.
"""

# The programs block in real time on purpose, so that other threads run meanwhile.
# ruff: noqa: ASYNC251

from __future__ import annotations

import datetime as dt
import threading
import time
from datetime import datetime, timedelta, timezone

import anyio
import anyio.lowlevel
import pytest

from loopsim import simulate

# Captured at import, before any freeze: the real clock, whatever is patched later.
_REAL_NOW = dt.datetime.now
BOUND = 20.0  # real seconds any run here may take
FROZEN_AT = datetime(2000, 1, 1, tzinfo=timezone.utc)
OTHER_AT = datetime(2010, 6, 1, tzinfo=timezone.utc)
READS = 300


def real_utc() -> datetime:
    return _REAL_NOW(timezone.utc)


class Frozen:
    """Runs short simulations with a virtual wall clock in a thread, over and over (so its
    freeze is entered and left all the time), checking every read of its own."""

    def __init__(self, start: datetime, backend: str) -> None:
        self.start = start
        self.backend = backend
        self.stop = threading.Event()
        self.runs = 0
        self.wrong: list[tuple[datetime, datetime]] = []
        self.thread = threading.Thread(target=self._loop, daemon=True)

    async def _main(self) -> None:
        for hour in range(1, 4):
            await anyio.sleep(3600)
            seen = dt.datetime.now(timezone.utc)
            if seen != self.start + timedelta(hours=hour):
                self.wrong.append((seen, self.start + timedelta(hours=hour)))

    def _loop(self) -> None:
        while not self.stop.is_set():
            simulate(self._main, backend=self.backend, start=self.start, real_time_limit=BOUND)
            self.runs += 1

    def __enter__(self) -> Frozen:  # noqa: PYI034 - a final test helper
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(BOUND)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_real_time_simulation_never_reads_another_threads_virtual_date(backend: str) -> None:
    reads: list[tuple[datetime, float, datetime]] = []

    async def reader() -> None:
        for _ in range(READS):
            before = real_utc()
            now, epoch = dt.datetime.now(timezone.utc), time.time()
            reads.append((before, epoch, now))
            await anyio.lowlevel.checkpoint()
            time.sleep(0.001)  # real time passes, so the other thread freezes meanwhile

    with Frozen(FROZEN_AT, backend) as frozen:
        simulate(reader, backend=backend, wall_clock=False, real_time_limit=BOUND)

    assert frozen.runs > 5  # the other thread froze and thawed many times meanwhile
    leaked = [
        (now, epoch)
        for before, epoch, now in reads
        if not (before - timedelta(seconds=5) <= now <= real_utc())
        or abs(epoch - before.timestamp()) > 5
    ]
    assert leaked == [], f"{len(leaked)} of {len(reads)} reads saw another thread's clock"
    assert frozen.wrong == []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_two_virtual_wall_clocks_in_two_threads_each_see_their_own(backend: str) -> None:
    seen: list[tuple[datetime, datetime]] = []

    async def other() -> None:
        for step in range(READS // 3):
            await anyio.sleep(60)
            time.sleep(0.001)
            expected = OTHER_AT + timedelta(seconds=60 * (step + 1))
            seen.append((dt.datetime.now(timezone.utc), expected))
            seen.append((datetime.fromtimestamp(time.time(), timezone.utc), expected))

    with Frozen(FROZEN_AT, backend) as frozen:
        simulate(other, backend=backend, start=OTHER_AT, real_time_limit=BOUND)

    assert frozen.runs > 5
    wrong = [pair for pair in seen if pair[0] != pair[1]]
    assert wrong == [], f"{len(wrong)} of {len(seen)} reads saw another simulation's clock"
    assert frozen.wrong == []
    assert abs((dt.datetime.now(timezone.utc) - real_utc()).total_seconds()) < 5  # thawed


def test_a_worker_thread_of_a_simulation_sees_its_clock_while_another_runs() -> None:
    async def main() -> datetime:
        await anyio.sleep(90)
        return await anyio.to_thread.run_sync(lambda: dt.datetime.now(timezone.utc))

    with Frozen(FROZEN_AT, "asyncio"):
        results = [simulate(main, start=OTHER_AT, real_time_limit=BOUND) for _ in range(20)]

    assert set(results) == {OTHER_AT + timedelta(seconds=90)}
