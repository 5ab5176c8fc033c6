"""The model-call seam of an agent_framework chat client, for recording and replay.

A vendor's chat client (OpenAI's, Anthropic's...) runs its own function-invocation loop
inside one ``get_response``: model call, tools, model call again. Recording around
``get_response`` would fold the tools into one "model call", and a replay would never
run them. :func:`model_seam` instead puts a chat middleware into the client: chat
middleware runs once per request to the model service, *below* the function-invocation
layer, so

* each request that goes to the model (messages, tools, instructions as sent) and its
  response (tool calls, usage, ids) reaches a loopsim :class:`~loopsim.ChatClient` of the
  caller's choosing (a :class:`~loopsim.RecordingChatClient`, a
  :class:`~loopsim.ReplayChatClient`, a :class:`~loopsim.Cassette`'s client);
* the user's tools stay in the code under test: on replay they run for real, and their
  results go into the next request, which the replay compares with the recorded one.

The client the seam hands out as "the real model" calls the rest of the pipeline (the
vendor's HTTP request), in real time, off the virtual clock (see
:class:`~loopsim.RealTimeChatClient`); a replay never calls it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import agent_framework as af

from .. import _trace
from .._clients import ChatClient, RealTimeChatClient
from .._clients._base import split_into_updates
from .._clock import model_call
from .._messages import ChatOptions, ChatResponse, ChatResponseUpdate, Message
from ._convert import (
    to_af_chat_response,
    to_af_chat_update,
    to_loopsim_chat_response,
    to_loopsim_options,
    to_loopsim_request_message,
)
from ._scope import current_scope
from ._tracing import ToolTraceMiddleware, emit_answer

__all__ = ["ModelSeam", "model_seam"]

#: Where the request in progress travels to the real-model client (never recorded).
_PENDING = "__loopsim_seam_call__"


@dataclass(slots=True)
class _Pending:
    """One request in progress below the function-invocation layer."""

    context: Any  # agent_framework.ChatContext
    call_next: Callable[[], Awaitable[None]]


def _pending(options: ChatOptions | None) -> _Pending:
    pending = None if options is None else options.additional_properties.get(_PENDING)
    if not isinstance(pending, _Pending):
        msg = (
            "the seam's real-model client answers only the requests its seam passes on "
            "(it was called directly, or through a client that rebuilt the options)"
        )
        raise TypeError(msg)
    return pending


class _Downstream:
    """The real model as a loopsim ChatClient: the rest of the vendor's pipeline."""

    def __init__(self, af_client: Any, name: str) -> None:
        self.af_client = af_client  # so a recorder finds the client's API key
        self.name = name

    def __repr__(self) -> str:
        return f"<the model behind {type(self.af_client).__name__}>"

    async def get_response(
        self,
        messages: Sequence[Message],  # noqa: ARG002 - the pending request holds them
        *,
        options: ChatOptions | None = None,
    ) -> ChatResponse:
        """The model's answer: a streamed request is streamed on the wire as the code asked,
        and merged by agent_framework (conversation id and finish reason included)."""
        pending = _pending(options)
        await pending.call_next()
        result = pending.context.result
        if pending.context.stream:
            async for _ in result:
                pass
            result = await result.get_final_response()
        return to_loopsim_chat_response(result, source=self.name)

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """The model's answer (see :meth:`get_response`), as updates."""
        for update in split_into_updates(await self.get_response(messages, options=options)):
            yield update


class ModelSeam(af.ChatMiddleware):
    """Chat middleware that sends each model call of an agent_framework client to
    ``client`` (a loopsim ChatClient), which may call the real model through
    :attr:`real`. Made and installed by :func:`model_seam`.

    Attributes:
        real: the real model (the rest of the vendor's pipeline) as a loopsim client.
        client: what each model call is sent to (``wrap(real)``).
        name: the agent label of the model events when no instrumented run names one.
    """

    def __init__(
        self,
        af_client: Any,
        wrap: Callable[[ChatClient], ChatClient],
        *,
        name: str | None = None,
        real_time: bool = True,
        close: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self.af_client = af_client
        self.name = name or getattr(af_client, "name", None) or type(af_client).__name__
        downstream = _Downstream(af_client, self.name)
        self._real_time = RealTimeChatClient(downstream, close=close) if real_time else None
        self.real: ChatClient = self._real_time or downstream
        self.client = wrap(self.real)
        if not isinstance(self.client, ChatClient):
            msg = f"model_seam's wrap must return a loopsim ChatClient, got {self.client!r}"
            raise TypeError(msg)

    def __repr__(self) -> str:
        return f"ModelSeam({type(self.af_client).__name__}, {self.client!r})"

    async def aclose(self) -> None:
        """Stop the real-time thread the real model's requests ran in (if one started)."""
        if self._real_time is not None:
            await self._real_time.aclose()

    async def process(self, context: Any, call_next: Callable[[], Awaitable[None]]) -> None:
        """Answer this model call from :attr:`client` (the request converted to loopsim's)."""
        scope = current_scope()
        agent = scope.agent if scope is not None else self.name
        session = scope.session if scope is not None else None
        options = dict(context.options or {})
        messages = [
            to_loopsim_request_message(m, field=f"messages[{n}]")
            for n, m in enumerate(context.messages)
        ]
        chat_options = to_loopsim_options(options, agent_name=agent, session_id=session)
        chat_options.additional_properties[_PENDING] = _Pending(context, call_next)
        model_call(agent)  # the run's max_model_calls (runaway loops)
        if _trace.observed():
            _trace.emit(
                "model_request",
                agent=agent,
                session=session,
                messages=messages,
                tools=chat_options.tool_names,
                instructions=chat_options.instructions,
            )
        response_format = options.get("response_format")
        # One whole answer per model call, streamed or not: a cassette entry is the merged
        # response (conversation id and finish reason kept), and a stream is cut from it.
        try:
            response = await self.client.get_response(messages, options=chat_options)
        except Exception as exc:
            _failed(exc, agent, session)
            raise
        if context.stream:
            # each update carries the response-level fields, conversation id to
            # continuation token, that agent_framework's merge reads from them
            updates = [to_af_chat_update(u) for u in split_into_updates(response)]
            if _trace.observed():  # what agent_framework receives, merged as it merges it
                merged = af.ChatResponse.from_updates(updates)
                emit_answer(to_loopsim_chat_response(merged, source=self.name), agent, session)
            context.result = context.client._build_response_stream(
                _af_updates(updates), response_format=response_format
            )
            return
        context.result = to_af_chat_response(response, response_format=response_format)
        if _trace.observed():  # what agent_framework receives
            emit_answer(to_loopsim_chat_response(context.result, source=self.name), agent, session)


async def _af_updates(
    updates: list[af.ChatResponseUpdate],
) -> AsyncIterator[af.ChatResponseUpdate]:
    for update in updates:
        yield update


def _failed(exc: BaseException, agent: str, session: str | None) -> None:
    _trace.emit(
        "model_error", agent=agent, session=session, error=type(exc).__name__, message=str(exc)
    )


def model_seam(
    af_client: Any,
    wrap: Callable[[ChatClient], ChatClient],
    *,
    name: str | None = None,
    real_time: bool = True,
    close: Callable[[], Awaitable[Any]] | None = None,
) -> ModelSeam:
    """Send each model call of ``af_client`` (an agent_framework chat client with the
    chat-middleware layer, as every vendor client has) to ``wrap(real)``; returns the seam.

    ``real`` is the real model as a loopsim client; ``wrap`` returns what answers instead,
    e.g. ``lambda real: cassette.client("calc", real)`` (record or replay by the cassette's
    mode), ``loopsim.RecordingChatClient`` (record), or ``lambda _: replay`` (a
    :class:`~loopsim.ReplayChatClient`; the real model is never called). The client's own
    function-invocation loop, and so the user's tools, run as before, above the seam.
    ``real_time`` runs the real model's requests in real time, off the virtual clock, on
    a loop of their own; await :meth:`ModelSeam.aclose` at the end of the run, which
    first awaits ``close`` (e.g. ``vendor.client.close``) on that loop.

    Example:
        >>> import agent_framework as af
        >>> import loopsim
        >>> from loopsim.agent_framework import as_chat_client, model_seam
        >>> vendor = as_chat_client(loopsim.ScriptedChatClient(["never asked"]))
        >>> recorded = loopsim.Agent(loopsim.ScriptedChatClient(["hi"]), name="a")
        >>> replay = loopsim.ReplayChatClient(loopsim.record(recorded.run, "yo")[1], "a")
        >>> seam = model_seam(vendor, lambda real: replay, name="a")
        >>> loopsim.simulate(af.Agent(client=vendor, name="a").run, "yo").text
        'hi'
    """
    if not isinstance(getattr(af_client, "chat_middleware", None), list):
        msg = (
            f"model_seam needs an agent_framework chat client with chat middleware (a "
            f"vendor client or BaseChatClient with ChatMiddlewareLayer), got "
            f"{type(af_client).__name__}"
        )
        raise TypeError(msg)
    if any(isinstance(m, ModelSeam) for m in af_client.chat_middleware):
        msg = f"{type(af_client).__name__} already has a loopsim model seam"
        raise ValueError(msg)
    seam = ModelSeam(af_client, wrap, name=name, real_time=real_time, close=close)
    # Last in the list: innermost, so the user's own chat middleware sees the call first.
    af_client.chat_middleware.append(seam)
    # The vendor's function-invocation layer runs the tools: report them (tool_call,
    # tool_result) as loopsim's own chat client does, when a transcript is recorded.
    function_middleware = getattr(af_client, "function_middleware", None)
    if isinstance(function_middleware, list):
        function_middleware.insert(0, ToolTraceMiddleware())
    return seam
