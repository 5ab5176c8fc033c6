"""Hosted tools across the boundary: the factories and the contents.

Hosted tools are tools a vendor's service runs itself (web search, file search, a code
interpreter, image generation, a remote MCP server). agent_framework's vendor clients
offer a factory for each (``client.get_web_search_tool()``...) that returns the
declaration the service takes, a plain mapping; ``create_harness_agent`` adds the web
search one to every agent whose client has it. :class:`HostedToolFactories` gives
``as_chat_client`` clients the same factories, returning mappings of the same keys as
agent_framework-openai's Responses client (``OpenAIChatClient``), so the model sees the
tool list it sees in production.

A service answers a hosted call with the call and its result together. loopsim's
:class:`~loopsim.HostedToolCallContent` / :class:`~loopsim.HostedToolResultContent`
become agent_framework's contents for that tool (``search_tool_call`` /
``search_tool_result`` for the searches, ``code_interpreter_tool_*``,
``image_generation_tool_*``, ``mcp_server_tool_*``) and come back unchanged: loopsim's
own value rides along in the content's ``additional_properties`` under
:data:`HOSTED_KEY`. Contents a real vendor client made (no such key) are read from their
own fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import agent_framework as af

from .._messages import HostedTool, HostedToolCallContent, HostedToolResultContent
from .._messages._hosted import is_hosted_declaration

__all__ = [
    "HOSTED_CONTENT_TYPES",
    "HOSTED_KEY",
    "HostedToolFactories",
    "hosted_option_tool",
    "hosted_tool_of",
    "to_af_hosted",
    "to_loopsim_hosted",
]

#: additional_properties key holding a hosted content's loopsim form (JSON data).
HOSTED_KEY = "loopsim_hosted"

_CALLS = {
    "search_tool_call",
    "code_interpreter_tool_call",
    "image_generation_tool_call",
    "mcp_server_tool_call",
}
_RESULTS = {
    "search_tool_result",
    "code_interpreter_tool_result",
    "image_generation_tool_result",
    "mcp_server_tool_result",
}
#: agent_framework content types that are one side of a hosted call
HOSTED_CONTENT_TYPES = frozenset(_CALLS | _RESULTS)


class HostedToolFactories:
    """The hosted-tool factories of agent_framework's vendor clients.

    Each returns the declaration mapping (keys as agent_framework-openai's Responses
    client returns them), ready for ``Agent(tools=[...])``; a scripted model then calls
    the tool with :func:`loopsim.hosted_call`.
    """

    @staticmethod
    def get_web_search_tool(
        *,
        user_location: Mapping[str, str] | None = None,
        search_context_size: Literal["low", "medium", "high"] | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A web search the service runs (``{"type": "web_search", ...}``)."""
        declared: dict[str, Any] = {"type": "web_search"}
        if user_location:
            where: dict[str, Any] = {"type": "approximate"}
            for key in ("city", "country", "region", "timezone"):
                where[key] = user_location.get(key)
            declared["user_location"] = where
        if search_context_size:
            declared["search_context_size"] = search_context_size
        if filters:
            declared["filters"] = dict(filters)
        return declared

    @staticmethod
    def get_file_search_tool(
        *, vector_store_ids: Sequence[str], max_num_results: int | None = None
    ) -> dict[str, Any]:
        """A search of the service's vector stores (``{"type": "file_search", ...}``)."""
        declared: dict[str, Any] = {"type": "file_search", "vector_store_ids": vector_store_ids}
        if max_num_results is not None:
            declared["max_num_results"] = max_num_results
        return declared

    @staticmethod
    def get_code_interpreter_tool(
        *,
        file_ids: Sequence[str] | None = None,
        container: Literal["auto"] | Mapping[str, Any] = "auto",
    ) -> dict[str, Any]:
        """Code the service runs in a container (``{"type": "code_interpreter", ...}``)."""
        box: dict[str, Any] = dict(container) if isinstance(container, Mapping) else {}
        if not box:
            box = {"type": "auto"}
        if file_ids:
            box["file_ids"] = file_ids
        return {"type": "code_interpreter", "container": box}

    @staticmethod
    def get_image_generation_tool(
        *,
        size: str | None = None,
        output_format: str | None = None,
        model: str | None = None,
        quality: str | None = None,
        partial_images: int | None = None,
        background: str | None = None,
        moderation: str | None = None,
        output_compression: int | None = None,
    ) -> dict[str, Any]:
        """Images the service draws (``{"type": "image_generation", ...}``)."""
        declared: dict[str, Any] = {"type": "image_generation"}
        # upstream leaves out empty text options and keeps a number given as 0
        texts = {
            "size": size,
            "output_format": output_format,
            "model": model,
            "quality": quality,
        }
        declared.update({key: value for key, value in texts.items() if value})
        if partial_images is not None:
            declared["partial_images"] = partial_images
        if background:
            declared["background"] = background
        if moderation:
            declared["moderation"] = moderation
        if output_compression is not None:
            declared["output_compression"] = output_compression
        return declared

    @staticmethod
    def get_mcp_tool(
        *,
        name: str,
        url: str,
        description: str | None = None,
        approval_mode: str | Mapping[str, Sequence[str]] | None = None,
        allowed_tools: Sequence[str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """A remote MCP server the service calls (``{"type": "mcp", ...}``)."""
        declared: dict[str, Any] = {
            "type": "mcp",
            "server_label": name.replace(" ", "_"),
            "server_url": url,
        }
        if description:
            declared["server_description"] = description
        if headers:
            declared["headers"] = headers
        if allowed_tools is not None:
            declared["allowed_tools"] = allowed_tools
        if isinstance(approval_mode, str) and approval_mode:
            declared["require_approval"] = (
                "always" if approval_mode == "always_require" else "never"
            )
        elif isinstance(approval_mode, Mapping):
            # as upstream: a "never" list, when given, is what the service gets
            for key, side in (
                ("always_require_approval", "always"),
                ("never_require_approval", "never"),
            ):
                names = approval_mode.get(key)
                if names:
                    declared["require_approval"] = {side: {"tool_names": names}}
        return declared


# -- options --------------------------------------------------------------------------------


def hosted_tool_of(tool: Any) -> HostedTool | None:
    """An agent_framework tool as a loopsim :class:`~loopsim.HostedTool`, when it is a
    hosted tool's declaration (else None)."""
    if isinstance(tool, HostedTool):
        return tool
    return HostedTool(tool) if is_hosted_declaration(tool) else None


def hosted_option_tool(tool: Any) -> Mapping[str, Any] | None:
    """A loopsim hosted tool as the declaration an agent_framework client takes (the
    mapping it was made from)."""
    return tool.declared if isinstance(tool, HostedTool) else None


# -- contents -------------------------------------------------------------------------------


def to_af_hosted(content: HostedToolCallContent | HostedToolResultContent) -> af.Content:
    """A loopsim hosted content as the agent_framework content of that tool."""
    # its annotations and properties go on agent_framework's own fields (see _convert)
    kept = {
        HOSTED_KEY: content.model_dump(
            mode="json", exclude={"annotations", "additional_properties"}
        )
    }
    tool = content.tool
    if isinstance(content, HostedToolCallContent):
        args = content.arguments
        if tool == "code_interpreter":
            code = args.get("code")
            return af.Content.from_code_interpreter_tool_call(
                call_id=content.call_id,
                inputs=[af.Content.from_text(code)] if isinstance(code, str) else None,
                additional_properties=kept,
            )
        if tool == "image_generation":
            return af.Content.from_image_generation_tool_call(
                image_id=content.call_id, additional_properties=kept
            )
        if tool == "mcp":
            return af.Content.from_mcp_server_tool_call(
                content.call_id,
                str(args.get("tool") or ""),
                server_name=args.get("server"),
                arguments=args.get("arguments"),
                additional_properties=kept,
            )
        return af.Content.from_search_tool_call(
            content.call_id, tool_name=tool, arguments=dict(args), additional_properties=kept
        )
    result = content.result
    if tool == "code_interpreter":
        return af.Content.from_code_interpreter_tool_result(
            call_id=content.call_id,
            outputs=[af.Content.from_text(_text(result))],
            additional_properties=kept,
        )
    if tool == "image_generation":
        # agent_framework's field holds content (the image by URI); other values ride along
        image = af.Content("uri", uri=result) if isinstance(result, str) else None
        return af.Content.from_image_generation_tool_result(
            image_id=content.call_id, outputs=image, additional_properties=kept
        )
    if tool == "mcp":
        return af.Content.from_mcp_server_tool_result(
            content.call_id,
            output=[af.Content.from_text(_text(result))],
            additional_properties=kept,
        )
    return af.Content.from_search_tool_result(
        content.call_id, tool_name=tool, result=result, additional_properties=kept
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def to_loopsim_hosted(content: af.Content) -> HostedToolCallContent | HostedToolResultContent:
    """One of agent_framework's hosted contents as loopsim's (see the module docstring)."""
    kept = (content.additional_properties or {}).get(HOSTED_KEY)
    if isinstance(kept, Mapping):
        if kept.get("type") == "hosted_tool_call":
            return HostedToolCallContent.model_validate(kept)
        return HostedToolResultContent.model_validate(kept)
    kind = content.type
    call_id = content.call_id or getattr(content, "image_id", None) or ""
    if kind == "search_tool_call":
        return HostedToolCallContent(
            call_id=call_id, tool=content.tool_name or "search", arguments=_mapping(content)
        )
    if kind == "search_tool_result":
        return HostedToolResultContent(
            call_id=call_id, tool=content.tool_name or "search", result=content.result
        )
    if kind == "code_interpreter_tool_call":
        code = "".join(c.text or "" for c in content.inputs or () if c.type == "text")
        return HostedToolCallContent(
            call_id=call_id, tool="code_interpreter", arguments={"code": code}
        )
    if kind == "code_interpreter_tool_result":
        return HostedToolResultContent(
            call_id=call_id, tool="code_interpreter", result=_joined(content.outputs)
        )
    if kind == "image_generation_tool_call":
        return HostedToolCallContent(call_id=call_id, tool="image_generation")
    if kind == "image_generation_tool_result":
        outputs = content.outputs
        uri = getattr(outputs, "uri", None)
        return HostedToolResultContent(
            call_id=call_id, tool="image_generation", result=uri if uri is not None else outputs
        )
    if kind == "mcp_server_tool_call":
        return HostedToolCallContent(
            call_id=call_id,
            tool="mcp",
            arguments={
                "server": content.server_name,
                "tool": content.tool_name,
                "arguments": _mapping(content),
            },
        )
    output = content.output
    return HostedToolResultContent(
        call_id=call_id,
        tool="mcp",
        result=_joined(output) if isinstance(output, list) else output,
    )


def _mapping(content: af.Content) -> dict[str, Any]:
    return dict(content.parse_arguments() or {})  # not JSON: {"raw": ...}, as upstream reads it


def _joined(outputs: Any) -> Any:
    if not outputs:
        return None
    texts = [getattr(c, "text", None) for c in outputs]
    if all(isinstance(t, str) for t in texts):
        return "".join(texts)  # type: ignore[arg-type] # checked just above
    return [c.to_dict() if hasattr(c, "to_dict") else c for c in outputs]
