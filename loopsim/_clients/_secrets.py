"""Keeping secrets out of recordings: redaction while recording, a refusal at write.

A recording of a real model can pick up what must never land in a file committed to a
repository: the API key (echoed in an error message, say), an ``Authorization`` header a
proxy reflected, a token a tool returned. Two lines of defence:

* :class:`Redactor` replaces secret values and secret-looking text with
  ``[REDACTED]`` in everything a :class:`~loopsim.RecordingChatClient` records (and,
  through the trace, in what a :class:`~loopsim.Recorder` records in the same run).
* ``write_transcript`` scans the text it is about to write with the same patterns and
  refuses (``TranscriptError``) when one matches, so nothing slips through.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["DEFAULT_SECRET_PATTERNS", "REDACTED", "SECRETS_RESOURCE", "Redactor", "secret_values"]

REDACTED = "[REDACTED]"

#: Trace resource key under which recording clients register their redactor.
SECRETS_RESOURCE = "loopsim.secrets"

#: Text that looks like a credential whoever wrote it (regular expressions).
DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    r"\bsk-[A-Za-z0-9_\-]{20,}",  # OpenAI-style keys (sk-..., sk-proj-...)
    r"(?i:\bbearer\s+[A-Za-z0-9\-._~+/]{16,}=*)",  # an Authorization header's token
    r"(?i:\bauthorization[\"']?\s*[:=]\s*[\"']?[^\s\"']{8,})",
    r"(?i:\bapi[-_]?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9\-._~+/]{16,})",
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bgh[pousr]_[A-Za-z0-9]{36,}",  # GitHub tokens
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack tokens
)

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


class Redactor:
    """Replaces secret values and secret-looking text in JSON data with ``[REDACTED]``.

    Args:
        values: literal secrets (API keys, tokens) to remove wherever they appear.
        patterns: regular expressions of secret-looking text, on top of
            :data:`DEFAULT_SECRET_PATTERNS` (``defaults=False`` leaves those out).

    Example:
        >>> from loopsim._clients._secrets import Redactor
        >>> Redactor(["hunter2-hunter2"]).redact({"text": "key=hunter2-hunter2!"})
        {'text': 'key=[REDACTED]!'}
    """

    def __init__(
        self,
        values: Iterable[str] = (),
        patterns: Sequence[str] = (),
        *,
        defaults: bool = True,
    ) -> None:
        self.values = sorted({v for v in values if v}, key=len, reverse=True)
        self.patterns = (*(DEFAULT_SECRET_PATTERNS if defaults else ()), *patterns)
        self._compile()

    def _compile(self) -> None:
        parts = [re.escape(v) for v in self.values] + [f"(?:{p})" for p in self.patterns]
        self._regex = re.compile("|".join(parts)) if parts else None

    def merge(self, other: Redactor) -> None:
        """Add ``other``'s values and patterns to this redactor."""
        self.values = sorted({*self.values, *other.values}, key=len, reverse=True)
        self.patterns = tuple(dict.fromkeys((*self.patterns, *other.patterns)))
        self._compile()

    def text(self, value: str) -> str:
        """``value`` with every secret replaced."""
        if self._regex is None:
            return value
        return self._regex.sub(REDACTED, value)

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
            copied = {self.text(str(k)): self.redact(v, memo) for k, v in value.items()}
        else:
            copied = [self.redact(v, memo) for v in value]
        memo[id(value)] = (value, copied)
        return copied

    def find(self, text: str) -> re.Match[str] | None:
        """The first secret-looking match in ``text`` (None when clean)."""
        return None if self._regex is None else self._regex.search(text)
