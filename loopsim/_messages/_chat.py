"""Responses, options and requests (messages are in ``_message``, updates in ``_updates``).

All are pydantic v2 models, so every one round-trips through JSON exactly
(``Model.model_validate_json(m.model_dump_json()) == m``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

from pydantic import BaseModel, Field, PrivateAttr, TypeAdapter
from typing_extensions import TypeVar as DefaultTypeVar

from ._content import (
    MODEL_CONFIG,
    Content,
    Usage,
)

__all__ = [
    "MESSAGES_ADAPTER",
    "AgentResponse",
    "ChatOptions",
    "ChatRequest",
    "ChatResponse",
    "Message",
    "MessagesInput",
    "build_agent_response",
    "build_chat_response",
    "normalize_messages",
    "text_content",
    "text_message",
]

from ._message import (
    FAST_COPY,
    Message,
    MessagesInput,
    _all_messages,
    _built,
    _optional_str,
    normalize_messages,
    text_content,
    text_message,
)
from ._structured import PRIVATE_DEFAULTS, StructuredValue
from ._updates import (
    AGENT_RESPONSE_FIELDS,
    AgentResponseUpdate,
    ChatResponseUpdate,
    merge_response_fields,
    merge_updates,
)

#: The structured-output model of a ``ChatOptions`` (any model when not given).
ResponseModelT = DefaultTypeVar("ResponseModelT", bound=BaseModel, default=BaseModel)


#: An agent response's fields taken from the model's last answer (besides its messages).
_ANSWER_FIELDS = ("finish_reason", "continuation_token", "created_at")


def build_agent_response(
    messages: Sequence[Message],
    *,
    response_id: str | None = None,
    agent_id: str | None = None,
    usage: Usage | None = None,
    answer: ChatResponse | None = None,
) -> AgentResponse:
    """``AgentResponse(messages, response_id=..., agent_id=..., usage=...)``; ``answer``: the
    last model answer, whose finish reason, continuation token, creation time and
    additional properties the response takes (as upstream's agent response does)."""
    if answer is None:
        properties: dict[str, Any] = {}
        finish_reason = continuation_token = created_at = None
    else:
        properties = dict(answer.additional_properties)
        finish_reason = answer.finish_reason
        continuation_token = answer.continuation_token
        created_at = answer.created_at
    # (the names of _ANSWER_FIELDS, in the model's field order)
    fields: dict[str, Any] = {
        "additional_properties": properties,
        "finish_reason": finish_reason,
        "continuation_token": continuation_token,
        "created_at": created_at,
    }
    if (
        _optional_str(response_id)
        and _optional_str(agent_id)
        and (usage is None or isinstance(usage, Usage))
        and _all_messages(messages)
    ):
        # as the constructor: the answer's fields join fields_set only when given
        fields_set = {"messages", "response_id", "agent_id", "usage", "additional_properties"}
        if answer is not None:  # the names of _ANSWER_FIELDS, each when given
            if finish_reason is not None:
                fields_set.add("finish_reason")
            if continuation_token is not None:
                fields_set.add("continuation_token")
            if created_at is not None:
                fields_set.add("created_at")
        # in the model's field order (the fast builder's __dict__ is the validated one)
        values = {
            "messages": list(messages),
            "response_id": response_id,
            "agent_id": agent_id,
            "usage": usage,
        }
        values.update(fields)
        return _built(AgentResponse, values, fields_set, private=PRIVATE_DEFAULTS.copy())
    return AgentResponse(
        messages, response_id=response_id, agent_id=agent_id, usage=usage, **fields
    )


def build_chat_response(
    messages: Sequence[Message],
    *,
    response_id: str | None = None,
    usage: Usage | None = None,
) -> ChatResponse:
    """``ChatResponse(messages, response_id=..., usage=...)`` for Message instances."""
    if (
        _optional_str(response_id)
        and (usage is None or isinstance(usage, Usage))
        and _all_messages(messages)
    ):
        return _built(
            ChatResponse,
            {
                "messages": list(messages),
                "response_id": response_id,
                "usage": usage,
                "conversation_id": None,
                "finish_reason": None,
                "continuation_token": None,
                "model": None,
                "created_at": None,
                "additional_properties": {},
            },
            {"messages", "response_id", "usage"},
            private=dict(PRIVATE_DEFAULTS),
        )
    return ChatResponse(messages, response_id=response_id, usage=usage)


class AgentResponse(StructuredValue, BaseModel):
    """What an agent run returns: its messages, ids and usage.

    ``usage_details`` is upstream's name for ``usage``. ``value`` is the structured
    output, parsed from the last answer on first access when the run asked for a
    ``response_format`` (as upstream: a reply that does not parse raises then).
    ``finish_reason``, ``continuation_token`` (a background response still in progress:
    run again with ``options={"continuation_token": token}``), ``created_at`` and
    ``additional_properties`` are the last model answer's, as upstream's.
    """

    model_config = MODEL_CONFIG

    messages: list[Message] = Field(default_factory=list)
    response_id: str | None = None
    agent_id: str | None = None
    usage: Usage | None = None
    additional_properties: dict[str, Any] = Field(default_factory=dict)
    finish_reason: str | None = None
    continuation_token: dict[str, Any] | None = None
    created_at: str | None = None
    _value: Any = PrivateAttr(default=None)
    _value_parsed: bool = PrivateAttr(default=False)
    _response_format: Any = PrivateAttr(default=None)

    def __init__(
        self,
        messages: Sequence[Message] | Message | None = None,
        *,
        response_id: str | None = None,
        agent_id: str | None = None,
        usage: Usage | None = None,
        value: Any = None,
        response_format: Any = None,
        additional_properties: dict[str, Any] | None = None,
        usage_details: Usage | None = None,
        finish_reason: str | None = None,
        continuation_token: Mapping[str, Any] | None = None,
        created_at: str | None = None,
        **extra: Any,
    ) -> None:
        msgs = [messages] if isinstance(messages, Message) else list(messages or ())
        given = {
            "finish_reason": finish_reason,
            "continuation_token": continuation_token,
            "created_at": created_at,
        }
        extra.update({name: value for name, value in given.items() if value is not None})
        super().__init__(
            messages=msgs,
            response_id=response_id,
            agent_id=agent_id,
            usage=usage if usage is not None else usage_details,
            additional_properties=additional_properties or {},
            **extra,
        )
        self._response_format = response_format
        if value is not None:
            self.value = value

    @property
    def usage_details(self) -> Usage | None:
        """Upstream's name for :attr:`usage`."""
        return self.usage

    @property
    def text(self) -> str:
        """The concatenated text of all messages."""
        return "".join([m.text for m in self.messages])

    @classmethod
    def from_updates(cls, updates: Iterable[AgentResponseUpdate]) -> AgentResponse:
        """Merge streaming updates into one response.

        Consecutive updates with the same message id (or no id) and role are merged into
        one message; text pieces are concatenated. ``UsageContent`` is summed into
        ``usage`` and not kept as content. The last non-empty response/agent id wins.
        """
        listed = list(updates)
        messages, response_id, agent_id, usage = merge_updates(listed, with_agent_id=True)
        merged = merge_response_fields(listed)
        fields = {k: merged[k] for k in AGENT_RESPONSE_FIELDS if k in merged}
        if cls is AgentResponse and not fields:
            return build_agent_response(
                messages, response_id=response_id, agent_id=agent_id, usage=usage
            )
        return cls(messages, response_id=response_id, agent_id=agent_id, usage=usage, **fields)


class ChatResponse(StructuredValue, BaseModel):
    """What a chat client returns for one request.

    Upstream's fields are here too: ``conversation_id`` (the service-side conversation),
    ``finish_reason``, ``continuation_token`` (a background response still in progress:
    poll with it; None once it is done), ``model``, ``created_at``,
    ``additional_properties`` (JSON-safe extras) and ``response_format`` (then ``value``
    parses the last answer on first access).
    """

    model_config = MODEL_CONFIG

    messages: list[Message] = Field(default_factory=list)
    response_id: str | None = None
    usage: Usage | None = None
    conversation_id: str | None = None
    finish_reason: str | None = None
    continuation_token: dict[str, Any] | None = None
    model: str | None = None
    created_at: str | None = None
    additional_properties: dict[str, Any] = Field(default_factory=dict)
    _value: Any = PrivateAttr(default=None)
    _value_parsed: bool = PrivateAttr(default=False)
    _response_format: Any = PrivateAttr(default=None)

    def __init__(
        self,
        messages: Sequence[Message] | Message | str | None = None,
        *,
        response_id: str | None = None,
        usage: Usage | None = None,
        conversation_id: str | None = None,
        finish_reason: str | None = None,
        continuation_token: Mapping[str, Any] | None = None,
        model: str | None = None,
        created_at: str | None = None,
        additional_properties: Mapping[str, Any] | None = None,
        response_format: Any = None,
        value: Any = None,
        usage_details: Usage | None = None,
        **extra: Any,
    ) -> None:
        if isinstance(messages, str):
            msgs = [Message.assistant(messages)]
        elif isinstance(messages, Message):
            msgs = [messages]
        else:
            msgs = list(messages or ())
        # upstream's fields join fields_set only when given (as the fast builder's)
        given = {
            "conversation_id": conversation_id,
            "finish_reason": finish_reason,
            "continuation_token": continuation_token,
            "model": model,
            "created_at": created_at,
            "additional_properties": additional_properties,
        }
        extra.update({name: value for name, value in given.items() if value is not None})
        super().__init__(
            messages=msgs,
            response_id=response_id,
            usage=usage if usage is not None else usage_details,
            **extra,
        )
        self._response_format = response_format
        if value is not None:
            self.value = value

    @property
    def usage_details(self) -> Usage | None:
        """Upstream's name for :attr:`usage`."""
        return self.usage

    @property
    def text(self) -> str:
        """The concatenated text of all messages."""
        return "".join([m.text for m in self.messages])

    @classmethod
    def from_updates(cls, updates: Iterable[ChatResponseUpdate]) -> ChatResponse:
        """Merge streaming chat updates into one response (see AgentResponse.from_updates).

        As upstream merges them: the last ``conversation_id``, ``finish_reason``,
        ``model`` and ``created_at`` an update carries are the response's; the last
        update's ``continuation_token`` is (None there: the response is done); the
        updates' ``additional_properties`` are merged one level deep, a later key winning.
        """
        listed = list(updates)
        messages, response_id, _, usage = merge_updates(
            (
                u
                if isinstance(u, ChatResponseUpdate)
                else AgentResponseUpdate(
                    u.role,
                    u.contents,
                    author_name=u.author_name,
                    message_id=u.message_id,
                    response_id=u.response_id,
                )
                for u in listed
            ),
            with_agent_id=False,
        )
        fields = merge_response_fields(listed)
        if cls is ChatResponse and not fields:
            return build_chat_response(messages, response_id=response_id, usage=usage)
        return cls(messages, response_id=response_id, usage=usage, **fields)


@dataclass(slots=True)
class ChatOptions(Generic[ResponseModelT]):
    """What an agent offers the model for one request.

    Generic in the structured-output model, as upstream's ``ChatOptions[T]``:
    ``ChatOptions[Answer](response_format=Answer)``.

    Attributes:
        instructions: the system instructions for this turn (None when there are none).
        tools: the tools offered this turn, each with ``.name``.
        response_format: a pydantic model type for structured output, or None.
        additional_properties: anything else a caller wants to pass through.
        agent_name: who asks (set by :class:`~loopsim.Agent`; None for a direct call).
        session_id: the asking agent's session (set by the Agent), so recording and
            replaying clients can tell concurrent conversations apart.
        tool_choice: upstream's ``tool_choice``: ``"auto"`` (an Agent's default),
            ``"none"`` (the tools are listed but must not be called: the request past a
            tool-loop limit), ``"required"`` or a mapping; None when nobody set one.
        conversation_id: the service-side conversation this request continues (an
            Agent sets it for a service-backed session; then the messages are only the
            ones the service has not seen).
    """

    instructions: str | None = None
    tools: Sequence[Any] = ()
    response_format: type[ResponseModelT] | None = None
    additional_properties: dict[str, Any] = field(default_factory=dict)
    agent_name: str | None = None
    session_id: str | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    conversation_id: str | None = None

    @property
    def tool_names(self) -> list[str]:
        """Names of the offered tools, in order."""
        return [t.name for t in self.tools]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One request a fake chat client received: the messages and the options."""

    messages: Sequence[Message]
    options: ChatOptions

    @property
    def text(self) -> str:
        """Text of the last message (what the model was last told)."""
        return self.messages[-1].text if self.messages else ""


FAST_COPY.update((AgentResponse, ChatResponse))

CONTENT_ADAPTER: TypeAdapter[Content] = TypeAdapter(Content)
MESSAGES_ADAPTER: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
