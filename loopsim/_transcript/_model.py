"""The transcript document: model, JSON form, atomic write and checked read.

File layout (one JSON object, keys in this order, ``\\n`` line ends, 2-space indent)::

    {
      "format": "loopsim.transcript",
      "version": 1,
      "scenario": "...", "seed": 0, "backend": "asyncio", "loopsim_version": "0.1.0",
      "events": [{"seq": 1, "time": 0.0, "kind": "model_request", "data": {...}}, ...]
    }

``data`` holds JSON values only (messages as ``Message.model_dump(mode="json")``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._clients._recording import RecordedTurn
from .._errors import TranscriptError
from .._files import write_atomic
from .._version import __version__

__all__ = [
    "FORMAT",
    "VERSION",
    "Transcript",
    "TranscriptEvent",
    "read_transcript",
    "write_transcript",
]

FORMAT = "loopsim.transcript"
VERSION = 1


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
            "loopsim_version": self.loopsim_version,
            "events": [e.to_dict() for e in self.events],
        }

    def to_json(self) -> str:
        """The file text: stable key order, 2-space indent, UTF-8 kept, ending in ``\\n``."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, *, path: str | Path | None = None) -> Transcript:
        """Parse and check a transcript; :class:`~loopsim.TranscriptError` says what is wrong."""
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TranscriptError(f"not UTF-8 text: {exc}", path=path) from None
        if not text.strip():
            raise TranscriptError("the file is empty (an interrupted write?)", path=path)
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TranscriptError(
                f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg} "
                "(truncated or corrupted file?)",
                path=path,
            ) from None
        return cls.from_dict(raw, path=path)

    @classmethod
    def from_dict(cls, raw: Any, *, path: str | Path | None = None) -> Transcript:
        """Check and build a transcript from its JSON form (see :meth:`from_json`)."""
        if not isinstance(raw, dict):
            raise TranscriptError(
                f"expected a JSON object at the top, got {type(raw).__name__}", path=path
            )
        if raw.get("format") != FORMAT:
            raise TranscriptError(
                f"not a loopsim transcript: 'format' is {raw.get('format')!r}, expected {FORMAT!r}",
                path=path,
            )
        version = raw.get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise TranscriptError(f"'version' must be an integer, got {version!r}", path=path)
        if version > VERSION:
            writer = raw.get("loopsim_version")
            # Name the writer's version only when it says something ("written by a newer
            # loopsim (0.1.0); this loopsim (0.1.0)" helps nobody).
            by = (
                f"was written by a newer loopsim ({writer}); this loopsim ({__version__})"
                if isinstance(writer, str) and writer != __version__
                else f"is from a newer loopsim than this one ({__version__}), which"
            )
            raise TranscriptError(
                f"transcript version {version} {by} reads version {VERSION}: upgrade loopsim",
                path=path,
            )
        if version < 1:
            raise TranscriptError(f"unknown transcript version {version}", path=path)
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(f"{_dotted(err['loc'])}: {err['msg']}" for err in exc.errors()[:5])
            more = exc.error_count() - 5
            if more > 0:
                problems += f"; and {more} more"
            raise TranscriptError(f"invalid transcript: {problems}", path=path) from None

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
        are ordered by virtual time, stably.
        """
        timed: list[tuple[float, int, str, dict[str, Any]]] = []
        for order, turn in enumerate(turns):
            base = {"agent": turn.agent, "session": turn.session}
            timed.append(
                (
                    turn.request_time,
                    2 * order,
                    "model_request",
                    {**base, "messages": turn.messages, "tools": turn.tools},
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


def write_transcript(path: str | os.PathLike[str], transcript: Transcript) -> Path:
    """Write ``transcript`` to ``path`` atomically and return the path.

    The text is built first, written to a temporary file in the same directory, flushed
    to disk and renamed over ``path`` (``os.replace``), so a crash at any point leaves
    either the old file or the new one, never a torn one.
    """
    return write_atomic(path, transcript.to_json())


def read_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read a transcript file; raises :class:`~loopsim.TranscriptError` saying what is wrong.

    A missing or unreadable file raises the ``OSError`` as is.
    """
    source = Path(path)
    return Transcript.from_json(source.read_bytes(), path=source)


def _finite(value: float) -> bool:
    return math.isfinite(value)
