"""The agent_framework engine: the real package on loopsim's clock, side by side.

The anchor case (issue 11): a parent ``agent_framework.Agent`` with a
``BackgroundAgentsProvider`` (two children taking 0.5 s and 2 s,
``wait_timeout_seconds=1``), run two ways:

* ``one run``: everything inside one ``agent.run`` (start both, wait: 0.5 s, wait: times
  out at 1.5 s, wait: 2 s, answer);
* ``loop``: under ``AgentLoopMiddleware`` (three iterations, one wait each; the predicate
  counts iterations so that the sleep-free baseline does the same work).

Rows (median wall ms per program, program built inside the measured call). The variants
are measured in rounds, one call of each per round, in forward order one round and
reverse order the next; the garbage collector runs as it would (no ``gc.collect`` before
a call: that leaves the caches cold and adds more noise than it removes). A ratio row is
the median over rounds of the two variants' ratio *in the same round*, which cancels the
machine's drift, with a 95 % bootstrap interval of that median in its note:

* ``engine``: loopsim's ``ScriptedChatClient`` behind ``as_chat_client``, on loopsim's
  virtual clock (``VirtualClock(wall_clock=False)``) — what a scenario on this engine costs;
* ``upstream, no sleeps``: the same program with an upstream-only scripted client, on plain
  ``asyncio.run`` with every sleep removed (children answer at once) — the floor;
* ``upstream client, loopsim clock``: the upstream-only client on loopsim's clock (splits the
  adapter's cost from the clock's);
* ``looptime``: the upstream-only client on a ``looptime`` event loop (virtual time too),
  compared with the same program on loopsim's clock;
* ``1 day / 1 second``: the engine with every time scaled by 86 400 against 1;
* ``tracing``: the engine with ``instrument`` and a transcript recorder against without;
* ``clock only``: no agent at all, 2,000 sleeps one after another and 2,000 concurrent
  sleepers, on looptime and on loopsim's clock: what the clocks themselves cost, apart
  from the package's own work, which dominates the anchor program.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

try:
    from _common import Row, interleaved, interval_note, median, paired_ratio, quiet_upstream
except ImportError:  # pragma: no cover
    from benchmarks._common import (
        Row,
        interleaved,
        interval_note,
        median,
        paired_ratio,
        quiet_upstream,
    )

#: Resamples of the bootstrap interval of a paired ratio.
#: Sleeps (or sleepers) of the clock-only programs.
CLOCK_SLEEPS = 2000

START = "background_agents_start_task"
WAIT = "background_agents_wait_for_first_completion"


def _calls(kind: str) -> list[Any]:
    """The parent's script as (tool name, arguments) or text items."""
    start = [
        (START, {"agent_name": "web", "input": "X", "description": "search"}),
        (START, {"agent_name": "code", "input": "X", "description": "analyse"}),
    ]
    if kind == "one run":
        return [
            *start,
            (WAIT, {"task_ids": [1, 2]}),
            (WAIT, {"task_ids": [2]}),
            (WAIT, {"task_ids": [2]}),
            "all done",
        ]
    return [
        *start,
        (WAIT, {"task_ids": [1, 2]}),
        "web done",
        (WAIT, {"task_ids": [2]}),
        "still waiting",
        (WAIT, {"task_ids": [2]}),
        "all done",
    ]


def _upstream_client_class() -> type:
    import agent_framework as af  # noqa: PLC0415
    from agent_framework.observability import ChatTelemetryLayer  # noqa: PLC0415

    class UpstreamScripted(
        af.FunctionInvocationLayer,
        af.ChatMiddlewareLayer,
        ChatTelemetryLayer,
        af.BaseChatClient,
    ):
        """A scripted model written against agent_framework only (same layers as ours)."""

        def __init__(self, items: list[Any], delay: float) -> None:
            super().__init__()
            self.items = list(items)
            self.delay = delay
            self.turn = 0

        def _inner_get_response(self, **_: Any) -> Any:  # never streamed here
            async def answer() -> Any:
                if self.delay:
                    await asyncio.sleep(self.delay)
                self.turn += 1
                item = self.items.pop(0)
                if isinstance(item, tuple):
                    name, arguments = item
                    content = af.Content.from_function_call(
                        f"call-{self.turn}", name, arguments=arguments
                    )
                else:
                    content = af.Content.from_text(item)
                return af.ChatResponse(
                    messages=[af.Message("assistant", [content])], response_id=f"r{self.turn}"
                )

            return answer()

    return UpstreamScripted


def _loopsim_client(items: list[Any], delay: float) -> Any:
    import loopsim  # noqa: PLC0415
    from loopsim.agent_framework import as_chat_client  # noqa: PLC0415

    turns: list[Any] = []
    for n, item in enumerate(items, start=1):
        if isinstance(item, tuple):
            name, arguments = item
            message = loopsim.Message(
                "assistant",
                [loopsim.FunctionCallContent(call_id=f"call-{n}", name=name, arguments=arguments)],
            )
            turns.append(loopsim.Turn(message, delay=delay) if delay else message)
        else:
            turns.append(loopsim.Turn(item, delay=delay) if delay else item)
    return as_chat_client(loopsim.ScriptedChatClient(turns))


def program(
    kind: str, *, client: Callable[[list[Any], float], Any], scale: float, traced: bool = False
) -> Callable[[], Any]:
    """The anchor program as an async function (built when called)."""
    import agent_framework as af  # noqa: PLC0415

    async def main() -> str:
        web = af.Agent(client=client(["3 sources"], 0.5 * scale), name="web", description="w")
        code = af.Agent(client=client(["4 modules"], 2.0 * scale), name="code", description="c")
        provider = af.BackgroundAgentsProvider([web, code], wait_timeout_seconds=1 * scale)
        middleware = []
        if kind == "loop":

            def three(*, iteration: int, **_: Any) -> bool:
                return iteration < 3

            middleware = [af.AgentLoopMiddleware(three, max_iterations=5)]
        parent = af.Agent(
            client=client(_calls(kind), 0.0),
            name="coordinator",
            context_providers=[provider],
            middleware=middleware,
        )
        if traced:
            from loopsim.agent_framework import instrument  # noqa: PLC0415

            instrument(parent)
        session = parent.create_session()
        result = await parent.run("Research X.", session=session)
        return result.text

    return main


def on_loopsim(fn: Callable[[], Any], *, traced: bool = False) -> float:
    import loopsim  # noqa: PLC0415

    clock = loopsim.VirtualClock(wall_clock=False)
    if traced:
        recorder = loopsim.Recorder()
        clock.run(fn, trace=recorder.trace)
        assert recorder.events
    else:
        clock.run(fn)
    return clock.elapsed


def on_asyncio(fn: Callable[[], Any]) -> None:
    asyncio.run(fn())


def on_looptime(fn: Callable[[], Any]) -> None:
    import looptime  # noqa: PLC0415

    loop = looptime.new_event_loop(start=0, noop_cycles=42)
    try:
        loop.run_until_complete(fn())
    finally:
        loop.close()


async def _sequential_sleeps() -> None:
    for _ in range(CLOCK_SLEEPS):
        await asyncio.sleep(0.5)


async def _concurrent_sleepers() -> None:
    async def sleeper(n: int) -> None:
        await asyncio.sleep(n % 50)

    await asyncio.gather(*(sleeper(n) for n in range(CLOCK_SLEEPS)))


def clock_rows(repeat: int, log: Callable[[str], None]) -> list[Row]:
    """The clocks alone: looptime against loopsim's clock on programs of plain sleeps."""
    rows: list[Row] = []
    for case, fn in (
        (f"{CLOCK_SLEEPS:,} sleeps one after another", _sequential_sleeps),
        (f"{CLOCK_SLEEPS:,} concurrent sleepers", _concurrent_sleepers),
    ):
        on_loopsim(fn)
        on_looptime(fn)
        t_loopsim, t_looptime = interleaved(
            [lambda f=fn: on_loopsim(f), lambda f=fn: on_looptime(f)],
            repeat,
            clock=time.perf_counter,  # wall: what a test run feels
        )
        ratio, low, high = paired_ratio(t_looptime, t_loopsim)
        for label, value, unit, note in (
            ("loopsim clock", median(t_loopsim) * 1e3, "ms/program", ""),
            ("looptime", median(t_looptime) * 1e3, "ms/program", ""),
            ("looptime / loopsim clock", ratio, "x", interval_note(low, high, repeat)),
        ):
            rows.append(
                Row(
                    section="agent_framework engine",
                    case=f"clock only, {case}: {label}",
                    value=value,
                    unit=unit,
                    note=note,
                )
            )
            log(f"{rows[-1].case}: {value:.2f} {unit}")
    return rows


def run(*, repeat: int = 15, log: Callable[[str], None] = print) -> list[Row]:
    quiet_upstream()
    warnings.filterwarnings("ignore")
    upstream = _upstream_client_class()
    rows: list[Row] = []
    section = "agent_framework engine"
    for kind in ("one run", "loop"):
        engine = program(kind, client=_loopsim_client, scale=1)
        engine_day = program(kind, client=_loopsim_client, scale=86400)
        traced = program(kind, client=_loopsim_client, scale=1, traced=True)
        floor = program(kind, client=lambda items, _delay: upstream(items, 0.0), scale=1)
        native = program(kind, client=upstream, scale=1)
        assert on_loopsim(engine) == 2.0
        assert on_loopsim(engine_day) == 2.0 * 86400
        on_asyncio(floor)
        on_looptime(native)
        samples = interleaved(
            [
                lambda e=engine: on_loopsim(e),
                lambda f=floor: on_asyncio(f),
                lambda n=native: on_loopsim(n),
                lambda n=native: on_looptime(n),
                lambda e=engine_day: on_loopsim(e),
                lambda t=traced: on_loopsim(t, traced=True),
            ],
            repeat,
            clock=time.perf_counter,  # wall: what a test run feels
        )
        s_engine, s_floor, s_native, s_looptime, s_day, s_traced = samples

        def row(
            case: str, value: float, unit: str = "ms/program", kind: str = kind, **fields: Any
        ) -> None:
            rows.append(
                Row(section=section, case=f"{kind}: {case}", value=value, unit=unit, **fields)
            )
            log(f"{rows[-1].case}: {value:.2f} {unit}")

        def ratio_row(
            case: str,
            over: list[float],
            under: list[float],
            *,
            target: str = "",
            met: Callable[[float], bool] | None = None,
            note: str = "",
        ) -> None:
            ratio, low, high = paired_ratio(over, under)
            interval = interval_note(low, high, repeat)
            row(
                case,
                ratio,
                "x",
                target=target,
                met=None if met is None else met(ratio),
                note=f"{note}; {interval}" if note else interval,
            )

        row("engine (loopsim clock + fakes)", median(s_engine) * 1e3)
        row("upstream, plain asyncio, no sleeps", median(s_floor) * 1e3)
        row("upstream client, loopsim clock", median(s_native) * 1e3)
        row("upstream client, looptime", median(s_looptime) * 1e3)
        ratio_row(
            "engine / no-sleep asyncio",
            s_engine,
            s_floor,
            target="<= 1.2x",
            met=lambda r: r <= 1.2,
        )
        ratio_row(
            "looptime / loopsim clock (same program)",
            s_looptime,
            s_native,
            target=">= 1.0x (as fast)",
            met=lambda r: r >= 1.0,
        )
        ratio_row(
            "adapter: engine / upstream client",
            s_engine,
            s_native,
            note="as_chat_client conversions",
        )
        ratio_row(
            "cost 1 day / 1 second", s_day, s_engine, target="<= 1.2x", met=lambda r: r <= 1.2
        )
        ratio_row("tracing on / off", s_traced, s_engine, note="instrument + Recorder")
    rows += clock_rows(max(5, repeat // 2), log)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=81)
    args = parser.parse_args(argv)
    run(repeat=args.repeat)


if __name__ == "__main__":
    main()
