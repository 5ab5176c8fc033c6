"""A chat client acting as a service that keeps the conversation (the simulated service).

A real service-side conversation (a Responses API chain, a conversation object) works
like this, and upstream's Agent speaks to it so: the first answer carries a
``conversation_id``; the session keeps it (``service_session_id``); every later request
carries that id and only the messages the service has not seen, and the service puts
the stored history in front of them before the model reads them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import ClassVar, Literal

from .._clients import ChatClient
from .._messages import ChatOptions, ChatRequest, ChatResponse, ChatResponseUpdate, Message
from ._session import ConversationService, MessageView, conversation_service

__all__ = ["ServiceChatClient", "ServiceKind"]

#: ``conversation``: one conversation object, every turn appended to it (the id stays);
#: ``response_chain``: each answer is a new response after the one it continues (the id
#: is the last response's, and continuing an older one forks).
ServiceKind = Literal["conversation", "response_chain"]
_NO_OPTIONS = ChatOptions()


class ServiceChatClient:
    """``inner`` behind a simulated service that keeps the history server-side.

    ``STORES_BY_DEFAULT`` is True, as for upstream's storing clients, so an Agent (loopsim's
    or agent_framework's, through ``as_chat_client``) sends only the new messages with the
    conversation id. The stored history lives per simulation (it is "remote": a simulated
    process restart keeps it). ``.requests`` are what the service received; the inner
    client's own ``.requests`` show what the model read (the history, then the new
    messages).

    Example:
        >>> import loopsim
        >>> model = loopsim.ScriptedChatClient(["one", "two"])
        >>> agent = loopsim.Agent(loopsim.ServiceChatClient(model), name="a")
        >>> async def main():
        ...     session = agent.create_session()
        ...     await agent.run("hi", session=session)
        ...     await agent.run("again", session=session)
        ...     return session.service_session_id
        >>> loopsim.simulate(main)
        'conv-0001'
        >>> [m.text for m in model.requests[1].messages]
        ['hi', 'one', 'again']
        >>> [m.text for m in agent.client.requests[1].messages]
        ['again']
    """

    STORES_BY_DEFAULT: ClassVar[bool] = True

    def __init__(
        self, inner: ChatClient, *, kind: ServiceKind = "conversation", name: str | None = None
    ) -> None:
        if kind not in ("conversation", "response_chain"):
            msg = f"kind must be 'conversation' or 'response_chain', got {kind!r}"
            raise ValueError(msg)
        self.inner = inner
        self.kind: ServiceKind = kind
        self.name = name or getattr(inner, "name", None) or "service"
        self.requests: list[ChatRequest] = []

    def __repr__(self) -> str:
        return f"ServiceChatClient({self.inner!r}, kind={self.kind!r})"

    def _open(
        self, messages: Sequence[Message], options: ChatOptions | None
    ) -> tuple[ConversationService, str | None, MessageView, ChatOptions]:
        options = options or _NO_OPTIONS
        self.requests.append(ChatRequest(messages, options))
        service = conversation_service()
        conversation_id = options.conversation_id
        if self.kind == "conversation":
            if conversation_id is None:
                conversation_id = service.new_conversation()
            stored = service.conversation(conversation_id)
            history = MessageView(stored, len(stored))
        else:
            history = service.chain_view(conversation_id)
        # the model reads the stored history, then the new messages; the id is the service's
        seen = history.followed_by(tuple(messages))
        return service, conversation_id, seen, replace(options, conversation_id=None)

    def _store(
        self,
        service: ConversationService,
        conversation_id: str | None,
        messages: Sequence[Message],
        answer: Sequence[Message],
    ) -> str:
        if self.kind == "conversation":
            assert conversation_id is not None  # noqa: S101 - made in _open
            service.conversation(conversation_id).extend([*messages, *answer])
            return conversation_id
        return service.append_response(conversation_id, [*messages, *answer])

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Answer with the stored history in front; the answer names the conversation."""
        service, conversation_id, seen, inner_options = self._open(messages, options)
        response = await self.inner.get_response(seen, options=inner_options)
        stamped = self._store(service, conversation_id, messages, response.messages)
        return response.model_copy(update={"conversation_id": stamped})

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Stream the answer; a last, empty update names the conversation."""
        service, conversation_id, seen, inner_options = self._open(messages, options)
        updates: list[ChatResponseUpdate] = []
        async for update in self.inner.get_streaming_response(seen, options=inner_options):
            updates.append(update)
            yield update
        answer = ChatResponse.from_updates(updates).messages
        stamped = self._store(service, conversation_id, messages, answer)
        yield ChatResponseUpdate("assistant", [], conversation_id=stamped)
