"""Streaming updates: one chunk of a response, and merging a stream back into messages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ._content import (
    MODEL_CONFIG,
    Content,
    ContentInput,
    TextContent,
    Usage,
    UsageContent,
    contents_of,
    text_of,
)
from ._message import (
    Message,
    _all_contents,
    _built,
    _optional_str,
    build_message,
    text_content,
)

__all__ = [
    "AGENT_RESPONSE_FIELDS",
    "RESPONSE_FIELDS",
    "AgentResponseUpdate",
    "ChatResponseUpdate",
    "build_agent_update",
    "build_chat_update",
    "merge_response_fields",
    "merge_updates",
    "message_update",
]


_U = TypeVar("_U", bound="_Update")


def _build_update(
    cls: type[_U],
    role: str,
    contents: Sequence[Content],
    ids: dict[str, str | None],
    unset: dict[str, None] | None = None,
) -> _U:
    """``cls(role, contents, **ids)``; ``unset``: the fields left at their default."""
    if type(role) is str and all(map(_optional_str, ids.values())) and _all_contents(contents):
        values = {"role": role, "contents": list(contents), **ids}
        if unset is None:
            return _built(cls, values)
        # a fresh dict per update for additional_properties (never one shared default)
        return _built(cls, {**values, **unset, "additional_properties": {}}, set(values))
    return cls(role, contents, **ids)


def build_agent_update(
    role: str,
    contents: Sequence[Content],
    *,
    author_name: str | None = None,
    message_id: str | None = None,
    response_id: str | None = None,
    agent_id: str | None = None,
) -> AgentResponseUpdate:
    """``AgentResponseUpdate(role, contents, ...)`` for content instances (list copied)."""
    ids = {
        "author_name": author_name,
        "message_id": message_id,
        "response_id": response_id,
        "agent_id": agent_id,
    }
    return _build_update(AgentResponseUpdate, role, contents, ids, _AGENT_UPDATE_UNSET)


def message_update(
    message: Message, *, response_id: str | None = None, agent_id: str | None = None
) -> AgentResponseUpdate:
    """``message`` as one streaming update: its role, contents, author and id."""
    return build_agent_update(
        message.role,
        message.contents,
        author_name=message.author_name,
        message_id=message.message_id,
        response_id=response_id,
        agent_id=agent_id,
    )


def build_chat_update(
    role: str,
    contents: Sequence[Content],
    *,
    author_name: str | None = None,
    message_id: str | None = None,
    response_id: str | None = None,
) -> ChatResponseUpdate:
    """``ChatResponseUpdate(role, contents, ...)`` for content instances (list copied)."""
    ids = {"author_name": author_name, "message_id": message_id, "response_id": response_id}
    return _build_update(ChatResponseUpdate, role, contents, ids, _CHAT_UPDATE_UNSET)


#: The fields of a chat update its fast builder leaves at their default (and
#: ``additional_properties``, a fresh empty dict).
_CHAT_UPDATE_UNSET: dict[str, None] = {
    "conversation_id": None,
    "finish_reason": None,
    "continuation_token": None,
    "model": None,
    "created_at": None,
}

#: The fields of an agent update its fast builder leaves at their default (and
#: ``additional_properties``, a fresh empty dict).
_AGENT_UPDATE_UNSET: dict[str, None] = {
    "finish_reason": None,
    "continuation_token": None,
    "created_at": None,
}
#: The response-level fields an agent update carries (upstream's, from the model's answer).
AGENT_RESPONSE_FIELDS = (
    "finish_reason",
    "continuation_token",
    "created_at",
    "additional_properties",
)

#: The response-level fields a chat update carries (``merge_response_fields`` merges them).
RESPONSE_FIELDS = (
    "conversation_id",
    "finish_reason",
    "continuation_token",
    "model",
    "created_at",
    "additional_properties",
)


def merge_response_fields(updates: Sequence[Any]) -> dict[str, Any]:
    """The response-level fields of a stream, merged as upstream merges them; only the
    ones that are set (not None, not empty).

    The last ``conversation_id``, ``finish_reason``, ``model`` and ``created_at`` given
    win; ``continuation_token`` is the last update's (None there means done);
    ``additional_properties`` are merged one level deep, a later key winning (two
    mappings under one key are merged). Objects without one of
    these attributes (agent updates) count as not giving it.
    """
    merged: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    token: Any = None
    for update in updates:
        for name in ("conversation_id", "finish_reason", "model", "created_at"):
            value = getattr(update, name, None)
            if value is not None:
                merged[name] = value
        token = getattr(update, "continuation_token", None)
        for key, value in (getattr(update, "additional_properties", None) or {}).items():
            current = properties.get(key)
            # one level deep, as upstream: two mappings under one key are merged
            if isinstance(current, Mapping) and isinstance(value, Mapping):
                properties[key] = {**current, **value}
            else:
                properties[key] = dict(value) if isinstance(value, Mapping) else value
    if token is not None:
        merged["continuation_token"] = token
    if properties:
        merged["additional_properties"] = properties
    return merged


def merge_updates(
    updates: Iterable[Any], *, with_agent_id: bool
) -> tuple[list[Message], str | None, str | None, Usage | None]:
    """The messages, last response id, last agent id and summed usage of ``updates``."""
    messages: list[Message] = []
    usage: Usage | None = None
    response_id: str | None = None
    agent_id: str | None = None
    current: _MessageBuilder | None = None
    for update in updates:
        response_id = update.response_id or response_id
        if with_agent_id:
            agent_id = update.agent_id or agent_id
        contents: Sequence[Content] = update.contents
        for content in contents:
            if isinstance(content, UsageContent):  # usage is summed, not kept: filter
                kept: list[Content] = []
                for item in contents:
                    if isinstance(item, UsageContent):
                        usage = item.usage if usage is None else usage + item.usage
                    else:
                        kept.append(item)
                contents = kept
                break
        # As upstream: every update, an empty one too, opens a message or joins the one in
        # progress (a later update may name its author and id); empty messages are dropped.
        if current is None or not current.accepts(update):
            if current is not None and current.filled:
                messages.append(current.build())
            current = _MessageBuilder(update.role, update.author_name, update.message_id)
        else:
            if update.author_name is not None:
                current.author_name = update.author_name
            if update.message_id:
                current.message_id = update.message_id
        if contents:
            current.add(contents)
    if current is not None and current.filled:
        messages.append(current.build())
    return messages, response_id, agent_id, usage


@dataclass(slots=True)
class _MessageBuilder:
    """Collects one message's contents; adjacent text pieces become one TextContent.

    A run of adjacent text pieces is joined once when it ends (a run of one keeps its
    TextContent object), rather than re-building a TextContent per piece. As upstream
    joins them: the pieces' annotations follow one another, and of their
    ``additional_properties`` the earliest value of a key wins (two mappings under one
    key are joined the same way, one level deep); a piece whose ``model_output_kind``
    (agent_framework marks a refusal so) differs from the run's first starts a new run.
    """

    role: str
    author_name: str | None
    message_id: str | None
    contents: list[Content] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    first_text: TextContent | None = None
    #: the run's pieces that have annotations or additional_properties, in order
    marked: list[TextContent] = field(default_factory=list)

    def accepts(self, update: AgentResponseUpdate | ChatResponseUpdate) -> bool:
        """Whether ``update`` continues this message: same role, and no other id or author."""
        message_id, author_name = update.message_id, update.author_name
        return (
            update.role == self.role
            and (not message_id or not self.message_id or message_id == self.message_id)
            and (not author_name or not self.author_name or author_name == self.author_name)
        )

    @property
    def filled(self) -> bool:
        return bool(self.contents) or self.first_text is not None

    def add(self, contents: Sequence[Content]) -> None:
        for content in contents:
            if isinstance(content, TextContent):
                first = self.first_text
                if first is None:
                    self.first_text = content
                elif (
                    content.additional_properties or first.additional_properties
                ) and _output_kind(first) != _output_kind(
                    content
                ):  # the run's first piece decides, as upstream
                    self._end_text()
                    self.first_text = content
                if content.annotations or content.additional_properties:
                    self.marked.append(content)
                self.texts.append(content.text)
            else:
                self._end_text()
                self.contents.append(content)

    def _end_text(self) -> None:
        first = self.first_text
        if first is not None:
            texts = self.texts
            if len(texts) == 1:
                self.contents.append(first)
            elif self.marked:
                self.contents.append(_joined_text("".join(texts), self.marked))
            else:
                self.contents.append(text_content("".join(texts)))
            self.first_text = None
            self.texts = []
            self.marked = []

    def build(self) -> Message:
        self._end_text()
        return build_message(self.role, self.contents, self.author_name, self.message_id)


def _output_kind(content: TextContent) -> Any:
    """agent_framework's ``model_output_kind`` of a text (its namespaced key first)."""
    properties = content.additional_properties
    if not properties:
        return None
    core = properties.get("core")
    fallback = properties.get("model_output_kind")
    return core.get("model_output_kind", fallback) if isinstance(core, Mapping) else fallback


def _joined_text(text: str, marked: Sequence[TextContent]) -> TextContent:
    """One text of a run's pieces, with their annotations and properties joined."""
    annotations = [deepcopy(a) for piece in marked for a in piece.annotations]
    properties: dict[str, Any] = {}
    for piece in marked:
        for key, value in piece.additional_properties.items():
            current = properties.get(key)
            if isinstance(current, dict) and isinstance(value, Mapping):
                for inner, inner_value in value.items():
                    current.setdefault(inner, deepcopy(inner_value))
            elif key not in properties:
                properties[key] = deepcopy(value)
    return TextContent(text=text, annotations=annotations, additional_properties=properties)


class _Update(BaseModel):
    """The fields and text helper every streaming update has."""

    model_config = MODEL_CONFIG

    role: str = "assistant"
    contents: list[Content] = Field(default_factory=list)
    author_name: str | None = None
    message_id: str | None = None
    response_id: str | None = None

    def __init__(
        self,
        role: str = "assistant",
        contents: Sequence[ContentInput] | str | None = None,
        *,
        author_name: str | None = None,
        message_id: str | None = None,
        response_id: str | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(
            role=role,
            contents=contents_of(contents),
            author_name=author_name,
            message_id=message_id,
            response_id=response_id,
            **extra,
        )

    @property
    def text(self) -> str:
        """The concatenated text of the update's text contents."""
        return text_of(self.contents)


class AgentResponseUpdate(_Update):
    """One piece of a streaming agent run (``agent_id`` says which agent sent it).

    ``finish_reason``, ``continuation_token``, ``created_at`` and
    ``additional_properties`` come from the model's streamed answer, as upstream's;
    ``AgentResponse.from_updates`` merges them as ``ChatResponse.from_updates`` does.
    """

    agent_id: str | None = None
    finish_reason: str | None = None
    continuation_token: dict[str, Any] | None = None
    created_at: str | None = None
    additional_properties: dict[str, Any] = Field(default_factory=dict)

    def __init__(
        self,
        role: str = "assistant",
        contents: Sequence[ContentInput] | str | None = None,
        *,
        author_name: str | None = None,
        message_id: str | None = None,
        response_id: str | None = None,
        agent_id: str | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(
            role,
            contents,
            author_name=author_name,
            message_id=message_id,
            response_id=response_id,
            agent_id=agent_id,
            **extra,
        )


class ChatResponseUpdate(_Update):
    """One piece of a streaming chat response.

    Upstream's response-level fields are here too: ``conversation_id`` (a service-side
    conversation the stream continues), ``finish_reason``, ``continuation_token`` (a
    background response in progress), ``model``, ``created_at`` and
    ``additional_properties``; ``ChatResponse.from_updates`` merges them as upstream does.
    """

    conversation_id: str | None = None
    finish_reason: str | None = None
    continuation_token: dict[str, Any] | None = None
    model: str | None = None
    created_at: str | None = None
    additional_properties: dict[str, Any] = Field(default_factory=dict)

    # Spelled out so the pydantic mypy plugin keeps the positional signature of _Update.
    def __init__(
        self,
        role: str = "assistant",
        contents: Sequence[ContentInput] | str | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(role, contents, **fields)
