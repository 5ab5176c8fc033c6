"""Content kinds and usage: the parts messages are made of."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, PlainSerializer, PlainValidator

from ._fields import MODEL_CONFIG, Annotations, Properties, annotations_field, properties_field
from ._hosted import HostedToolCallContent, HostedToolResultContent

__all__ = [
    "CONTENT_TYPES",
    "MODEL_CONFIG",
    "Content",
    "ContentInput",
    "DataContent",
    "ErrorContent",
    "FunctionApprovalRequestContent",
    "FunctionApprovalResponseContent",
    "FunctionCallContent",
    "FunctionResultContent",
    "TextContent",
    "UriContent",
    "Usage",
    "UsageContent",
    "contents_of",
    "text_of",
]


class Usage(BaseModel):
    """Token usage. Each counter is optional: None means "not reported".

    Adding two usages adds what either reported and keeps None where neither did;
    ``additional_counts`` (provider-specific named counters) are summed per key.
    """

    model_config = MODEL_CONFIG

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    additional_counts: dict[str, int] | None = None

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        extra: dict[str, int] | None = None
        if self.additional_counts is not None or other.additional_counts is not None:
            extra = dict(self.additional_counts or {})
            for key, value in (other.additional_counts or {}).items():
                extra[key] = extra.get(key, 0) + value
        return Usage(
            input_tokens=_add(self.input_tokens, other.input_tokens),
            output_tokens=_add(self.output_tokens, other.output_tokens),
            total_tokens=_add(self.total_tokens, other.total_tokens),
            cached_input_tokens=_add(self.cached_input_tokens, other.cached_input_tokens),
            reasoning_tokens=_add(self.reasoning_tokens, other.reasoning_tokens),
            additional_counts=extra,
        )

    @staticmethod
    def total(usages: Iterable[Usage | None]) -> Usage | None:
        """Sum of the given usages, skipping None; None when none was reported."""
        result: Usage | None = None
        for usage in usages:
            if usage is not None:
                result = usage.model_copy(deep=True) if result is None else result + usage
        return result


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


class TextContent(BaseModel):
    """Plain text."""

    model_config = MODEL_CONFIG
    type: Literal["text"] = "text"
    text: str
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


class FunctionCallContent(BaseModel):
    """A model's request to call the tool ``name`` with JSON-object ``arguments``."""

    model_config = MODEL_CONFIG
    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


class FunctionResultContent(BaseModel):
    """The result of a tool call, sent back to the model in a ``tool`` message."""

    model_config = MODEL_CONFIG
    type: Literal["function_result"] = "function_result"
    call_id: str
    result: Any = None
    error: str | None = None
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


class FunctionApprovalRequestContent(BaseModel):
    """A tool call that waits for a human's approval before it may run."""

    model_config = MODEL_CONFIG
    type: Literal["function_approval_request"] = "function_approval_request"
    id: str
    function_call: FunctionCallContent
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()

    def create_response(self, approved: bool) -> FunctionApprovalResponseContent:
        """The answer to this request."""
        return FunctionApprovalResponseContent(
            id=self.id, approved=approved, function_call=self.function_call
        )


class FunctionApprovalResponseContent(BaseModel):
    """A human's answer to a :class:`FunctionApprovalRequestContent`."""

    model_config = MODEL_CONFIG
    type: Literal["function_approval_response"] = "function_approval_response"
    id: str
    approved: bool
    function_call: FunctionCallContent
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


class ErrorContent(BaseModel):
    """An error reported inside a response."""

    model_config = MODEL_CONFIG
    type: Literal["error"] = "error"
    message: str
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


def _bytes_from_json(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return base64.b64decode(value.encode("ascii"), validate=True)
    msg = f"expected bytes or a base64 string, got {type(value).__name__}"
    raise TypeError(msg)


Base64Bytes = Annotated[
    bytes,
    PlainValidator(_bytes_from_json),
    PlainSerializer(
        lambda b: base64.b64encode(b).decode("ascii"), return_type=str, when_used="json"
    ),
]


class DataContent(BaseModel):
    """Inline binary data (base64 in JSON)."""

    model_config = MODEL_CONFIG
    type: Literal["data"] = "data"
    data: Base64Bytes
    media_type: str
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


class UriContent(BaseModel):
    """A reference to data by URI."""

    model_config = MODEL_CONFIG
    type: Literal["uri"] = "uri"
    uri: str
    media_type: str | None = None
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


class UsageContent(BaseModel):
    """Usage reported inside a streaming update."""

    model_config = MODEL_CONFIG
    type: Literal["usage"] = "usage"
    usage: Usage
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


Content = Annotated[
    TextContent
    | FunctionCallContent
    | FunctionResultContent
    | FunctionApprovalRequestContent
    | FunctionApprovalResponseContent
    | ErrorContent
    | DataContent
    | UriContent
    | UsageContent
    | HostedToolCallContent
    | HostedToolResultContent,
    Field(discriminator="type"),
]

ContentInput = Content | str
CONTENT_TYPES = (
    TextContent,
    FunctionCallContent,
    FunctionResultContent,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    ErrorContent,
    DataContent,
    UriContent,
    UsageContent,
    HostedToolCallContent,
    HostedToolResultContent,
)


def contents_of(items: Sequence[ContentInput] | str | None) -> list[Content]:
    if items is None:
        return []
    if isinstance(items, str):
        return [TextContent(text=items)]
    return [TextContent(text=c) if isinstance(c, str) else c for c in items]


def text_of(contents: Sequence[Any]) -> str:
    if len(contents) == 1:  # the common case, without a generator
        only = contents[0]
        return only.text if isinstance(only, TextContent) else ""
    return "".join([c.text for c in contents if isinstance(c, TextContent)])
