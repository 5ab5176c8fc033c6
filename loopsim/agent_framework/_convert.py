"""Conversions between loopsim's message types and agent_framework's, both ways.

Every loopsim content kind maps to one agent_framework content type and back without
loss (``to_loopsim_content(to_af_content(c)) == c``). Where agent_framework keeps less
than loopsim (a function result is text there), the loopsim value rides along in the
content's ``additional_properties`` under :data:`RESULT_KEY`, so it comes back intact.

Two documented normalizations: ``Usage(additional_counts={})`` comes back with
``additional_counts=None`` (agent_framework's usage is one flat dict), and an empty
``annotations`` list comes back as upstream's default, None. An agent_framework content
kind loopsim has no model for is a :class:`ConversionError`.

Messages carry ``additional_properties`` and every content its ``annotations`` and
``additional_properties``, both ways (``_extras`` says what is not carried, and why):
loopsim's own keys (:data:`RESULT_KEY`, the hosted contents' key) sit beside a user's
there, and a user key of the same name is a :class:`ConversionError`.

Responses and updates carry every response-level field both ways: ``response_id``,
``conversation_id``, ``finish_reason``, ``continuation_token``, ``model``,
``created_at``, ``additional_properties`` (and usage, structured-output format and a
value already parsed). What loopsim cannot carry is a :class:`ConversionError` naming the
field and where it came from: an update's ``merge_mode="replace"`` (loopsim's merge only
appends), a ``continuation_token`` or ``additional_properties`` that is not a mapping
with string keys. ``raw_representation`` (the vendor SDK's own wire object, not data) is
not carried: a response made by loopsim has none, as agent_framework's own test doubles.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import agent_framework as af
from pydantic import BaseModel

from .._messages import (
    AgentResponse,
    AgentResponseUpdate,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    DataContent,
    ErrorContent,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedToolCallContent,
    HostedToolResultContent,
    Message,
    TextContent,
    UriContent,
    Usage,
    UsageContent,
)
from ._extras import (
    ConversionError,
    af_content_extras,
    af_properties,
    loopsim_annotations,
    loopsim_properties,
    without_bookkeeping,
)
from ._hosted import (
    HOSTED_CONTENT_TYPES,
    HOSTED_KEY,
    hosted_option_tool,
    hosted_tool_of,
    to_af_hosted,
    to_loopsim_hosted,
)

__all__ = [
    "RESULT_KEY",
    "ConversionError",
    "ToolRef",
    "to_af_agent_response",
    "to_af_chat_response",
    "to_af_chat_update",
    "to_af_content",
    "to_af_message",
    "to_af_messages",
    "to_af_options",
    "to_af_usage",
    "to_loopsim_agent_response",
    "to_loopsim_agent_update",
    "to_loopsim_chat_response",
    "to_loopsim_chat_update",
    "to_loopsim_content",
    "to_loopsim_message",
    "to_loopsim_messages",
    "to_loopsim_options",
    "to_loopsim_request_message",
    "to_loopsim_usage",
]

#: additional_properties key holding a function result's loopsim value (JSON data).
RESULT_KEY = "loopsim_result"
#: additional_properties key marking a declaration-only tool made from a loopsim tool.
TOOL_KEY = "loopsim_tool"

_USAGE_NAMES = {
    "input_tokens": "input_token_count",
    "output_tokens": "output_token_count",
    "total_tokens": "total_token_count",
    "cached_input_tokens": "cache_read_input_token_count",
    "reasoning_tokens": "reasoning_output_token_count",
}
_USAGE_FIELDS = {af_name: name for name, af_name in _USAGE_NAMES.items()}


# -- usage ----------------------------------------------------------------------------------


def to_af_usage(usage: Usage) -> af.UsageDetails:
    """loopsim ``Usage`` as agent_framework ``UsageDetails`` (extra counters at top level)."""
    details: dict[str, int | None] = {}
    for name, af_name in _USAGE_NAMES.items():
        value = getattr(usage, name)
        if value is not None:
            details[af_name] = value
    for key, value in (usage.additional_counts or {}).items():
        if key in _USAGE_FIELDS:
            msg = (
                f"Usage.additional_counts[{key!r}] clashes with agent_framework's standard "
                f"counter {key!r}; set Usage.{_USAGE_FIELDS[key]} instead"
            )
            raise ConversionError(msg)
        details[key] = value
    return details  # type: ignore[return-value] # UsageDetails is an open TypedDict


def to_loopsim_usage(details: Mapping[str, Any] | None) -> Usage | None:
    """agent_framework ``UsageDetails`` as loopsim ``Usage`` (None stays None)."""
    if details is None:
        return None
    fields: dict[str, Any] = {}
    extra: dict[str, int] = {}
    for key, value in details.items():
        if key in _USAGE_FIELDS:
            fields[_USAGE_FIELDS[key]] = value
        elif value is not None:
            extra[key] = int(value)
    return Usage(**fields, additional_counts=extra or None)


# -- contents -------------------------------------------------------------------------------


def _af_call(call: FunctionCallContent, field: str) -> af.Content:
    converted = af.Content.from_function_call(
        call.call_id, call.name, arguments=dict(call.arguments)
    )
    if call.annotations or call.additional_properties:
        af_content_extras(call, converted, field)
    return converted


def to_af_content(content: Content, *, field: str = "content") -> af.Content:
    """One loopsim content as an agent_framework ``Content`` (``field`` names it in errors)."""
    converted = _af_content(content, field)
    # (a call has its own already: the approvals' nested calls are made the same way)
    if (content.annotations or content.additional_properties) and not isinstance(
        content, FunctionCallContent
    ):
        own = (
            RESULT_KEY
            if isinstance(content, FunctionResultContent)
            else HOSTED_KEY
            if isinstance(content, (HostedToolCallContent, HostedToolResultContent))
            else None
        )
        af_content_extras(content, converted, field, own)
    return converted


def _af_content(content: Content, field: str) -> af.Content:
    if isinstance(content, TextContent):
        return af.Content.from_text(content.text)
    if isinstance(content, FunctionCallContent):
        return _af_call(content, field)
    if isinstance(content, FunctionResultContent):
        return af.Content.from_function_result(
            content.call_id,
            result=content.result,
            exception=content.error,
            additional_properties={RESULT_KEY: content.result},
        )
    if isinstance(content, FunctionApprovalRequestContent):
        return af.Content.from_function_approval_request(
            content.id, _af_call(content.function_call, f"{field}.function_call")
        )
    if isinstance(content, FunctionApprovalResponseContent):
        answered = _af_call(content.function_call, f"{field}.function_call")
        answered.id = content.id  # the occurrence the answer is for (see the request side)
        return af.Content.from_function_approval_response(content.approved, content.id, answered)
    if isinstance(content, ErrorContent):
        return af.Content.from_error(message=content.message)
    if isinstance(content, DataContent):
        return af.Content.from_data(content.data, content.media_type)
    if isinstance(content, UriContent):
        # Built directly: from_uri turns a data: URI into data content and checks schemes.
        return af.Content("uri", uri=content.uri, media_type=content.media_type)
    if isinstance(content, UsageContent):
        return af.Content.from_usage(to_af_usage(content.usage))
    if isinstance(content, (HostedToolCallContent, HostedToolResultContent)):
        return to_af_hosted(content)
    msg = f"no agent_framework content for {type(content).__name__}"  # pragma: no cover
    raise ConversionError(msg)  # pragma: no cover - the union above is exhaustive


def _arguments(content: af.Content) -> dict[str, Any]:
    raw = content.arguments
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            msg = (
                f"function call {content.call_id!r} ({content.name!r}) has arguments "
                f"that are not JSON: {raw!r}"
            )
            raise ConversionError(msg) from exc
    else:
        parsed = dict(raw)
    if not isinstance(parsed, dict):
        msg = (
            f"function call {content.call_id!r} ({content.name!r}) arguments must be "
            f"a JSON object, got {raw!r}"
        )
        raise ConversionError(msg)
    return parsed


def _loopsim_call(
    content: af.Content | None, field: str, source: str | None = None
) -> FunctionCallContent:
    if content is None or content.type != "function_call":
        msg = "a function approval content needs a function_call"
        raise ConversionError(msg)
    call = FunctionCallContent(
        call_id=content.call_id or "", name=content.name or "", arguments=_arguments(content)
    )
    if content.annotations or content.additional_properties:
        _set_extras(call, content, field, source)
    return call


def _set_extras(
    converted: Any, content: af.Content, field: str, source: str | None, own: str | None = None
) -> None:
    """Give a freshly converted loopsim content upstream's annotations and properties
    (checked as JSON data; ``own``: loopsim's key, read by the converter itself)."""
    annotations = loopsim_annotations(content.annotations, f"{field}.annotations", source)
    properties = loopsim_properties(
        content.additional_properties, f"{field}.additional_properties", source, own
    )
    # set on the new model directly: the values are already checked JSON data
    if annotations:
        converted.annotations = annotations
    if properties:
        converted.additional_properties = properties


def _data_bytes(content: af.Content) -> bytes:
    uri = content.uri or ""
    head, sep, payload = uri.partition(",")
    if not sep or not head.endswith(";base64"):
        msg = f"data content needs a base64 data: URI, got {uri[:40]!r}"
        raise ConversionError(msg)
    try:
        return base64.b64decode(payload.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        msg = f"data content has invalid base64: {uri[:40]!r}"
        raise ConversionError(msg) from exc


def to_loopsim_content(
    content: af.Content, *, field: str = "content", source: str | None = None
) -> Content:
    """One agent_framework ``Content`` as a loopsim content (``field`` and ``source`` say
    where it came from in a :class:`ConversionError`)."""
    converted = _loopsim_content(content, field, source)
    kind = content.type
    # (a call has its own already: the approvals' nested calls are read the same way)
    if (content.annotations or content.additional_properties) and kind != "function_call":
        own = (
            RESULT_KEY
            if kind == "function_result"
            else HOSTED_KEY
            if kind in HOSTED_CONTENT_TYPES
            else None
        )
        _set_extras(converted, content, field, source, own)
    return converted


def _loopsim_content(content: af.Content, field: str, source: str | None) -> Content:
    kind = content.type
    if kind == "text":
        return TextContent(text=content.text or "")
    if kind == "function_call":
        return _loopsim_call(content, field, source)
    if kind == "function_result":
        props = content.additional_properties or {}
        result = props.get(RESULT_KEY, content.result)
        return FunctionResultContent(
            call_id=content.call_id or "", result=result, error=content.exception
        )
    if kind == "function_approval_request":
        # agent_framework binds the answer to the call's occurrence id (function_call.id):
        # that is the id loopsim's host answers with, and it comes back on the call.
        call = content.function_call
        occurrence = getattr(call, "id", None) if call is not None else None
        return FunctionApprovalRequestContent(
            id=occurrence or content.id or "",
            function_call=_loopsim_call(call, f"{field}.function_call", source),
        )
    if kind == "function_approval_response":
        return FunctionApprovalResponseContent(
            id=content.id or "",
            approved=bool(content.approved),
            function_call=_loopsim_call(content.function_call, f"{field}.function_call", source),
        )
    if kind == "error":
        return ErrorContent(message=content.message or content.error_details or "")
    if kind == "data":
        return DataContent(data=_data_bytes(content), media_type=content.media_type or "")
    if kind == "uri":
        return UriContent(uri=content.uri or "", media_type=content.media_type)
    if kind == "usage":
        usage = to_loopsim_usage(content.usage_details) or Usage()
        return UsageContent(usage=usage)
    if kind in HOSTED_CONTENT_TYPES:
        return to_loopsim_hosted(content)
    msg = (
        f"agent_framework content of type {kind!r} has no loopsim counterpart "
        "(loopsim knows text, function_call, function_result, function_approval_request, "
        "function_approval_response, error, data, uri, usage and the hosted tools' calls and "
        "results)"
    )
    raise ConversionError(msg)


# -- messages -------------------------------------------------------------------------------


def to_af_message(message: Message, *, field: str = "message") -> af.Message:
    """A loopsim message as an agent_framework ``Message`` (``field`` names it in errors)."""
    properties = message.additional_properties
    return af.Message(
        message.role,
        [to_af_content(c, field=f"{field}.contents[{n}]") for n, c in enumerate(message.contents)],
        author_name=message.author_name,
        message_id=message.message_id,
        additional_properties=(
            af_properties(properties, f"{field}.additional_properties") if properties else None
        ),
    )


def to_af_messages(messages: Sequence[Message], *, field: str = "messages") -> list[af.Message]:
    return [to_af_message(m, field=f"{field}[{n}]") for n, m in enumerate(messages)]


def to_loopsim_message(
    message: af.Message, *, field: str = "message", source: str | None = None
) -> Message:
    """An agent_framework ``Message`` as a loopsim message (``field`` and ``source`` say
    where it came from in a :class:`ConversionError`)."""
    contents = [
        to_loopsim_content(c, field=f"{field}.contents[{n}]", source=source)
        for n, c in enumerate(message.contents)
    ]
    properties = message.additional_properties
    if properties:
        return Message(
            str(message.role),
            contents,
            author_name=message.author_name,
            message_id=message.message_id,
            additional_properties=loopsim_properties(
                properties, f"{field}.additional_properties", source
            ),
        )
    return Message(
        str(message.role), contents, author_name=message.author_name, message_id=message.message_id
    )


def to_loopsim_messages(
    messages: Sequence[af.Message], *, field: str = "messages", source: str | None = None
) -> list[Message]:
    return [
        to_loopsim_message(m, field=f"{field}[{n}]", source=source) for n, m in enumerate(messages)
    ]


def to_loopsim_request_message(
    message: af.Message, *, field: str = "message", source: str | None = None
) -> Message:
    """A message of a request a loopsim fake answers (it plays the service): as
    :func:`to_loopsim_message`, without the keys agent_framework keeps on a message for
    itself (``_extras.BOOKKEEPING_KEYS``), which its vendor clients never send."""
    converted = to_loopsim_message(message, field=field, source=source)
    properties = converted.additional_properties
    if properties:
        converted.additional_properties = without_bookkeeping(properties)
    return converted


# -- responses and updates ------------------------------------------------------------------


def _af_response_fields(response: ChatResponse | ChatResponseUpdate) -> dict[str, Any]:
    return {
        "response_id": response.response_id,
        "conversation_id": response.conversation_id,
        "finish_reason": response.finish_reason,
        "model": response.model,
        "created_at": response.created_at,
        "continuation_token": (
            None if response.continuation_token is None else dict(response.continuation_token)
        ),
        "additional_properties": dict(response.additional_properties),
    }


def to_af_chat_response(
    response: ChatResponse, *, response_format: Any = None
) -> af.ChatResponse[Any]:
    """A loopsim chat response as agent_framework's (``response_format`` parses ``.value``;
    the response's own format when not given)."""
    if response_format is None:
        response_format = response.response_format
    # a value given or already parsed goes along; otherwise agent_framework parses it
    parsed = response._value_parsed  # reading .value would parse it now
    return af.ChatResponse(
        messages=to_af_messages(response.messages, field="ChatResponse.messages"),
        usage_details=None if response.usage is None else to_af_usage(response.usage),
        response_format=response_format,
        value=response.value if parsed else None,
        **_af_response_fields(response),
    )


def _mapping(value: Any, field: str, source: str | None) -> dict[str, Any] | None:
    """``value`` (None or a mapping with string keys) as a plain dict."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        msg = (
            f"agent_framework {field} must be a mapping with string keys to reach "
            f"loopsim, got {type(value).__name__}"
        )
        raise ConversionError(msg, field=field, source=source)
    return dict(value)


def _loopsim_response_fields(response: Any, kind: str, source: str | None) -> dict[str, Any]:
    """The response-level fields of an agent_framework response or update, checked."""
    return {
        "response_id": response.response_id,
        "conversation_id": response.conversation_id,
        "finish_reason": _finish_reason(response.finish_reason),
        "model": response.model,
        "created_at": response.created_at,
        "continuation_token": _mapping(
            response.continuation_token, f"{kind}.continuation_token", source
        ),
        "additional_properties": _mapping(
            response.additional_properties, f"{kind}.additional_properties", source
        ),
    }


def to_loopsim_chat_response(
    response: af.ChatResponse[Any], *, source: str | None = None
) -> ChatResponse:
    """An agent_framework chat response as loopsim's (``source`` names it in errors)."""
    response_format = getattr(response, "_response_format", None)
    converted = ChatResponse(
        to_loopsim_messages(response.messages, field="ChatResponse.messages", source=source),
        usage=to_loopsim_usage(response.usage_details),
        response_format=response_format,
        **_loopsim_response_fields(response, "ChatResponse", source),
    )
    # a value the client parsed (or set) goes along; an unparsed one is parsed on access
    if getattr(response, "_value_parsed", False):
        converted.value = response.value
    return converted


def _finish_reason(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "value", value))


def to_af_chat_update(update: ChatResponseUpdate) -> af.ChatResponseUpdate:
    return af.ChatResponseUpdate(
        contents=[
            to_af_content(c, field=f"ChatResponseUpdate.contents[{n}]")
            for n, c in enumerate(update.contents)
        ],
        role=update.role,  # type: ignore[arg-type] # loopsim roles are free strings
        author_name=update.author_name,
        message_id=update.message_id,
        **_af_response_fields(update),
    )


def _check_merge_mode(update: Any, kind: str, source: str | None) -> None:
    merge_mode = getattr(update, "merge_mode", None)
    if merge_mode not in (None, "append"):
        msg = (
            f"agent_framework {kind}.merge_mode={merge_mode!r} cannot be "
            "carried: a loopsim stream only appends to the message in progress"
        )
        raise ConversionError(msg, field=f"{kind}.merge_mode", source=source)


def to_loopsim_chat_update(
    update: af.ChatResponseUpdate, *, source: str | None = None
) -> ChatResponseUpdate:
    """An agent_framework update as loopsim's (``source`` names it in errors)."""
    _check_merge_mode(update, "ChatResponseUpdate", source)
    return ChatResponseUpdate(
        str(update.role or "assistant"),
        [
            to_loopsim_content(c, field=f"ChatResponseUpdate.contents[{n}]", source=source)
            for n, c in enumerate(update.contents)
        ],
        author_name=update.author_name,
        message_id=update.message_id,
        **{
            name: value
            for name, value in _loopsim_response_fields(
                update, "ChatResponseUpdate", source
            ).items()
            if value is not None
        },
    )


def to_af_agent_response(response: AgentResponse) -> af.AgentResponse[Any]:
    return af.AgentResponse(
        messages=to_af_messages(response.messages, field="AgentResponse.messages"),
        response_id=response.response_id,
        agent_id=response.agent_id,
        usage_details=None if response.usage is None else to_af_usage(response.usage),
        value=response.value,
        additional_properties=dict(response.additional_properties),
        finish_reason=response.finish_reason,  # type: ignore[arg-type] # a free string here
        continuation_token=cast(
            "af.ContinuationToken | None",
            None if response.continuation_token is None else dict(response.continuation_token),
        ),
        created_at=response.created_at,
    )


def _agent_fields(response: Any, kind: str, source: str | None) -> dict[str, Any]:
    """The response-level fields of an agent_framework agent response or update, checked."""
    return {
        "finish_reason": _finish_reason(response.finish_reason),
        "continuation_token": _mapping(
            response.continuation_token, f"{kind}.continuation_token", source
        ),
        "created_at": response.created_at,
        "additional_properties": _mapping(
            response.additional_properties, f"{kind}.additional_properties", source
        )
        or {},
    }


def to_loopsim_agent_response(
    response: af.AgentResponse[Any], *, source: str | None = None
) -> AgentResponse:
    value = response.value
    return AgentResponse(
        to_loopsim_messages(response.messages, field="AgentResponse.messages", source=source),
        response_id=response.response_id,
        agent_id=response.agent_id,
        usage=to_loopsim_usage(response.usage_details),
        value=value,
        **_agent_fields(response, "AgentResponse", source),
    )


def to_loopsim_agent_update(
    update: af.AgentResponseUpdate, *, source: str | None = None
) -> AgentResponseUpdate:
    _check_merge_mode(update, "AgentResponseUpdate", source)
    fields = _agent_fields(update, "AgentResponseUpdate", source)
    return AgentResponseUpdate(
        str(update.role or "assistant"),
        [
            to_loopsim_content(c, field=f"AgentResponseUpdate.contents[{n}]", source=source)
            for n, c in enumerate(update.contents)
        ],
        author_name=update.author_name,
        message_id=update.message_id,
        response_id=update.response_id,
        agent_id=update.agent_id,
        **{k: v for k, v in fields.items() if v},
    )


# -- options --------------------------------------------------------------------------------

_OPTION_FIELDS = ("instructions", "tools", "response_format", "tool_choice", "conversation_id")


_DECLARED: weakref.WeakKeyDictionary[Any, af.FunctionTool] = weakref.WeakKeyDictionary()


def _declared_tool(tool: Any) -> Any:
    """A loopsim tool as a declaration-only agent_framework FunctionTool (the caller runs it).

    One declaration per tool object (cached), so converting options twice gives equal options.
    """
    if isinstance(tool, ToolRef):
        return tool.tool
    if isinstance(tool, af.FunctionTool):
        return tool
    hosted = hosted_option_tool(tool)
    if hosted is not None:
        return hosted
    try:
        return _DECLARED[tool]
    except (KeyError, TypeError):
        pass
    parameters = getattr(tool, "parameters", None)
    declared = af.FunctionTool(
        name=tool.name,
        description=getattr(tool, "description", "") or "",
        input_model=parameters if isinstance(parameters, Mapping) else None,
        additional_properties={TOOL_KEY: tool},
    )
    with contextlib.suppress(TypeError):  # an object that cannot be weakly referenced
        _DECLARED[tool] = declared
    return declared


@dataclass(frozen=True, eq=False)
class ToolRef:
    """An upstream tool without a ``name`` attribute (a hosted tool's dict...), named."""

    name: str
    tool: Any


def _loopsim_tool(tool: Any) -> Any:
    props = getattr(tool, "additional_properties", None)
    if isinstance(props, Mapping) and TOOL_KEY in props:
        return props[TOOL_KEY]
    if isinstance(getattr(tool, "name", None), str):
        return tool
    hosted = hosted_tool_of(tool)
    if hosted is not None:
        return hosted
    if isinstance(tool, Mapping):
        name = tool.get("name") or tool.get("type") or "tool"
    else:
        name = getattr(tool, "__name__", None) or type(tool).__name__
    return ToolRef(str(name), tool)


def to_af_options(options: ChatOptions | None) -> dict[str, Any]:
    """loopsim ``ChatOptions`` as an agent_framework options dict.

    ``additional_properties`` become top-level option keys (``temperature``, ``model``...);
    loopsim tools become declaration-only FunctionTools (loopsim's Agent runs them).
    ``agent_name``/``session_id`` are loopsim's own bookkeeping and are not sent.
    """
    if options is None:
        return {}
    result: dict[str, Any] = dict(options.additional_properties)
    if options.instructions is not None:
        result["instructions"] = options.instructions
    if options.tools:
        result["tools"] = [_declared_tool(t) for t in options.tools]
    if options.response_format is not None:
        result["response_format"] = options.response_format
    if options.tool_choice is not None:
        result["tool_choice"] = options.tool_choice
    if options.conversation_id is not None:
        result["conversation_id"] = options.conversation_id
    return result


def to_loopsim_options(
    options: Mapping[str, Any] | None,
    *,
    agent_name: str | None = None,
    session_id: str | None = None,
) -> ChatOptions:
    """An agent_framework options dict as loopsim ``ChatOptions`` (other keys kept aside)."""
    options = dict(options or {})
    tools = options.get("tools") or ()
    if not isinstance(tools, Sequence):
        tools = [tools]
    response_format = options.get("response_format")
    extra = {k: v for k, v in options.items() if k not in _OPTION_FIELDS}
    if response_format is not None and not (
        isinstance(response_format, type) and issubclass(response_format, BaseModel)
    ):
        extra["response_format"] = response_format  # a JSON-schema mapping: kept as it came
        response_format = None
    return ChatOptions(
        instructions=options.get("instructions"),
        tools=[_loopsim_tool(t) for t in tools],
        response_format=response_format,
        additional_properties=extra,
        agent_name=agent_name,
        session_id=session_id,
        tool_choice=options.get("tool_choice"),
        conversation_id=options.get("conversation_id"),
    )
