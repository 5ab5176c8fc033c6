"""The Recorder: turns a trace's live events into a JSON-safe transcript as they happen."""

from __future__ import annotations

import asyncio
import operator
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar

from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from typing_extensions import Self

from .._clients._secrets import SECRETS_RESOURCE, Redactor
from .._entropy import MINTED
from .._messages import Message
from .._trace import Event, Trace
from ._model import Transcript, TranscriptEvent

__all__ = ["Recorder", "jsonable"]

T = TypeVar("T")

#: Event fields that name an agent, a loop or a session by its id.
_ID_FIELDS = ("agent", "loop", "session")
_UUID_SHAPE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def _fallback(value: Any) -> Any:
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    session_id = getattr(value, "session_id", None)
    if isinstance(session_id, str):
        return session_id
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    # Never repr(): it may hold a memory address, and transcripts must be deterministic.
    return f"<{type(value).__name__}>"


#: Types a value of which is JSON data as it is (exact types: a subclass is converted).
_PLAIN = frozenset({str, int, float, bool, type(None)})
_new_object = object.__new__
_set_attribute = object.__setattr__


def _event(seq: int, time: float, kind: str, data: dict[str, Any]) -> TranscriptEvent:
    # What ``TranscriptEvent.model_construct`` builds, without its per-call field walk:
    # the recorder's own values are already what validation would keep.
    if kind == "model_request":
        messages = data.get("messages")
        if type(messages) is _Prefix:
            data["messages"] = messages.read()  # in place: the key order stays
    event = _new_object(TranscriptEvent)
    _set_attribute(event, "__dict__", {"seq": seq, "time": time, "kind": kind, "data": data})
    _set_attribute(event, "__pydantic_fields_set__", {"seq", "time", "kind", "data"})
    _set_attribute(event, "__pydantic_extra__", None)
    _set_attribute(event, "__pydantic_private__", None)
    return event


class _Prefix:
    """A request's messages as the first ``stop`` dumps of a list that only grows.

    The requests of one agent and session that extend each other share one such list,
    so n requests of a growing history hold O(n) slots, not O(n^2); the event's own list
    is made when the event is first read.
    """

    __slots__ = ("dumps", "stop")

    def __init__(self, dumps: list[Any], stop: int) -> None:
        self.dumps = dumps
        self.stop = stop

    def read(self) -> list[Any]:
        return self.dumps[: self.stop]


def jsonable(value: Any) -> Any:
    """``value`` as JSON data (models dumped in JSON mode, enums by value, sets sorted)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v) for v in value), key=repr)
    return to_jsonable_python(value, fallback=_fallback)


def _current_backend() -> str | None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return "asyncio"
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            return None
        return "trio"
    return None


class Recorder:
    """Records every event of a :class:`Trace` into a :class:`~loopsim.Transcript`.

    Events are converted to JSON data when they are emitted, so objects that change
    later cannot change the record. Messages are dumped once each, however many
    requests resend them (a request holds the whole history), and the dumps are shared;
    requests that extend the previous one of the same agent and session share its list
    too (each event's own list is made when the event is first read), so recording a
    long loop holds memory linear in its length until the transcript is read.
    The transcript's event models are built when it is first read (a passing scenario
    whose transcript nobody reads never builds them).
    The recorder only listens through :meth:`Trace.subscribe`; nothing special-cases it.

    Args:
        trace: the trace to listen to (a new one with ``seed`` when None); pass it to
            ``loopsim.simulate(..., trace=recorder.trace)``.
        scenario, seed, backend: header fields; ``seed`` defaults to the trace's seed and
            ``backend`` to the async library running when the first event arrives.
        engine: the engine the run is on when it is not the built-in one
            (``"agent_framework"``); a header field the report labels the run with.

    Example:
        >>> import loopsim
        >>> recorder = loopsim.Recorder(scenario="hello")
        >>> agent = loopsim.Agent(loopsim.ScriptedChatClient(["hi"]), name="a")
        >>> loopsim.simulate(agent.run, "hello", trace=recorder.trace).text
        'hi'
        >>> [e.kind for e in recorder.transcript.events]
        ['session_created', 'model_request', 'model_response']
    """

    def __init__(
        self,
        trace: Trace | None = None,
        *,
        scenario: str | None = None,
        seed: int | None = None,
        backend: str | None = None,
        engine: str | None = None,
    ) -> None:
        self.trace = trace if trace is not None else Trace(seed=seed or 0)
        self.scenario = scenario
        self.seed = self.trace.seed if seed is None else seed
        self.backend = backend
        self.engine = None if engine == "loopsim" else engine
        #: (time, kind, data) of each event, converted; models are built on first read
        self._raw: list[tuple[float, str, dict[str, Any]]] = []
        self._built: list[TranscriptEvent] = []
        self._dumped: dict[int, tuple[Message, dict[str, Any]]] = {}
        self._requests: dict[tuple[Any, Any], tuple[list[Any], list[Any]]] = {}
        self._outside: dict[str, str] = {}
        self._unsubscribe: Callable[[], None] | None = self.trace.subscribe(self._on_event)

    def close(self) -> None:
        """Stop listening (the transcript so far stays available)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def _events(self) -> list[TranscriptEvent]:
        built = self._built
        raw = self._raw
        for seq in range(len(built) + 1, len(raw) + 1):
            time, kind, data = raw[seq - 1]
            built.append(_event(seq, time, kind, data))
        return built

    @property
    def events(self) -> tuple[TranscriptEvent, ...]:
        """The events recorded so far."""
        return tuple(self._events)

    @property
    def transcript(self) -> Transcript:
        """The transcript recorded so far (secrets a recording client registered redacted)."""
        events = list(self._events)
        redactor = self.trace.resources.get(SECRETS_RESOURCE)
        if isinstance(redactor, Redactor):
            memo: dict[int, Any] = {}  # shared messages stay shared (written once)
            events = [
                TranscriptEvent.model_construct(
                    seq=e.seq, time=e.time, kind=e.kind, data=redactor.redact(e.data, memo)
                )
                for e in events
            ]
        return Transcript(
            scenario=self.scenario,
            seed=self.seed,
            backend=self.backend,
            engine=self.engine,
            events=events,
        )

    def _dump(self, message: Message) -> dict[str, Any]:
        # Keyed by identity, holding the message so its id cannot be reused.
        cached = self._dumped.get(id(message))
        if cached is not None and cached[0] is message:
            return cached[1]
        dumped = message.model_dump(mode="json")
        self._dumped[id(message)] = (message, dumped)
        return dumped

    def _convert(self, value: Any) -> Any:
        kind = type(value)
        if kind in _PLAIN:
            return value
        if kind is Message:
            return self._dump(value)
        if kind is list or kind is tuple:
            return [self._convert(v) for v in value]
        if isinstance(value, Message):
            return self._dump(value)
        if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
            return [self._convert(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self._convert(v) for k, v in value.items()}
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        return jsonable(value)

    def _request(self, data: dict[str, Any]) -> _Prefix:
        # A request resends the whole history. The requests of one agent and session keep
        # one list of messages seen and one of their dumps, both only ever appended to: a
        # request that extends it (checked by identity, at C speed) appends what is new,
        # one that is a prefix of it appends nothing, and each request holds only where it
        # stops. Anything else (an edited or reordered history) starts new lists.
        value = data["messages"]
        as_list = getattr(value, "as_list", None)
        items: list[Any] = as_list() if callable(as_list) else list(value)
        key = (data.get("agent"), data.get("session"))
        shared = self._requests.get(key)
        if shared is not None:
            seen, dumps = shared
            known = len(seen)
            if known <= len(items) and all(map(operator.is_, seen, items)):
                fresh = items[known:]
                seen.extend(fresh)
                dumps.extend([self._convert(m) for m in fresh])
                return _Prefix(dumps, len(items))
            if len(items) < known and all(map(operator.is_, items, seen)):
                return _Prefix(dumps, len(items))
        dumps = [self._convert(m) for m in items]
        self._requests[key] = (items, dumps)
        return _Prefix(dumps, len(items))

    def _stable(self, value: str) -> str:
        # A uuid this simulation did not make (an agent or session built before it, with
        # a random id) is written as ``outside-NNNN`` by first appearance, so transcripts
        # stay byte-identical; the code under test keeps seeing the real id.
        label = self._outside.get(value)
        if label is not None:
            return label
        if value in self.trace.resources.get(MINTED, ()) or not _UUID_SHAPE.match(value):
            return value
        label = self._outside[value] = f"outside-{len(self._outside) + 1:04d}"
        return label

    def _on_event(self, event: Event) -> None:
        if self.backend is None:
            self.backend = _current_backend()
        if event.kind == "model_request" and isinstance(event.data.get("messages"), Sequence):
            data = {
                key: self._request(event.data) if key == "messages" else self._convert(value)
                for key, value in event.data.items()
            }
        else:
            data = {key: self._convert(value) for key, value in event.data.items()}
        for key in _ID_FIELDS:
            value = data.get(key)
            if type(value) is str and len(value) == 36:
                data[key] = self._stable(value)
        self._raw.append((float(event.time), event.kind, data))


def record(
    async_fn: Callable[..., Awaitable[T]],
    *args: Any,
    backend: Literal["asyncio", "trio"] = "asyncio",
    seed: int = 0,
    scenario: str | None = None,
    wall_clock: bool = True,
    **limits: Any,
) -> tuple[T, Transcript]:
    """Run ``async_fn(*args)`` on a fresh virtual clock and return (result, transcript).

    ``wall_clock=False`` leaves ``datetime.now()``/``time.time()`` real, as in
    :func:`~loopsim.simulate` (and skips patching them: cheaper). ``limits`` are the
    limits of :func:`~loopsim.simulate` (``virtual_time_limit``, ``real_time_limit``,
    ``max_steps_per_instant``, ``max_model_calls``; docs/limits.md).

    Example:
        >>> import loopsim
        >>> agent = loopsim.Agent(loopsim.ScriptedChatClient(["hi"]), name="a")
        >>> result, transcript = loopsim.record(agent.run, "hello", backend="trio")
        >>> result.text, transcript.backend, len(transcript.events)
        ('hi', 'trio', 3)
    """
    from .._clock import simulate  # noqa: PLC0415 - the clock layer sits below transcripts

    recorder = Recorder(Trace(seed=seed), scenario=scenario, backend=backend)
    with recorder:
        result = simulate(
            async_fn,
            *args,
            backend=backend,
            trace=recorder.trace,
            wall_clock=wall_clock,
            **_limits(limits),
        )
    return result, recorder.transcript


_LIMITS = frozenset(
    {"virtual_time_limit", "real_time_limit", "max_steps_per_instant", "max_model_calls"}
)


def _limits(limits: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(limits) - _LIMITS)
    if unknown:
        msg = (
            f"record() got unexpected keyword argument(s) {', '.join(unknown)}; "
            f"its limits are {', '.join(sorted(_LIMITS))}"
        )
        raise TypeError(msg)
    return limits
