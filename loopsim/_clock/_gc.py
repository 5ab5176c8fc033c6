"""The collector's thresholds for the length of a simulation, restored after it.

A simulation with thousands of tasks in flight keeps tens of objects alive per task; at
the default thresholds the collector's full passes then traverse all of them again and
again, and the per-task cost grows with the number of tasks (benchmarks/bench_scale.py:
1.6x from 1k to 10k tasks, most of it in full passes). While any simulation runs, the
thresholds are at least :data:`SIMULATION_THRESHOLDS`; a higher setting of the user's is
kept, a disabled collector stays disabled, and the first setting comes back when the
last simulation (of any thread) ends. Collection itself is unchanged: cycles are still
found, only in fewer, larger passes; ``gc.collect()`` works as always.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["SIMULATION_THRESHOLDS", "with_simulation_gc"]

T = TypeVar("T")
A = TypeVar("A")

#: gen0 allocations, gen1 and gen2 passes (CPython's defaults are 700, 10, 10).
SIMULATION_THRESHOLDS = (10_000, 10, 10)

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] | None = None


def _enter() -> None:
    global _depth, _saved  # noqa: PLW0603 - process-wide like the collector itself
    with _lock:
        _depth += 1
        if _depth == 1:
            _saved = gc.get_threshold()
            raised = (max(a, b) for a, b in zip(_saved, SIMULATION_THRESHOLDS, strict=True))
            gc.set_threshold(*raised)


def _leave() -> None:
    global _depth, _saved  # noqa: PLW0603
    with _lock:
        _depth -= 1
        if _depth == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            _saved = None


def with_simulation_gc(run: Callable[[A], T]) -> Callable[[A], T]:
    """``run`` with the simulation's collector thresholds while it runs."""

    def tuned(session: A) -> T:
        _enter()
        try:
            return run(session)
        finally:
            _leave()

    return tuned
