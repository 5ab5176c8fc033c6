"""Message- and content-level fields across the boundary: annotations and properties.

agent_framework gives every ``Content`` ``annotations`` (a citation of the text's source,
as a vendor's client reads it from the service) and ``additional_properties``, and every
``Message`` ``additional_properties``. loopsim keeps each as JSON data on the model of the
same name. Two things are not carried, each for a stated reason:

* an annotation's ``raw_representation`` key (the vendor SDK's own object, not data; the
  same holds for ``raw_representation`` everywhere, and upstream's pickling drops this key
  too);
* on a request a loopsim fake answers (it plays the service), the keys agent_framework
  keeps on a message for itself, :data:`BOOKKEEPING_KEYS` (which history provider a
  message came from, compaction's groups): upstream's vendor clients never send a
  message's ``additional_properties`` to the service.

Any other value that is not JSON data is a :class:`~loopsim.agent_framework.ConversionError`
whose ``field`` names it (``ChatResponse.messages[2].contents[0].annotations``), never a drop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import LoopsimError

__all__ = [
    "BOOKKEEPING_KEYS",
    "ConversionError",
    "af_content_extras",
    "af_properties",
    "json_copy",
    "loopsim_annotations",
    "loopsim_properties",
    "without_bookkeeping",
]

#: The ``Message.additional_properties`` keys agent_framework keeps for itself: the
#: history provider's attribution, and compaction's group, exclusion and summary marks
#: (``agent_framework._compaction``'s ``*_KEY`` constants).
BOOKKEEPING_KEYS = frozenset(
    {
        "_attribution",
        "_group",
        "_excluded",
        "_exclude_reason",
        "_summary_of_message_ids",
        "_summary_of_group_ids",
        "_summarized_by_summary_id",
    }
)


class ConversionError(LoopsimError, ValueError):
    """A value that has no counterpart on the other side (an unknown content kind...).

    Attributes:
        field: the field that cannot be carried (``"ChatResponseUpdate.merge_mode"``...),
            None when the error is about a content's value.
        source: where the value came from (the agent_framework client's name...), None
            when the converter was called directly.
    """

    def __init__(
        self, message: str, *, field: str | None = None, source: str | None = None
    ) -> None:
        self.field = field
        self.source = source
        super().__init__(f"{message} (from {source})" if source else message)


#: An annotation key that holds the vendor SDK's object (see the module docstring).
_RAW = "raw_representation"


class _NotJsonError(LoopsimError, ValueError):
    """Raised inside :func:`json_copy`; the caller turns it into a ConversionError."""

    def __init__(self, inside: str, value: Any) -> None:
        self.inside = inside
        self.value = value
        super().__init__(inside)


def _copy(value: Any, inside: str) -> Any:
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, (str, int, float)):  # bool is an int; subclasses as their base
        return value
    if isinstance(value, Mapping):
        copied: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _NotJsonError(f"{inside} key {key!r}", key)
            copied[key] = _copy(item, f"{inside}[{key!r}]")
        return copied
    if isinstance(value, (list, tuple)):
        return [_copy(item, f"{inside}[{n}]") for n, item in enumerate(value)]
    raise _NotJsonError(inside, value)


def json_copy(value: Any, field: str, source: str | None) -> Any:
    """A copy of ``value`` (JSON data: mappings with string keys, lists, scalars), else a
    ConversionError naming ``field``."""
    try:
        return _copy(value, "")
    except _NotJsonError as exc:
        inside = f" at {exc.inside}" if exc.inside else ""
        msg = (
            f"{field} holds {type(exc.value).__name__} {exc.value!r:.60}{inside}, which is not "
            "JSON data: loopsim carries annotations and additional_properties as JSON data"
        )
        raise ConversionError(msg, field=field, source=source) from None


def loopsim_annotations(af_value: Any, field: str, source: str | None) -> list[dict[str, Any]]:
    """agent_framework ``annotations`` (None or a sequence of mappings) as loopsim's."""
    if not af_value:
        return []
    if isinstance(af_value, Mapping) or not isinstance(af_value, (list, tuple)):
        af_value = [af_value]  # one annotation given alone: checked as the list's one item
    annotations = []
    for number, given in enumerate(af_value):
        annotation = (
            {k: v for k, v in given.items() if k != _RAW}
            if isinstance(given, Mapping) and _RAW in given
            else given
        )
        copied = json_copy(annotation, f"{field}[{number}]", source)
        if not isinstance(copied, dict):
            msg = f"{field}[{number}] must be a mapping (an Annotation), got {copied!r:.60}"
            raise ConversionError(msg, field=f"{field}[{number}]", source=source)
        annotations.append(copied)
    return annotations


def loopsim_properties(
    af_value: Any, field: str, source: str | None, own: str | None = None
) -> dict[str, Any]:
    """agent_framework ``additional_properties`` as loopsim's (without loopsim's ``own``
    key, which the converter reads itself)."""
    if not af_value:
        return {}
    if own is not None and own in af_value:
        af_value = {k: v for k, v in af_value.items() if k != own}
    copied = json_copy(af_value, field, source)
    if not isinstance(copied, dict):
        msg = f"{field} must be a mapping with string keys, got {type(af_value).__name__}"
        raise ConversionError(msg, field=field, source=source)
    return copied


def af_properties(
    properties: Mapping[str, Any], field: str, own: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """loopsim ``additional_properties`` for an agent_framework object, beside loopsim's
    ``own`` key (a user key of that name is a ConversionError: it would be lost)."""
    copied: dict[str, Any] = json_copy(properties, field, None) if properties else {}
    if own:
        for key in own:
            if key in copied:
                msg = (
                    f"{field}[{key!r}] is the key loopsim keeps its own value under on "
                    "agent_framework's side; use another key"
                )
                raise ConversionError(msg, field=f"{field}[{key!r}]")
        copied.update(own)
    return copied


def af_content_extras(content: Any, af_content: Any, field: str, own: str | None = None) -> None:
    """Give ``af_content`` the annotations and properties of loopsim's ``content``."""
    if content.annotations:
        af_content.annotations = json_copy(content.annotations, f"{field}.annotations", None)
    if content.additional_properties:
        kept = af_content.additional_properties or {}
        af_content.additional_properties = af_properties(
            content.additional_properties,
            f"{field}.additional_properties",
            {own: kept[own]} if own is not None and own in kept else None,
        )


def without_bookkeeping(properties: dict[str, Any]) -> dict[str, Any]:
    """``properties`` without agent_framework's own keys (see :data:`BOOKKEEPING_KEYS`)."""
    if BOOKKEEPING_KEYS.isdisjoint(properties):
        return properties
    return {k: v for k, v in properties.items() if k not in BOOKKEEPING_KEYS}
