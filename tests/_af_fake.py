"""A minimal agent_framework chat client answering from a list (test helper).

Stands in for ``loopsim.agent_framework.as_chat_client`` until that lands: the real
``agent_framework.Agent`` talks to it through upstream's own function-invocation and
chat-middleware layers, so tool loops run exactly as upstream runs them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import agent_framework as af
from agent_framework._middleware import ChatMiddlewareLayer
from agent_framework._tools import FunctionInvocationLayer

from loopsim import Message

Reply = Any  # str | af.Message | af.ChatResponse | Exception | callable(messages, options)


class FakeAFChatClient(
    FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], af.BaseChatClient[Any]
):
    """Answers each request with the next reply; records ``(messages, options)`` per request."""

    def __init__(self, replies: Sequence[Reply], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replies = list(replies)
        self.requests: list[tuple[list[af.Message], dict[str, Any]]] = []

    def _next(self, messages: Sequence[af.Message], options: Mapping[str, Any]) -> af.ChatResponse:
        self.requests.append((list(messages), dict(options)))
        if not self.replies:
            msg = f"fake client script exhausted at request {len(self.requests)}"
            raise AssertionError(msg)
        reply = self.replies.pop(0)
        if callable(reply) and not isinstance(reply, (af.Message, af.ChatResponse)):
            reply = reply(list(messages), dict(options))
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, str):
            reply = af.Message(role="assistant", contents=[reply])
        if isinstance(reply, af.Message):
            reply = af.ChatResponse(messages=[reply])
        return reply  # type: ignore[no-any-return]

    def _inner_get_response(
        self,
        *,
        messages: Sequence[af.Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Any:
        if not stream:

            async def answer() -> af.ChatResponse:
                return self._next(messages, options)

            return answer()

        async def updates() -> AsyncIterator[af.ChatResponseUpdate]:
            response = self._next(messages, options)
            for message in response.messages:
                yield af.ChatResponseUpdate(
                    role=message.role,
                    contents=list(message.contents),
                    message_id=message.message_id,
                    conversation_id=response.conversation_id,
                )

        return af.ResponseStream(updates(), finalizer=af.ChatResponse.from_updates)


async def run_agent(agent: Any, message: Any, session: Any, *, stream: bool) -> Any:
    """``agent.run(message, session=session)``, or the same run streamed to its end: the
    final response either way (both engines' agents take ``stream=True``)."""
    if not stream:
        return await agent.run(message, session=session)
    response = agent.run(message, session=session, stream=True)
    async for _ in response:
        pass
    return await response.get_final_response()


def af_call(call_id: str, name: str, **arguments: Any) -> af.Message:
    """An assistant message asking for one function call."""
    return af.Message(
        role="assistant",
        contents=[af.Content.from_function_call(call_id=call_id, name=name, arguments=arguments)],
    )


Factory = Callable[..., Any]


# -- one program on either engine (engine is "loopsim" or "agent_framework") ----------------


def approval_answer(engine: str, request: Any, approved: bool) -> Any:
    """The user message answering approval ``request``, in that engine's types."""
    if engine == "loopsim":
        return Message("user", [request.create_response(approved)])
    return af.Message(role="user", contents=[request.to_function_approval_response(approved)])


def stored_messages(engine: str, session: Any) -> list[Any]:
    """What the session keeps as its history (agent_framework: its in-memory store)."""
    if engine == "loopsim":
        return list(session.history())
    return list(session.state["in_memory"]["messages"])


def sent_messages(engine: str, client: Any) -> list[Any]:
    """The messages of each request the model was sent."""
    return [r.messages if engine == "loopsim" else r[0] for r in client.requests]
