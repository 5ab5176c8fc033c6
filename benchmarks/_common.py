"""Shared helpers of the benchmark suite: timing, optional upstream import, result rows.

Every figure is measured with ``time.perf_counter`` outside the virtual clock's frozen
time (simulations run with ``wall_clock=False``) and reported as the median of a few
repeats. Nothing here asserts on time: the targets are checked and printed by ``run.py``.
"""

from __future__ import annotations

import gc
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
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
