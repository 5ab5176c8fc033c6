"""Two overheads that must stay small: zero-touch tracing and live session state.

* **Zero-touch tracing** (issue 21, item 6): the agent_framework anchor program (a
  coordinator under ``AgentLoopMiddleware`` with two background children, see
  ``bench_af.py``) run untraced, recorded with automatic instrumentation (a
  ``Recorder`` and no ``instrument()`` call), and recorded with an explicit
  ``instrument(parent)``. Rows: each traced variant over the untraced one, and automatic
  over explicit (target <= 1.1x: finding the agents to trace costs next to nothing).
* **Live ``session.state["in_memory"]``** (issue 25, item 4): one built-in ``Agent`` and
  one session, N turns against a scripted model, the program reading
  ``session.state["in_memory"]["messages"]`` after every turn. Time per turn at
  N = 10, 100 and 1,000; the ratio row divides the time per turn at 1,000 by that at 100
  (target <= 1.5x: the state is the live history, never a copy per turn).

Every ratio is the median over paired rounds of the two variants' ratio in the same round
(``_common.interleaved``/``paired_ratio``), so the machine's drifting load cancels.

    python benchmarks/bench_overheads.py --repeat 21
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

try:
    import bench_af
    from _common import (
        Row,
        interleaved,
        interval_note,
        median,
        paired_ratio,
        quiet_upstream,
        upstream_available,
    )
except ImportError:  # pragma: no cover
    from benchmarks import bench_af
    from benchmarks._common import (
        Row,
        interleaved,
        interval_note,
        median,
        paired_ratio,
        quiet_upstream,
        upstream_available,
    )

SECTION = "overheads"
TURNS = (10, 100, 1000)
TRACING_TARGET = 1.1
STATE_TARGET = 1.5


def _traced_auto(fn: Callable[[], Any]) -> None:
    import loopsim  # noqa: PLC0415

    recorder = loopsim.Recorder()
    loopsim.VirtualClock(wall_clock=False).run(fn, trace=recorder.trace)
    kinds = {event.kind for event in recorder.events}
    assert "loop_iteration_start" in kinds, "zero-touch tracing saw no loop"


def tracing_rows(repeat: int, log: Callable[[str], None]) -> list[Row]:
    """Untraced, automatic and explicit tracing of the anchor loop program."""
    quiet_upstream()
    untraced = bench_af.program("loop", client=bench_af._loopsim_client, scale=1)
    explicit = bench_af.program("loop", client=bench_af._loopsim_client, scale=1, traced=True)
    bench_af.on_loopsim(untraced)
    _traced_auto(untraced)
    bench_af.on_loopsim(explicit, traced=True)
    s_off, s_auto, s_explicit = interleaved(
        [
            lambda: bench_af.on_loopsim(untraced),
            lambda: _traced_auto(untraced),
            lambda: bench_af.on_loopsim(explicit, traced=True),
        ],
        repeat,
        clock=time.perf_counter,
    )
    rows = [
        Row(SECTION, f"zero-touch tracing: {case}", value * 1e3, "ms/program")
        for case, value in (
            ("untraced", median(s_off)),
            ("recorded, automatic instrumentation", median(s_auto)),
            ("recorded, explicit instrument()", median(s_explicit)),
        )
    ]
    for case, over, under, target in (
        ("automatic / untraced", s_auto, s_off, None),
        ("explicit instrument() / untraced", s_explicit, s_off, None),
        ("automatic / explicit instrument()", s_auto, s_explicit, TRACING_TARGET),
    ):
        rows.append(_ratio_row(f"zero-touch tracing: {case}", over, under, target, repeat))
    for row in rows:
        log(f"{row.case}: {row.value:.2f} {row.unit}")
    return rows


def _ratio_row(
    case: str, over: list[float], under: list[float], target: float | None, repeat: int
) -> Row:
    """The paired ratio of ``over`` to ``under`` as a row (with its target, if any)."""
    ratio, low, high = paired_ratio(over, under)
    return Row(
        SECTION,
        case,
        round(ratio, 3),
        "x",
        target="" if target is None else f"<= {target}x",
        met=None if target is None else ratio <= target,
        note=interval_note(low, high, repeat),
    )


def _turns(n: int) -> Callable[[], float]:
    """A program of ``n`` turns on one session; returns its real seconds per turn."""
    import loopsim  # noqa: PLC0415

    async def main() -> int:
        agent = loopsim.Agent(loopsim.ScriptedChatClient(["noted"] * n), name="clerk")
        session = agent.create_session()
        seen = 0
        for turn in range(n):
            await agent.run(f"item {turn}", session=session)
            seen = len(session.state["in_memory"]["messages"])
        return seen

    def once() -> float:
        began = time.perf_counter()
        assert loopsim.simulate(main, wall_clock=False) == 2 * n
        return (time.perf_counter() - began) / n

    return once


def state_rows(repeat: int, log: Callable[[str], None]) -> list[Row]:
    """Time per turn with live session state at 10, 100 and 1,000 turns."""
    programs = [_turns(n) for n in TURNS]
    for program in programs:
        program()
    samples = interleaved(programs, repeat, clock=None)  # each program times its turns
    rows = [
        Row(
            SECTION, f"live session.state: time per turn at {n:,} turns", median(s) * 1e6, "us/turn"
        )
        for n, s in zip(TURNS, samples, strict=True)
    ]
    by_size = dict(zip(TURNS, samples, strict=True))
    for top, bottom, target in ((1000, 100, STATE_TARGET), (100, 10, None)):
        case = f"live session.state: per turn at {top:,} / at {bottom:,} turns"
        rows.append(_ratio_row(case, by_size[top], by_size[bottom], target, repeat))
    for row in rows:
        log(f"{row.case}: {row.value:.2f} {row.unit}")
    return rows


def run(*, repeat: int = 21, log: Callable[[str], None] = print) -> list[Row]:
    rows = state_rows(repeat, log)
    if upstream_available():
        rows += tracing_rows(repeat, log)
    else:
        log("zero-touch tracing skipped: agent-framework-core is not installed")
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args(argv)
    run(repeat=args.repeat)


if __name__ == "__main__":
    main()
