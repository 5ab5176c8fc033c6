"""A background child that swallows its cancellation, released with ``timeout=None``
(issue 14, item 2): the run ends with ``SimulationDeadlock`` instead of livelocking."""

from __future__ import annotations

import time

import anyio
import pytest
from test_background_provider import Child, Tools

import loopsim
from loopsim import AgentSession, BackgroundAgentsProvider

_REAL = (time.perf_counter,)


async def deaf(text: str, call_number: int) -> str:
    """Work that waits for an event nobody sets and swallows every cancellation."""
    event = anyio.Event()
    while True:
        try:
            await event.wait()
        except anyio.get_cancelled_exc_class():  # noqa: PERF203 - the hostile part
            continue


def test_release_without_timeout_of_a_child_that_swallows_cancellation_ends(
    backend: str,
) -> None:
    provider = BackgroundAgentsProvider([Child("deaf", deaf)])

    async def main() -> None:
        session = AgentSession()
        await (await Tools.open(provider, session)).start("deaf")
        await anyio.sleep(5)
        await provider.release_session(session, timeout=None)

    began = _REAL[0]()
    with pytest.raises(loopsim.SimulationDeadlock) as caught:
        loopsim.simulate(main, backend=backend, real_time_limit=10)

    assert _REAL[0]() - began < 10
    assert caught.value.virtual_time == 5.0
    waiting = caught.value.waiting
    assert any("in deaf awaiting Event.wait" in line for line in waiting), waiting
