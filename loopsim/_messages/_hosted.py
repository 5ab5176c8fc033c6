"""Hosted tools: tools the model's service runs itself, and the contents they leave.

A hosted tool (web search, file search, a code interpreter, an MCP server the service
calls...) is declared to the model but never run by the agent: the service runs it and
its answer carries both the call and the result, beside the model's text. loopsim keeps
the declaration as :class:`HostedTool` (the same mapping an agent_framework vendor
client's ``get_web_search_tool()`` returns) and the pair as
:class:`HostedToolCallContent` + :class:`HostedToolResultContent`, joined by ``call_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from ._fields import MODEL_CONFIG, Annotations, Properties, annotations_field, properties_field

__all__ = ["HostedTool", "HostedToolCallContent", "HostedToolResultContent", "hosted_call"]


class HostedToolCallContent(BaseModel):
    """A call the model's service made of the hosted tool ``tool`` (``"web_search"``...)."""

    model_config = MODEL_CONFIG
    type: Literal["hosted_tool_call"] = "hosted_tool_call"
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


class HostedToolResultContent(BaseModel):
    """What the hosted tool returned for the call ``call_id`` (JSON data)."""

    model_config = MODEL_CONFIG
    type: Literal["hosted_tool_result"] = "hosted_tool_result"
    call_id: str
    tool: str
    result: Any = None
    annotations: Annotations = annotations_field()
    additional_properties: Properties = properties_field()


def hosted_call(
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    result: Any,
    call_id: str | None = None,
) -> list[HostedToolCallContent | HostedToolResultContent]:
    """A hosted call and its result, as a service puts them in its answer.

    ``call_id`` defaults to ``"{tool}-call"``; give each call of one answer its own.

    Example:
        >>> import loopsim
        >>> reply = loopsim.Message(
        ...     "assistant",
        ...     [*loopsim.hosted_call("web_search", {"query": "tides"}, result="high at 6"), "6am"],
        ... )
        >>> [c.type for c in reply.contents]
        ['hosted_tool_call', 'hosted_tool_result', 'text']
    """
    if not isinstance(tool, str) or not tool:
        msg = f"hosted_call needs the hosted tool's name (a non-empty str), got {tool!r}"
        raise TypeError(msg)
    ident = f"{tool}-call" if call_id is None else call_id
    return [
        HostedToolCallContent(call_id=ident, tool=tool, arguments=dict(arguments or {})),
        HostedToolResultContent(call_id=ident, tool=tool, result=result),
    ]


class HostedTool:
    """A tool the model's service runs itself, offered to the model and never run here.

    ``config`` is the declaration a vendor's service takes: the mapping agent_framework's
    vendor clients return from ``get_web_search_tool()`` and the like
    (``{"type": "web_search"}``). Its ``name`` is the mapping's ``name``, else its
    ``type``, as upstream names such a tool.

    Example:
        >>> import loopsim
        >>> search = loopsim.HostedTool({"type": "web_search", "search_context_size": "low"})
        >>> search.name, search.config["search_context_size"]
        ('web_search', 'low')
    """

    __slots__ = ("config", "declared")

    def __init__(self, config: Mapping[str, Any]) -> None:
        if not isinstance(config, Mapping):
            msg = (
                f"HostedTool needs the tool's declaration (a mapping), got {type(config).__name__}"
            )
            raise TypeError(msg)
        kind = config.get("type")
        if not isinstance(kind, str) or not kind or kind == "function":
            msg = (
                "HostedTool needs a declaration with a hosted tool's 'type' "
                f"(such as 'web_search'), got {dict(config)!r}"
            )
            raise ValueError(msg)
        self.config: dict[str, Any] = dict(config)
        #: the mapping given, itself (handed back to an agent_framework client unchanged)
        self.declared: Mapping[str, Any] = config

    @property
    def name(self) -> str:
        """The tool's name as the model and the transcript see it."""
        name = self.config.get("name")
        return name if isinstance(name, str) and name else str(self.config["type"])

    @property
    def kind(self) -> str:
        """The declaration's ``type`` (``web_search``, ``code_interpreter``, ``mcp``...)."""
        return str(self.config["type"])

    @property
    def description(self) -> str:
        """The declaration's description (an MCP server's), else empty."""
        text = self.config.get("server_description") or self.config.get("description")
        return text if isinstance(text, str) else ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HostedTool) and other.config == self.config

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"HostedTool({self.config!r})"


def is_hosted_declaration(value: object) -> bool:
    """Whether ``value`` is a hosted tool's declaration mapping (a ``type`` other than
    ``function``, the type of a function tool's JSON declaration)."""
    if not isinstance(value, Mapping):
        return False
    kind = value.get("type")
    return isinstance(kind, str) and bool(kind) and kind != "function"
