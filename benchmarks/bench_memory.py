"""Memory across runs in one process (issue 26, item 8), and memory per iteration of one
long loop (issue 21, item 11), on both engines.

One shipped scenario (``background_fast_first``: a parent with two background children)
runs ``runs`` times in a fresh process per engine; the resident set size (RSS, after a
``gc.collect``) is read after 100 runs and after the last. The row is the ratio of the
two: what a long ``vary:`` or a big suite in one worker pays per run. Target: within
10 % (ratio ≤ 1.10). Run directly for one engine:

    python benchmarks/bench_memory.py agent_framework 2000

*Per iteration*: one loop that never stops on its own (an evaluator or predicate that
always continues, capped at N iterations) against a model that answers at once, run not
recorded (``simulate``), recorded (under a ``Recorder``, its transcript not read) and
recorded then read (``loopsim.record``: reading makes each request's own message list,
8 bytes a slot, so that figure grows with N and has no target), in a fresh process per
engine. The
figure is the traced peak (``tracemalloc``, above what was allocated before the run)
divided by N, at N = 10, 100 and 1,000. The history grows by two messages per iteration,
so a flat figure is the target: the ratio row divides the figure at the largest N by
the figure at 100 (target <= 1.5). On the agent_framework engine N stops at 300: there,
agent_framework's own history provider hashes the whole history on every save, so one
run of N iterations takes time quadratic in N (about 15 s for 200 on 2 cores).

    python benchmarks/bench_memory.py --per-iteration loopsim 10 100 1000
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    from _common import Row, quiet_upstream
except ImportError:  # pragma: no cover
    from benchmarks._common import Row, quiet_upstream

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "background_fast_first.loopsim.yaml"
FIRST = 100
TARGET = 1.10


def _rss_mb() -> float:
    with Path("/proc/self/statm").open(encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return pages * 4096 / 1e6


def measure(engine: str, runs: int) -> dict[str, float]:
    """RSS in MB after FIRST runs and after ``runs`` (this process)."""
    from loopsim._scenario import load_scenario, run_scenario  # noqa: PLC0415

    loaded = load_scenario(SCENARIO)
    marks: dict[str, float] = {}
    for count in range(1, runs + 1):
        result = run_scenario(loaded, engine=engine)
        if not result.passed:
            msg = f"{SCENARIO.name} failed on {engine} at run {count}"
            raise RuntimeError(msg)
        if count in (FIRST, runs):
            gc.collect()
            marks[str(count)] = _rss_mb()
    return marks


def run(engines: tuple[str, ...], runs: int, log: Callable[[str], None]) -> list[Row]:
    """One row per engine, each measured in a fresh process."""
    rows: list[Row] = []
    for engine in engines:
        done = subprocess.run(  # noqa: S603 - our own interpreter and script
            [sys.executable, __file__, engine, str(runs)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        marks = json.loads(done.stdout.strip().splitlines()[-1])
        first, last = marks[str(FIRST)], marks[str(runs)]
        ratio = last / first
        log(f"{engine}: {first:.1f} MB after {FIRST} runs, {last:.1f} MB after {runs}")
        rows.append(
            Row(
                section="memory",
                case=f"{engine} engine: RSS after {runs:,} runs / after {FIRST}",
                value=round(ratio, 3),
                unit="x",
                target=f"<= {TARGET}",
                met=ratio <= TARGET,
                note=f"{first:.1f} -> {last:.1f} MB",
            )
        )
    return rows


def _loop_program(engine: str, iterations: int) -> Callable[[], Any]:
    import loopsim  # noqa: PLC0415

    client = loopsim.FunctionChatClient(lambda *_args, **_kwargs: "again")
    if engine == "loopsim":
        again = loopsim.DelegateLoopEvaluator(
            lambda _context: loopsim.LoopEvaluation.continue_with_feedback("more")
        )
        loop = loopsim.LoopAgent(
            loopsim.Agent(client, name="writer"),
            [again],
            loopsim.LoopAgentOptions(max_iterations=iterations),
        )

        async def run_builtin() -> str:
            return (await loop.run("go")).text

        return run_builtin
    import agent_framework as af  # noqa: PLC0415

    from loopsim.agent_framework import as_chat_client  # noqa: PLC0415

    def more(*, iteration: int, **_: Any) -> bool:
        return iteration < iterations

    agent = af.Agent(
        client=as_chat_client(client),
        name="writer",
        middleware=[af.AgentLoopMiddleware(more, max_iterations=iterations)],
    )

    async def run_af() -> str:
        session = agent.create_session()
        return (await agent.run("go", session=session)).text

    return run_af


def per_iteration(engine: str, sizes: list[int]) -> dict[str, float]:
    """Traced peak bytes per iteration of one long loop, recorded and not (this process)."""
    import loopsim  # noqa: PLC0415

    if engine == "agent_framework":
        quiet_upstream()
    # warm imports and caches
    loopsim.simulate(_loop_program(engine, 3), wall_clock=False)
    loopsim.record(_loop_program(engine, 3))
    figures: dict[str, float] = {}
    for mode in MODES:
        for n in sizes:
            program = _loop_program(engine, n)
            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            if mode == "plain":
                loopsim.simulate(program, wall_clock=False, real_time_limit=None)
            elif mode == "recorded":
                # the run under a Recorder, up to the transcript (not read)
                with loopsim.Recorder() as recorder:
                    loopsim.simulate(
                        program, wall_clock=False, real_time_limit=None, trace=recorder.trace
                    )
            else:
                loopsim.record(program, real_time_limit=None)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            figures[f"{mode} {n}"] = (peak - base) / n
    return figures


def iteration_rows(
    engines: tuple[str, ...], sizes: dict[str, list[int]], log: Callable[[str], None]
) -> list[Row]:
    """KB per iteration at each size, recorded and not, and the flatness ratio per case."""
    rows: list[Row] = []
    for engine in engines:
        done = subprocess.run(  # noqa: S603 - our own interpreter and script
            [
                sys.executable,
                __file__,
                "--per-iteration",
                engine,
                *(str(n) for n in sizes[engine]),
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        largest = max(sizes[engine])
        for mode, label in MODES.items():
            for n in sizes[engine]:
                value = figures[f"{mode} {n}"] / 1e3
                rows.append(
                    Row(
                        section="memory",
                        case=f"{engine} engine, long loop {label}: KB per iteration at {n:,}",
                        value=round(value, 1),
                        unit="KB/iteration",
                        note="tracemalloc peak / iterations",
                    )
                )
                log(f"{rows[-1].case}: {value:.1f} KB")
            ratio = figures[f"{mode} {largest}"] / figures[f"{mode} 100"]
            flat = mode != "read"
            rows.append(
                Row(
                    section="memory",
                    case=(
                        f"{engine} engine, long loop {label}: per iteration at {largest:,} / at 100"
                    ),
                    value=round(ratio, 2),
                    unit="x",
                    target=f"<= {ITERATION_TARGET}" if flat else "",
                    met=ratio <= ITERATION_TARGET if flat else None,
                    note=(
                        "flat: the same memory per iteration however long the loop"
                        if flat
                        else "read: each request's full message list is made (8 bytes a slot)"
                    ),
                )
            )
            log(f"{rows[-1].case}: {ratio:.2f}x")
    return rows


#: The runs measured: not recorded; recorded (a Recorder, its transcript not read); and
#: recorded then read (``loopsim.record``: the transcript holds every request's list).
MODES = {"plain": "not recorded", "recorded": "recorded", "read": "recorded and read"}
#: Memory per iteration at the largest size over that at 100 iterations: flat.
ITERATION_TARGET = 1.5


if __name__ == "__main__":
    if sys.argv[1] == "--per-iteration":
        print(json.dumps(per_iteration(sys.argv[2], [int(n) for n in sys.argv[3:]])))
    else:
        print(json.dumps(measure(sys.argv[1], int(sys.argv[2]))))
