"""Per-simulation trace: deterministic ids, the seeded rng and the event seam.

A :class:`Trace` is bound to the running simulation through a context variable. Every
component that wants to be observable calls :func:`emit`; every component that needs an
id calls :func:`next_id`. Recorders (transcripts, run reports, tests) subscribe with
:meth:`Trace.subscribe`: they observe through this one seam and no component
special-cases them.

Outside a simulation ids still come from counters (a process-wide fallback trace), so
nothing in loopsim ever reads ``uuid4`` or the wall clock.

Event kinds and their data (the contract between emitters and recorders; values are the
live objects — a recorder serializes them):

=====================  ==============================================================
kind                   data
=====================  ==============================================================
session_created        agent, session
session_restored       agent, session
model_request          agent, session, messages (Sequence[Message]), tools (list[str]),
                       instructions (str | None), conversation_id (only when the
                       request continues a service-side conversation: then messages
                       are only those the service has not seen)
model_response         agent, session, messages (list[Message]), usage, response_id
model_error            agent, session, error (exception class name), message (its text)
tool_call              agent, session, call_id, name, arguments
tool_result            agent, session, call_id, name, result, error, error_type (the
                       exception's class name, only when the tool itself raised)
loop_iteration_start   loop, iteration
evaluator_decision     loop, iteration, index, evaluator, decision ("continue"|"stop"),
                       feedback
loop_stop              loop, reason ("evaluators_stopped"|"max_iterations"|
                       "approval_pending"|"error"|"cancelled"), iterations
task_status            provider, session, task_id, agent, description, status ("running"|
                       "completed"|"failed"|"lost"|"cleared"), result, error
task_finished          provider, session, task_id, agent, description, outcome ("completed"|
                       "failed"|"cancelled"), result, error — at the instant the child run
                       ended (``task_status`` follows when the record is next refreshed)
process_restart        (none)
clock_jump             from, to (virtual seconds)
=====================  ==============================================================
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Event",
    "Trace",
    "bind",
    "current",
    "emit",
    "emit_marked",
    "main_done",
    "next_id",
    "rng",
]

#: ``Trace.resources`` key: True once the simulation's main function has returned (the
#: backend is cancelling what was left running; that is teardown, not the program).
MAIN_DONE = "loopsim.main_done"


@dataclass(frozen=True, slots=True)
class Event:
    """One observed fact: ``kind`` (e.g. ``model_request``), virtual ``time`` and data."""

    seq: int
    time: float
    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    #: facts known by identity, not recorded in transcripts (e.g. ``background_completion``
    #: on the built-in background evaluator's decisions; invariant 6 reads it)
    marks: frozenset[str] = frozenset()


Listener = Callable[[Event], None]


def _zero() -> float:
    return 0.0


class Trace:
    """Counters, rng and listeners of one simulation.

    Args:
        seed: seeds :attr:`rng`, the only randomness loopsim uses.
        time: returns the current virtual time in seconds (the clock sets it).
    """

    __slots__ = ("_counters", "_listeners", "_seq", "resources", "rng", "seed", "time")

    def __init__(self, *, seed: int = 0, time: Callable[[], float] = _zero) -> None:
        self.seed = seed
        self.time = time
        self.rng = random.Random(seed)  # noqa: S311 - simulation scheduling, not cryptography
        self._counters: dict[str, int] = {}
        #: per-simulation singletons (the simulated conversation service, ...)
        self.resources: dict[str, Any] = {}
        self._listeners: list[Listener] = []
        self._seq = 0

    def next_id(self, kind: str) -> str:
        """Next id of ``kind``: ``msg-0001``, ``resp-0001``, ``session-0001``..."""
        n = self._counters.get(kind, 0) + 1
        self._counters[kind] = n
        return kind + "-" + str(n).zfill(4)  # f"{kind}-{n:04d}" (n >= 1), without the format

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every later event; returns a function that unsubscribes."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    @property
    def observed(self) -> bool:
        """True when someone listens (emitters may skip building costly data otherwise)."""
        return bool(self._listeners)

    def emit(self, kind: str, data: dict[str, Any], marks: frozenset[str] = frozenset()) -> None:
        if not self._listeners:
            return
        self._seq += 1
        event = Event(self._seq, self.time(), kind, data, marks)
        for listener in tuple(self._listeners):
            listener(event)


_FALLBACK = Trace()
_current: ContextVar[Trace | None] = ContextVar("loopsim_trace", default=None)


def current() -> Trace:
    """The trace of the running simulation, or the process-wide fallback."""
    trace = _current.get()
    return _FALLBACK if trace is None else trace


def active() -> Trace | None:
    """The trace of the running simulation, or None outside one."""
    return _current.get()


@contextmanager
def bind(trace: Trace) -> Iterator[Trace]:
    """Make ``trace`` current for the duration of the block (and tasks spawned in it)."""
    token = _current.set(trace)
    try:
        yield trace
    finally:
        _current.reset(token)


def next_id(kind: str) -> str:
    """Next deterministic id of ``kind`` in the current simulation."""
    trace = _current.get()  # current(), inlined: ids are drawn several times per model call
    return (_FALLBACK if trace is None else trace).next_id(kind)


def rng() -> random.Random:
    """The current simulation's seeded rng."""
    return current().rng


def emit(kind: str, **data: Any) -> None:
    """Report an event to whoever listens to the current simulation (cheap when nobody does)."""
    trace = _current.get()
    if trace is not None and trace._listeners:
        trace.emit(kind, data)


def main_done() -> bool:
    """True once the running simulation's main function has returned (teardown)."""
    trace = _current.get()
    return trace is not None and trace.resources.get(MAIN_DONE, False) is True


def emit_marked(kind: str, marks: frozenset[str], **data: Any) -> None:
    """:func:`emit` with :attr:`Event.marks` (what the emitter knows by identity)."""
    trace = _current.get()
    if trace is not None and trace._listeners:
        trace.emit(kind, data, marks)


def observed() -> bool:
    """True when the current simulation has listeners; lets emitters skip building data."""
    trace = _current.get()
    return trace is not None and bool(trace._listeners)
