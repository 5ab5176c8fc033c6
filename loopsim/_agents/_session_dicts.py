"""Messages in upstream's session dict shape, both ways.

Upstream keeps an in-memory session's history inside ``state["in_memory"]["messages"]``
as message dicts tagged ``"type": "message"``; a restore turns them back into message
objects. loopsim writes the same shape, so a session saved by an ``agent_framework``
application restores in loopsim and the other way round. Reading is lenient: keys a
content kind does not have here (upstream's ``additional_properties``, ``id``,
``items``, ``hosted``, ``user_input_request``...) are dropped; upstream's
``exception`` is loopsim's ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._messages import MESSAGES_ADAPTER, Message
from .._messages._content import CONTENT_TYPES

__all__ = ["HISTORY_STATE_KEY", "messages_from_dicts", "messages_to_dicts"]

#: where upstream's in-memory history provider keeps the messages in ``session.state``
HISTORY_STATE_KEY = "in_memory"

_FIELDS = {cls.model_fields["type"].default: set(cls.model_fields) for cls in CONTENT_TYPES}
_MESSAGE_FIELDS = set(Message.model_fields)


def messages_to_dicts(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """``messages`` as upstream-shaped JSON-safe dicts."""
    out: list[dict[str, Any]] = []
    for data in MESSAGES_ADAPTER.dump_python(list(messages), mode="json"):
        contents = []
        for content in data["contents"]:
            if content.get("type") == "function_result":
                error = content.pop("error", None)
                if error is not None:
                    content["exception"] = error
            contents.append(content)
        message: dict[str, Any] = {"type": "message", "role": data["role"], "contents": contents}
        for key in ("author_name", "message_id"):
            if data.get(key) is not None:
                message[key] = data[key]
        out.append(message)
    return out


def _content(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    kind = data.get("type")
    fields = _FIELDS.get(kind)
    if fields is None:
        msg = f"{where}: content type {kind!r} is not one loopsim knows"
        raise ValueError(msg)
    item = {k: v for k, v in data.items() if k in fields}
    if kind == "function_result" and "error" not in item and data.get("exception") is not None:
        item["error"] = str(data["exception"])
    if kind in ("function_approval_request", "function_approval_response"):
        item["function_call"] = _content(data["function_call"], f"{where}.function_call")
    return item


def messages_from_dicts(items: Any, where: str = "messages") -> list[Message]:
    """Messages from loopsim's or upstream's message dicts (or Message objects)."""
    if not isinstance(items, list):
        msg = f"{where}: expected a list of messages, got {type(items).__name__}"
        raise ValueError(msg)  # noqa: TRY004 - a bad snapshot is a ValueError, as the rest
    cleaned: list[Any] = []
    for index, item in enumerate(items):
        if isinstance(item, Message):
            cleaned.append(item)
            continue
        if not isinstance(item, Mapping):
            msg = f"{where}[{index}]: expected a message dict, got {type(item).__name__}"
            raise ValueError(msg)  # noqa: TRY004 - see above
        message = {k: v for k, v in item.items() if k in _MESSAGE_FIELDS}
        message["contents"] = [
            _content(c, f"{where}[{index}].contents[{n}]")
            for n, c in enumerate(item.get("contents") or [])
        ]
        cleaned.append(message)
    return MESSAGES_ADAPTER.validate_python(cleaned)
