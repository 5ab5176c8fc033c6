"""Chat clients across the boundary: loopsim's as agent_framework's, and the reverse."""

from __future__ import annotations

import operator
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import agent_framework as af
from agent_framework.observability import ChatTelemetryLayer

from .. import _trace
from .._agents._session import MessageView
from .._clients import ChatClient, ModelError, RecordingChatClient
from .._clients._hosted import emit_hosted
from .._clock import model_call
from .._messages import RESPONSE_FIELDS, ChatOptions, ChatResponse, ChatResponseUpdate, Message
from ._convert import (
    to_af_chat_response,
    to_af_chat_update,
    to_af_messages,
    to_af_options,
    to_loopsim_chat_response,
    to_loopsim_chat_update,
    to_loopsim_options,
    to_loopsim_request_message,
)
from ._extras import without_bookkeeping
from ._faults import as_vendor_error
from ._hosted import HostedToolFactories
from ._runtime import require_asyncio
from ._scope import RunScope, current_scope
from ._tracing import ToolTraceMiddleware, emit_answer

__all__ = [
    "AgentFrameworkChatClient",
    "LoopsimChatClient",
    "as_chat_client",
    "from_chat_client",
    "loopsim_updates",
]


class LoopsimChatClient(
    HostedToolFactories,
    af.FunctionInvocationLayer[Any],
    af.ChatMiddlewareLayer[Any],
    ChatTelemetryLayer[Any],
    af.BaseChatClient[Any],
):
    """A loopsim :class:`~loopsim.ChatClient` as a real agent_framework chat client.

    Built like a vendor's client (function invocation, chat middleware and telemetry
    layers over ``BaseChatClient``, in the order upstream's vendor clients use), so
    ``agent_framework.Agent`` runs tools, middleware and streaming through it as it
    would for a real model. Each model call reaches
    ``loopsim_client`` as loopsim messages and options (so ``.requests`` shows what the
    real Agent sent) and its answer goes back as agent_framework types. It has the
    vendor clients' hosted-tool factories (``get_web_search_tool()``...: see
    :class:`~loopsim.agent_framework._hosted.HostedToolFactories`).
    """

    OTEL_PROVIDER_NAME = "loopsim"

    def __init__(
        self,
        loopsim_client: ChatClient,
        *,
        middleware: Sequence[Any] | None = None,
        function_invocation_configuration: Any = None,
    ) -> None:
        self._tool_trace = ToolTraceMiddleware()
        super().__init__(
            middleware=middleware,
            function_invocation_configuration=function_invocation_configuration,
        )
        self.loopsim_client = loopsim_client
        # Each request resends the whole history, and agent_framework's function layer
        # sends shallow copies of its messages each time: a message already converted is
        # reused while it holds the very same content objects (keyed by their identity,
        # kept alive here so that an id is never reused). Keying on the af message itself
        # would convert, and keep, a new copy of the whole history per call (quadratic
        # memory in a long loop).
        self._converted: dict[tuple[Any, ...], tuple[list[Any], dict[str, Any], Message]] = {}
        # What each agent and session sent, appended to only: a request that extends it
        # reaches the loopsim client as a view of its first items, as the built-in Agent
        # sends its history, so ``.requests`` holds O(1) per request, not a list each.
        self._sent: dict[tuple[str | None, str | None], list[Message]] = {}
        # A recording client reports model events itself; the adapter does not repeat them.
        self._emits = not (isinstance(loopsim_client, RecordingChatClient) and loopsim_client.emit)

    def __repr__(self) -> str:
        return f"LoopsimChatClient({self.loopsim_client!r})"

    # The function-invocation layer reads ``function_middleware`` on every request. The
    # tool-tracing middleware joins it only while a transcript is recorded: any function
    # middleware sends each tool call down agent_framework's slower middleware path.
    @property
    def function_middleware(self) -> list[Any]:
        own = self._function_middleware
        return [self._tool_trace, *own] if _trace.observed() else own

    @function_middleware.setter
    def function_middleware(self, value: list[Any]) -> None:
        self._function_middleware = list(value)

    @property
    def STORES_BY_DEFAULT(self) -> bool:  # type: ignore[override] # noqa: N802 - upstream's ClassVar, read per client here
        """Whether the service keeps the history (then the Agent sends only new messages):
        the loopsim client's own ``STORES_BY_DEFAULT`` (a ``ServiceChatClient``'s is True)."""
        return bool(getattr(self.loopsim_client, "STORES_BY_DEFAULT", False))

    @property
    def name(self) -> str | None:
        """The loopsim client's name (used as the agent label outside a traced run)."""
        name = getattr(self.loopsim_client, "name", None)
        return name if isinstance(name, str) else None

    def _request(
        self, messages: Sequence[af.Message], options: Mapping[str, Any], scope: RunScope | None
    ) -> tuple[MessageView, ChatOptions, str | None, str | None]:
        require_asyncio()
        agent = scope.agent if scope is not None else self.name
        session = scope.session if scope is not None else None
        converted = self._history(
            (agent, session), [self._convert(m, n) for n, m in enumerate(messages)]
        )
        chat_options = to_loopsim_options(options, agent_name=agent, session_id=session)
        if self._emits:
            model_call(agent)  # the run's max_model_calls (runaway loops)
        if self._emits and _trace.observed():
            _trace.emit(
                "model_request",
                agent=agent,
                session=session,
                messages=converted,
                tools=chat_options.tool_names,
                instructions=chat_options.instructions,
                **(
                    {"conversation_id": chat_options.conversation_id}
                    if chat_options.conversation_id is not None
                    and (self.STORES_BY_DEFAULT or options.get("store"))
                    else {}
                ),
            )
        return converted, chat_options, agent, session

    def _history(self, key: tuple[str | None, str | None], converted: list[Message]) -> MessageView:
        seen = self._sent.get(key)
        if seen is not None:
            known = len(seen)
            if known <= len(converted) and all(map(operator.is_, seen, converted)):
                seen.extend(converted[known:])
                return MessageView(seen, len(converted))
            if len(converted) < known and all(map(operator.is_, converted, seen)):
                return MessageView(seen, len(converted))
        self._sent[key] = converted
        return MessageView(converted, len(converted))

    def _convert(self, message: af.Message, number: int) -> Message:
        shape = (
            message.role,
            message.author_name,
            message.message_id,
            *[id(c) for c in message.contents],
        )
        if not message.contents:  # nothing to key on: converted afresh (it is cheap)
            return to_loopsim_request_message(message, field=f"messages[{number}]")
        cached = self._converted.get(shape)
        # The message's own properties may have changed since. agent_framework adds its
        # bookkeeping keys later (a history provider's attribution): those are never sent,
        # so the message is the same one and keeps its identity (the recorder shares it).
        properties = without_bookkeeping(message.additional_properties)
        if cached is not None and cached[1] == properties:
            return cached[2]
        converted = to_loopsim_request_message(message, field=f"messages[{number}]")
        self._converted[shape] = (list(message.contents), dict(properties), converted)
        return converted

    def _answered(
        self,
        response: Callable[[], ChatResponse],
        received: Callable[[], ChatResponse],
        agent: str | None,
        session: str | None,
    ) -> None:
        """Report the loopsim client's ``response`` (its hosted-tool events) and the answer
        as agent_framework ``received`` it (converted back, so a field the conversion lost
        is missing from the transcript too). Both are built only when a transcript is
        recorded."""
        if self._emits and _trace.observed():
            emit_hosted(agent, session, response())
            emit_answer(received(), agent, session)

    def _failed(self, exc: BaseException, agent: str | None, session: str | None) -> None:
        if self._emits:
            _trace.emit(
                "model_error",
                agent=agent,
                session=session,
                error=type(exc).__name__,
                message=str(exc),
            )

    def _inner_get_response(
        self,
        *,
        messages: Sequence[af.Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,  # noqa: ARG002 - upstream passes client kwargs we have no use for
    ) -> (
        Awaitable[af.ChatResponse[Any]]
        | af.ResponseStream[af.ChatResponseUpdate, af.ChatResponse[Any]]
    ):
        response_format = options.get("response_format")
        # The run's scope (agent, session) is read now, while the run's middleware holds it:
        # a stream is iterated later, after that middleware has returned.
        scope = current_scope()
        if stream:
            return self._build_response_stream(
                self._stream(messages, options, scope), response_format=response_format
            )
        return self._get(messages, options, response_format, scope)

    async def _get(
        self,
        messages: Sequence[af.Message],
        options: Mapping[str, Any],
        response_format: Any,
        scope: RunScope | None,
    ) -> af.ChatResponse[Any]:
        converted, chat_options, agent, session = self._request(messages, options, scope)
        try:
            response = await self.loopsim_client.get_response(converted, options=chat_options)
        except ModelError as exc:  # a simulated service failure: raised as a vendor's client would
            self._failed(exc, agent, session)
            vendor = as_vendor_error(exc, type(self).__name__)
            raise vendor from vendor.__cause__
        except Exception as exc:
            self._failed(exc, agent, session)
            raise
        answer = to_af_chat_response(response, response_format=response_format)
        self._answered(
            lambda: response,
            lambda: to_loopsim_chat_response(answer, source=self.name),
            agent,
            session,
        )
        return answer

    async def _stream(
        self, messages: Sequence[af.Message], options: Mapping[str, Any], scope: RunScope | None
    ) -> AsyncIterator[af.ChatResponseUpdate]:
        converted, chat_options, agent, session = self._request(messages, options, scope)
        updates: list[ChatResponseUpdate] = []
        sent: list[af.ChatResponseUpdate] = []
        try:
            async for update in self.loopsim_client.get_streaming_response(
                converted, options=chat_options
            ):
                updates.append(update)
                sent.append(to_af_chat_update(update))
                yield sent[-1]
        except ModelError as exc:  # a simulated service failure: raised as a vendor's client would
            self._failed(exc, agent, session)
            vendor = as_vendor_error(exc, type(self).__name__)
            raise vendor from vendor.__cause__
        except Exception as exc:
            self._failed(exc, agent, session)
            raise
        self._answered(
            lambda: ChatResponse.from_updates(updates),
            lambda: to_loopsim_chat_response(af.ChatResponse.from_updates(sent), source=self.name),
            agent,
            session,
        )


def as_chat_client(
    client: ChatClient, *, middleware: Sequence[Any] | None = None
) -> LoopsimChatClient:
    """``client`` (any loopsim chat client) as a real agent_framework chat client.

    Example:
        >>> import agent_framework as af
        >>> import loopsim
        >>> from loopsim.agent_framework import as_chat_client
        >>> scripted = loopsim.ScriptedChatClient(["Hello from the script"])
        >>> agent = af.Agent(client=as_chat_client(scripted), name="greeter")
        >>> loopsim.simulate(agent.run, "hi").text
        'Hello from the script'
        >>> scripted.requests[0].text
        'hi'
    """
    if isinstance(client, af.BaseChatClient):
        msg = f"{type(client).__name__} is already an agent_framework chat client"
        raise TypeError(msg)
    if not isinstance(client, ChatClient):
        msg = f"as_chat_client needs a loopsim ChatClient, got {type(client).__name__}"
        raise TypeError(msg)
    return LoopsimChatClient(client, middleware=middleware)


class AgentFrameworkChatClient:
    """An agent_framework chat client (a vendor's included) as a loopsim ``ChatClient``.

    loopsim's Agent runs the tools itself, so the tools it offers reach the client as
    declaration-only FunctionTools, and the client's answer (tool calls included) comes
    back unchanged.
    """

    def __init__(self, af_client: Any, *, name: str | None = None) -> None:
        self.af_client = af_client
        self.name = name or getattr(af_client, "name", None) or type(af_client).__name__

    def __repr__(self) -> str:
        return f"AgentFrameworkChatClient({type(self.af_client).__name__}, name={self.name!r})"

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Send the request through the agent_framework client."""
        response = await self.af_client.get_response(
            to_af_messages(messages), options=to_af_options(options)
        )
        return to_loopsim_chat_response(response, source=self.name)

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Stream the request through the agent_framework client."""
        stream = self.af_client.get_response(
            to_af_messages(messages), stream=True, options=to_af_options(options)
        )
        async for update in loopsim_updates(stream, source=self.name):
            yield update


async def loopsim_updates(
    stream: AsyncIterable[Any], *, source: str | None = None
) -> AsyncIterator[ChatResponseUpdate]:
    """An agent_framework stream of updates as loopsim updates (``source`` names the
    client in a :class:`ConversionError`).

    A vendor streams one tool call in several chunks (its id first, then pieces of its
    arguments): they are held back and merged as agent_framework merges them, then passed
    on once, whole, in a last update (with the stream's last ``continuation_token``, as
    the last update decides it). Everything else goes on as it comes, an update of only
    call chunks as an empty update when it carries response-level fields.
    """
    received: list[Any] = []
    async for update in stream:
        received.append(update)
        rest = [c for c in update.contents if c.type != "function_call"]
        converted = to_loopsim_chat_update(_with_contents(update, rest), source=source)
        if rest or not update.contents or _has_response_fields(converted):
            yield converted
    calls = [
        content
        for message in af.ChatResponse.from_updates(received).messages
        for content in message.contents
        if content.type == "function_call"
    ]
    if calls:
        last = received[-1]
        yield to_loopsim_chat_update(
            af.ChatResponseUpdate(
                role="assistant", contents=calls, continuation_token=last.continuation_token
            ),
            source=source,
        )


def _has_response_fields(update: ChatResponseUpdate) -> bool:
    return any(getattr(update, name) for name in RESPONSE_FIELDS)


def _with_contents(update: Any, contents: list[Any]) -> Any:
    if len(contents) == len(update.contents):
        return update
    return af.ChatResponseUpdate(
        contents=contents,
        role=update.role,
        author_name=update.author_name,
        response_id=update.response_id,
        message_id=update.message_id,
        merge_mode=getattr(update, "merge_mode", None),
        finish_reason=update.finish_reason,
        conversation_id=update.conversation_id,
        model=update.model,
        created_at=update.created_at,
        continuation_token=update.continuation_token,
        additional_properties=update.additional_properties,
    )


def from_chat_client(af_client: Any, *, name: str | None = None) -> AgentFrameworkChatClient:
    """``af_client`` (any agent_framework chat client) as a loopsim ``ChatClient``.

    Example:
        >>> import loopsim
        >>> from loopsim.agent_framework import as_chat_client, from_chat_client
        >>> inner = loopsim.ScriptedChatClient(["pong"])
        >>> recorder = loopsim.RecordingChatClient(from_chat_client(as_chat_client(inner)))
        >>> loopsim.simulate(loopsim.Agent(recorder, name="a").run, "ping").text
        'pong'
    """
    if not callable(getattr(af_client, "get_response", None)):
        msg = (
            f"from_chat_client needs an agent_framework chat client, got {type(af_client).__name__}"
        )
        raise TypeError(msg)
    return AgentFrameworkChatClient(af_client, name=name)
