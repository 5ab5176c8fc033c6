"""Background agents at scale: N tasks started, completed and collected in one session.

Each task's child answers after a virtual delay of 1-600 s (so completions spread over
time); the parent starts all N tasks, then for each task in id order waits for it, fetches
its result and clears it. Everything runs on the virtual clock (``wall_clock=False``, so
the real timer is not frozen). Rows:

* ``provider``: a minimal child (``BaseAgent`` that sleeps and answers) and the six tools
  called directly — the provider's own cost; this is the figure issue 4 asks for;
* ``tools``: a real ``loopsim.Agent`` child (FunctionChatClient) and the tools called
  directly;
* ``parent``: the real child, and a parent ``Agent`` whose scripted model makes every call
  (4 model turns of N tool calls each), so the agent tool loop is included;
* ``floor``: the N real child runs alone (no provider, a task group) — subtract it from
  ``tools`` to see what the provider adds on top of the children.

Times are the best of ``--repeat`` runs; peak memory (tracemalloc) comes from one more run,
not timed (tracing slows a run down). The peak is reached while all N children are in
flight at once, so it is the cost of N concurrent child runs (frames, messages, native
tasks), not what the provider keeps per finished task; ``bench_scale.py`` measures that.
``--gc-off`` pauses the cyclic garbage collector while timing: its full collections scan
the whole heap (every live task's objects), which is the part of the cost that grows
faster than N; without it the per-task cost is flat.

Usage: ``python benchmarks/bench_background.py [N ...] [--backend asyncio|trio] [--repeat R]
[--rows provider tools parent floor] [--gc-off]``
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

import loopsim
from loopsim import (
    AgentResponse,
    AgentSession,
    BackgroundAgentsProvider,
    FunctionCallContent,
    Message,
    SessionContext,
)

DEFAULT_SIZES = (1_000, 10_000)


def delay_of(task: int) -> float:
    return float(1 + (task * 7919) % 600)


def task_number(text: str) -> int:
    return int(text.rsplit(maxsplit=1)[-1])


def expected(task: int) -> str:
    return f"result of task {task}"


class MinimalChild(loopsim.BaseAgent):
    async def _run(
        self,
        messages: list[Message],
        session: AgentSession,  # noqa: ARG002 - BaseAgent hook signature
        options: Any,  # noqa: ARG002 - BaseAgent hook signature
    ) -> AgentResponse:
        task = task_number(messages[-1].text)
        await anyio.sleep(delay_of(task))
        return AgentResponse(Message.assistant(expected(task)))


def agent_child() -> loopsim.Agent:
    async def answer(messages: Sequence[Message], options: Any) -> str:  # noqa: ARG001 - client fn signature
        task = task_number(messages[-1].text)
        await anyio.sleep(delay_of(task))
        return expected(task)

    return loopsim.Agent(loopsim.FunctionChatClient(answer), name="worker")


async def drive_tools(n: int, child: loopsim.SupportsAgentRun) -> None:
    provider = BackgroundAgentsProvider([child], wait_timeout_seconds=3600)
    session = AgentSession()
    context = SessionContext(input_messages=[])
    state = session.state.setdefault(provider.source_id, {})
    await provider.before_run(agent=None, session=session, context=context, state=state)
    tools = {t.name: t for t in context.tools}
    start = tools["background_agents_start_task"]
    wait = tools["background_agents_wait_for_first_completion"]
    results = tools["background_agents_get_task_results"]
    clear = tools["background_agents_clear_completed_task"]
    for i in range(1, n + 1):
        reply = await start.invoke(
            {"agent_name": "worker", "input": f"task {i}", "description": f"job {i}"}
        )
        assert reply == f"Started background task {i} on agent 'worker'."
    for i in range(1, n + 1):
        # Either the "ended with status" reply or, when an earlier refresh already saved
        # the outcome, the "not running any more" one -- both end with the status.
        assert (await wait.invoke({"task_ids": [i]})).endswith("completed.")
        assert await results.invoke({"task_id": i}) == expected(i)
        assert await clear.invoke({"task_id": i}) == f"Removed task {i}."
    assert state["tasks"] == []


def turn(name: str, argument_sets: Sequence[dict[str, Any]], prefix: str) -> Message:
    return Message(
        "assistant",
        [
            FunctionCallContent(call_id=f"{prefix}-{i}", name=name, arguments=arguments)
            for i, arguments in enumerate(argument_sets)
        ],
    )


async def drive_parent(n: int, child: loopsim.SupportsAgentRun) -> None:
    ids = range(1, n + 1)
    starts = [
        {"agent_name": "worker", "input": f"task {i}", "description": f"job {i}"} for i in ids
    ]
    script: list[Any] = [
        turn("background_agents_start_task", starts, "start"),
        turn(
            "background_agents_wait_for_first_completion", [{"task_ids": [i]} for i in ids], "wait"
        ),
        turn("background_agents_get_task_results", [{"task_id": i} for i in ids], "results"),
        turn("background_agents_clear_completed_task", [{"task_id": i} for i in ids], "clear"),
        "All results collected.",
    ]
    provider = BackgroundAgentsProvider([child], wait_timeout_seconds=3600)
    parent = loopsim.Agent(
        loopsim.ScriptedChatClient(script), name="coordinator", context_providers=[provider]
    )
    session = parent.create_session()
    response = await parent.run("Do all the work.", session=session)
    assert response.messages[-1].text == "All results collected."
    assert [c.result for c in response.messages[5].contents] == [expected(i) for i in ids]
    assert session.state[provider.source_id]["tasks"] == []


async def children_only(n: int, child: loopsim.SupportsAgentRun) -> None:
    async with anyio.create_task_group() as group:
        for i in range(1, n + 1):
            group.start_soon(lambda i=i: child.run(f"task {i}", session=child.create_session()))


Scenario = Callable[[int, loopsim.SupportsAgentRun], Awaitable[None]]
ROWS: dict[str, tuple[Scenario, Callable[[], loopsim.SupportsAgentRun]]] = {
    "provider": (drive_tools, lambda: MinimalChild(name="worker")),
    "tools": (drive_tools, agent_child),
    "parent": (drive_parent, agent_child),
    "floor": (children_only, agent_child),
}


def measure(
    row: str, n: int, backend: str, repeat: int, *, gc_off: bool = False
) -> tuple[float, int, float]:
    """(best real seconds, peak traced bytes, virtual seconds) for one row and size."""
    scenario, make_child = ROWS[row]
    best = float("inf")
    virtual = 0.0
    for _ in range(repeat):
        clock = loopsim.VirtualClock(wall_clock=False)
        gc.collect()
        if gc_off:
            gc.disable()
        try:
            began = time.perf_counter()
            clock.run(scenario, n, make_child(), backend=backend)
            best = min(best, time.perf_counter() - began)
        finally:
            gc.enable()
        virtual = clock.elapsed
    gc.collect()
    tracemalloc.start()
    try:
        loopsim.simulate(scenario, n, make_child(), backend=backend, wall_clock=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return best, peak, virtual


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(DEFAULT_SIZES))
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", nargs="*", choices=list(ROWS), default=list(ROWS))
    parser.add_argument(
        "--gc-off",
        action="store_true",
        help="pause the cyclic GC while timing: shows the algorithmic growth alone",
    )
    args = parser.parse_args(argv)
    gc_note = ", cyclic GC paused" if args.gc_off else ""
    print(f"backend={args.backend}, best of {args.repeat}{gc_note}")
    columns = ("real s", "us/task", "peak MiB", "KiB/task", "virtual s")
    print(f"{'row':<9}{'tasks':>7}" + "".join(f"{c:>10}" for c in columns))
    for row in args.rows:
        for n in args.sizes:
            best, peak, virtual = measure(row, n, args.backend, args.repeat, gc_off=args.gc_off)
            print(
                f"{row:<9}{n:>7}{best:>10.3f}{best / n * 1e6:>10.1f}"
                f"{peak / 2**20:>10.1f}{peak / n / 1024:>10.2f}{virtual:>10.0f}"
            )


if __name__ == "__main__":
    main()
