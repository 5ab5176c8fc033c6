"""Scale: N background tasks started, completed and collected in one session.

loopsim: a ``BackgroundAgentsProvider`` with one child, a ``loopsim.Agent`` on a
``FunctionChatClient`` that answers after a virtual delay of 1-600 s (completions spread
over time). The provider's tools (from ``before_run``) are called directly: start N tasks,
then for each task in id order wait for it, fetch its result and clear it. Runs on the
virtual clock (``wall_clock=False``).

upstream: agent-framework-core's ``BackgroundAgentsProvider`` driven the same way, its
child an upstream ``Agent`` on an in-process fake client that answers at once (real
asyncio; no delay, so its figure is pure overhead), on 1k tasks.

Time is CPU time (``time.process_time``) of the run, the median of a few runs; the
absolute rows are machine-dependent, the growth row (per-task cost at 10k over 1k, both
sizes measured in alternating rounds) is not. Memory (tracemalloc) comes from one more
run that is not timed (tracing slows a run down) and stops at three points, each figure
divided by N:

* *peak per running task*: the peak while all N children are in flight at once (their
  frames, messages, native tasks and cancel scopes: the cost of N concurrent agent runs,
  not of the provider's bookkeeping); no target;
* *retained per finished task*: what stays alive once every child has ended and the
  provider has saved its outcome, before any result is collected: the task record (id,
  agent, description, status, result text) in the session state, its index entry and the
  child session kept for ``continue_task``. The fake client's request log (every request
  the children sent, kept by design of the test double) is released first and shown as
  its own row. Target <= 2 KiB;
* *retained per cleared task*: what is left after every task was collected and cleared
  (the provider must keep nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import loopsim
from loopsim import AgentSession, BackgroundAgentsProvider, SessionContext

try:
    from _common import (
        MACHINE,
        Row,
        interleaved,
        interval_note,
        median,
        paired_ratio,
        quiet_upstream,
        upstream_available,
    )
except ImportError:  # pragma: no cover
    from benchmarks._common import (
        MACHINE,
        Row,
        interleaved,
        interval_note,
        median,
        paired_ratio,
        quiet_upstream,
        upstream_available,
    )

SIZES = (1_000, 10_000)


def delay_of(task: int) -> float:
    return float(1 + (task * 7919) % 600)


def _task_number(text: str) -> int:
    return int(text.rsplit(maxsplit=1)[-1])


Probe = Callable[[str, "loopsim.FunctionChatClient | None"], None]


class MinimalChild(loopsim.BaseAgent):
    """A child without a model or history: sleeps, then answers (memory rows only)."""

    async def _run(self, messages: list[loopsim.Message], session: Any, options: Any) -> Any:  # noqa: ARG002
        task = _task_number(messages[-1].text)
        await loopsim_sleep(delay_of(task))
        return loopsim.AgentResponse(loopsim.Message.assistant(f"result of task {task}"))


async def _drive_loopsim(n: int, probe: Probe | None = None, *, minimal: bool = False) -> None:
    async def answer(messages: Sequence[Any], _options: Any) -> str:
        task = _task_number(messages[-1].text)
        await loopsim_sleep(delay_of(task))
        return f"result of task {task}"

    client = None if minimal else loopsim.FunctionChatClient(answer)
    child = MinimalChild(name="worker") if client is None else loopsim.Agent(client, name="worker")
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
    if probe is not None:
        probe("base", client)
    for i in range(1, n + 1):
        await start.invoke(
            {"agent_name": "worker", "input": f"task {i}", "description": f"job {i}"}
        )
    if probe is not None:  # let every child end, and have the provider save every outcome
        await loopsim_sleep(max(delay_of(i) for i in range(1, n + 1)) + 1)
        listing = await tools["background_agents_get_all_tasks"].invoke({})
        assert listing.count("[completed]") == n
        probe("finished", client)
    for i in range(1, n + 1):
        assert (await wait.invoke({"task_ids": [i]})).endswith("completed.")
        assert await results.invoke({"task_id": i}) == f"result of task {i}"
        assert await clear.invoke({"task_id": i}) == f"Removed task {i}."
    assert state["tasks"] == []
    if probe is not None:
        probe("cleared", client)


async def loopsim_sleep(seconds: float) -> None:
    import anyio  # noqa: PLC0415

    await anyio.sleep(seconds)


def loopsim_once(n: int) -> float:
    """CPU seconds of one run (``time.process_time``: less disturbed by other load)."""
    gc.collect()
    began = time.process_time()
    loopsim.simulate(_drive_loopsim, n, wall_clock=False)
    return time.process_time() - began


def _traced_now() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def memory(n: int, *, minimal: bool = False) -> dict[str, int]:
    """Traced bytes of one run: ``peak`` (from the start of the run), and, counted from
    the moment before the first task starts, ``finished`` (all outcomes saved, request log
    released), ``request_log`` (what releasing it freed) and ``cleared``."""
    figures: dict[str, int] = {}

    def probe(phase: str, client: loopsim.FunctionChatClient | None) -> None:
        if phase == "base":
            figures["base"] = _traced_now()
            return
        if phase == "finished":
            with_log = _traced_now()
            if client is not None:
                client.requests.clear()  # the test double's record, not the provider's
            figures["finished"] = _traced_now() - figures["base"]
            figures["request_log"] = with_log - figures["base"] - figures["finished"]
        else:
            figures[phase] = _traced_now() - figures["base"]

    gc.collect()
    tracemalloc.start()
    try:
        loopsim.simulate(
            functools.partial(_drive_loopsim, minimal=minimal), n, probe, wall_clock=False
        )
        figures["peak"] = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return figures


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
            # upstream's own wording: checked by its facts (no error, this task's id)
            assert not str(cleared).startswith("Error"), cleared
            assert str(i) in str(cleared), cleared

    return drive


def upstream_once(n: int) -> float:
    drive = _upstream_drive(n)
    gc.collect()
    began = time.process_time()
    asyncio.run(drive())
    return time.process_time() - began


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
    # every size once per round, alternating order: the growth row is a paired ratio
    samples = dict(
        zip(
            sizes,
            interleaved([functools.partial(loopsim_once, n) for n in sizes], repeat, clock=None),
            strict=True,
        )
    )
    for n in sizes:
        t = median(samples[n])
        mem = memory(n)
        per_task[n] = t / n
        totals[n] = t
        rows.append(
            Row(
                section="scale",
                case=f"loopsim {n} tasks: time per task",
                value=t / n * 1e6,
                unit="us/task (CPU)",
                note=MACHINE,
                extra={"total_s": t, **{f"{k}_bytes": v for k, v in mem.items()}},
            )
        )
        log(f"{rows[-1].case}: {t / n * 1e6:.1f} us ({t:.3f} s total)")
        rows.append(
            Row(
                section="scale",
                case=f"loopsim {n} tasks: peak memory per running task",
                value=mem["peak"] / n / 1024,
                unit="KiB/task",
                note="all N children in flight at once",
            )
        )
        bare = memory(n, minimal=True)
        own = bare["finished"] / n / 1024
        rows.append(
            Row(
                section="scale",
                case=f"loopsim {n} tasks: retained per finished task (provider)",
                value=own,
                unit="KiB/task",
                target="<= 2 KiB",
                met=own <= 2.0,
                note="record + index + an empty child session (history-less child)",
            )
        )
        rows.append(
            Row(
                section="scale",
                case=f"loopsim {n} tasks: retained per finished task (Agent child)",
                value=mem["finished"] / n / 1024,
                unit="KiB/task",
                note="as above + the child session's history kept for continue_task",
            )
        )
        rows.append(
            Row(
                section="scale",
                case=f"loopsim {n} tasks: fake client request log per task",
                value=mem["request_log"] / n / 1024,
                unit="KiB/task",
                note="kept by the test double by design",
            )
        )
        rows.append(
            Row(
                section="scale",
                case=f"loopsim {n} tasks: retained per cleared task",
                value=mem["cleared"] / n / 1024,
                unit="KiB/task",
            )
        )
        for row in rows[-5:]:
            log(f"{row.case}: {row.value:.2f} {row.unit}")
        if n >= 10_000:
            rows.append(
                Row(
                    section="scale",
                    case=f"loopsim {n} tasks: total",
                    value=t,
                    unit="s CPU",
                    target="< 2 s",
                    met=t < 2.0,
                    note=f"{MACHINE}; median of {repeat}",
                )
            )
    if len(sizes) > 1:
        lo, hi = min(sizes), max(sizes)
        scaled = [t * lo / hi for t in samples[hi]]
        growth, low, high = paired_ratio(scaled, samples[lo])
        rows.append(
            Row(
                section="scale",
                case=f"loopsim per-task cost {lo}->{hi}",
                value=growth,
                unit="x",
                target="<= 1.2x",
                met=growth <= 1.2,
                note=interval_note(low, high, repeat),
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
                unit="s CPU",
                upstream=up,
                note=f"{MACHINE}; upstream measured once",
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
