"""Agents, sessions, history stores, tools, context providers and middleware."""

from ._agent import Agent
from ._base import (
    BaseAgent,
    DelegatingAgent,
    ResponseStream,
    RunOptions,
    SupportsAgentRun,
    maybe_await,
)
from ._context import (
    AgentContext,
    AgentMiddleware,
    AgentRunContext,
    ContextProvider,
    MiddlewareTermination,
    SessionContext,
)
from ._errors import AgentRequestError, ChatResponseError
from ._service import ServiceChatClient, ServiceKind
from ._session import (
    HISTORY_STORES,
    AgentSession,
    ConversationService,
    HistoryStoreKind,
    MessageView,
)
from ._tools import ApprovalMode, FunctionTool, ToolArgumentError, tool

__all__ = [
    "HISTORY_STORES",
    "Agent",
    "AgentContext",
    "AgentMiddleware",
    "AgentRequestError",
    "AgentRunContext",
    "AgentSession",
    "ApprovalMode",
    "BaseAgent",
    "ChatResponseError",
    "ContextProvider",
    "ConversationService",
    "DelegatingAgent",
    "FunctionTool",
    "HistoryStoreKind",
    "MessageView",
    "MiddlewareTermination",
    "ResponseStream",
    "RunOptions",
    "ServiceChatClient",
    "ServiceKind",
    "SessionContext",
    "SupportsAgentRun",
    "ToolArgumentError",
    "maybe_await",
    "tool",
]
