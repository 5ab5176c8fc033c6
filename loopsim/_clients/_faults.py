"""Faults on the virtual clock: what a model, a tool or a child agent does when it breaks.

A :class:`Fault` names a kind of failure and its options. It is a script item of a
:class:`~loopsim.ScriptedChatClient` (the fault happens on that turn, in place of a
reply), or a rule of a fault wrapper (:class:`~loopsim.FaultyChatClient`,
:func:`~loopsim.faulty_tool`) that fires when its ``when`` says: at the k-th call,
every k-th call, inside a virtual-time window or at a seeded rate, at most ``times``
times. Waits (a ``retry_after``, a timeout, a slow first token, a hang) are virtual.

The errors a model fault raises on the built-in engine::

    ModelError(Exception)                              .fault, .status_code
    ├── RateLimitError                                 429, .retry_after
    ├── ServerError                                    5xx
    ├── ModelTimeoutError(ModelError, TimeoutError)    .after
    ├── StreamCutError(ModelError, ConnectionError)    .after (updates delivered)
    └── ContentFilterError                             400
    ToolFaultError(Exception)                          a tool fault's error, .fault

They are simulated service errors, not loopsim's own (no ``LoopsimError``): a user's
retry code catches them as it would a vendor's. Behind
:func:`loopsim.agent_framework.as_chat_client` they become what agent_framework's
clients raise for the same failure.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import _trace
from .._wording import say

__all__ = [
    "CHILD_FAULTS",
    "FAULT_KINDS",
    "MODEL_FAULTS",
    "TOOL_FAULTS",
    "ContentFilterError",
    "Fault",
    "ModelError",
    "ModelTimeoutError",
    "RateLimitError",
    "ServerError",
    "StreamCut",
    "StreamCutError",
    "ToolFaultError",
    "When",
]

#: Model-call faults, in the order the docs list them.
MODEL_FAULTS = (
    "rate_limit",
    "server_error",
    "timeout",
    "hang",
    "stream_cut",
    "slow_first_token",
    "malformed_tool_call",
    "empty",
    "content_filter",
    "fail",
    "lost",
)
#: Tool faults.
TOOL_FAULTS = ("error", "delay", "hang", "wrong_result")
#: Child-agent faults (faults of the child's model, so the task fails, hangs or is lost).
CHILD_FAULTS = ("fail", "hang", "lost")
#: Every kind.
FAULT_KINDS = tuple(dict.fromkeys((*MODEL_FAULTS, *TOOL_FAULTS)))

_SECONDS = "seconds"
_COUNT = "count"
_STATUS = "status"
_TEXT = "text"
_ARGS = "arguments"
_ANY = "any"

#: kind -> option -> (what it is, its default)
_OPTIONS: dict[str, dict[str, tuple[str, Any]]] = {
    "rate_limit": {"retry_after": (_SECONDS, None)},
    "server_error": {"status": (_STATUS, 500)},
    "timeout": {"after": (_SECONDS, 60.0)},
    "hang": {},
    "lost": {},
    "stream_cut": {"after": (_COUNT, 1), "reply": (_TEXT, None)},
    "slow_first_token": {"delay": (_SECONDS, 30.0), "reply": (_TEXT, None)},
    "malformed_tool_call": {"name": (_TEXT, "unknown_tool"), "arguments": (_ARGS, None)},
    "empty": {},
    "content_filter": {},
    "fail": {"message": (_TEXT, None)},
    "error": {"message": (_TEXT, None)},
    "delay": {"delay": (_SECONDS, 30.0)},
    "wrong_result": {"result": (_ANY, None)},
}


def _number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _check_option(kind: str, name: str, what: str, value: Any) -> Any:
    where = f"Fault({kind!r}) option {name}"
    if what == _SECONDS:
        if value is None and kind == "rate_limit":
            return None
        if not _number(value) or value < 0:
            msg = f"{where} must be a finite number of seconds >= 0, got {value!r}"
            raise ValueError(msg)
        return float(value)
    if what == _COUNT:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            msg = f"{where} must be a whole number >= 0, got {value!r}"
            raise ValueError(msg)
        return value
    if what == _STATUS:
        if isinstance(value, bool) or not isinstance(value, int) or not 500 <= value <= 599:
            msg = f"{where} must be an HTTP status from 500 to 599, got {value!r}"
            raise ValueError(msg)
        return value
    if what == _TEXT:
        if value is not None and not isinstance(value, str):
            msg = f"{where} must be text, got {type(value).__name__}"
            raise TypeError(msg)
        return value
    if what == _ARGS:
        if value is not None and not isinstance(value, Mapping):
            msg = f"{where} must be a mapping of argument names to values, got {value!r}"
            raise TypeError(msg)
        return None if value is None else dict(value)
    return value


@dataclass(frozen=True, slots=True)
class When:
    """When a fault rule fires; every condition given must hold (none given: every call).

    Args:
        call: only the ``call``-th call (1-based) of the wrapped client or tool.
        every: every ``every``-th call (the ``every``-th, the ``2*every``-th, ...).
        after: only at virtual time >= ``after`` seconds.
        before: only at virtual time < ``before`` seconds.
        rate: a seeded draw with this probability (0 < rate <= 1): the same seed gives
            the same calls, and the draw leaves the simulation's own rng untouched.
    """

    call: int | None = None
    every: int | None = None
    after: float | None = None
    before: float | None = None
    rate: float | None = None

    def __post_init__(self) -> None:
        for name in ("call", "every"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                msg = f"When.{name} must be a whole number >= 1, got {value!r}"
                raise ValueError(msg)
        for name in ("after", "before"):
            value = getattr(self, name)
            if value is not None and (not _number(value) or value < 0):
                msg = f"When.{name} must be a finite number of seconds >= 0, got {value!r}"
                raise ValueError(msg)
        if self.after is not None and self.before is not None and self.before <= self.after:
            msg = f"When: an empty window (after={self.after}, before={self.before})"
            raise ValueError(msg)
        if self.rate is not None and (not _number(self.rate) or not 0 < self.rate <= 1):
            msg = f"When.rate must be a probability in (0, 1], got {self.rate!r}"
            raise ValueError(msg)

    def holds(self, call: int, now: float, label: str) -> bool:
        """Whether the rule may fire on call number ``call`` at virtual time ``now``."""
        if self.call is not None and call != self.call:
            return False
        if self.every is not None and call % self.every:
            return False
        if self.after is not None and now < self.after:
            return False
        if self.before is not None and now >= self.before:
            return False
        return self.rate is None or _draw(label, call) < self.rate

    def to_dict(self) -> dict[str, Any]:
        """The conditions given (the ``when:`` mapping of a scenario file)."""
        return {
            k: getattr(self, k)
            for k in ("call", "every", "after", "before", "rate")
            if getattr(self, k) is not None
        }


def _draw(label: str, call: int) -> float:
    """A seeded number in [0, 1) for one call of one rule: a hash of the simulation's seed,
    the rule and the call, so adding a fault never shifts the simulation's other draws."""
    trace = _trace.active()
    seed = 0 if trace is None else trace.seed
    digest = hashlib.blake2b(f"{seed}\x00{label}\x00{call}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _when(value: When | Mapping[str, Any] | None) -> When | None:
    if value is None or isinstance(value, When):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"call", "every", "after", "before", "rate"})
        if unknown:
            msg = (
                f"when: unknown condition(s) {', '.join(unknown)}; "
                "expected call, every, after, before, rate"
            )
            raise ValueError(msg)
        return When(**value)
    msg = f"when must be a When or a mapping, got {type(value).__name__}"
    raise TypeError(msg)


class Fault:
    """A failure to inject: ``Fault("rate_limit", retry_after=30)``.

    Kinds and their options (defaults in brackets):

    * model calls: ``rate_limit`` (``retry_after`` [None]), ``server_error``
      (``status`` [500]), ``timeout`` (``after`` virtual seconds [60], then it raises),
      ``hang`` (never answers; a cancel or a timeout around it ends it),
      ``stream_cut`` (``after`` updates [1] are streamed, then the connection drops;
      ``reply``: the text to stream, as a script item), ``slow_first_token`` (``delay``
      [30] before the answer starts; ``reply`` as a script item), ``malformed_tool_call``
      (a call of tool ``name`` [``unknown_tool``] with ``arguments`` the tool rejects),
      ``empty`` (an answer with no content), ``content_filter`` (a refusal), ``fail``
      (a plain failure, ``message``), ``lost`` (a child that never ends, so a restart
      finds its task ``lost``);
    * tools: ``error`` (``message``), ``delay`` (``delay`` [30], then the tool runs),
      ``hang``, ``wrong_result`` (``result``: returned instead of the tool's own).

    ``when`` (a :class:`When` or its mapping) and ``times`` (the most times it fires)
    matter only to a fault wrapper; a script item fires on its own turn.

    Example:
        >>> import asyncio, loopsim
        >>> client = loopsim.ScriptedChatClient([loopsim.Fault("rate_limit", retry_after=30), "ok"])
        >>> async def main():
        ...     try:
        ...         await client.get_response([loopsim.Message.user("hi")])
        ...     except loopsim.RateLimitError as exc:
        ...         await asyncio.sleep(exc.retry_after)
        ...     return (await client.get_response([loopsim.Message.user("hi")])).text
        >>> clock = loopsim.VirtualClock()
        >>> clock.run(main), clock.elapsed
        ('ok', 30.0)
    """

    __slots__ = ("_options", "kind", "times", "when")

    def __init__(
        self,
        kind: str,
        /,
        *,
        when: When | Mapping[str, Any] | None = None,
        times: int | None = None,
        **options: Any,
    ) -> None:
        if kind not in _OPTIONS:
            msg = f"unknown fault kind {kind!r}; expected one of: {', '.join(FAULT_KINDS)}"
            raise ValueError(msg)
        known = _OPTIONS[kind]
        unknown = sorted(set(options) - set(known))
        if unknown:
            allowed = ", ".join(known) or "none"
            msg = f"Fault({kind!r}) has no option {', '.join(unknown)}; its options: {allowed}"
            raise TypeError(msg)
        if times is not None and (
            isinstance(times, bool) or not isinstance(times, int) or times < 1
        ):
            msg = f"Fault({kind!r}) times must be a whole number >= 1, got {times!r}"
            raise ValueError(msg)
        self.kind = kind
        self.when = _when(when)
        self.times = times
        self._options = {
            name: _check_option(kind, name, what, options.get(name, default))
            for name, (what, default) in known.items()
        }

    def __getattr__(self, name: str) -> Any:
        options = object.__getattribute__(self, "_options")
        if name in options:
            return options[name]
        msg = f"Fault({self.kind!r}) has no option {name!r}"
        raise AttributeError(msg)

    @property
    def options(self) -> dict[str, Any]:
        """Every option of the kind, defaults filled in."""
        return dict(self._options)

    @property
    def given(self) -> dict[str, Any]:
        """The options that differ from their defaults (enough to make the fault again)."""
        defaults = _OPTIONS[self.kind]
        return {k: v for k, v in self._options.items() if v != defaults[k][1]}

    def __repr__(self) -> str:
        given = [repr(self.kind)]
        given += [f"{k}={v!r}" for k, v in self.given.items()]
        if self.when is not None:
            given.append(f"when={self.when.to_dict()!r}")
        if self.times is not None:
            given.append(f"times={self.times}")
        return f"Fault({', '.join(given)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fault):
            return NotImplemented
        return (self.kind, self._options, self.when, self.times) == (
            other.kind,
            other._options,
            other.when,
            other.times,
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.when, self.times, repr(sorted(self._options.items()))))

    def error(self, *, model: str | None = None) -> BaseException:
        """The exception this fault raises (for the kinds that raise one)."""
        kind = self.kind
        name = model or "the model"
        if kind == "rate_limit":
            return RateLimitError(self, say("fault.rate_limit", model=name))
        if kind == "server_error":
            return ServerError(self, say("fault.server_error", model=name, status=self.status))
        if kind == "timeout":
            return ModelTimeoutError(self, say("fault.timeout", model=name, after=self.after))
        if kind == "stream_cut":
            return StreamCutError(self, say("fault.stream_cut", model=name, after=self.after))
        if kind == "content_filter":
            return ContentFilterError(self, say("fault.content_filter", model=name))
        if kind == "fail":
            return ModelError(self, self.message or say("fault.fail", model=name))
        if kind == "error":
            return ToolFaultError(self, self.message or say("fault.tool_error", tool=name))
        msg = f"a {kind} fault raises no error of its own"
        raise ValueError(msg)


class ModelError(Exception):
    """A simulated failure of a model service (see the module docstring for the tree)."""

    status_code: int | None = None

    def __init__(self, fault: Fault, message: str) -> None:
        super().__init__(message)
        self.fault = fault


class RateLimitError(ModelError):
    """HTTP 429: too many requests; ``retry_after`` is the seconds the service asks for."""

    status_code = 429

    @property
    def retry_after(self) -> float | None:
        """The seconds to wait before trying again (None: the service did not say)."""
        value: float | None = self.fault.retry_after
        return value


class ServerError(ModelError):
    """HTTP 5xx: the service failed."""

    def __init__(self, fault: Fault, message: str) -> None:
        super().__init__(fault, message)
        self.status_code = fault.status


class ModelTimeoutError(ModelError, TimeoutError):
    """The request timed out after ``after`` virtual seconds."""

    @property
    def after(self) -> float:
        """The virtual seconds the request waited."""
        value: float = self.fault.after
        return value


class StreamCutError(ModelError, ConnectionError):
    """The connection dropped after ``after`` streamed updates."""

    @property
    def after(self) -> int:
        """How many updates arrived before the cut."""
        value: int = self.fault.after
        return value


class ContentFilterError(ModelError):
    """HTTP 400 with code ``content_filter``: the service refused the prompt."""

    status_code = 400


class ToolFaultError(Exception):
    """The error a tool ``error`` fault raises in place of the tool's own result."""

    def __init__(self, fault: Fault, message: str) -> None:
        super().__init__(message)
        self.fault = fault


class StreamCut(Exception):  # noqa: N818 - a control-flow signal between a fake and its stream
    """Raised inside a fake's answer for a ``stream_cut``: carries the answer a stream
    delivers the first updates of (a call that does not stream raises ``error`` instead)."""

    def __init__(self, response: Any, error: StreamCutError) -> None:
        super().__init__(str(error))
        self.response = response
        self.error = error
