"""Structured output: the parsed ``value`` of a response, read from its last answer.

As upstream, a response made for a ``response_format`` parses the text of its last
non-empty assistant message on first access of ``.value``; a text that does not parse
raises then (pydantic's ``ValidationError`` for a model, ``ValueError`` for a JSON
schema given as a mapping), not when the run ends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

__all__ = ["StructuredValue", "parse_structured"]


def _last_answer_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if message.role == "assistant" and message.text:
            return str(message.text)
    return ""


def parse_structured(messages: Sequence[Any], response_format: Any) -> Any:
    """The last non-empty assistant text parsed as ``response_format``."""
    text = _last_answer_text(messages)
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return response_format.model_validate_json(text)
    if isinstance(response_format, Mapping):
        return json.loads(text)
    msg = (
        "response_format must be a pydantic model or a JSON schema mapping, "
        f"got {response_format!r}"
    )
    raise TypeError(msg)


class StructuredValue:
    """Mixin for the two response models: ``value`` (lazy) and ``response_format``."""

    _value: Any
    _value_parsed: bool
    _response_format: Any
    messages: Sequence[Any]

    @property
    def response_format(self) -> Any:
        """The structured output format this response is parsed with (None: none)."""
        return self._response_format

    @property
    def value(self) -> Any:
        """The parsed structured output (None without a ``response_format``).

        Raises:
            pydantic.ValidationError: the last answer does not fit the model.
            ValueError: the last answer is not JSON (for a schema mapping).
        """
        if not self._value_parsed and self._response_format is not None:
            self._value = parse_structured(self.messages, self._response_format)
            self._value_parsed = True
        return self._value

    @value.setter
    def value(self, value: Any) -> None:
        self._value = value
        self._value_parsed = True


PRIVATE_DEFAULTS: dict[str, Any] = {
    "_value": None,
    "_value_parsed": False,
    "_response_format": None,
}
