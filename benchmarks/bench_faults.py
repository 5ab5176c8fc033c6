"""Faults: the cost of a run with faults against the same run without them.

One scenario: the retrying trader of ``scenarios/retrying_trader.py`` (a tenacity retry
that waits what ``retry-after`` says) makes ``N`` tool calls, then answers; ``N + 1``
model turns. The faulted run adds a ``faults:`` rule refusing every second model call
with HTTP 429 and ``retry-after: 30`` (``N`` refusals, each waited out on virtual
time), on the built-in engine. Figures: the median wall time of ``run_scenario`` (load
excluded, transcript recorded), per run, and the faulted run's virtual time.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import loopsim

try:
    from _common import Row, median_time
except ImportError:  # pragma: no cover
    from benchmarks._common import Row, median_time

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
FAULTS = """\
    faults:
      - fault: rate_limit
        retry_after: 30
        when: {every: 2}
"""


def scenario_text(n: int, *, faults: bool) -> str:
    calls = "".join(
        f"      - tool_call: {{name: get_quote, arguments: {{symbol: S{i}}}}}\n" for i in range(n)
    )
    return (
        "version: 1\n"
        "agents:\n"
        "  trader:\n"
        "    factory: retrying_trader:trader\n"
        + (FAULTS if faults else "")
        + "    script:\n"
        + calls
        + "      - reply: done\n"
        "parent: {agent: trader}\n"
        "steps: [{run: go}]\n"
        f"expect: {{calls: {{trader: {2 * n + 1 if faults else n + 1}}}}}\n"
    )


def run(n: int = 20, *, repeat: int = 21, log: Callable[[str], None] = print) -> list[Row]:
    """Rows: one faulted run and one clean run of ``n`` tool calls (``n + 1`` turns)."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(SCENARIOS / "retrying_trader.py", folder / "retrying_trader.py")
        times: dict[bool, float] = {}
        virtual = 0.0
        for faults in (False, True):
            path = folder / f"{'faulted' if faults else 'clean'}.loopsim.yaml"
            path.write_text(scenario_text(n, faults=faults), encoding="utf-8")
            loaded = loopsim.load_scenario(path)
            result = loopsim.run_scenario(loaded)
            assert result.passed, result.report()
            if faults:
                virtual = result.elapsed
            times[faults] = median_time(lambda loaded=loaded: loopsim.run_scenario(loaded), repeat)
            log(f"faults={faults}: {times[faults] * 1e3:.2f} ms")
    clean, faulted = times[False], times[True]
    rows.append(Row("faults", f"scenario run, {n + 1} model turns, no faults", clean * 1e3, "ms"))
    rows.append(
        Row(
            "faults",
            f"same run with {n} rate limits (retry-after 30, tenacity retry)",
            faulted * 1e3,
            "ms",
            note=f"{faulted / clean:.2f}x the clean run; {virtual:g} s of virtual time",
            extra={"ratio_to_clean": faulted / clean, "virtual_seconds": virtual},
        )
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    for row in run(args.calls, repeat=args.repeat):
        print(f"{row.case}: {row.value:.2f} {row.unit}  {row.note}")


if __name__ == "__main__":
    main()
