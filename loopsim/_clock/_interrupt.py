"""Interrupting code that never gives the event loop control, between two bytecodes.

The watchdog (:mod:`._watchdog`) stops a run by handing a callback to its event loop. A
task that never suspends (``while True: pass`` in a tool or an evaluator, a zero-delay
model called in an endless loop that never awaits anything real) keeps the loop from
ever running that callback. CPython checks for pending signals and asynchronous
exceptions between bytecodes, so an interruption delivered that way reaches such code:

* **in the main thread** (the usual case: ``pytest``, ``loopsim run``, a script), the run
  installs a handler for ``SIGALRM`` for its own length (the previous handler is put back
  afterwards) and the watchdog thread asks for it with ``_thread.interrupt_main(SIGALRM)``,
  which runs the handler as if the signal had arrived but sends no real signal and sets
  no timer (so pytest-timeout's or the program's own ``setitimer`` stays untouched). A
  ``SIGALRM`` that is not loopsim's is passed on to the previous handler.
* **in another thread** signal handlers do not run, and an asynchronous exception
  (``PyThreadState_SetAsyncExc``) lands wherever the thread is, locks and finalizers of
  the standard library included, and left a later run in the same process hanging; so a
  run off the main thread is not interrupted: it is stopped when its code next lets the
  event loop run (the watchdog's callback), and code that never does spins on.

The interruption does not reach code blocked inside one C call (``time.sleep(3600)``, a lock's
``acquire()`` without timeout, a C extension's loop): the exception is raised once that
call returns. The exception is a ``BaseException`` (:class:`Interrupted`) so that tool
and evaluator layers that turn ``Exception`` into results do not swallow it; the run
then fails with the :class:`~loopsim.RealTimeLimitError` recorded just before.
"""

from __future__ import annotations

import _thread
import signal
import sys
import sysconfig
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["Interrupted", "Interrupter"]

_SIGNAL = getattr(signal, "SIGALRM", None)  # not on Windows: the thread fallback then


class Interrupted(BaseException):
    """Raised into code that kept the event loop from running past the run's real-time
    limit; the run ends with the :class:`~loopsim.RealTimeLimitError` it recorded."""


Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class Interrupter:
    """Interrupts the thread that runs one simulation (made and closed in that thread)."""

    __slots__ = (
        "_installed",
        "_lock",
        "_main",
        "_previous",
        "_saved_trace",
        "active",
        "sent",
        "thread",
    )

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self._main = threading.current_thread() is threading.main_thread()
        self._lock = threading.Lock()
        self._previous: Handler = None
        self._installed = False
        self._saved_trace: tuple[object] | None = None
        #: False once the run is over: a late request then does nothing.
        self.active = True
        #: Interruptions asked for and not yet raised.
        self.sent = 0

    def install(self) -> None:
        """Take over ``SIGALRM`` for the run (main thread only; elsewhere the fallback)."""
        if not self._main or _SIGNAL is None:
            return
        try:
            self._previous = signal.getsignal(_SIGNAL)
            signal.signal(_SIGNAL, self._handle)
        except (ValueError, OSError):  # an embedded interpreter without signals
            return
        self._installed = True

    def interrupt(self) -> bool:
        """From the watchdog thread: raise :class:`Interrupted` in the run's thread soon.

        Returns False when the run is already over (nothing is sent).
        """
        with self._lock:
            if not self.active:
                return False
            if not self._installed or _SIGNAL is None:
                return False  # off the main thread: see the module's doc
            self.sent += 1
            _thread.interrupt_main(_SIGNAL)
            return True

    def close(self) -> None:
        """In the run's thread, once the run is over: no more interruptions, handler back."""
        try:
            with self._lock:
                self.active = False
            if self._installed:
                # signal.signal runs pending handlers first; ours ignores a late request.
                signal.signal(_SIGNAL, self._previous)  # type: ignore[arg-type]  # what getsignal gave
                self._installed = False
            self._stop_tracing()  # the tracer of an interruption never raised
        except Interrupted:  # raised just before it could be dropped: the run is over
            pass

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.sent:
            self.sent -= 1
            if self.active:
                self._raise_in_program(frame)
            return
        # A real SIGALRM (pytest-timeout, the program's own alarm): whoever had it before.
        previous = self._previous
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)  # the default action, as without loopsim

    def _raise_in_program(self, frame: FrameType | None) -> None:
        """Raise :class:`Interrupted` at the next line of the program's own code.

        The handler runs wherever the thread is, possibly in a garbage-collector callback
        or a finalizer, where an exception would only be printed as unraisable. A line
        tracer (the way debuggers break into a running loop) raises it at the next line
        that is not the standard library's, a test tool's or loopsim's clock.
        """
        if frame is not None and _is_program(frame):
            raise Interrupted
        if self._saved_trace is None:
            self._saved_trace = (sys.gettrace(),)

        def tracer(traced: FrameType, event: str, _arg: object) -> Any:
            if self.active and event == "line" and _is_program(traced):
                self._stop_tracing()
                raise Interrupted
            return tracer

        sys.settrace(tracer)
        while frame is not None:
            frame.f_trace = tracer
            frame = frame.f_back

    def _stop_tracing(self) -> None:
        saved = self._saved_trace
        if saved is not None:
            self._saved_trace = None
            sys.settrace(saved[0])  # type: ignore[arg-type]  # what gettrace gave


# Code the interruption is never raised in (it would land in machinery, not the program).
_MACHINERY = (
    "anyio",
    "asyncio",
    "concurrent",
    "contextlib",
    "coverage",
    "exceptiongroup",
    "freezegun",
    "hypothesis",
    "loopsim._clock",
    "outcome",
    "pluggy",
    "_pytest",
    "sniffio",
    "threading",
    "trio",
    "weakref",
)
_STDLIB = tuple({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})


def _is_program(frame: FrameType) -> bool:
    code = frame.f_code
    if code.co_name == "__del__":
        return False
    module = str(frame.f_globals.get("__name__", ""))
    if any(module == m or module.startswith(m + ".") for m in _MACHINERY):
        return False
    filename = code.co_filename
    return not (filename.startswith(_STDLIB) and "site-packages" not in filename)
