"""``Content``: upstream's factory spelling for loopsim's content kinds.

Upstream has one ``Content`` class with ``from_*`` constructors; loopsim has one pydantic
model per kind. ``loopsim.Content.from_text("hi")`` builds a :class:`TextContent`, and so
on, so code written against upstream's factory runs unchanged. ``isinstance(x, Content)``
is true for every content kind.

Example:
    >>> from loopsim import Content, FunctionCallContent
    >>> call = Content.from_function_call(call_id="c1", name="add", arguments={"a": 1})
    >>> isinstance(call, FunctionCallContent), isinstance(call, Content)
    (True, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._content import (
    CONTENT_TYPES,
    DataContent,
    ErrorContent,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UriContent,
    Usage,
    UsageContent,
)
from ._hosted import HostedToolCallContent, HostedToolResultContent

__all__ = ["Content"]


class _ContentMeta(type):
    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, CONTENT_TYPES)


class Content(metaclass=_ContentMeta):
    """Factory for the content kinds, named as upstream's ``Content.from_*``."""

    def __new__(cls, *_: Any, **__: Any) -> Content:  # noqa: PYI034 - it never returns
        msg = "Content is a factory: use Content.from_text(...), Content.from_function_call(...)"
        raise TypeError(msg)

    @staticmethod
    def from_text(text: str) -> TextContent:
        """A :class:`TextContent`."""
        return TextContent(text=text)

    @staticmethod
    def from_function_call(
        call_id: str, name: str, arguments: Mapping[str, Any] | None = None
    ) -> FunctionCallContent:
        """A :class:`FunctionCallContent` (``arguments``: a JSON object)."""
        return FunctionCallContent(call_id=call_id, name=name, arguments=dict(arguments or {}))

    @staticmethod
    def from_function_result(
        call_id: str, result: Any = None, exception: str | None = None
    ) -> FunctionResultContent:
        """A :class:`FunctionResultContent`; upstream's ``exception`` is loopsim's ``error``."""
        return FunctionResultContent(call_id=call_id, result=result, error=exception)

    @staticmethod
    def from_function_approval_request(
        id: str,
        function_call: FunctionCallContent,
    ) -> FunctionApprovalRequestContent:
        """A :class:`FunctionApprovalRequestContent` for ``function_call``."""
        return FunctionApprovalRequestContent(id=id, function_call=function_call)

    @staticmethod
    def from_function_approval_response(
        approved: bool,
        id: str,
        function_call: FunctionCallContent,
    ) -> FunctionApprovalResponseContent:
        """A :class:`FunctionApprovalResponseContent` answering request ``id``."""
        return FunctionApprovalResponseContent(
            id=id, approved=approved, function_call=function_call
        )

    @staticmethod
    def from_error(message: str) -> ErrorContent:
        """An :class:`ErrorContent`."""
        return ErrorContent(message=message)

    @staticmethod
    def from_data(data: bytes, media_type: str) -> DataContent:
        """A :class:`DataContent`."""
        return DataContent(data=data, media_type=media_type)

    @staticmethod
    def from_uri(uri: str, media_type: str | None = None) -> UriContent:
        """A :class:`UriContent`."""
        return UriContent(uri=uri, media_type=media_type)

    @staticmethod
    def from_usage(usage_details: Usage) -> UsageContent:
        """A :class:`UsageContent`."""
        return UsageContent(usage=usage_details)

    @staticmethod
    def from_search_tool_call(
        call_id: str, *, tool_name: str, arguments: Mapping[str, Any] | None = None
    ) -> HostedToolCallContent:
        """A :class:`HostedToolCallContent`: a search the model's service ran."""
        return HostedToolCallContent(
            call_id=call_id, tool=tool_name, arguments=dict(arguments or {})
        )

    @staticmethod
    def from_search_tool_result(
        call_id: str, *, tool_name: str, result: Any = None
    ) -> HostedToolResultContent:
        """A :class:`HostedToolResultContent`: what that search found."""
        return HostedToolResultContent(call_id=call_id, tool=tool_name, result=result)
