"""Executor jobs on the asyncio virtual clock hand back in submission order.

``asyncio.to_thread`` / ``run_in_executor`` jobs that finish quickly are run one after
another, each before the loop goes on, so which thread is faster never changes a run.
Jobs that need the loop, or that take long, still work (no hang): the loop goes on
without them, with virtual time held still until they report.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import agent_framework as af
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import FunctionCallContent, Message, ScriptedChatClient, simulate
from loopsim.agent_framework import as_chat_client, instrument


def paused(name: str, pause: float) -> str:
    time.sleep(pause)
    return name


async def race(pauses: list[float]) -> list[tuple[str, str, float]]:
    """Start one thread job per pause at once; note when each returns to the loop."""
    loop = asyncio.get_running_loop()
    order: list[tuple[str, str, float]] = []

    async def one(name: str, pause: float) -> None:
        order.append(("start", name, loop.time()))
        done = await asyncio.to_thread(paused, name, pause)
        order.append(("done", done, loop.time()))

    await asyncio.gather(*(one(f"job{n}", p) for n, p in enumerate(pauses)))
    return order


@settings(deadline=None, max_examples=12)
@given(st.lists(st.sampled_from([0.0, 0.002, 0.006]), min_size=2, max_size=4))
def test_thread_jobs_hand_back_in_submission_order_whatever_their_speed(
    pauses: list[float],
) -> None:
    order = simulate(race, pauses)
    names = [f"job{n}" for n in range(len(pauses))]
    assert [name for kind, name, _ in order if kind == "done"] == names
    assert {t for *_, t in order} == {0.0}  # and virtual time stood still


def test_a_faster_later_job_does_not_overtake_across_many_runs() -> None:
    runs = {tuple(simulate(race, [0.008, 0.0])) for _ in range(15)}
    assert len(runs) == 1
    (only,) = runs
    assert [name for kind, name, _ in only if kind == "done"] == ["job0", "job1"]


def test_a_job_that_waits_for_the_loop_still_gets_it() -> None:
    async def main() -> tuple[str, float]:
        loop = asyncio.get_running_loop()

        async def in_loop() -> str:
            await asyncio.sleep(0)  # (a virtual sleep would wait forever: the job holds time)
            return "from the loop"

        def job() -> str:
            return asyncio.run_coroutine_threadsafe(in_loop(), loop).result(timeout=10)

        answer = await asyncio.to_thread(job)
        return answer, loop.time()

    began = time.monotonic()
    assert simulate(main, real_time_limit=20) == ("from the loop", 0.0)
    assert time.monotonic() - began < 1  # the loop was handed back at once, not after a hold


def test_a_job_that_waits_for_a_later_job_does_not_hang() -> None:
    async def main() -> list[str]:
        ready = threading.Event()

        def first() -> str:
            assert ready.wait(10), "the second job never ran"
            return "first"

        def second() -> str:
            ready.set()
            return "second"

        return list(await asyncio.gather(asyncio.to_thread(first), asyncio.to_thread(second)))

    assert simulate(main, real_time_limit=20) == ["first", "second"]


def test_a_slow_job_still_holds_virtual_time_while_the_loop_goes_on() -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        seen: list[tuple[str, float]] = []

        async def ticker() -> None:
            await asyncio.sleep(0)
            seen.append(("ticked", loop.time()))

        async def slow() -> None:
            seen.append((await asyncio.to_thread(paused, "slow", 0.3), loop.time()))

        await asyncio.gather(slow(), ticker())
        return seen

    # the ticker ran while the slow job was still working (the loop did not wait it out)
    assert simulate(main, real_time_limit=20) == [("ticked", 0.0), ("slow", 0.0)]


def test_a_job_that_fails_fails_its_awaiting_caller() -> None:
    def broken() -> None:
        raise LookupError("nope")

    async def main() -> None:
        await asyncio.to_thread(broken)

    with pytest.raises(LookupError, match="nope"):
        simulate(main)


# -- agent_framework's sync tools (run through asyncio.to_thread) ------------------------------


def test_sync_tools_of_one_turn_give_the_same_transcript_every_run() -> None:
    log: list[str] = []

    def slow_lookup(key: str) -> str:
        time.sleep(0.006)  # the first call is the slower one
        log.append(f"slow {key}")
        return f"slow:{key}"

    def quick_lookup(key: str) -> str:
        log.append(f"quick {key}")
        return f"quick:{key}:{len(log)}"  # what it sees depends on who ran before

    async def main() -> str:
        turn = Message(
            "assistant",
            [
                FunctionCallContent(call_id="c1", name="slow_lookup", arguments={"key": "a"}),
                FunctionCallContent(call_id="c2", name="quick_lookup", arguments={"key": "b"}),
            ],
        )
        agent = instrument(
            af.Agent(
                client=as_chat_client(ScriptedChatClient([turn, "done"])),
                name="looker",
                tools=[af.tool(slow_lookup), af.tool(quick_lookup)],
            )
        )
        return str((await agent.run("look")).text)

    transcripts: set[str] = set()
    for _ in range(8):
        log.clear()
        _, transcript = loopsim.record(main)
        assert log == ["slow a", "quick b"]
        transcripts.add(transcript.model_dump_json())
    assert len(transcripts) == 1
    results: list[Any] = [e.data["result"] for e in transcript.events if e.kind == "tool_result"]
    assert sorted(results) == ["quick:b:2", "slow:a"]
