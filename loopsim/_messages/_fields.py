"""The field types every message-layer model shares (the base of ``_hosted`` and ``_content``).

``annotations`` and ``additional_properties`` are upstream's fields of every content (and
``additional_properties`` of a message): JSON data, empty by default, and left out of a
dump while empty, so a transcript of contents without them is what it was before they
existed.
"""

from __future__ import annotations

from operator import not_
from typing import Any

from pydantic import ConfigDict, Field, JsonValue

__all__ = ["MODEL_CONFIG", "Annotations", "Properties", "annotations_field", "properties_field"]

MODEL_CONFIG = ConfigDict(extra="forbid", validate_assignment=False)

#: Notes a service attaches to a content, such as a citation of the text's source
#: (agent_framework's ``Annotation``: ``{"type": "citation", "url": ..., ...}``).
Annotations = list[dict[str, JsonValue]]
#: Provider-specific data of a message or content (JSON data under string keys).
Properties = dict[str, JsonValue]


def annotations_field() -> Any:
    """The ``annotations`` field: empty by default, left out of a dump while empty."""
    return Field(default_factory=list, exclude_if=not_)


def properties_field() -> Any:
    """The ``additional_properties`` field: empty by default, left out of a dump while empty."""
    return Field(default_factory=dict, exclude_if=not_)
