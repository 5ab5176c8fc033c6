"""What ran when: loop iterations and background-task runs as spans of virtual time.

The Mermaid timeline and the HTML report draw the same spans, read here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._model import TranscriptEvent

__all__ = ["STATUSES", "Span", "Spans", "spans"]

#: A span's status: an iteration, or the state a task run ended in (or still has).
STATUSES = ("iteration", "running", "completed", "failed", "lost")


@dataclass(frozen=True)
class Span:
    """One bar: a lane (``loop NAME`` or a child agent), a label, start and end seconds.

    ``ident`` is stable and unique in the run (``i<loop>_<n>``, ``t<task>_<run>``);
    ``open`` is True for a task still running when the transcript ends.
    """

    lane: str
    label: str
    start: float
    end: float
    status: str
    ident: str
    detail: str = ""
    open: bool = False


@dataclass(frozen=True)
class Spans:
    """Every span, the restart instants and the transcript's last time."""

    bars: list[Span]
    restarts: list[float]
    end: float


def _iterations(events: Sequence[TranscriptEvent], end: float) -> list[Span]:
    loops: list[str] = []
    runs: dict[str, int] = {}
    last: dict[str, int] = {}
    current: dict[str, tuple[int, int, float]] = {}  # loop -> (run, iteration, start)
    done: list[tuple[str, int, int, float, float]] = []

    def close(loop: str, time: float) -> None:
        open_one = current.pop(loop, None)
        if open_one is not None:
            done.append((loop, *open_one, time))

    for event in events:
        d = event.data
        if event.kind == "loop_iteration_start":
            loop = str(d.get("loop"))
            if loop not in loops:
                loops.append(loop)
            iteration = int(d.get("iteration") or 0)
            close(loop, event.time)
            if loop not in last or iteration <= last[loop]:
                runs[loop] = runs.get(loop, 0) + 1
            last[loop] = iteration
            current[loop] = (runs[loop], iteration, event.time)
        elif event.kind == "loop_stop":
            close(str(d.get("loop")), event.time)
        elif event.kind == "process_restart":
            for loop in list(current):
                close(loop, event.time)
    for loop in list(current):
        close(loop, end)
    out: list[Span] = []
    for n, (loop, run, iteration, start, stop) in enumerate(done, start=1):
        label = f"iteration {iteration}" + (f" (run {run})" if runs[loop] > 1 else "")
        ident = f"i{loops.index(loop) + 1}_{n}"
        out.append(Span(f"loop {loop}", label, start, stop, "iteration", ident))
    return out


def _detail(d: dict[str, Any]) -> str:
    value = d.get("error") if d.get("error") is not None else d.get("result")
    return "" if value is None else str(value)


def _tasks(events: Sequence[TranscriptEvent], end: float) -> list[Span]:
    numbers: dict[tuple[str, str, str], int] = {}
    open_runs: dict[tuple[str, str, str], tuple[float, dict[str, Any], int]] = {}
    counts: dict[tuple[str, str, str], int] = {}
    out: list[Span] = []

    def span(
        key: tuple[str, str, str],
        d: dict[str, Any],
        times: tuple[float, float],
        status: str,
        run: int,
    ) -> Span:
        again = " (continued)" if run > 1 else ""
        label = f"task {key[2]} {status}{again} - {d.get('description') or ''}"
        ident = f"t{numbers[key]}_{run}"
        return Span(
            str(d.get("agent")), label, *times, status, ident, _detail(d), status == "running"
        )

    # A bar ends when the run ended: at its task_finished event (the record is updated
    # later, when the parent next looks), or for a lost task at the restart that lost it.
    ended: dict[tuple[str, str, str], float] = {}
    restart: float | None = None
    for event in events:
        if event.kind == "process_restart":
            restart = event.time
            continue
        if event.kind not in ("task_status", "task_finished"):
            continue
        d = event.data
        key = (str(d.get("provider")), str(d.get("session")), str(d.get("task_id")))
        if event.kind == "task_finished":
            ended.setdefault(key, event.time)
            continue
        numbers.setdefault(key, len(numbers) + 1)
        status = str(d.get("status"))
        if status == "running":
            counts[key] = counts.get(key, 0) + 1
            open_runs[key] = (event.time, d, counts[key])
            ended.pop(key, None)
        elif status in ("completed", "failed", "lost"):
            start, _, run = open_runs.pop(key, (event.time, d, counts.get(key, 0) + 1))
            counts[key] = run
            stop = ended.pop(key, event.time)
            if status == "lost" and restart is not None and start <= restart <= event.time:
                stop = restart
            out.append(span(key, d, (start, stop), status, run))
    for key, (start, d, run) in open_runs.items():
        out.append(span(key, d, (start, end), "running", run))
    return sorted(out, key=lambda s: s.start)  # stable: same start keeps event order


def spans(events: Sequence[TranscriptEvent]) -> Spans:
    """The iterations and task runs of a transcript's events, in the order they began."""
    end = events[-1].time if events else 0.0
    restarts = [e.time for e in events if e.kind == "process_restart"]
    return Spans(_iterations(events, end) + _tasks(events, end), restarts, end)
