"""Memory across runs in one process (issue 26, item 8), on both engines.

One shipped scenario (``background_fast_first``: a parent with two background children)
runs ``runs`` times in a fresh process per engine; the resident set size (RSS, after a
``gc.collect``) is read after 100 runs and after the last. The row is the ratio of the
two: what a long ``vary:`` or a big suite in one worker pays per run. Target: within
10 % (ratio ≤ 1.10). Run directly for one engine:

    python benchmarks/bench_memory.py agent_framework 2000
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

try:
    from _common import Row
except ImportError:  # pragma: no cover
    from benchmarks._common import Row

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


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], int(sys.argv[2]))))
