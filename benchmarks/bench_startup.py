"""Start-up: what ``import loopsim`` and the pytest plugin cost every process (issue 28, 3).

Each figure is CPU time (user + system), not wall time: the project machine is shared,
and CPU is what the load disturbs least. Every process is a fresh interpreter, with
bytecode caches kept (``PYTHONDONTWRITEBYTECODE`` is dropped for the subprocesses; the
first round warms them), as for an installed package.

* ``import loopsim``: ``time.process_time()`` around the import, in a fresh interpreter
  (median over rounds). Target 150 ms.
* ``plugin load``: the same around ``import loopsim.pytest_plugin`` after ``import
  pytest`` (what pytest's entry-point loading adds). Target 150 ms.
* ``empty pytest run``: the whole process's CPU (``resource.getrusage`` of the child) of
  ``python -m pytest`` in an empty folder, with loopsim's plugin and with ``-p
  no:loopsim``, measured in paired rounds in alternating order; the row is the median
  over rounds of the difference within a round, with a 95 % bootstrap interval. Target
  0.2 s. (With hypothesis installed, its own plugin would import hypothesis at the end
  of every run, 0.3-0.5 s: loopsim's plugin spares that import when no test used it,
  so the run with loopsim can cost less than the one without.)
* ``marked async tests``: 300 ``@pytest.mark.loopsim`` tests (a one-minute virtual
  sleep and a ``datetime.now()`` each) with the virtual wall clock against
  ``wall_clock=False``, whole pytest runs in paired rounds; target 1.2x.
* ``-X importtime``: the cumulative import time of ``loopsim`` and of the plugin as the
  interpreter reports it (wall microseconds: machine- and load-dependent, a note).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

try:
    from _common import Row, paired_ratio, run_cpu, subprocess_env
except ImportError:  # pragma: no cover
    from benchmarks._common import Row, paired_ratio, run_cpu, subprocess_env

#: Resamples of a bootstrap interval.
BOOTSTRAP = 2000
IMPORT_TARGET_MS = 150.0
EMPTY_RUN_TARGET_S = 0.2

_TIMED_IMPORT = (
    "import time\n"
    "{before}\n"
    "began = time.process_time()\n"
    "import {module}\n"
    "print(time.process_time() - began)\n"
)


def import_cpu(module: str, before: str = "") -> float:
    """CPU seconds of importing ``module`` in a fresh interpreter (after ``before``)."""
    code = _TIMED_IMPORT.format(module=module, before=before)
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", code],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def importtime_ms(module: str, before: str = "") -> float:
    """``-X importtime``'s cumulative figure for ``module`` (wall ms, as Python reports it)."""
    code = f"{before}\nimport {module}"
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-X", "importtime", "-c", code],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1e3
    return 0.0


def paired_difference(over: list[float], under: list[float]) -> tuple[float, float, float]:
    """Median of ``over[i] - under[i]`` (same round) and a 95 % bootstrap interval of it."""
    differences = [a - b for a, b in zip(over, under, strict=True)]
    rng = random.Random(0)  # a fixed resampling: the interval repeats run to run
    medians = sorted(
        statistics.median(rng.choices(differences, k=len(differences))) for _ in range(BOOTSTRAP)
    )
    low, high = medians[int(0.025 * BOOTSTRAP)], medians[int(0.975 * BOOTSTRAP) - 1]
    return statistics.median(differences), low, high


def alternating(fns: Sequence[Callable[[], float]], rounds: int) -> list[list[float]]:
    """The figure each ``fn`` returns, per round; forward order one round, reverse the next."""
    samples: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    for round_ in range(rounds):
        for index in order if round_ % 2 == 0 else order[::-1]:
            samples[index].append(fns[index]())
    return samples


def run(*, rounds: int = 9, log: Callable[[str], None] = print) -> list[Row]:
    rows: list[Row] = []
    import_cpu("loopsim.pytest_plugin", before="import pytest")  # warm the bytecode caches
    plain, plugin = alternating(
        [
            lambda: import_cpu("loopsim"),
            lambda: import_cpu("loopsim.pytest_plugin", before="import pytest"),
        ],
        rounds,
    )
    wall_import = importtime_ms("loopsim")
    wall_plugin = importtime_ms("loopsim.pytest_plugin", before="import pytest")
    for case, samples, wall in (
        ("import loopsim", plain, wall_import),
        ("load the pytest plugin (after import pytest)", plugin, wall_plugin),
    ):
        ms = statistics.median(samples) * 1e3
        rows.append(
            Row(
                section="startup",
                case=f"{case}: CPU",
                value=ms,
                unit="ms CPU",
                target=f"<= {IMPORT_TARGET_MS:.0f} ms",
                met=ms <= IMPORT_TARGET_MS,
                note=(
                    f"median of {rounds} fresh interpreters; -X importtime {wall:.0f} ms wall "
                    "(machine- and load-dependent)"
                ),
            )
        )
        log(f"{rows[-1].case}: {ms:.1f} ms CPU ({rows[-1].note})")
    with tempfile.TemporaryDirectory(prefix="loopsim-bench-empty-") as tmp:
        folder = Path(tmp)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]

        def no_tests(code: int) -> bool:
            return code == 5  # pytest's "no tests were collected"

        run_cpu(command, folder, no_tests)  # warm-up
        with_it, without = alternating(
            [
                lambda: run_cpu(command, folder, no_tests),
                lambda: run_cpu([*command, "-p", "no:loopsim"], folder, no_tests),
            ],
            rounds,
        )
    extra, low, high = paired_difference(with_it, without)
    rows.append(
        Row(
            section="startup",
            case="empty pytest run: with loopsim - without (-p no:loopsim): CPU",
            value=extra,
            unit="s CPU",
            target=f"<= {EMPTY_RUN_TARGET_S} s",
            met=extra <= EMPTY_RUN_TARGET_S,
            note=(
                f"median of {rounds} paired rounds; 95% interval {low:.2f} to {high:.2f}; "
                f"with {statistics.median(with_it):.2f} s, without "
                f"{statistics.median(without):.2f} s (hypothesis's plugin imports hypothesis "
                "at the end of a run without loopsim)"
            ),
        )
    )
    log(f"{rows[-1].case}: {extra:+.3f} s ({rows[-1].note})")
    rows += wall_clock_rows(rounds, log)
    return rows


MARKED_TESTS = 300
WALL_CLOCK_TARGET = 1.2


def _marked_suite(folder: Path, wall_clock: bool) -> Path:
    path = folder / f"test_wall_clock_{wall_clock}.py"
    tests = [
        f"@pytest.mark.loopsim(wall_clock={wall_clock})\n"
        f"async def test_{i}():\n"
        "    await anyio.sleep(60)\n"
        "    assert datetime.datetime.now() is not None\n"
        for i in range(MARKED_TESTS)
    ]
    path.write_text("import datetime\n\nimport anyio\nimport pytest\n\n\n" + "\n\n".join(tests))
    return path


def wall_clock_rows(rounds: int, log: Callable[[str], None]) -> list[Row]:
    """300 marked async tests with the virtual wall clock against ``wall_clock=False``."""

    with tempfile.TemporaryDirectory(prefix="loopsim-bench-wall-") as tmp:
        folder = Path(tmp)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        on = [*command, str(_marked_suite(folder, wall_clock=True))]
        off = [*command, str(_marked_suite(folder, wall_clock=False))]
        run_cpu(off, folder)  # warm-up
        with_it, without = alternating(
            [lambda: run_cpu(on, folder), lambda: run_cpu(off, folder)], rounds
        )
    ratio, low, high = paired_ratio(with_it, without)
    extra = (statistics.median(with_it) - statistics.median(without)) / MARKED_TESTS
    row = Row(
        section="startup",
        case=f"{MARKED_TESTS} marked async tests: wall clock / wall_clock=False, CPU",
        value=ratio,
        unit="x",
        target=f"<= {WALL_CLOCK_TARGET}x",
        met=ratio <= WALL_CLOCK_TARGET,
        note=(
            f"median of {rounds} paired rounds; 95% interval {low:.2f}-{high:.2f}; whole "
            f"pytest runs; {extra * 1e6:+.0f} us per test"
        ),
    )
    log(f"{row.case}: {ratio:.2f}x ({row.note})")
    return [row]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    run(rounds=args.rounds)


if __name__ == "__main__":
    main()
