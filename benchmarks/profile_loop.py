"""Profile the hottest path (the loop benchmark) with pyinstrument.

Runs loopsim's LoopAgent (history, non-streaming and streaming) and AgentLoopMiddleware
(no session) loops of 1,000 iterations under pyinstrument and prints the call tree, or
writes it to ``--output``. Needs the ``bench`` extra (pyinstrument).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

try:
    import bench_loop
except ImportError:  # pragma: no cover
    from benchmarks import bench_loop

CASES = {
    "loopagent-run": ("LoopAgent", False, True),
    "loopagent-stream": ("LoopAgent", True, True),
    "middleware-run": ("middleware", False, False),
}


def profile(case: str, n: int = 1000, repeat: int = 3) -> str:
    from pyinstrument import Profiler  # noqa: PLC0415

    kind, stream, history = CASES[case]
    bench_loop.loopsim_once(kind, 10, stream=stream, history=history)  # warm up
    profiler = Profiler(interval=0.0002)
    profiler.start()
    for _ in range(repeat):
        bench_loop.loopsim_once(kind, n, stream=stream, history=history)
    profiler.stop()
    # show loopsim's own frames even when it is installed into site-packages (tox)
    options = {"show_regex": r".*[/\\]loopsim[/\\].*", "filter_threshold": 0.01}
    return str(profiler.output_text(unicode=False, color=False, processor_options=options))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"any of {', '.join(CASES)} (default: all)")
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    text = "\n".join(f"=== {case} ===\n{profile(case, args.n)}" for case in args.cases or CASES)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
