"""Shared helpers of the benchmark suite: timing, optional upstream import, result rows.

The method (issue 28, item 8): the machine is shared, so

* a figure is CPU time where it can be (``time.process_time`` in-process, the children's
  ``getrusage`` for subprocesses), outside the virtual clock's frozen time (simulations
  run with ``wall_clock=False``);
* a **ratio row** compares variants measured in :func:`interleaved` rounds (one call of
  each per round, forward order one round and reverse the next) and is the median of the
  per-round ratios with a 95 % bootstrap interval (:func:`paired_ratio`), written in the
  row's note; its verdict is the ratio's;
* an **absolute row** (ms, s, iter/s) depends on the machine and its load and says so
  (:data:`MACHINE`).

Nothing here asserts on time: the targets are checked and printed by ``run.py``.
"""

from __future__ import annotations

import gc
import os
import random
import resource
import statistics
import subprocess
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Row:
    """One line of the results table (and one object of results.json)."""

    section: str
    case: str
    value: float
    unit: str
    upstream: float | None = None  # the published package's figure, same unit
    ratio: float | None = None  # how many times faster loopsim is (upstream / loopsim)
    target: str = ""
    met: bool | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Note of an absolute row: its figure depends on the machine and on the load.
MACHINE = "machine-dependent"
#: Resamples of the bootstrap interval of a paired ratio.
BOOTSTRAP = 2000


def interleaved(
    fns: list[Callable[[], object]],
    repeat: int,
    *,
    clock: Callable[[], float] | None = time.process_time,
) -> list[list[float]]:
    """Seconds (``clock``: CPU by default) of each ``fn`` per round: ``repeat`` rounds of one
    call each, in forward order one round and reverse order the next, so that a shared
    machine's drifting load weighs on every variant alike and none always runs first.
    With ``clock=None`` each ``fn`` times itself and returns its seconds."""
    samples: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    for round_ in range(repeat):
        for index in order if round_ % 2 == 0 else order[::-1]:
            if clock is None:
                samples[index].append(float(fns[index]()))  # type: ignore[arg-type]
                continue
            began = clock()
            fns[index]()
            samples[index].append(clock() - began)
    return samples


def paired_ratio(over: list[float], under: list[float]) -> tuple[float, float, float]:
    """Median of ``over[i] / under[i]`` (same round) and a 95 % bootstrap interval of it."""
    ratios = [a / b for a, b in zip(over, under, strict=True)]
    rng = random.Random(0)  # a fixed resampling: the interval repeats run to run
    medians = sorted(
        statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(BOOTSTRAP)
    )
    low, high = medians[int(0.025 * BOOTSTRAP)], medians[int(0.975 * BOOTSTRAP) - 1]
    return statistics.median(ratios), low, high


def interval_note(low: float, high: float, rounds: int) -> str:
    return f"median of {rounds} paired rounds; 95% interval {low:.2f}-{high:.2f}"


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall seconds of ``fn()`` over ``repeat`` runs (gc collected before each)."""
    times: list[float] = []
    for _ in range(repeat):
        gc.collect()
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def median(values: list[float]) -> float:
    return statistics.median(values)


def upstream_available() -> bool:
    """True when the published agent-framework-core package can be imported."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import agent_framework  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def quiet_upstream() -> None:
    """Silence the published package's experimental-feature warnings and info logs."""
    import logging  # noqa: PLC0415

    warnings.filterwarnings("ignore", module="agent_framework")
    warnings.filterwarnings("ignore", message=r".*\[HARNESS\].*")
    warnings.filterwarnings("ignore", message=r".*experimental.*")
    logging.getLogger("agent_framework").setLevel(logging.ERROR)


def subprocess_env() -> dict[str, str]:
    """The environment for a measured subprocess: no ``PYTEST_ADDOPTS`` of the caller's, and
    a warm install (``PYTHONDONTWRITEBYTECODE`` dropped, so ``.pyc`` files are kept, as on a
    user's machine)."""
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def child_cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cpu(command: Sequence[str], cwd: Path, ok: Callable[[int], bool] | None = None) -> float:
    """CPU seconds of one subprocess run of ``command`` in ``cwd`` (its return code must be
    ok: 0 unless ``ok`` says otherwise)."""
    before = child_cpu()
    done = subprocess.run(  # noqa: S603 - our own interpreter on our own files
        list(command), cwd=cwd, env=subprocess_env(), capture_output=True, text=True, check=False
    )
    spent = child_cpu() - before
    if not (ok(done.returncode) if ok is not None else done.returncode == 0):
        tail = (done.stdout + done.stderr)[-3000:]
        msg = f"{' '.join(command)} failed ({done.returncode}):\n{tail}"
        raise RuntimeError(msg)
    return spent
