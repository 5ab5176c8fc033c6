"""FunctionChatClient: replies come from a user function."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

from .. import _trace
from .._messages import (
    ChatOptions,
    ChatRequest,
    ChatResponse,
    Message,
    build_chat_response,
    text_message,
)
from ._base import FakeChatClient

__all__ = ["FunctionChatClient"]

FunctionReply = ChatResponse | Message | str
ReplyFunction = Callable[[Sequence[Message], ChatOptions], FunctionReply | Awaitable[FunctionReply]]


class FunctionChatClient(FakeChatClient):
    """A chat client whose replies come from ``fn(messages, options)`` (sync or async).

    ``fn`` returns a ``ChatResponse``, a ``Message`` or a ``str`` (an assistant reply);
    an exception it raises propagates unchanged. Requests are recorded in ``.requests``.

    Example:
        >>> import loopsim
        >>> client = loopsim.FunctionChatClient(lambda msgs, opts: f"echo: {msgs[-1].text}")
        >>> loopsim.simulate(client.get_response, [loopsim.Message.user("hi")]).text
        'echo: hi'
    """

    def __init__(self, fn: ReplyFunction, *, name: str | None = None) -> None:
        if not callable(fn):
            msg = f"fn must be callable, got {type(fn).__name__}"
            raise TypeError(msg)
        super().__init__(name or str(getattr(fn, "__name__", "function")))
        self.fn = fn

    async def _answer(self, request: ChatRequest) -> ChatResponse:
        reply = self.fn(request.messages, request.options)
        if inspect.isawaitable(reply):
            reply = await reply
        if type(reply) is str:
            # ids drawn here in the order _stamp_ids would draw them (message, then
            # response), which saves copying the response to stamp it
            message = text_message("assistant", reply, None, _trace.next_id("msg"))
            return build_chat_response([message], response_id=_trace.next_id("resp"))
        if isinstance(reply, (str, Message)):
            return ChatResponse(Message.assistant(reply) if isinstance(reply, str) else reply)
        if isinstance(reply, ChatResponse):
            return reply
        msg = (
            f"FunctionChatClient {self.name!r}: fn must return a ChatResponse, Message or str, "
            f"got {type(reply).__name__} (turn {len(self.requests)})"
        )
        raise TypeError(msg)
