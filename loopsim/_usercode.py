"""BaseExceptions from user code at run time: tell them apart, say where they came from.

Where loopsim runs other people's evaluators, tools and chat functions for a verdict (a
scenario run, ``loopsim run``, ``check-evaluator``), a ``SystemExit``, a
``KeyboardInterrupt`` or a stray ``CancelledError`` raised by that code must become a
reported failure, not the end of the process, an empty summary or a pytest traceback of
the event loop's internals. :func:`user_code_failure` turns such an exception into a
:class:`~loopsim._errors.UserCodeAbortError` naming the frame that raised it.

A real Ctrl-C also arrives as ``KeyboardInterrupt``; it is told apart by where it was
raised: the signal lands in the event loop's own code (asyncio's runner, the selector,
trio), while a ``raise KeyboardInterrupt`` in an evaluator has that evaluator's frame
innermost. A Ctrl-C that happens to land inside user code is taken for user code (the
next one ends the run).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio

from . import _trace
from ._errors import UserCodeAbortError, VirtualTimeLimitError

__all__ = [
    "bound_evaluate",
    "is_cancellation",
    "is_real_interrupt",
    "origin_of",
    "user_code_failure",
]

# Modules whose frames are machinery, never "the user's code".
_MACHINERY = (
    "_pytest",
    "anyio",
    "asyncio",
    "concurrent",
    "contextlib",
    "exceptiongroup",
    "functools",
    "hypothesis",
    "loopsim",
    "outcome",
    "pluggy",
    "pytest",
    "selectors",
    "sniffio",
    "threading",
    "trio",
)
_MAX_CHAIN = 20  # __cause__/__context__ links followed when looking for the origin


def _is_machinery(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in _MACHINERY)


def _user_frame(tb: TracebackType | None) -> str | None:
    """``file:line in function`` of the innermost traceback entry in user code."""
    found: str | None = None
    while tb is not None:
        frame = tb.tb_frame
        module = str(frame.f_globals.get("__name__", ""))
        if not _is_machinery(module):
            code = frame.f_code
            name = getattr(code, "co_qualname", code.co_name)
            found = f"{Path(code.co_filename).name}:{tb.tb_lineno} in {name}"
        tb = tb.tb_next
    return found


def _members(exc: BaseException) -> tuple[BaseException, ...] | None:
    """The exceptions of an exception group (builtin or the 3.10 backport), else None."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, tuple) and inner and all(isinstance(e, BaseException) for e in inner):
        return inner
    return None


def _leaf(exc: BaseException) -> BaseException:
    """The first exception of a group that is not an ``Exception`` (else the first one)."""
    inner = _members(exc)
    while inner is not None:
        exc = next((e for e in inner if not isinstance(e, Exception)), inner[0])
        inner = _members(exc)
    return exc


def origin_of(exc: BaseException) -> str | None:
    """Where user code raised ``exc`` (or the exception it replaced), if it did."""
    seen: BaseException | None = exc
    for _ in range(_MAX_CHAIN):
        if seen is None:
            return None
        where = _user_frame(seen.__traceback__)
        if where is not None:
            return where
        seen = seen.__cause__ or seen.__context__
    return None


def is_real_interrupt(exc: BaseException) -> bool:
    """True for a ``KeyboardInterrupt`` that a signal raised in the loop's own code."""
    leaf = _leaf(exc)
    return isinstance(leaf, KeyboardInterrupt) and _user_frame(leaf.__traceback__) is None


def is_cancellation(exc: BaseException, *scopes: anyio.CancelScope) -> bool:
    """True when ``exc`` is a real cancellation: the async library's cancellation class,
    with a cancel in effect (one of ``scopes``, or any scope around the caller).

    A ``CancelledError`` that user code raises by itself is no cancellation: anyio task
    groups would swallow it as one, and the run would pass for no reason.
    """
    if not isinstance(exc, anyio.get_cancelled_exc_class()):
        return False
    if any(scope.cancel_called for scope in scopes):
        return True
    return anyio.current_effective_deadline() == -math.inf


def user_code_failure(
    exc: BaseException, *, virtual_time: float | None = None, seed: int | None = None
) -> Exception:
    """``exc`` as an ordinary exception to report: ``Exception``s as they are, anything
    else (``SystemExit``, ``KeyboardInterrupt``, ``CancelledError``, a group holding one)
    as a :class:`UserCodeAbortError` chained to it.

    Raises:
        KeyboardInterrupt: ``exc`` is a real Ctrl-C (see the module doc): re-raised.
    """
    if isinstance(exc, Exception) and _members(exc) is None:
        return exc
    leaf = _leaf(exc)
    if isinstance(leaf, Exception):
        return exc if isinstance(exc, Exception) else leaf
    if is_real_interrupt(leaf):
        raise exc
    error = UserCodeAbortError(leaf, origin_of(leaf), virtual_time=virtual_time, seed=seed)
    error.__cause__ = leaf
    return error


def bound_evaluate(evaluator: Any, limit: float, name: str) -> None:
    """Make each ``evaluator.evaluate`` call end after ``limit`` virtual seconds.

    The bound is set on the instance (its class, and so the name the transcript records,
    stay as they are). A call that takes longer raises ``VirtualTimeLimitError`` naming
    ``name`` (e.g. ``loop.evaluators[0] (my_pkg:Eval)``).
    """
    inner: Callable[[Any], Awaitable[Any]] = evaluator.evaluate

    async def evaluate(context: Any) -> Any:
        with anyio.move_on_after(limit):
            return await inner(context)
        trace = _trace.active()
        raise VirtualTimeLimitError(
            f"evaluator {name} did not return within {limit:g} virtual seconds "
            "(limits.evaluator_call)",
            limit="evaluator_call",
            value=limit,
            setting="Change it with `limits: {evaluator_call: ...}` in the scenario file "
            "(null: no limit).",
            virtual_time=None if trace is None else trace.time(),
            seed=None if trace is None else trace.seed,
        )

    evaluator.evaluate = evaluate
