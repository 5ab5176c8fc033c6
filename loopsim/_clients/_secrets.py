"""Keeping secrets out of recordings: redaction while recording, a refusal at write.

A recording of a real model can pick up what must never land in a file committed to a
repository: the API key (echoed in an error message, say), an ``Authorization`` header a
proxy reflected, a token a tool returned. Two lines of defence:

* :class:`Redactor` replaces secret values and secret-looking text with
  ``[REDACTED]`` in everything a :class:`~loopsim.RecordingChatClient` records (and,
  through the trace, in what a :class:`~loopsim.Recorder` records in the same run).
* ``write_transcript`` scans the text it is about to write with the same detectors
  (``_detectors.DETECTORS``) and refuses (``TranscriptError``, with the line, column and
  event of the match) when one matches, so nothing slips through.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._detectors import DETECTORS, Scan, environment_secrets, is_secret_field

__all__ = [
    "DEFAULT_SECRET_PATTERNS",
    "REDACTED",
    "SECRETS_RESOURCE",
    "Finding",
    "Redactor",
    "secret_values",
]

REDACTED = "[REDACTED]"

#: Trace resource key under which recording clients register their redactor.
SECRETS_RESOURCE = "loopsim.secrets"

#: The built-in detectors' regular expressions (see ``_detectors.DETECTORS``).
DEFAULT_SECRET_PATTERNS: tuple[str, ...] = tuple(d.pattern for d in DETECTORS)

_SECRET_ATTRIBUTES = ("api_key", "_api_key", "token", "auth_token", "password")
_INNER_ATTRIBUTES = ("inner", "client", "chat_client", "af_client", "_client", "async_client")


def secret_values(obj: Any, depth: int = 3) -> list[str]:
    """API keys and tokens found on ``obj`` and the clients it wraps (a few levels deep)."""
    found: list[str] = []
    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(obj, 0)]
    while todo:
        item, level = todo.pop()
        if item is None or id(item) in seen or level > depth:
            continue
        seen.add(id(item))
        for name in _SECRET_ATTRIBUTES:
            value = _attribute(item, name)
            if callable(value):  # the openai SDK may hold a key provider
                continue
            value = getattr(value, "get_secret_value", lambda v=value: v)()
            if isinstance(value, str) and len(value) >= 8 and value not in found:
                found.append(value)
        todo.extend((_attribute(item, name), level + 1) for name in _INNER_ATTRIBUTES)
    return found


def _attribute(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property that fails is simply not a secret
        return None


@dataclass(frozen=True)
class Finding:
    """A secret found in a text: where (character offsets) and what kind it is."""

    start: int
    end: int
    kind: str

    def line(self, text: str) -> int:
        """The 1-based line of ``text`` the secret starts on."""
        return text.count("\n", 0, self.start) + 1

    def column(self, text: str) -> int:
        """The 1-based column of ``text`` the secret starts at."""
        return self.start - (text.rfind("\n", 0, self.start) + 1) + 1


class Redactor:
    """Replaces secret values and secret-looking text in JSON data with ``[REDACTED]``.

    Args:
        values: literal secrets (API keys, tokens) to remove wherever they appear.
        patterns: regular expressions of secret-looking text, on top of the built-in
            detectors (``_detectors.DETECTORS``).
        defaults: use the built-in detectors, and take the values of environment
            variables whose name looks secret (``OPENAI_API_KEY``, ``DB_PASSWORD``) as
            literal secrets. ``defaults=False`` uses ``values`` and ``patterns`` only.

    A dictionary entry whose key names a secret (``password``, ``api_key``, ``token``,
    ``authorization``, ...) has its string or number value replaced whatever it holds.
    Text is matched after dropping zero-width characters and NFKC normalization.

    Example:
        >>> from loopsim._clients._secrets import Redactor
        >>> Redactor(["hunter2-hunter2"]).redact({"text": "key=hunter2-hunter2!"})
        {'text': 'key=[REDACTED]!'}
        >>> Redactor().text("db: postgres://app:s3cr3t@db:5432/app")
        'db: postgres://[REDACTED]@db:5432/app'
    """

    def __init__(
        self,
        values: Iterable[str] = (),
        patterns: Sequence[str] = (),
        *,
        defaults: bool = True,
    ) -> None:
        self.defaults = defaults
        found = [*values, *(environment_secrets() if defaults else ())]
        self.values = sorted({v for v in found if v}, key=len, reverse=True)
        self.patterns = tuple(dict.fromkeys(patterns))
        self._compile()

    def _compile(self) -> None:
        self._scan = Scan(tuple(self.values), self.patterns, detectors=self.defaults)

    def merge(self, other: Redactor) -> None:
        """Add ``other``'s values, patterns and detectors to this redactor."""
        self.values = sorted({*self.values, *other.values}, key=len, reverse=True)
        self.patterns = tuple(dict.fromkeys((*self.patterns, *other.patterns)))
        self.defaults = self.defaults or other.defaults
        self._compile()

    def copy(self) -> Redactor:
        """A redactor of the same values, patterns and detectors."""
        made = Redactor(self.values, self.patterns, defaults=False)
        made.defaults = self.defaults
        made._compile()
        return made

    def text(self, value: str) -> str:
        """``value`` with every secret replaced."""
        spans = list(self._scan.spans(value))
        if not spans:
            return value
        out: list[str] = []
        at = 0
        for start, end, _ in spans:
            if start < at:  # overlapping (normalization can map two matches to one place)
                continue
            out.extend((value[at:start], REDACTED))
            at = end
        out.append(value[at:])
        return "".join(out)

    def redact(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        """A copy of JSON ``value`` with secrets replaced in every string (keys too).

        ``memo`` (by object id) keeps shared objects shared in the copy.
        """
        memo = {} if memo is None else memo
        if isinstance(value, str):
            return self.text(value)
        if not isinstance(value, (dict, list)):
            return value
        done = memo.get(id(value))
        if done is not None and done[0] is value:
            return done[1]
        copied: Any
        if isinstance(value, dict):
            copied = {self.text(str(k)): self._field(str(k), v, memo) for k, v in value.items()}
        else:
            copied = [self.redact(v, memo) for v in value]
        memo[id(value)] = (value, copied)
        return copied

    def _field(self, key: str, value: Any, memo: dict[int, Any]) -> Any:
        if (
            self.defaults
            and isinstance(value, (str, int, float))
            and not isinstance(value, bool)
            and value not in ("", REDACTED)
            and is_secret_field(key)
        ):
            return REDACTED
        return self.redact(value, memo)

    def find(self, text: str) -> Finding | None:
        """The first secret in ``text`` (None when clean)."""
        for start, end, kind in self._scan.spans(text):
            return Finding(start, end, kind)
        return None
