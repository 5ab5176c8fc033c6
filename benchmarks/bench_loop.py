"""Loop overhead: the same scripted loop on loopsim and on the published package.

Every iteration the fake model answers ``step k``; the loop continues until iteration N
(10, 100, 1000), so each side makes exactly N model calls. Rows:

* ``LoopAgent``: loopsim's LoopAgent over ``Agent(ScriptedChatClient)``; a
  ``DelegateLoopEvaluator`` continues with the default nudge as feedback. A LoopAgent
  always runs on a session (it makes one when the caller passes none), so history grows.
* ``middleware``: loopsim's ``AgentLoopMiddleware`` on ``Agent(ScriptedChatClient)``,
  configured exactly like the upstream row (progress injected, default nudge).
* ``upstream``: agent-framework-core's ``AgentLoopMiddleware`` on its ``Agent`` with a
  minimal in-process ``BaseChatClient`` subclass (no function-invocation layer: the
  cheapest client the package allows, so the ratio is conservative).

``history`` runs pass a session created by the agent, so every model call receives the
whole conversation so far (upstream: the ``InMemoryHistoryProvider`` it injects).

Times are CPU time (``time.process_time``) measured inside the event loop around
``agent.run`` only (agents and scripts are built before the clock starts). Before each
timed run the garbage collector makes a full pass (so that no garbage of an earlier run,
its own or the other side's, is collected inside the timed region), then the same side
runs once untimed at n=10: a full pass walks every object of the process and evicts the
CPU caches, which cost a short run about 150 us of misses on this machine (measured:
loopsim's n=10 no-session run, 52 us/iter warm against 72 cold), a cost of the
benchmark's own collection, not of either program. The ``cold`` reference rows keep
the measure without the warm-up run, for n=10 without a session. For each case
loopsim and upstream run in the same rounds, one run of each per round in alternating
order; the ``x faster`` column is the median of the per-round ratios (95 % bootstrap
interval in the note), the iter/s columns are medians and machine-dependent.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import loopsim
from loopsim import (
    AgentLoopMiddleware,
    DelegateLoopEvaluator,
    LoopAgent,
    LoopAgentOptions,
    LoopEvaluation,
    ScriptedChatClient,
)

try:  # run as a script (python benchmarks/run.py) or as a package module
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

NUDGE = AgentLoopMiddleware.DEFAULT_NEXT_MESSAGE
SIZES = (10, 100, 1000)


def repeats_for(n: int, base: int, *, history: bool = True) -> int:
    """More repeats for short loops (their median is noisier), fewer for long ones.

    Runs without a session are cheap on both sides and their ratio sits near the 3x
    target, so they get four times the rounds (a narrower interval, a steadier verdict).
    """
    rounds = base * 3 if n <= 10 else max(1, base if n <= 100 else base // 2)
    return rounds if history else rounds * 4


# -- loopsim ------------------------------------------------------------------------------


def _script(n: int) -> list[str]:
    return [f"step {i}" for i in range(1, n + 1)]


def _loop_agent(n: int) -> tuple[LoopAgent, ScriptedChatClient]:
    client = ScriptedChatClient(_script(n))

    def decide(context: Any) -> LoopEvaluation:
        if context.iteration < n:
            return LoopEvaluation.continue_with_feedback(NUDGE)
        return LoopEvaluation.stop()

    agent = LoopAgent(
        loopsim.Agent(client, name="worker"),
        DelegateLoopEvaluator(decide),
        LoopAgentOptions(max_iterations=n),
    )
    return agent, client


def _middleware_agent(n: int) -> tuple[loopsim.Agent, ScriptedChatClient]:
    client = ScriptedChatClient(_script(n))
    loop = AgentLoopMiddleware(lambda iteration, **_: iteration < n, max_iterations=n)
    return loopsim.Agent(client, name="worker", middleware=[loop]), client


async def _consume(stream: Any) -> Any:
    async for _ in stream:
        pass
    return await stream.get_final_response()


def loopsim_once(kind: str, n: int, *, stream: bool, history: bool) -> float:
    """Seconds for one loop run of ``n`` iterations (inside a virtual-clock simulation)."""
    if kind == "LoopAgent":
        agent: Any
        agent, client = _loop_agent(n)
    else:
        agent, client = _middleware_agent(n)

    async def main() -> float:
        session = agent.create_session() if history else None
        began = time.process_time()
        if stream:
            final = await _consume(agent.run_stream("go", session=session))
        else:
            final = await agent.run("go", session=session)
        elapsed = time.process_time() - began
        assert final.text.endswith(f"step {n}"), final.text[-80:]
        return elapsed

    elapsed = loopsim.simulate(main, wall_clock=False)
    assert client.turn == n
    return elapsed


# -- upstream -----------------------------------------------------------------------------


def _upstream_client_class() -> type:
    from agent_framework import (  # noqa: PLC0415
        BaseChatClient,
        ChatResponse,
        ChatResponseUpdate,
        Content,
        Message,
        ResponseStream,
    )

    class ScriptedUpstreamClient(BaseChatClient):  # type: ignore[misc]
        """Answers ``step k`` on call k, in-process, streaming or not."""

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def _inner_get_response(self, *, stream: bool, **_: Any) -> Any:
            self.calls += 1
            k = self.calls
            text = f"step {k}"
            if stream:

                async def updates() -> Any:
                    yield ChatResponseUpdate(
                        role="assistant",
                        contents=[Content.from_text(text)],
                        message_id=f"msg-{k}",
                        response_id=f"resp-{k}",
                    )

                return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

            async def answer() -> Any:
                return ChatResponse(
                    messages=[Message(role="assistant", contents=[text], message_id=f"msg-{k}")],
                    response_id=f"resp-{k}",
                )

            return answer()

    return ScriptedUpstreamClient


def upstream_once(n: int, *, stream: bool, history: bool) -> float:
    quiet_upstream()
    import agent_framework as af  # noqa: PLC0415

    client = _upstream_client_class()()
    loop = af.AgentLoopMiddleware(lambda iteration, **_: iteration < n, max_iterations=n)
    agent = af.Agent(client=client, middleware=[loop], name="worker")

    async def main() -> float:
        session = agent.create_session() if history else None
        began = time.process_time()
        if stream:
            final = await _consume(agent.run("go", stream=True, session=session))
        else:
            final = await agent.run("go", session=session)
        elapsed = time.process_time() - began
        assert f"step {n}" in final.text, final.text[-80:]
        return elapsed

    elapsed = asyncio.run(main())
    assert client.calls == n
    return elapsed


# -- rows ---------------------------------------------------------------------------------


def _collected(fn: Callable[[], float], warm: Callable[[], float] | None = None) -> float:
    # Collect before each run, on both sides alike: garbage a previous run left (its own or
    # the other side's) must not be collected inside the timed region of the next one.
    # Then one untimed run of the same side brings its code and data back into the CPU
    # caches, which the full pass evicted (see the module doc).
    gc.collect()
    if warm is not None:
        warm()
    return fn()


WARM_N = 10


def run(
    sizes: Sequence[int] = SIZES,
    *,
    repeat: int = 5,
    upstream: bool = True,
    upstream_history_max: int = 1000,
    log: Callable[[str], None] = print,
) -> list[Row]:
    """Rows of every case. For each mode, session kind and size, loopsim's variants and
    upstream run in the same :func:`~_common.interleaved` rounds (alternating order), so
    the ratio row is the median of per-round ratios, with its bootstrap interval."""
    rows: list[Row] = []
    have_upstream = upstream and upstream_available()
    # warm up imports, pydantic schemas and caches on both sides before timing anything
    for warm_stream in (False, True):
        for warm_history in (False, True):
            loopsim_once("LoopAgent", 10, stream=warm_stream, history=warm_history)
            loopsim_once("middleware", 10, stream=warm_stream, history=warm_history)
            if have_upstream:
                upstream_once(10, stream=warm_stream, history=warm_history)
    for stream in (False, True):
        mode = "stream" if stream else "run"
        for history in (False, True):
            label = "history" if history else "no session"
            per_iter: dict[str, dict[int, float]] = {
                "LoopAgent": {},
                "middleware": {},
                "upstream": {},
            }
            for n in sizes:
                # a LoopAgent always has a session; measured once under "history"
                kinds = ["LoopAgent", "middleware"] if history else ["middleware"]
                fns: list[Callable[[], object]] = [
                    partial(
                        _collected,
                        partial(loopsim_once, kind, n, stream=stream, history=history),
                        partial(loopsim_once, kind, WARM_N, stream=stream, history=history),
                    )
                    for kind in kinds
                ]
                with_up = have_upstream and (not history or n <= upstream_history_max)
                if with_up:
                    fns.append(
                        partial(
                            _collected,
                            partial(upstream_once, n, stream=stream, history=history),
                            partial(upstream_once, WARM_N, stream=stream, history=history),
                        )
                    )
                r = repeats_for(n, repeat, history=history)
                if with_up and history and n >= 1000:
                    r = 1  # the published package grows quadratically with history
                samples = interleaved(fns, r, clock=None)
                up_samples = samples[-1] if with_up else None
                up = None if up_samples is None else median(up_samples) / n
                if up is not None:
                    per_iter["upstream"][n] = up
                for kind, own in zip(kinds, samples, strict=False):
                    rows.append(_speed_row(f"{kind} {mode} {label} n={n}", own, up_samples, n, r))
                    per_iter[kind][n] = rows[-1].extra["us_per_iter"] / 1e6
                    log(_speed_line(rows[-1]))
            if history and len(sizes) > 1:
                lo, hi = min(sizes), max(sizes)
                for kind in ("LoopAgent", "middleware", "upstream"):
                    costs = per_iter[kind]
                    if lo in costs and hi in costs:
                        growth = costs[hi] / costs[lo]
                        rows.append(
                            Row(
                                section="loop",
                                case=f"{kind} {mode} history growth {lo}->{hi}",
                                value=growth,
                                unit="x per-iter cost",
                                target="<= 2x" if kind != "upstream" else "(reference)",
                                met=None if kind == "upstream" else growth <= 2.0,
                                note="medians of separate sizes (a scale row, not a pair)",
                                extra={
                                    "us_per_iter_lo": costs[lo] * 1e6,
                                    "us_per_iter_hi": costs[hi] * 1e6,
                                },
                            )
                        )
                        log(
                            rows[-1].case
                            + f": x{growth:.2f} ({costs[lo] * 1e6:.0f} -> "
                            + f"{costs[hi] * 1e6:.0f} us/iter)"
                        )
    if have_upstream and WARM_N in sizes:
        rows.extend(cold_rows(repeats_for(WARM_N, repeat, history=False), log))
    return rows


def cold_rows(rounds: int, log: Callable[[str], None]) -> list[Row]:
    """Reference rows: the n=10 runs without a session measured cold, right after the full
    collection with no warm-up run (the CPU caches empty), in paired rounds."""
    rows: list[Row] = []
    for stream in (False, True):
        mode = "stream" if stream else "run"
        once: dict[str, Any] = {"stream": stream, "history": False}
        fns: list[Callable[[], object]] = [
            partial(_collected, partial(loopsim_once, "middleware", WARM_N, **once)),
            partial(_collected, partial(upstream_once, WARM_N, **once)),
        ]
        own, up = interleaved(fns, rounds, clock=None)
        case = f"middleware {mode} no session n={WARM_N}, cold caches"
        note = "no warm-up run after the full collection; "
        rows.append(_speed_row(case, own, up, WARM_N, rounds, reference=note))
        log(_speed_line(rows[-1]))
    return rows


def _speed_row(
    case: str,
    own: list[float],
    up_samples: list[float] | None,
    n: int,
    rounds: int,
    *,
    reference: str | None = None,
) -> Row:
    """A loop row from samples (seconds per run of ``n`` iterations): iterations per second
    and, with upstream's samples of the same rounds, the paired ratio against the >= 3x
    target; ``reference``: the row has no target, and its note begins with this text."""
    t = median(own) / n
    up = None if up_samples is None else median(up_samples) / n
    ratio = low = high = None
    note = MACHINE
    if up_samples is not None:
        ratio, low, high = paired_ratio(up_samples, own)
        note = (reference or "") + interval_note(low, high, rounds)
    target = ""
    if ratio is not None:
        target = "(reference)" if reference is not None else ">= 3x upstream"
    return Row(
        section="loop",
        case=case,
        value=1 / t,
        unit="iter/s (CPU)",
        upstream=None if up is None else 1 / up,
        ratio=ratio,
        target=target,
        met=None if ratio is None or reference is not None else ratio >= 3.0,
        note=note,
        extra={
            "us_per_iter": t * 1e6,
            "upstream_us_per_iter": None if up is None else up * 1e6,
            "ratio_interval": None if low is None else [low, high],
        },
    )


def _speed_line(row: Row) -> str:
    """The log line of a :func:`_speed_row` row."""
    extra = row.extra
    line = f"{row.case}: {extra['us_per_iter']:.1f} us/iter"
    if row.ratio is not None:
        low, high = extra["ratio_interval"]
        line += f", upstream {extra['upstream_us_per_iter']:.1f} us/iter, x{row.ratio:.2f}"
        line += f" [{low:.2f}-{high:.2f}]"
    return line


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-upstream", action="store_true")
    args = parser.parse_args(argv)
    run(args.sizes, repeat=args.repeat, upstream=not args.no_upstream)


if __name__ == "__main__":
    main()
