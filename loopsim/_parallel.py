"""``loopsim run -n N`` on a suite too small for workers: run it serially and say so.

Measured on 2 cores (benchmarks/bench_parallel.py, three runs of 2026-12-03; README,
"Parallel runs") for files of plain scenarios (a few milliseconds each): each of
``-n 2``'s three processes starts pytest, the plugin and loopsim again (about 1 s CPU
each), and on two cores a file cost ``-n 2`` nearly as much wall time as a serial run
(the three processes share the two cores). ``-n 2`` was slower than a serial run at
every size measured: 1.6-1.8x the wall time at 10 files, 1.5-1.6x at 100 and
1.07-1.10x at 1,000 (``--dist load``), and the runs' fits of time against files put
the break-even between about 1,300 and 2,900 files. Below :data:`PARALLEL_MIN_FILES`
the run therefore stays serial. Workers pay off sooner for slow scenarios (``vary:``
files, many draws each) and Python test files, and on machines with more free cores
than workers; ``--parallel`` keeps ``-n`` whatever the suite.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["PARALLEL_FLAG", "PARALLEL_MIN_FILES", "serial_when_small"]

#: a suite of fewer plain scenario files than this runs serially under ``-n``
PARALLEL_MIN_FILES = 2_000  # within the measured break-even on 2 cores (1,300-2,900)
#: ``loopsim run`` option (not passed to pytest): keep ``-n`` on any suite
PARALLEL_FLAG = "--parallel"

_SCENARIO_SUFFIXES = (".loopsim.yaml", ".loopsim.yml")
_WORKER_OPTIONS = ("-n", "--numprocesses")


def _without_workers(arguments: Sequence[str]) -> tuple[list[str], str | None]:
    """The arguments without ``-n``/``--numprocesses`` and the value it had (None: absent)."""
    out: list[str] = []
    value: str | None = None
    items = iter(arguments)
    for item in items:
        if item in _WORKER_OPTIONS:
            value = next(items, "")
        elif item.startswith("--numprocesses="):
            value = item.partition("=")[2]
        elif item.startswith("-n") and not item.startswith("--") and len(item) > 2:
            value = item[2:]
        else:
            out.append(item)
    return out, value


def _files(paths: Sequence[str]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw.partition("::")[0])
        if path.is_file():
            yield path
        elif path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
                for name in names:
                    yield Path(folder) / name


def _slow(path: Path) -> bool:
    """A file that can make workers pay: Python tests, or a scenario with ``vary:``."""
    if path.suffix == ".py":
        return path.name.startswith("test_") or path.name.endswith("_test.py")
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return False
    return head.startswith("vary:") or "\nvary:" in head


def serial_when_small(arguments: Sequence[str]) -> tuple[list[str], str | None]:
    """The pytest arguments to use and, when ``-n`` was dropped, the line that says why.

    ``arguments`` are ``loopsim run``'s (paths and pytest options); ``--parallel`` is
    taken out of them here.
    """
    keep = PARALLEL_FLAG in arguments
    arguments = [a for a in arguments if a != PARALLEL_FLAG]
    without, workers = _without_workers(arguments)
    if keep or workers is None or workers.strip() in ("", "0"):
        return list(arguments), None
    paths = [a for a in without if not a.startswith("-") and Path(a.partition("::")[0]).exists()]
    scenarios = 0
    for path in _files(paths or ["."]):
        if path.name.endswith(_SCENARIO_SUFFIXES) or path.suffix == ".py":
            if _slow(path):
                return list(arguments), None
            scenarios += path.name.endswith(_SCENARIO_SUFFIXES)
        if scenarios >= PARALLEL_MIN_FILES:
            return list(arguments), None
    message = (
        f"loopsim run: {scenarios} scenario file{'s' if scenarios != 1 else ''}, none with "
        f"vary:, and no Python tests: running serially, as -n {workers} would be slower "
        f"below {PARALLEL_MIN_FILES:,} such files (worker start-up); {PARALLEL_FLAG} keeps -n"
    )
    return without, message
