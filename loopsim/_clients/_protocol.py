"""The chat-client seam: one request in, one response (or a stream of updates) out."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from .._messages import ChatOptions, ChatResponse, ChatResponseUpdate, Message

__all__ = ["ChatClient"]


@runtime_checkable
class ChatClient(Protocol):
    """What an :class:`~loopsim.Agent` talks to, like an httpx transport for models.

    Any object with these two methods works: the fakes of loopsim, a replay of a
    recording, or a user's adapter to a real model.
    """

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Answer one request."""
        ...

    def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Answer one request as a stream of updates."""
        ...
