"""Stages of one scenario file's cost: where a generated suite's time goes (issue 28, item 1).

The generated suite is ``bench_suites``' (loop files with 1-5 iterations, every fifth a
background child with a wait timeout). Rows, CPU time (``time.process_time`` in-process,
the children's ``getrusage`` for subprocesses), each per scenario file:

* ``start + imports``: one ``pytest`` subprocess on a single file (interpreter start,
  pytest, the plugin, loopsim's imports at the first item, one item);
* ``collection``: the marginal cost of a file in ``pytest --collect-only`` (N files
  against 10, divided by the difference);
* ``pytest item`` (the target row, <= 2.5 ms) and ``no-op YAML item`` (the floor: a
  conftest that collects each file as an item doing nothing): the marginal cost of a
  file in a full ``pytest`` run, N files against 10;
* in-process, warm, measured in alternating rounds over the same loaded files:
  ``YAML load + validation`` (``load_scenario``), ``build`` (the world: agents, clients,
  loop), ``simulation`` (``execute`` without its build), ``checks + invariants``
  (``check_run``, warnings, weak expectations), ``transcript recording`` (what the
  recorder costs a run: ``execute`` with it against without, plus building the transcript
  when it is read), ``transcript writing`` (``write_transcript`` of one run);
* ``pytest reporting``: the pytest item's cost less the in-process stages it runs;
* ``--loopsim-transcripts / without``: the CPU of the whole suite with the option over
  without it, in alternating rounds, each run writing into a new folder as on a fresh
  clone (target <= 1.3x); its wall time the same way (a reference row: the disk's share);
  and a run into the folder of the previous round (a reference row: a rerun finds its
  transcripts there byte for byte and leaves them);
* ``steps that matter``: the shipped scenarios (without ``vary:``) run with the search
  for steps nothing checks (one more run per ``advance``, ``approve``, ``restart`` and
  ``release_session`` step) over run without it, in-process, paired (a reference row;
  the generated suite has no such steps).

All absolute rows are machine-dependent; the ratio row is a paired ratio.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

try:
    from _common import (
        MACHINE,
        Row,
        interleaved,
        interval_note,
        median,
        paired_ratio,
        run_cpu,
    )
    from bench_suites import write_suite
except ImportError:  # pragma: no cover
    from benchmarks._common import (
        MACHINE,
        Row,
        interleaved,
        interval_note,
        median,
        paired_ratio,
        run_cpu,
    )
    from benchmarks.bench_suites import write_suite

NOOP_CONFTEST = """\
import pytest


class NoopItem(pytest.Item):
    def runtest(self):
        pass


class NoopFile(pytest.File):
    def collect(self):
        yield NoopItem.from_parent(self, name=self.path.name)


def pytest_collect_file(file_path, parent):
    if file_path.name.endswith(".noop.yaml"):
        return NoopFile.from_parent(parent, path=file_path)
    return None
"""


def _pytest_cpu(folder: Path, *extra: str, walls: list[float] | None = None) -> float:
    """CPU seconds of one pytest run in ``folder``; its wall seconds go to ``walls``."""
    command = [sys.executable, "-m", "pytest", ".", "-q", "-p", "no:cacheprovider", *extra]
    began = time.perf_counter()
    cpu = run_cpu(command, folder)
    if walls is not None:
        walls.append(time.perf_counter() - began)
    return cpu


def _suite(root: Path, name: str, n: int, *, noop: bool = False) -> Path:
    folder = root / name
    folder.mkdir()
    if noop:
        (folder / "conftest.py").write_text(NOOP_CONFTEST, encoding="utf-8")
        for i in range(n):
            (folder / f"gen_{i:04d}.noop.yaml").write_text("x: 1\n", encoding="utf-8")
    else:
        write_suite(folder, n)
    return folder


def _marginal(big: list[float], small: list[float], files: int, base: int) -> float:
    return (median(big) - median(small)) / (files - base)


def subprocess_rows(files: int, rounds: int, log: Callable[[str], None]) -> list[Row]:
    rows: list[Row] = []
    base = 10
    with tempfile.TemporaryDirectory(prefix="loopsim-stages-") as tmp:
        root = Path(tmp)
        one = _suite(root, "one", 1)
        small = _suite(root, "small", base)
        big = _suite(root, "big", files)
        noop_small = _suite(root, "noop_small", base, noop=True)
        noop_big = _suite(root, "noop_big", files, noop=True)
        fresh = itertools.count()  # a new folder per run, as on CI's fresh clone
        reused = root / "transcripts-reused"
        wall_without: list[float] = []
        wall_with: list[float] = []
        fns: list[Callable[[], object]] = [
            lambda: _pytest_cpu(one),
            lambda: _pytest_cpu(small, "--collect-only"),
            lambda: _pytest_cpu(big, "--collect-only"),
            lambda: _pytest_cpu(small),
            lambda: _pytest_cpu(big, walls=wall_without),
            lambda: _pytest_cpu(noop_small),
            lambda: _pytest_cpu(noop_big),
            lambda: _pytest_cpu(
                big, f"--loopsim-transcripts={root / f'transcripts-{next(fresh)}'}", walls=wall_with
            ),
            lambda: _pytest_cpu(big, f"--loopsim-transcripts={reused}"),
        ]
        s = interleaved(fns, rounds, clock=None)
        start, co_small, co_big, run_small, run_big, noop_s, noop_b, with_t, with_reused = s
    item = _marginal(run_big, run_small, files, base)
    noop = _marginal(noop_b, noop_s, files, base)
    rows.append(_row("start + imports (pytest on one file)", median(start), "s CPU"))
    rows.append(
        _row("collection per file", _marginal(co_big, co_small, files, base) * 1e3, "ms CPU")
    )
    rows.append(
        Row(
            section="stages",
            case=f"pytest item (marginal, {files} files)",
            value=item * 1e3,
            unit="ms CPU/item",
            target="<= 2.5 ms",
            met=item * 1e3 <= 2.5,
            note=f"{MACHINE}; median of {rounds}",
        )
    )
    rows.append(_row("no-op YAML item (pytest's floor)", noop * 1e3, "ms CPU/item"))
    case = f"--loopsim-transcripts / without ({files} files)"
    rows.append(_ratio_row(case, with_t, run_big, "x CPU", limit=1.3))
    # A reference: a rerun into the folder of the last run finds most transcripts there
    # already, byte for byte, and leaves them (write_atomic). Its first round is fresh.
    case = f"--loopsim-transcripts / without, a folder reused ({files} files)"
    rows.append(_ratio_row(case, with_reused, run_big, "x CPU"))
    # A reference: the transcripts' flush waits on the disk, and the file system's flush at
    # the session's end is partly the kernel's CPU, not the process's (see write_atomic).
    case = f"--loopsim-transcripts / without, wall ({files} files)"
    rows.append(_ratio_row(case, wall_with, wall_without, "x wall", machine=True))
    for row in rows:
        log(f"{row.case}: {row.value:.3f} {row.unit}")
    return rows


def _row(case: str, value: float, unit: str) -> Row:
    return Row(section="stages", case=case, value=value, unit=unit, note=MACHINE)


def _ratio_row(
    case: str,
    over: list[float],
    under: list[float],
    unit: str,
    *,
    limit: float | None = None,
    machine: bool = False,
) -> Row:
    """The paired ratio ``over / under`` as a row; with ``limit``, its target ``<= limit``."""
    ratio, low, high = paired_ratio(over, under)
    note = interval_note(low, high, len(over))
    return Row(
        section="stages",
        case=case,
        value=ratio,
        unit=unit,
        target="" if limit is None else f"<= {limit:g}x",
        met=None if limit is None else ratio <= limit,
        note=f"{MACHINE}; {note}" if machine else note,
    )


def _timed(fn: Callable[[], Any]) -> float:
    began = time.process_time()
    fn()
    return time.process_time() - began


class _Silent:
    """A recorder that listens and keeps nothing: ``execute`` without recording."""

    def __init__(self, trace: Any, **_: Any) -> None:
        self.trace = trace
        self.transcript = None

    def close(self) -> None:
        pass


def in_process_rows(files: int, rounds: int, log: Callable[[str], None]) -> list[Row]:
    from loopsim._scenario import _run, load_scenario  # noqa: PLC0415
    from loopsim._scenario._build import World  # noqa: PLC0415
    from loopsim._scenario._check import check_run, warnings_of, weak_of  # noqa: PLC0415
    from loopsim._trace import Trace, bind  # noqa: PLC0415
    from loopsim._transcript import write_transcript  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="loopsim-stages-") as tmp:
        folder = Path(tmp)
        write_suite(folder, files)
        paths = sorted(folder.glob("*.loopsim.yaml"))
        loaded = [load_scenario(p) for p in paths]
        runs = [_run.execute(one) for one in loaded]
        out = folder / "out"
        out.mkdir()

        def load_all() -> None:
            for p in paths:
                load_scenario(p)

        def build_all() -> None:
            for one in loaded:
                with bind(Trace()):
                    World(one).build()

        def execute_all() -> None:
            for one in loaded:
                _run.execute(one)

        def execute_silent() -> None:
            real = _run.Recorder
            _run.Recorder = _Silent  # type: ignore[assignment,misc]
            try:
                for one in loaded:
                    _run.execute(one)
            finally:
                _run.Recorder = real  # type: ignore[misc]

        def read_transcripts() -> None:
            for one in loaded:
                _run.execute(one).transcript  # noqa: B018 - reading it is the cost

        def check_all() -> None:
            keys = ("expect", "always")
            for one, run in zip(loaded, runs, strict=True):
                check_run(one, run, keys)
                warnings_of(one, run)
                weak_of(one, run)

        def write_all() -> None:
            for i, run in enumerate(runs):
                assert run.transcript is not None
                write_transcript(out / f"t{i}.transcript.json", run.transcript)

        fns = [load_all, build_all, execute_all, execute_silent, read_transcripts, check_all]
        fns.append(write_all)
        for fn in fns:
            fn()  # warm
        gc.collect()
        samples = interleaved(fns, rounds)
    load, build, execute, silent, read, checks, write = (median(s) / files for s in samples)
    recording = max(0.0, execute - silent) + max(0.0, read - execute)
    simulation = max(0.0, silent - build)
    figures = {
        "YAML load + validation": load,
        "build": build,
        "simulation": simulation,
        "checks + invariants": checks,
        "transcript recording (run + read)": recording,
        "transcript writing": write,
    }
    rows = [_row(case, value * 1e3, "ms CPU/scenario") for case, value in figures.items()]
    for row in rows:
        log(f"{row.case}: {row.value:.3f} {row.unit}")
    return rows


def steps_matter_row(rounds: int, log: Callable[[str], None]) -> Row:
    """What looking for steps that matter adds to a run (``loopsim run`` and the plugin ask
    for it: one more run per ``advance``/``approve``/``restart``/``release_session`` step):
    the shipped scenarios without ``vary:``, run with it over run without it, paired."""
    from loopsim._scenario import load_scenario, run_scenario  # noqa: PLC0415

    shipped = Path(__file__).resolve().parent.parent / "scenarios"
    loaded = [load_scenario(p) for p in sorted(shipped.glob("*.loopsim.yaml"))]
    loaded = [one for one in loaded if not one.scenario.vary]

    def runs(*, check: bool) -> Callable[[], None]:
        def go() -> None:
            for one in loaded:
                run_scenario(one, check_steps_matter=check)

        return go

    fns = [runs(check=False), runs(check=True)]
    for fn in fns:
        fn()  # warm
    without, with_ = interleaved(fns, rounds)
    ratio, low, high = paired_ratio(with_, without)
    row = Row(
        section="stages",
        case=f"steps that matter: run with / without ({len(loaded)} shipped scenarios)",
        value=ratio,
        unit="x CPU",
        target="(reference)",
        note=interval_note(low, high, rounds),
    )
    log(f"{row.case}: {row.value:.3f} {row.unit}")
    return row


def run(*, files: int = 1000, rounds: int = 3, log: Callable[[str], None] = print) -> list[Row]:
    inner = in_process_rows(min(files, 200), max(rounds, 5), log)
    inner.append(steps_matter_row(max(rounds, 5), log))
    outer = subprocess_rows(files, rounds, log)
    item = next(r for r in outer if r.case.startswith("pytest item"))
    staged = sum(
        r.value
        for r in inner
        if r.case
        in (
            "YAML load + validation",
            "build",
            "simulation",
            "checks + invariants",
            "transcript recording (run + read)",
        )
    )
    report = _row(
        "pytest reporting + plugin (item less the stages)", item.value - staged, "ms CPU/item"
    )
    log(f"{report.case}: {report.value:.3f} {report.unit}")
    return [*outer[:2], *inner, report, *outer[2:]]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    run(files=args.files, rounds=args.rounds)


if __name__ == "__main__":
    main()
