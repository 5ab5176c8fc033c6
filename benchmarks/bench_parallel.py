"""Parallel runs: ``pytest -n 2`` against serial on generated scenario suites (issue 28, 4).

The suites are bench_suites.py's generated scenario files (its generator, imported). For
10, 100 and 1,000 files, each round runs the suite serially and under ``-n 2`` with each
``--dist`` mode measured (``load``, ``loadfile``, ``worksteal``), in alternating order
(forward one round, reverse the next). Each run is a fresh ``python -m pytest``
subprocess; its figures are:

* CPU: user + system seconds of the process and its children (``resource.getrusage``):
  the machine-independent figure, what a run costs on any number of cores;
* wall: ``time.perf_counter`` around the subprocess: on the shared 2-core project
  machine this depends on the other jobs' load (machine-dependent, indicative only).

Ratio rows are the median over rounds of ``-n 2`` / serial *within a round*, with a 95 %
bootstrap interval. Before measuring, one serial run warms the bytecode caches (the
environment variable ``PYTHONDONTWRITEBYTECODE`` is dropped for the subprocesses, as an
installed package has its ``.pyc`` files): the rows are a warm install, as in CI.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

try:
    from _common import Row, child_cpu, paired_ratio, subprocess_env
    from bench_suites import write_suite
except ImportError:  # pragma: no cover
    from benchmarks._common import Row, child_cpu, paired_ratio, subprocess_env
    from benchmarks.bench_suites import write_suite

#: Target: the CPU of ``-n 2`` on 1,000 files at most this many times the serial run's.
CPU_TARGET = 1.3
DIST_MODES = ("load", "loadfile", "worksteal")


def pytest_run(folder: Path, extra: Sequence[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``python -m pytest <folder> -q`` (must pass)."""
    command = [sys.executable, "-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider"]
    before = child_cpu()
    began = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own interpreter running pytest on our own files
        [*command, *extra],
        cwd=folder,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - began
    cpu = child_cpu() - before
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        msg = f"pytest {' '.join(extra) or '(serial)'} failed on the generated suite:\n{tail}"
        raise RuntimeError(msg)
    return cpu, wall


def variants(modes: Sequence[str]) -> list[tuple[str, list[str]]]:
    return [("serial", []), *((f"-n 2 --dist {m}", ["-n", "2", "--dist", m]) for m in modes)]


def measure(
    files: int, rounds: int, modes: Sequence[str], log: Callable[[str], None]
) -> dict[str, list[tuple[float, float]]]:
    """label -> (CPU, wall) per round, for a generated suite of ``files`` files."""
    runs = variants(modes)
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in runs}
    with tempfile.TemporaryDirectory(prefix="loopsim-bench-parallel-") as tmp:
        folder = Path(tmp)
        write_suite(folder, files)
        pytest_run(folder, [])  # warm-up: bytecode caches
        for round_ in range(rounds):
            for label, extra in runs if round_ % 2 == 0 else runs[::-1]:
                samples[label].append(pytest_run(folder, extra))
                cpu, wall = samples[label][-1]
                log(f"{files} files, round {round_ + 1}, {label}: {cpu:.2f} s CPU, {wall:.2f} s")
    return samples


def rows_for(files: int, samples: dict[str, list[tuple[float, float]]]) -> list[Row]:
    rows: list[Row] = []
    serial = samples["serial"]
    rounds = len(serial)
    for label, got in samples.items():
        cpu = statistics.median(c for c, _ in got)
        wall = statistics.median(w for _, w in got)
        rows.append(
            Row(
                section="parallel",
                case=f"pytest {files} files ({label})",
                value=cpu,
                unit="s CPU",
                note=f"wall {wall:.2f} s (shared 2-core machine: machine-dependent); "
                f"median of {rounds} rounds",
                extra={"wall": wall},
            )
        )
        if label == "serial":
            continue
        cpu_ratio, low, high = paired_ratio([c for c, _ in got], [c for c, _ in serial])
        wall_ratio, wlow, whigh = paired_ratio([w for _, w in got], [w for _, w in serial])
        target, met = "", None
        if files >= 1000:
            target, met = f"<= {CPU_TARGET}x", cpu_ratio <= CPU_TARGET
        rows.append(
            Row(
                section="parallel",
                case=f"{files} files: {label} / serial, CPU",
                value=cpu_ratio,
                unit="x",
                target=target,
                met=met,
                note=f"median of {rounds} paired rounds; 95% interval {low:.2f}-{high:.2f}",
            )
        )
        rows.append(
            Row(
                section="parallel",
                case=f"{files} files: {label} / serial, wall",
                value=wall_ratio,
                unit="x",
                target="<= 1.0x (never slower)" if files >= 100 else "",
                met=wall_ratio <= 1.0 if files >= 100 else None,
                note=f"median of {rounds} paired rounds; 95% interval {wlow:.2f}-{whigh:.2f}; "
                "wall on a shared 2-core machine (load-dependent)",
            )
        )
    return rows


def crossover_row(by_size: dict[int, dict[str, list[tuple[float, float]]]]) -> Row | None:
    """Where ``-n 2`` starts to pay on 2 free cores, estimated from the CPU rows.

    Fitted from the smallest and largest suites: serial CPU ``a + b*N`` and ``-n 2``
    CPU ``a2 + b2*N``. On two free cores the workers start after the controller (about
    ``a``, as a serial run's start-up), then start and run in parallel (``(a2 - a)/2 +
    b2*N/2``) against ``a + b*N`` serially: ``-n 2`` is faster past
    ``N = (a2 - a)/2 / (b - b2/2)``. Wall time on the shared machine cannot show it.
    """
    if len(by_size) < 2:
        return None
    small, large = min(by_size), max(by_size)
    label = next((k for k in by_size[large] if k.endswith("load")), None)
    if label is None:
        return None

    def cpu(files: int, which: str) -> float:
        return statistics.median(c for c, _ in by_size[files][which])

    b = (cpu(large, "serial") - cpu(small, "serial")) / (large - small)
    a = cpu(small, "serial") - b * small
    b2 = (cpu(large, label) - cpu(small, label)) / (large - small)
    a2 = cpu(small, label) - b2 * small
    gain = b - b2 / 2
    files = float("inf") if gain <= 0 else (a2 - a) / 2 / gain
    return Row(
        section="parallel",
        case="-n 2 pays on 2 free cores from (files, estimated from the CPU rows)",
        value=files,
        unit="files",
        note=f"serial {a:.2f} s + {b * 1e3:.2f} ms/file, -n 2 {a2:.2f} s + "
        f"{b2 * 1e3:.2f} ms/file CPU; loopsim/_parallel.py's threshold comes from this",
    )


def run(
    *,
    sizes: Sequence[int] = (10, 100, 1000),
    rounds: int = 3,
    modes: Sequence[str] = DIST_MODES,
    log: Callable[[str], None] = print,
) -> list[Row]:
    rows: list[Row] = []
    by_size: dict[int, dict[str, list[tuple[float, float]]]] = {}
    for files in sizes:
        by_size[files] = measure(files, rounds, modes, log)
        rows += rows_for(files, by_size[files])
    crossover = crossover_row(by_size)
    if crossover is not None:
        rows.append(crossover)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", nargs="*", default=list(DIST_MODES))
    args = parser.parse_args(argv)
    for row in run(sizes=args.sizes, rounds=args.rounds, modes=args.modes):
        met = "" if row.met is None else (" yes" if row.met else " NO")
        print(f"{row.case}: {row.value:.2f} {row.unit} {row.target}{met} ({row.note})")


if __name__ == "__main__":
    main()
