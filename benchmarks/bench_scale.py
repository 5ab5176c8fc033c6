"""Scale: N background tasks started, completed and collected in one session.

loopsim: a ``BackgroundAgentsProvider`` with one child, a ``loopsim.Agent`` on a
``FunctionChatClient`` that answers after a virtual delay of 1-600 s (completions spread
over time). The provider's tools (from ``before_run``) are called directly: start N tasks,
then for each task in id order wait for it, fetch its result and clear it. Runs on the
virtual clock (``wall_clock=False``).

upstream: agent-framework-core's ``BackgroundAgentsProvider`` driven the same way, its
child an upstream ``Agent`` on an in-process fake client that answers at once (real
asyncio; no delay, so its figure is pure overhead), on 1k tasks.

Time is the median of a few runs; peak memory (tracemalloc) comes from one more run that
is not timed (tracing slows a run down), divided by N.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import loopsim
from loopsim import AgentSession, BackgroundAgentsProvider, SessionContext

try:
    from _common import Row, median, quiet_upstream, upstream_available
except ImportError:  # pragma: no cover
    from benchmarks._common import Row, median, quiet_upstream, upstream_available

SIZES = (1_000, 10_000)


def delay_of(task: int) -> float:
    return float(1 + (task * 7919) % 600)


def _task_number(text: str) -> int:
    return int(text.rsplit(maxsplit=1)[-1])


async def _drive_loopsim(n: int) -> None:
    async def answer(messages: Sequence[Any], _options: Any) -> str:
        task = _task_number(messages[-1].text)
        await loopsim_sleep(delay_of(task))
        return f"result of task {task}"

    child = loopsim.Agent(loopsim.FunctionChatClient(answer), name="worker")
    provider = BackgroundAgentsProvider([child], wait_timeout_seconds=3600)
    session = AgentSession()
    context = SessionContext(input_messages=[])
    state = session.state.setdefault(provider.source_id, {})
    await provider.before_run(agent=None, session=session, context=context, state=state)  # type: ignore[arg-type]
    tools = {t.name: t for t in context.tools}
    start = tools["background_agents_start_task"]
    wait = tools["background_agents_wait_for_first_completion"]
    results = tools["background_agents_get_task_results"]
    clear = tools["background_agents_clear_completed_task"]
    for i in range(1, n + 1):
        await start.invoke(
            {"agent_name": "worker", "input": f"task {i}", "description": f"job {i}"}
        )
    for i in range(1, n + 1):
        assert (await wait.invoke({"task_ids": [i]})).endswith("completed.")
        assert await results.invoke({"task_id": i}) == f"result of task {i}"
        assert await clear.invoke({"task_id": i}) == f"Task {i} cleared."
    assert state["tasks"] == []


async def loopsim_sleep(seconds: float) -> None:
    import anyio  # noqa: PLC0415

    await anyio.sleep(seconds)


def loopsim_once(n: int) -> float:
    gc.collect()
    began = time.perf_counter()
    loopsim.simulate(_drive_loopsim, n, wall_clock=False)
    return time.perf_counter() - began


def _peak(fn: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


# -- upstream -----------------------------------------------------------------------------


def _upstream_drive(n: int) -> Callable[[], Any]:
    quiet_upstream()
    import agent_framework as af  # noqa: PLC0415

    class Answering(af.BaseChatClient):  # type: ignore[misc]
        def _inner_get_response(self, *, messages: Any, **_: Any) -> Any:
            text = f"result of task {_task_number(messages[-1].text)}"

            async def answer() -> Any:
                return af.ChatResponse(messages=[af.Message(role="assistant", contents=[text])])

            return answer()

    async def drive() -> None:
        child = af.Agent(client=Answering(), name="worker")
        provider = af.BackgroundAgentsProvider([child], wait_timeout_seconds=3600)
        session = af.AgentSession()
        context = af.SessionContext(input_messages=[])
        await provider.before_run(agent=None, session=session, context=context, state={})
        tools = {t.name: t for t in context.tools}
        start = tools["background_agents_start_task"]
        wait = tools["background_agents_wait_for_first_completion"]
        results = tools["background_agents_get_task_results"]
        clear = tools["background_agents_clear_completed_task"]
        for i in range(1, n + 1):
            await start.invoke(
                arguments={"agent_name": "worker", "input": f"task {i}", "description": f"job {i}"},
                skip_parsing=True,
            )
        for i in range(1, n + 1):
            reply = await wait.invoke(arguments={"task_ids": [i]}, skip_parsing=True)
            assert "completed" in str(reply), reply
            got = await results.invoke(arguments={"task_id": i}, skip_parsing=True)
            assert got == f"result of task {i}", got
            cleared = await clear.invoke(arguments={"task_id": i}, skip_parsing=True)
            assert cleared == f"Task {i} cleared.", cleared

    return drive


def upstream_once(n: int) -> float:
    drive = _upstream_drive(n)
    gc.collect()
    began = time.perf_counter()
    asyncio.run(drive())
    return time.perf_counter() - began


# -- rows ---------------------------------------------------------------------------------


def run(
    sizes: Sequence[int] = SIZES,
    *,
    repeat: int = 3,
    upstream: bool = True,
    upstream_size: int = 1_000,
    log: Callable[[str], None] = print,
) -> list[Row]:
    rows: list[Row] = []
    loopsim_once(100)  # warm up
    per_task: dict[int, float] = {}
    totals: dict[int, float] = {}
    for n in sizes:
        t = median([loopsim_once(n) for _ in range(repeat)])
        peak = _peak(lambda n=n: loopsim.simulate(_drive_loopsim, n, wall_clock=False))
        per_task[n] = t / n
        totals[n] = t
        kib = peak / n / 1024
        rows.append(
            Row(
                section="scale",
                case=f"loopsim {n} tasks: time per task",
                value=t / n * 1e6,
                unit="us/task",
                extra={"total_s": t, "peak_bytes": peak},
            )
        )
        log(f"{rows[-1].case}: {t / n * 1e6:.1f} us ({t:.3f} s total)")
        rows.append(
            Row(
                section="scale",
                case=f"loopsim {n} tasks: peak memory per task",
                value=kib,
                unit="KiB/task",
                target="<= 2 KiB",
                met=kib <= 2.0,
            )
        )
        log(f"{rows[-1].case}: {kib:.2f} KiB ({peak / 2**20:.1f} MiB peak)")
        if n >= 10_000:
            rows.append(
                Row(
                    section="scale",
                    case=f"loopsim {n} tasks: total",
                    value=t,
                    unit="s",
                    target="< 2 s",
                    met=t < 2.0,
                )
            )
    if len(sizes) > 1:
        lo, hi = min(sizes), max(sizes)
        growth = per_task[hi] / per_task[lo]
        rows.append(
            Row(
                section="scale",
                case=f"loopsim per-task cost {lo}->{hi}",
                value=growth,
                unit="x",
                target="<= 1.2x",
                met=growth <= 1.2,
            )
        )
        log(f"{rows[-1].case}: x{growth:.2f}")
    if upstream and upstream_available():
        n = upstream_size
        up = median([upstream_once(n) for _ in range(1)])
        ours = totals.get(n) or median([loopsim_once(n) for _ in range(repeat)])
        rows.append(
            Row(
                section="scale",
                case=f"{n} tasks: loopsim vs upstream provider",
                value=ours,
                unit="s",
                upstream=up,
                ratio=up / ours,
                extra={"upstream_us_per_task": up / n * 1e6},
            )
        )
        log(f"{rows[-1].case}: {ours:.3f} s vs {up:.3f} s, x{up / ours:.1f}")
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-upstream", action="store_true")
    args = parser.parse_args(argv)
    run(args.sizes, repeat=args.repeat, upstream=not args.no_upstream)


if __name__ == "__main__":
    main()
