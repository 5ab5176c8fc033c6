"""Report: build the HTML report of a 1,000-scenario suite; its size per scenario.

The suite is bench_suites' generated scenarios (loops of 1-5 iterations, every fifth a
background child with wait timeouts), each run once through the scenario runner; the
figure is the median wall time of ``build_report`` over those entries (the runs are not
timed), and the page's bytes divided by the scenario count, next to the largest single
scenario's share and the bound the report guarantees (``SCENARIO_BYTES_MAX``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

try:
    from _common import Row, median_time
    from bench_suites import scenario_text
except ImportError:  # pragma: no cover
    from benchmarks._common import Row, median_time
    from benchmarks.bench_suites import scenario_text

from loopsim._report import SCENARIO_BYTES_MAX, ReportEntry, build_report, entry_from_result
from loopsim._scenario import load_scenario_text, run_scenario

BUILD_TARGET_S = 2.0


def entries(n: int) -> list[ReportEntry]:
    out = []
    for i in range(n):
        loaded = load_scenario_text(scenario_text(i), path=f"generated_{i:04d}.loopsim.yaml")
        result = run_scenario(loaded)
        out.append(entry_from_result(result, description=loaded.scenario.description))
    return out


def run(n: int = 1000, repeat: int = 3, log: Callable[[str], None] = print) -> list[Row]:
    suite = entries(n)
    log(f"ran {n} scenarios for the report")
    seconds = median_time(lambda: build_report(suite), repeat)
    page = build_report(suite).encode("utf-8")
    empty = len(build_report([]).encode("utf-8"))
    largest = max(len(build_report([e]).encode("utf-8")) - empty for e in suite)
    per = (len(page) - empty) / n
    rows = [
        Row(
            section="report",
            case=f"build HTML report, {n:,} scenarios",
            value=seconds,
            unit="s",
            target=f"< {BUILD_TARGET_S:g} s",
            met=seconds < BUILD_TARGET_S,
            extra={"bytes": len(page)},
        ),
        Row(
            section="report",
            case=f"report size per scenario ({n:,} scenarios)",
            value=per / 1000,
            unit="kB/scenario",
            target=f"<= {SCENARIO_BYTES_MAX / 1000:g} kB each",
            met=largest <= SCENARIO_BYTES_MAX,
            note=f"the largest scenario: {largest / 1000:.1f} kB",
            extra={"page_bytes": len(page), "largest_bytes": largest},
        ),
    ]
    size = f"page {len(page) / 1e6:.1f} MB, {per / 1000:.1f} kB/scenario"
    log(f"{rows[0].case}: {seconds:.3f} s; {size}")
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=1000)
    args = parser.parse_args(argv)
    for row in run(n=args.scenarios):
        print(row)


if __name__ == "__main__":
    main()
