"""The transcript document: model, JSON form, atomic write and checked read.

File layout (one JSON object, keys in this order, ``\\n`` line ends, 2-space indent)::

    {
      "format": "loopsim.transcript",
      "version": 2,
      "scenario": "...", "seed": 0, "backend": "asyncio", "loopsim_version": "0.1.0",
      "events": [{"seq": 1, "time": 0.0, "kind": "model_request", "data": {...}}, ...]
    }

``data`` holds JSON values only (messages as ``Message.model_dump(mode="json")``). In
version 2 a ``model_request`` writes each message once: earlier ones are references (see
``_codec``); in memory every request holds its full message list. Version 1 files (every
request in full) are still read; other versions raise :class:`~loopsim.TranscriptError`.
Every event of a known kind is checked against its model (``_kinds``) when read.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._clients._recording import RecordedTurn
from .._clients._secrets import Redactor
from .._errors import TranscriptError
from .._files import write_atomic
from .._version import __version__
from ._codec import RefError, TranscriptLimits, decode_messages, encode_events, max_depth_problem
from ._jsontext import dumps_indented
from ._kinds import check_data, check_messages

__all__ = [
    "FORMAT",
    "READS",
    "VERSION",
    "Transcript",
    "TranscriptEvent",
    "TranscriptLimits",
    "read_transcript",
    "write_transcript",
]

FORMAT = "loopsim.transcript"
VERSION = 2
#: The format versions this loopsim reads.
READS = (1, 2)


class TranscriptEvent(BaseModel):
    """One entry: 1-based ``seq``, virtual ``time`` in seconds, ``kind`` and JSON ``data``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seq: int = Field(ge=1)
    time: float = Field(ge=0, allow_inf_nan=False)
    kind: str = Field(min_length=1)
    data: dict[str, Any] = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, keys in file order."""
        return {"seq": self.seq, "time": self.time, "kind": self.kind, "data": self.data}


class Transcript(BaseModel):
    """A recorded run: header fields and the ordered events.

    Example:
        >>> import loopsim
        >>> t = loopsim.Transcript(scenario="demo", seed=1, backend="trio")
        >>> loopsim.Transcript.from_json(t.to_json()) == t
        True
    """

    model_config = ConfigDict(extra="forbid")

    format: str = FORMAT
    version: int = VERSION
    scenario: str | None = None
    seed: int | None = None
    backend: str | None = None
    #: the engine the run ran on when it was not the built-in one (``agent_framework``);
    #: absent from the file otherwise, so built-in transcripts stay as they were
    engine: str | None = None
    loopsim_version: str = __version__
    events: list[TranscriptEvent] = Field(default_factory=list)

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value != FORMAT:
            msg = f"format must be {FORMAT!r}, got {value!r}"
            raise ValueError(msg)
        return value

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, keys in file order."""
        return {
            "format": self.format,
            "version": self.version,
            "scenario": self.scenario,
            "seed": self.seed,
            "backend": self.backend,
            **({} if self.engine is None else {"engine": self.engine}),
            "loopsim_version": self.loopsim_version,
            "events": [e.to_dict() for e in self.events],
        }

    def to_json(self) -> str:
        """The file text (format version 2): stable key order, 2-space indent, UTF-8 kept,
        ending in ``\\n``; each message written once (requests refer to earlier ones)."""
        body = {
            "format": self.format,
            "version": VERSION,
            "scenario": self.scenario,
            "seed": self.seed,
            "backend": self.backend,
            **({} if self.engine is None else {"engine": self.engine}),
            "loopsim_version": self.loopsim_version,
            "events": encode_events(self.events),
        }
        return dumps_indented(body) + "\n"

    @classmethod
    def from_json(
        cls,
        text: str | bytes,
        *,
        path: str | Path | None = None,
        limits: TranscriptLimits | None = None,
    ) -> Transcript:
        """Parse and check a transcript; :class:`~loopsim.TranscriptError` says what is wrong.

        Reads format versions 1 and 2. ``limits`` bounds size, nesting and resolved
        messages (see :class:`TranscriptLimits`); the defaults fit any run loopsim records.
        """
        limits = limits or TranscriptLimits()
        if len(text) > limits.max_bytes:
            raise TranscriptError(
                f"the file is {len(text):,} bytes, more than the {limits.max_bytes:,} "
                "read by default (pass limits=TranscriptLimits(max_bytes=...) to read it)",
                path=path,
            )
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TranscriptError(f"not UTF-8 text: {exc}", path=path) from None
        if not text.strip():
            raise TranscriptError("the file is empty (an interrupted write?)", path=path)
        try:
            raw = json.loads(text, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise TranscriptError(
                f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg} "
                "(truncated or corrupted file?)",
                path=path,
            ) from None
        except RecursionError:
            raise TranscriptError(
                f"JSON nested deeper than {limits.max_depth} levels", path=path
            ) from None
        except ValueError as exc:  # NaN / Infinity, or an integer too long to read
            raise TranscriptError(f"not valid JSON: {exc}", path=path) from None
        return cls.from_dict(raw, path=path, limits=limits)

    @classmethod
    def from_dict(
        cls, raw: Any, *, path: str | Path | None = None, limits: TranscriptLimits | None = None
    ) -> Transcript:
        """Check and build a transcript from its JSON form (see :meth:`from_json`)."""
        limits = limits or TranscriptLimits()
        if not isinstance(raw, dict):
            raise TranscriptError(
                f"expected a JSON object at the top, got {type(raw).__name__}", path=path
            )
        if raw.get("format") != FORMAT:
            raise TranscriptError(
                f"not a loopsim transcript: 'format' is {_short(raw.get('format'))}, "
                f"expected {FORMAT!r}",
                path=path,
            )
        version = raw.get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise TranscriptError(f"'version' must be an integer, got {_short(version)}", path=path)
        if version > VERSION:
            written_by = raw.get("loopsim_version")
            # name the writer only when that says something ("written by 0.1.0" next to
            # "this loopsim (0.1.0)" helps nobody)
            by = (
                f" (it says loopsim {_short(written_by)} wrote it)"
                if written_by and written_by != __version__
                else ""
            )
            raise TranscriptError(
                f"transcript format version {version} is newer than this loopsim "
                f"({__version__}) can read{by}; it reads versions {', '.join(map(str, READS))}: "
                "upgrade loopsim",
                path=path,
            )
        if version not in READS:
            raise TranscriptError(
                f"unknown transcript format version {version} (this loopsim reads "
                f"{', '.join(map(str, READS))})",
                path=path,
            )
        deep = max_depth_problem(raw, limits.max_depth)
        if deep is not None:
            raise TranscriptError(deep, path=path)
        try:
            return _build(cls, raw, version, limits)
        except ValidationError as exc:
            problems = "; ".join(f"{_dotted(err['loc'])}: {err['msg']}" for err in exc.errors()[:5])
            more = exc.error_count() - 5
            if more > 0:
                problems += f"; and {more} more"
            raise TranscriptError(f"invalid transcript: {problems}", path=path) from None
        except _EventError as exc:
            raise TranscriptError(f"invalid transcript: {exc}", path=path) from None

    @classmethod
    def from_turns(
        cls,
        turns: Iterable[RecordedTurn],
        *,
        scenario: str | None = None,
        seed: int | None = None,
        backend: str | None = None,
    ) -> Transcript:
        """A transcript of recorded model turns (from a :class:`~loopsim.RecordingChatClient`).

        Each turn becomes a ``model_request`` event and, when it got an answer, a
        ``model_response`` event (a ``model_error`` event when the call raised); events
        are ordered by virtual time, stably. A ``model_response`` holds the answer's
        messages, usage, response id and those of its ``finish_reason``,
        ``conversation_id``, ``continuation_token``, ``model``, ``created_at`` and
        ``additional_properties`` that it set (the others are not written).
        """
        timed: list[tuple[float, int, str, dict[str, Any]]] = []
        for order, turn in enumerate(turns):
            base = {"agent": turn.agent, "session": turn.session}
            timed.append(
                (
                    turn.request_time,
                    2 * order,
                    "model_request",
                    {
                        **base,
                        "messages": turn.messages,
                        "tools": turn.tools,
                        "instructions": turn.instructions,
                    },
                )
            )
            if turn.response is not None:
                timed.append(
                    (
                        turn.response_time if turn.response_time is not None else turn.request_time,
                        2 * order + 1,
                        "model_response",
                        {
                            **base,
                            "messages": turn.response,
                            "usage": turn.usage,
                            "response_id": turn.response_id,
                            # written only when the model gave them (older files have none)
                            **turn.answer_fields,
                        },
                    )
                )
            elif turn.error is not None:
                error, _, message = turn.error.partition(": ")
                timed.append(
                    (
                        turn.response_time if turn.response_time is not None else turn.request_time,
                        2 * order + 1,
                        "model_error",
                        {**base, "error": error, "message": message},
                    )
                )
        timed.sort(key=lambda item: (item[0], item[1]))
        events = [
            TranscriptEvent(seq=i, time=t, kind=kind, data=data)
            for i, (t, _, kind, data) in enumerate(timed, start=1)
        ]
        return cls(scenario=scenario, seed=seed, backend=backend, events=events)


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top>"


def write_transcript(
    path: str | os.PathLike[str],
    transcript: Transcript,
    *,
    secret_patterns: Sequence[str] = (),
    durable: bool = True,
) -> Path:
    """Write ``transcript`` to ``path`` atomically and return the path.

    The text is built first and scanned for secrets by the same detectors recording
    uses (HTTP credentials, cloud keys, tokens, JWTs, PEM private keys, URL passwords,
    ``password``/``secret``/``token`` fields, values of secret-named environment variables;
    see docs/recording.md), plus ``secret_patterns``; a match refuses the write with a
    :class:`~loopsim.TranscriptError` naming its line, column and event, and nothing is
    written. Then it goes to a temporary file in the same directory, flushed to disk and
    renamed over ``path`` (``os.replace``), so a crash at any point leaves either the old
    file or the new one. ``durable=False`` leaves out the flush per file, for a run's many
    transcripts: they are flushed together when the run ends (``sync_folders``; the pytest
    plugin and the CLI do this), and until then only a crash of the machine, not of the
    process, can cut one short.
    """
    text = transcript.to_json()
    found = Redactor(patterns=secret_patterns).find(text)
    if found is not None:
        raise TranscriptError(
            f"refusing to write: line {found.line(text)}, column {found.column(text)}"
            f"{_event_at(text, found.start)} holds what looks like a secret, {found.kind} "
            f"({text[found.start : found.start + 3]}...); redact it when recording "
            "(RecordingChatClient(secrets=..., secret_patterns=...)) or remove it",
            path=Path(path),
        )
    return write_atomic(path, text, durable=durable)


def _event_at(text: str, position: int) -> str:
    """`` (event seq N)`` for the event holding ``position`` in a transcript's text."""
    at = text.rfind('"seq": ', 0, position)
    if at < 0:
        return ""
    digits = re.match(r"\d+", text[at + 7 : at + 27])
    return "" if digits is None else f" (event seq {digits.group()})"


def read_transcript(
    path: str | os.PathLike[str], *, limits: TranscriptLimits | None = None
) -> Transcript:
    """Read a transcript file; raises :class:`~loopsim.TranscriptError` saying what is wrong.

    Reads format versions 1 and 2. ``limits`` (a :class:`TranscriptLimits`) bounds the file size,
    the nesting depth and the messages requests may hold. A missing or unreadable file
    raises the ``OSError`` as is.
    """
    source = Path(path)
    limits = limits or TranscriptLimits()
    status = source.stat()
    if not stat.S_ISREG(status.st_mode):
        raise TranscriptError(
            f"not a regular file ({_file_kind(status.st_mode)}); a transcript is a file "
            "(reading a FIFO or a device could block or never end)",
            path=source,
        )
    size = status.st_size
    if size > limits.max_bytes:
        raise TranscriptError(
            f"the file is {size:,} bytes, more than the {limits.max_bytes:,} read by "
            "default (pass limits=TranscriptLimits(max_bytes=...) to read it)",
            path=source,
        )
    with source.open("rb") as handle:  # at most max_bytes, even if the file grows meanwhile
        data = handle.read(size + 1)
        if len(data) > size:
            data += handle.read(limits.max_bytes + 1 - len(data))
    if len(data) > limits.max_bytes:
        raise TranscriptError(
            f"the file grew past the {limits.max_bytes:,} bytes read by default while it was read",
            path=source,
        )
    return Transcript.from_json(data, path=source, limits=limits)


def _file_kind(mode: int) -> str:
    kinds = {
        stat.S_ISDIR: "a directory",
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
    }
    return next((name for test, name in kinds.items() if test(mode)), "not a regular file")


def _finite(value: float) -> bool:
    return math.isfinite(value)


class _EventError(ValueError):
    """One event of a file is malformed (the message says which and where)."""


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _no_constant(name: str) -> Any:
    msg = f"{name} is not a JSON number (virtual times and data must be finite)"
    raise ValueError(msg)


_MESSAGE_KINDS = frozenset({"model_request", "model_response"})


def _build(
    cls: type[Transcript], raw: dict[str, Any], version: int, limits: TranscriptLimits
) -> Transcript:
    items = raw.get("events", [])
    if not isinstance(items, list):
        msg = f"events: expected a list, got {type(items).__name__}"
        raise _EventError(msg)
    shell = cls.model_validate({**{k: v for k, v in raw.items() if k != "events"}, "events": []})
    state: dict[str, Any] = {"known": {}, "version": version, "budget": [limits.max_messages]}
    events: list[TranscriptEvent] = []
    for index, item in enumerate(items):
        where = f"events[{index}]"
        try:
            event = TranscriptEvent.model_validate(item)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            loc = tuple(err["loc"])
            msg = f"{where}{'.' + _dotted(loc) if loc else ''}: {err['msg']}"
            raise _EventError(msg) from None
        events.append(_checked(event, f"{where} (seq {event.seq}, {event.kind})", state))
        if state["budget"][0] < 0:
            msg = (
                f"{where}: the requests hold more than {limits.max_messages:,} messages "
                "in all (pass limits=TranscriptLimits(max_messages=...) to read it)"
            )
            raise _EventError(msg)
    shell.events = events
    shell.version = VERSION
    return shell


def _checked(event: TranscriptEvent, where: str, state: dict[str, Any]) -> TranscriptEvent:
    kind, data = event.kind, event.data
    if kind in _MESSAGE_KINDS:
        messages = data.get("messages")
        if not isinstance(messages, list):
            got = "nothing" if messages is None else type(messages).__name__
            msg = f"{where}: data.messages: expected a list of messages, got {got}"
            raise _EventError(msg)
        refs = kind == "model_request" and state["version"] >= 2
        problem = check_messages(messages, "data.messages", skip_refs=refs)
        if problem is not None:
            raise _EventError(f"{where}: {problem}")
        try:
            data = decode_messages(kind, event.seq, data, "data", state)
        except RefError as exc:
            raise _EventError(f"{where}: {exc}") from None
    problem = check_data(kind, {k: v for k, v in data.items() if k != "messages"})
    if problem is not None:
        raise _EventError(f"{where}: {problem}")
    if data is event.data:
        return event
    return TranscriptEvent.model_construct(
        seq=event.seq, time=event.time, kind=event.kind, data=data
    )
