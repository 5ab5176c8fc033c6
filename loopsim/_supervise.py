"""loopsim keeps the last word on the exit status: a supervising parent, and phase bounds.

User code that loopsim runs for a verdict (modules a scenario imports, factories,
evaluators, tools) could otherwise decide the exit status itself: ``os._exit(0)`` in an
evaluator or an ``atexit`` handler ends the process green whatever failed, a module that
blocks at import hangs ``loopsim validate``, and a non-daemon thread makes the
interpreter wait for ever after the summary.

**The design: a supervising parent.** ``loopsim run``, ``validate``, ``check-evaluator``
and ``replay`` started from a shell (:func:`supervise`) fork: the child does the work,
the parent only waits. Before each phase of user code the child tells the parent what
runs (the phase, the module, the scenario) and for how long it may (:func:`phase`),
over a pipe; when the command is done it sends its verdict (the exit code), flushes its
output and ends with ``os._exit(code)``, so neither ``atexit`` handlers nor leftover
threads get to run or to be waited for. The parent's exit code is that verdict. A child
that ends without one (``os._exit``, a signal, ``sys.exit`` from an ``atexit``
handler...) fails, reported as user code that ended the process, naming the phase, the
module and the scenario it was in; a phase past its bound is stopped (the child is
killed) and fails with an error naming the phase, the module and the setting. Where
``fork`` is missing (Windows), or with ``LOOPSIM_SUPERVISE=0``, the command runs in the
process itself, guarded only by the in-process hooks below.

**In-process hooks** (plain ``pytest`` with the plugin, and the child itself):
:func:`install_exit_guard` wraps ``os._exit`` so that user code calling it is reported
(naming its frame, the module and scenario) and the process exits with the verdict
instead (1 when there is none yet); :func:`watch_threads` notes the threads user code
starts, so those still running at the end fail the run (:func:`leftover_threads`);
``SystemExit`` raised in a thread is recorded and fails the run too.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn


def real_time() -> float:
    """Real monotonic seconds (the watchdog's clock, imported on first use: the pytest
    plugin imports this module at start-up, and ``loopsim._clock`` brings anyio)."""
    from ._clock._watchdog import real_time as watchdog_time  # noqa: PLC0415

    return watchdog_time()


__all__ = [
    "ENV_SUPERVISE",
    "Bounds",
    "active",
    "bounds",
    "install_exit_guard",
    "leftover_threads",
    "phase",
    "record_verdict",
    "set_uncapture",
    "supervise",
    "watch_threads",
]

#: ``LOOPSIM_SUPERVISE=0`` runs commands in the process itself (to use a debugger).
ENV_SUPERVISE = "LOOPSIM_SUPERVISE"
_ENV_FD = "LOOPSIM_SUPERVISOR_FD"  # set in the child only (never inherited further)
EXIT_FAILED = 1

# Module prefixes whose frames are machinery, never "the user's code".
_MACHINERY = (
    "_pytest",
    "anyio",
    "asyncio",
    "concurrent",
    "execnet",
    "hypothesis",
    "loopsim",
    "multiprocessing",
    "pluggy",
    "pytest",
    "threading",
    "trio",
    "xdist",
)


@dataclass(frozen=True)
class Bounds:
    """Real seconds each supervised phase of user code may take (see docs/limits.md)."""

    #: importing one user module (``LOOPSIM_IMPORT_TIMEOUT``)
    import_: float = 30.0
    #: one call of a user factory or constructor (``LOOPSIM_FACTORY_TIMEOUT``)
    factory: float = 30.0
    #: from the verdict to the end of the process (``LOOPSIM_SHUTDOWN_TIMEOUT``)
    shutdown: float = 10.0
    #: added to a run's own real-time limit for code that never yields (fixed)
    grace: float = 10.0


_ENV_BOUNDS = {
    "import_": "LOOPSIM_IMPORT_TIMEOUT",
    "factory": "LOOPSIM_FACTORY_TIMEOUT",
    "shutdown": "LOOPSIM_SHUTDOWN_TIMEOUT",
}


def bounds() -> Bounds:
    """The bounds in force: the defaults, changed by the environment variables."""
    values: dict[str, float] = {}
    for name, env in _ENV_BOUNDS.items():
        raw = os.environ.get(env)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if not 0 < value < 1e9:
            msg = f"{env}={raw!r}: expected a number of seconds > 0"
            raise ValueError(msg)
        values[name] = value
    return Bounds(**values)


# -- the child's side -----------------------------------------------------------------------


@dataclass
class _State:
    channel: int | None = None
    #: (phase, module, scenario) of the phases running, outermost first
    stack: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    #: threads user code started: thread -> (module, scenario) it was started in
    started: dict[threading.Thread, tuple[str | None, str | None]] = field(default_factory=dict)
    #: ``SystemExit`` raised in threads: (thread name, code, module, scenario)
    thread_exits: list[tuple[str, object, str | None, str | None]] = field(default_factory=list)
    verdict: int | None = None
    #: whether user code ran under a phase in this process (the exit guard acts only then)
    ran: bool = False
    pid: int = field(default_factory=os.getpid)
    #: ends output capture (pytest's) so that the exit guard's message is seen
    uncapture: Callable[[], object] = field(default=lambda: None)


_state = _State()


def active() -> bool:
    """True in the child of a supervising parent."""
    return _state.channel is not None


def _send(record: dict[str, Any]) -> None:
    fd = _state.channel
    if fd is None:
        return
    data = (json.dumps(record) + "\n").encode("utf-8", "backslashreplace")
    with contextlib.suppress(OSError):
        os.write(fd, data)


def _where() -> tuple[str | None, str | None]:
    module = next((m for _, m, _ in reversed(_state.stack) if m is not None), None)
    scenario = next((s for _, _, s in reversed(_state.stack) if s is not None), None)
    return module, scenario


@contextlib.contextmanager
def phase(
    kind: str, *, module: str | None = None, scenario: str | None = None, bound: float | None
) -> Iterator[None]:
    """Mark a phase of user code (``import``, ``factory``, ``scenario``, ``check``).

    The supervising parent stops it past ``bound`` real seconds (None: no bound of its
    own). Threads the phase starts are noted (see :func:`leftover_threads`).
    """
    before = set(threading.enumerate())
    _state.ran = True
    _state.stack.append((kind, module, scenario))
    _send({"push": [kind, module, scenario, bound]})
    # Over whatever hook is in place now (pytest sets its own around each test).
    previous = threading.excepthook
    ours = not getattr(previous, "_loopsim", False)
    if ours:
        threading.excepthook = _hook_over(previous)
    try:
        yield
    finally:
        if ours:
            threading.excepthook = previous
        where = _where()
        _state.stack.pop()
        _send({"pop": True})
        for thread in threading.enumerate():
            if thread not in before and thread not in _state.started:
                _state.started[thread] = where


def watch_threads() -> None:
    """Record ``SystemExit`` raised in threads (threading ignores it silently)."""
    if not getattr(threading.excepthook, "_loopsim", False):
        threading.excepthook = _hook_over(threading.excepthook)


def _hook_over(previous: Callable[[threading.ExceptHookArgs], object]) -> Any:
    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            module, scenario = _where()
            thread = args.thread
            code = getattr(args.exc_value, "code", None)
            name = thread.name if thread is not None else "?"
            _state.thread_exits.append((name, code, module, scenario))
            return
        previous(args)

    hook._loopsim = True  # type: ignore[attr-defined]  # marks our hook
    return hook


def leftover_threads() -> list[str]:
    """What user code left behind: non-daemon threads still running, and ``sys.exit``
    calls in threads; one line each, naming the module and scenario. Each is reported
    once (a second call leaves it out)."""
    lines = [
        f"thread {name!r} called sys.exit({code!r}){_context(module, scenario)}"
        for name, code, module, scenario in _state.thread_exits
    ]
    _state.thread_exits.clear()
    for thread, (module, scenario) in list(_state.started.items()):
        if thread.is_alive() and not thread.daemon:
            target = getattr(thread, "_target", None)
            owner = module or getattr(target, "__module__", None)
            lines.append(f"thread {thread.name!r} is still running{_context(owner, scenario)}")
        del _state.started[thread]
    return lines


def _context(module: str | None, scenario: str | None) -> str:
    parts = []
    if module:
        parts.append(f"module {module}")
    if scenario:
        parts.append(f"scenario {scenario}")
    return f" ({', '.join(parts)})" if parts else ""


def set_uncapture(uncapture: Callable[[], object]) -> None:
    """How to end output capture before the exit guard reports (the pytest plugin's)."""
    _state.uncapture = uncapture


def record_verdict(code: int) -> None:
    """The exit code loopsim decided (the exit guard exits with it)."""
    _state.verdict = code


def _user_frame(frame: FrameType | None) -> str | None:
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if not any(module == m or module.startswith(m + ".") for m in _MACHINERY):
            return f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno} ({module})"
        frame = frame.f_back
    return None


_REAL_EXIT: list[Callable[[int], NoReturn]] = []


def install_exit_guard() -> None:
    """Wrap ``os._exit``: user code calling it exits with loopsim's verdict, reported.

    Installed once per process and never removed (``atexit`` handlers run after the
    plugin is gone). It acts only once loopsim ran user code in this process (a
    :func:`phase`), and only in that process (not in children forked from it); calls
    from machinery (xdist, multiprocessing, loopsim) pass through.
    """
    if _REAL_EXIT:
        return
    real = os._exit
    _REAL_EXIT.append(real)

    def _exit(status: int) -> NoReturn:
        caller = _user_frame(sys._getframe(1))
        if caller is None or not _state.ran or os.getpid() != _state.pid:
            real(status)  # machinery, no loopsim run here, or a forked child of user code
        module, scenario = _where()
        verdict = _state.verdict
        code = EXIT_FAILED if verdict is None else verdict
        when = "after the verdict" if verdict is not None else "before loopsim gave its verdict"
        meaning = "the verdict" if verdict is not None else "failed"
        message = (
            f"loopsim: user code called os._exit({status!r}) at {caller}"
            f"{_context(module, scenario)} {when}; the process exits with {code} ({meaning})"
        )
        if active():
            _send({"exit": message})  # the parent says it (this process's output may be captured)
        else:
            with contextlib.suppress(Exception):
                _state.uncapture()
            _say(message)
        real(code)

    os._exit = _exit


def _say(line: str) -> None:
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode("utf-8", "backslashreplace"))


# -- the parent's side ------------------------------------------------------------------------


def supervise(run: Callable[[], int], *, command: str) -> int:
    """Run ``run()`` (a command returning its exit code) in a supervised child process;
    return its verdict (see the module doc). ``command`` names it in messages."""
    if os.environ.get(ENV_SUPERVISE) == "0" or not hasattr(os, "fork") or active():
        return _in_process(run)
    try:
        limits = bounds()
    except ValueError as exc:
        _say(f"loopsim {command}: {exc}")
        return 2
    read_end, write_end = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        _child(run, write_end)
    os.close(write_end)
    return _Parent(pid, read_end, limits, command).wait()


def _in_process(run: Callable[[], int]) -> int:
    install_exit_guard()
    watch_threads()
    code = run()
    left = leftover_threads()
    if left:
        _say("loopsim: user code " + "; ".join(left))
        code = code or EXIT_FAILED
    record_verdict(code)
    return code


def _child(run: Callable[[], int], channel: int) -> None:
    _state.channel = channel
    _state.pid = os.getpid()
    code = EXIT_FAILED
    try:
        code = _in_process(run)
    except SystemExit as exc:  # argparse and friends: their code is the verdict
        code = exc.code if isinstance(exc.code, int) else EXIT_FAILED
    except BaseException:  # noqa: BLE001 - reported, then the verdict is "failed"
        import traceback  # noqa: PLC0415

        traceback.print_exc()
    _send({"result": code})
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    exit_now = _REAL_EXIT[0] if _REAL_EXIT else os._exit
    exit_now(code)  # no atexit handlers, no waiting for threads


_POLL = 0.05


class _Parent:
    def __init__(self, pid: int, channel: int, limits: Bounds, command: str) -> None:
        self.pid = pid
        self.limits = limits
        self.command = command
        self.stack: list[tuple[str, str | None, str | None, float | None]] = []
        self.result: int | None = None
        self.result_at: float | None = None
        self.exit_call: str | None = None
        #: user modules imported per scenario (named when the process dies in one)
        self.modules: dict[str | None, list[str]] = {}
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, args=(channel,), daemon=True)

    def _read(self, channel: int) -> None:
        with os.fdopen(channel, "rb") as stream:
            for raw in stream:
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                with self._lock:
                    self._take(record)

    def _take(self, record: dict[str, Any]) -> None:
        now = real_time()
        if "push" in record:
            kind, module, scenario, bound = record["push"]
            deadline = None if bound is None else now + float(bound)
            if kind == "import" and module:
                outer = next((s for _, _, s, _ in reversed(self.stack) if s), None)
                self.modules.setdefault(scenario or outer, []).append(module)
            self.stack.append((kind, module, scenario, deadline))
        elif "pop" in record and self.stack:
            self.stack.pop()
        elif "result" in record:
            self.result = int(record["result"])
            self.result_at = now
        elif "exit" in record:
            self.exit_call = record["exit"]

    def wait(self) -> int:
        self._reader.start()
        previous = signal.getsignal(signal.SIGINT)
        # Ctrl-C reaches the child too (one process group): the child decides.
        with contextlib.suppress(ValueError):  # not the main thread: keep the handler
            signal.signal(signal.SIGINT, lambda *_: None)
        try:
            return self._wait()
        finally:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGINT, previous)

    def _wait(self) -> int:
        while True:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # pragma: no cover - reaped elsewhere
                done, status = self.pid, 0
            if done:
                self._reader.join(1.0)
                return self._ended(status)
            overdue = self._overdue()
            if overdue is not None:
                return overdue
            threading.Event().wait(_POLL)

    def _overdue(self) -> int | None:
        now = real_time()
        with self._lock:
            if self.result is not None and self.result_at is not None:
                if now - self.result_at > self.limits.shutdown:
                    self._kill()
                    _say(
                        f"loopsim {self.command}: the process did not end within "
                        f"{self.limits.shutdown:g} s of its verdict (interpreter shutdown; "
                        "LOOPSIM_SHUTDOWN_TIMEOUT): stopped; the verdict stands"
                    )
                    return self.result
                return None
            for index in range(len(self.stack) - 1, -1, -1):
                kind, _, _, deadline = self.stack[index]
                if deadline is not None and now > deadline:
                    self._kill()
                    _say(
                        f"loopsim {self.command}: {self._describe(index)} did not "
                        f"finish within its bound ({_setting(kind)}): stopped; failed"
                    )
                    return EXIT_FAILED
        return None

    def _describe(self, index: int) -> str:
        """The phase at ``index`` of the stack, with the scenario and modules around it."""
        kind, module, scenario, _ = self.stack[index]
        outer = next((s for _, _, s, _ in reversed(self.stack[: index + 1]) if s), None)
        if module is None:
            imported = self.modules.get(outer, [])
            module = ", ".join(dict.fromkeys(imported)) or None
        return _describe(kind, module, scenario or outer)

    def _kill(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(self.pid, 0)

    def _ended(self, status: int) -> int:
        with self._lock:
            if self.result is not None:
                return self.result
            if self.exit_call is not None:  # the exit guard's report
                _say(str(self.exit_call).replace("loopsim:", f"loopsim {self.command}:", 1))
                return EXIT_FAILED
            during = f", while {self._describe(len(self.stack) - 1)}" if self.stack else ""
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            try:
                how = f"was killed by signal {signal.Signals(number).name}"
            except ValueError:
                how = f"was killed by signal {number}"
        else:
            how = f"exited with status {os.waitstatus_to_exitcode(status)}"
        _say(
            f"loopsim {self.command}: the process {how} before loopsim gave its verdict "
            f"(user code ended it: os._exit, a signal, or an atexit handler){during}; failed"
        )
        return EXIT_FAILED


def _describe(kind: str, module: str | None, scenario: str | None) -> str:
    what = {
        "import": "importing",
        "factory": "calling the factory of",
        "scenario": "running",
        "validate": "validating",
        "check": "checking",
    }.get(kind, kind)
    subject = f"module {module}" if module else ""
    if kind in ("scenario", "validate", "check") and scenario:
        text = f"{what} {scenario}" + (f" (module {module})" if module else "")
    else:
        text = f"{what} {subject}".strip() + (f" for scenario {scenario}" if scenario else "")
    return text


def _setting(kind: str) -> str:
    if kind == "import":
        return "LOOPSIM_IMPORT_TIMEOUT, default 30 s"
    if kind == "factory":
        return "LOOPSIM_FACTORY_TIMEOUT, default 30 s"
    return "the real-time limit plus 10 s: `limits: {real_time: ...}` or --time-limit"
