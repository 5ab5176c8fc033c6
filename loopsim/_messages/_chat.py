"""Messages, responses, options and requests (streaming updates are in ``_updates``).

All are pydantic v2 models, so every one round-trips through JSON exactly
(``Model.model_validate_json(m.model_dump_json()) == m``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, Field, PrivateAttr, TypeAdapter
from typing_extensions import TypeVar as DefaultTypeVar

from ._content import (
    CONTENT_TYPES,
    MODEL_CONFIG,
    Content,
    ContentInput,
    TextContent,
    Usage,
    contents_of,
    text_of,
)

if TYPE_CHECKING:
    from ._updates import AgentResponseUpdate, ChatResponseUpdate

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

from ._structured import PRIVATE_DEFAULTS, StructuredValue

_new_object = object.__new__
_set_attribute = object.__setattr__
_M = TypeVar("_M", bound=BaseModel)
#: The structured-output model of a ``ChatOptions`` (any model when not given).
ResponseModelT = DefaultTypeVar("ResponseModelT", bound=BaseModel, default=BaseModel)


def _built(
    cls: type[_M],
    values: dict[str, Any],
    fields_set: set[str] | None = None,
    private: dict[str, Any] | None = None,
) -> _M:
    """``cls`` with ``values`` as validation would store them (``fields_set``: every key)."""
    obj = _new_object(cls)
    _set_attribute(obj, "__dict__", values)
    _set_attribute(
        obj, "__pydantic_fields_set__", set(values) if fields_set is None else fields_set
    )
    _set_attribute(obj, "__pydantic_extra__", None)
    _set_attribute(obj, "__pydantic_private__", private)
    return obj


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
        return _built(TextContent, {"type": "text", "text": text}, {"text"})
    return TextContent(text=text)


def text_message(
    role: str, text: str, author_name: str | None = None, message_id: str | None = None
) -> Message:
    """``Message(role, [TextContent(text=text)], author_name=..., message_id=...)``."""
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
            },
        )
    return Message(role, contents, author_name=author_name, message_id=message_id)


def build_agent_response(
    messages: Sequence[Message],
    *,
    response_id: str | None = None,
    agent_id: str | None = None,
    usage: Usage | None = None,
) -> AgentResponse:
    """``AgentResponse(messages, response_id=..., agent_id=..., usage=...)``."""
    if (
        _optional_str(response_id)
        and _optional_str(agent_id)
        and (usage is None or isinstance(usage, Usage))
        and _all_messages(messages)
    ):
        return _built(
            AgentResponse,
            {
                "messages": list(messages),
                "response_id": response_id,
                "agent_id": agent_id,
                "usage": usage,
                "additional_properties": {},
            },
            private=dict(PRIVATE_DEFAULTS),
        )
    return AgentResponse(messages, response_id=response_id, agent_id=agent_id, usage=usage)


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
            },
            {"messages", "response_id", "usage"},
            private=dict(PRIVATE_DEFAULTS),
        )
    return ChatResponse(messages, response_id=response_id, usage=usage)


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


class AgentResponse(StructuredValue, BaseModel):
    """What an agent run returns: its messages, ids and usage.

    ``usage_details`` is upstream's name for ``usage``. ``value`` is the structured
    output, parsed from the last answer on first access when the run asked for a
    ``response_format`` (as upstream: a reply that does not parse raises then).
    """

    model_config = MODEL_CONFIG

    messages: list[Message] = Field(default_factory=list)
    response_id: str | None = None
    agent_id: str | None = None
    usage: Usage | None = None
    additional_properties: dict[str, Any] = Field(default_factory=dict)
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
        **extra: Any,
    ) -> None:
        msgs = [messages] if isinstance(messages, Message) else list(messages or ())
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
        from ._updates import merge_updates  # noqa: PLC0415 - the update module builds on this one

        messages, response_id, agent_id, usage = merge_updates(updates, with_agent_id=True)
        if cls is AgentResponse:
            return build_agent_response(
                messages, response_id=response_id, agent_id=agent_id, usage=usage
            )
        return cls(messages, response_id=response_id, agent_id=agent_id, usage=usage)


class ChatResponse(StructuredValue, BaseModel):
    """What a chat client returns for one request.

    Upstream's fields are here too: ``conversation_id``, ``finish_reason``, and
    ``response_format`` (then ``value`` parses the last answer on first access).
    """

    model_config = MODEL_CONFIG

    messages: list[Message] = Field(default_factory=list)
    response_id: str | None = None
    usage: Usage | None = None
    conversation_id: str | None = None
    finish_reason: str | None = None
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
        # upstream's two fields join fields_set only when given (as the fast builder's)
        if conversation_id is not None:
            extra["conversation_id"] = conversation_id
        if finish_reason is not None:
            extra["finish_reason"] = finish_reason
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
        """Merge streaming chat updates into one response (see AgentResponse.from_updates)."""
        from ._updates import (  # noqa: PLC0415 - the update module builds on this one
            AgentResponseUpdate,
            ChatResponseUpdate,
            merge_updates,
        )

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
                for u in updates
            ),
            with_agent_id=False,
        )
        if cls is ChatResponse:
            return build_chat_response(messages, response_id=response_id, usage=usage)
        return cls(messages, response_id=response_id, usage=usage)


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


CONTENT_ADAPTER: TypeAdapter[Content] = TypeAdapter(Content)
MESSAGES_ADAPTER: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
