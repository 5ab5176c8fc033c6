"""Messages and the fast builders every message-layer model uses.

The base of the message layer: responses (``_chat``) and streaming updates
(``_updates``) build on it, and it imports neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field
from pydantic_core import PydanticUndefined

from ._content import (
    CONTENT_TYPES,
    MODEL_CONFIG,
    Content,
    ContentInput,
    TextContent,
    contents_of,
    text_of,
)
from ._fields import Properties, properties_field

__all__ = [
    "FAST_COPY",
    "Message",
    "MessagesInput",
    "build_message",
    "copied",
    "normalize_messages",
    "text_content",
    "text_message",
]

# -- building models from values that are already valid ------------------------------------
#
# Validation costs 1-4 us per model and the loop builds several per iteration from values
# that are already exactly what validation would return (model instances, exact ``str``,
# None). The helpers below build such models directly, with the very state validation
# gives (``__dict__`` in field order, the same fields set, no extra, no private). Each
# checks its inputs and falls back to the validating constructor when one is not of the
# exact type validation would keep unchanged (a str subclass, a dict for a model...), so
# errors and coercions stay those of pydantic. model_construct is no help here: it is
# slower than validation for these small models (measured, pydantic 2.14).

_new_object = object.__new__
# BaseModel's own slots (``__dict__`` among them), set through their descriptors: faster
# than object.__setattr__, which looks each name up first (every model inherits them)
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_M = TypeVar("_M", bound=BaseModel)


def _built(
    cls: type[_M],
    values: dict[str, Any],
    fields_set: set[str] | None = None,
    private: dict[str, Any] | None = None,
) -> _M:
    """``cls`` with ``values`` as validation would store them (``fields_set``: every key)."""
    obj = _new_object(cls)
    _set_dict(obj, values)
    _set_fields_set(obj, set(values) if fields_set is None else fields_set)
    _set_extra(obj, None)
    _set_private(obj, private)
    return obj


#: The classes whose copies :func:`copied` makes itself (filled in below and by ``_chat``):
#: loopsim's own, which override no copy hook. Subclasses (a user's) go through pydantic.
FAST_COPY: set[type[BaseModel]] = set()


def copied(model: _M, updates: dict[str, Any]) -> _M:
    """``model.model_copy(update=updates)``, with the very state pydantic's copy gives.

    A shallow copy of ``__dict__`` (then the updates, unvalidated), of the fields set (plus
    the updated names) and of the private values; no extra (loopsim's models forbid it).
    Other classes and models holding extra fall back to ``model_copy``.
    """
    cls = type(model)
    if cls not in FAST_COPY or model.__pydantic_extra__ is not None:
        return model.model_copy(update=updates)
    values = model.__dict__.copy()
    values.update(updates)
    fields_set = set(model.__pydantic_fields_set__)
    # the keys view, as pydantic passes them: a dict argument would make the set grow its
    # table for every key first (every copy kept a 256-byte table more)
    fields_set.update(updates.keys())
    private = model.__pydantic_private__
    if private is not None:
        private = {k: v for k, v in private.items() if v is not PydanticUndefined}
    return _built(cls, values, fields_set, private)


def _optional_str(value: object) -> bool:
    return value is None or type(value) is str


def _all_messages(messages: Sequence[Any]) -> bool:
    for message in messages:  # noqa: SIM110 - a loop is cheaper than all(<genexpr>) here
        if not isinstance(message, Message):
            return False
    return True


def _all_contents(contents: Sequence[Any]) -> bool:
    for content in contents:  # noqa: SIM110 - a loop is cheaper than all(<genexpr>) here
        if not isinstance(content, CONTENT_TYPES):
            return False
    return True


def text_content(text: str) -> TextContent:
    """``TextContent(text=text)``, built without validation when ``text`` is a str."""
    if type(text) is str:
        return _built(
            TextContent,
            {"type": "text", "text": text, "annotations": [], "additional_properties": {}},
            {"text"},
        )
    return TextContent(text=text)


def text_message(
    role: str, text: str, author_name: str | None = None, message_id: str | None = None
) -> Message:
    """``Message(role, [TextContent(text=text)], author_name=..., message_id=...)``."""
    if (
        type(text) is str
        and type(role) is str
        and _optional_str(author_name)
        and _optional_str(message_id)
    ):
        # build_message's checks, minus the contents: this content is built right here
        content = _built(
            TextContent,
            {"type": "text", "text": text, "annotations": [], "additional_properties": {}},
            {"text"},
        )
        return _built(
            Message,
            {
                "role": role,
                "contents": [content],
                "author_name": author_name,
                "message_id": message_id,
                "additional_properties": {},
            },
            {"role", "contents", "author_name", "message_id"},  # as Message(...) sets them
        )
    return build_message(role, [text_content(text)], author_name, message_id)


def build_message(
    role: str,
    contents: list[Content],
    author_name: str | None = None,
    message_id: str | None = None,
) -> Message:
    """``Message(role, contents, author_name=..., message_id=...)`` for content instances.

    Takes ownership of ``contents`` (the message keeps that list).
    """
    if (
        type(role) is str
        and _optional_str(author_name)
        and _optional_str(message_id)
        and type(contents) is list
        and _all_contents(contents)
    ):
        return _built(
            Message,
            {
                "role": role,
                "contents": contents,
                "author_name": author_name,
                "message_id": message_id,
                "additional_properties": {},
            },
            {"role", "contents", "author_name", "message_id"},  # as Message(...) sets them
        )
    return Message(role, contents, author_name=author_name, message_id=message_id)


class Message(BaseModel):
    """One chat message: a role and its contents.

    ``Message("user", ["hi"])``, ``Message("user", text="hi")`` and ``Message.user("hi")``
    are the same message. Strings in ``contents`` become :class:`TextContent`.
    """

    model_config = MODEL_CONFIG

    role: str
    contents: list[Content] = Field(default_factory=list)
    author_name: str | None = None
    message_id: str | None = None
    #: what the framework or a provider keeps on the message (JSON data), such as
    #: agent_framework's ``Message.additional_properties``; never sent as text
    additional_properties: Properties = properties_field()

    def __init__(
        self,
        role: str,
        contents: Sequence[ContentInput] | str | None = None,
        *,
        text: str | None = None,
        author_name: str | None = None,
        message_id: str | None = None,
        **extra: Any,
    ) -> None:
        items = contents_of(contents)
        if text is not None:
            items.append(TextContent(text=text))
        # **extra reaches pydantic, which rejects unknown fields (extra="forbid")
        super().__init__(
            role=role, contents=items, author_name=author_name, message_id=message_id, **extra
        )

    @classmethod
    def user(cls, text: str, *, author_name: str | None = None) -> Message:
        """A user message holding ``text``."""
        if cls is Message:  # _of_text, inlined: the loop makes a few of these per iteration
            return text_message("user", text, author_name)
        return cls._of_text("user", text, author_name)

    @classmethod
    def assistant(cls, text: str, *, author_name: str | None = None) -> Message:
        """An assistant message holding ``text``."""
        return cls._of_text("assistant", text, author_name)

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message holding ``text``."""
        return cls._of_text("system", text, None)

    @classmethod
    def _of_text(cls, role: str, text: str, author_name: str | None) -> Message:
        if cls is Message:
            return text_message(role, text, author_name)
        return cls(role, [TextContent(text=text)], author_name=author_name)

    @property
    def text(self) -> str:
        """The concatenated text of the message's text contents."""
        return text_of(self.contents)


FAST_COPY.add(Message)

MessagesInput = str | Message | Sequence[str | Message] | None


def normalize_messages(messages: MessagesInput) -> list[Message]:
    """Turn a run's ``messages`` argument (str, Message, sequence or None) into a list."""
    if messages is None:
        return []
    if isinstance(messages, str):
        return [Message.user(messages)]
    if isinstance(messages, Message):
        return [messages]
    if not isinstance(messages, Sequence):
        got = type(messages).__name__
        msg = f"messages must be a str, a Message or a sequence of them, got {got}"
        raise TypeError(msg)
    result: list[Message] = []
    for item in messages:
        if isinstance(item, str):
            result.append(Message.user(item))
        elif isinstance(item, Message):
            result.append(item)
        else:
            msg = f"messages[{len(result)}] must be a str or a Message, got {type(item).__name__}"
            raise TypeError(msg)
    return result
