"""Messages, content kinds, usage and responses.

All are pydantic v2 models, so every one round-trips through JSON exactly
(``Model.model_validate_json(m.model_dump_json()) == m``). Content kinds form a union
discriminated by ``type``, as in pydantic-ai's message module.

Example:
    >>> from loopsim import Message
    >>> m = Message.user("hello")
    >>> m.role, m.text
    ('user', 'hello')
    >>> Message.model_validate_json(m.model_dump_json()) == m
    True
"""

from ._chat import MESSAGES_ADAPTER as MESSAGES_ADAPTER
from ._chat import AgentResponse as AgentResponse
from ._chat import ChatOptions as ChatOptions
from ._chat import ChatRequest as ChatRequest
from ._chat import ChatResponse as ChatResponse
from ._chat import build_agent_response as build_agent_response
from ._chat import build_chat_response as build_chat_response
from ._content import Content as Content
from ._content import DataContent as DataContent
from ._content import ErrorContent as ErrorContent
from ._content import FunctionApprovalRequestContent as FunctionApprovalRequestContent
from ._content import FunctionApprovalResponseContent as FunctionApprovalResponseContent
from ._content import FunctionCallContent as FunctionCallContent
from ._content import FunctionResultContent as FunctionResultContent
from ._content import TextContent as TextContent
from ._content import UriContent as UriContent
from ._content import Usage as Usage
from ._content import UsageContent as UsageContent
from ._hosted import HostedTool as HostedTool
from ._hosted import HostedToolCallContent as HostedToolCallContent
from ._hosted import HostedToolResultContent as HostedToolResultContent
from ._hosted import hosted_call as hosted_call
from ._message import Message as Message
from ._message import MessagesInput as MessagesInput
from ._message import copied as copied
from ._message import normalize_messages as normalize_messages
from ._message import text_content as text_content
from ._message import text_message as text_message
from ._updates import AGENT_RESPONSE_FIELDS as AGENT_RESPONSE_FIELDS
from ._updates import RESPONSE_FIELDS as RESPONSE_FIELDS
from ._updates import AgentResponseUpdate as AgentResponseUpdate
from ._updates import ChatResponseUpdate as ChatResponseUpdate
from ._updates import build_agent_update as build_agent_update
from ._updates import build_chat_update as build_chat_update
from ._updates import merge_response_fields as merge_response_fields
from ._updates import message_update as message_update

__all__ = [
    "AGENT_RESPONSE_FIELDS",
    "MESSAGES_ADAPTER",
    "RESPONSE_FIELDS",
    "AgentResponse",
    "AgentResponseUpdate",
    "ChatOptions",
    "ChatRequest",
    "ChatResponse",
    "ChatResponseUpdate",
    "Content",
    "DataContent",
    "ErrorContent",
    "FunctionApprovalRequestContent",
    "FunctionApprovalResponseContent",
    "FunctionCallContent",
    "FunctionResultContent",
    "HostedTool",
    "HostedToolCallContent",
    "HostedToolResultContent",
    "Message",
    "MessagesInput",
    "TextContent",
    "UriContent",
    "Usage",
    "UsageContent",
    "build_agent_response",
    "build_agent_update",
    "build_chat_response",
    "build_chat_update",
    "copied",
    "hosted_call",
    "merge_response_fields",
    "message_update",
    "normalize_messages",
    "text_content",
    "text_message",
]
