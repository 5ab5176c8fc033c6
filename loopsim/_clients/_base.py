"""Shared machinery of the fake clients: request log, ids and stream splitting."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar

from .. import _trace
from .._messages import (
    RESPONSE_FIELDS,
    ChatOptions,
    ChatRequest,
    ChatResponse,
    ChatResponseUpdate,
    Message,
    TextContent,
    UsageContent,
    build_chat_update,
    copied,
    text_content,
)
from ._faults import StreamCut
from ._hosted import check_hosted_calls

__all__ = ["FakeChatClient", "split_into_updates"]

_CHUNK = re.compile(r"\s*\S+\s*|\s+")
_NO_OPTIONS = ChatOptions()
#: True while a fake answers a streaming call: a ``stream_cut`` fault then streams part of
#: its answer before the cut (a call that does not stream just fails).
_STREAMING: ContextVar[bool] = ContextVar("loopsim_streaming", default=False)


def split_into_updates(response: ChatResponse) -> list[ChatResponseUpdate]:
    """Split a response into the updates a streaming model would send.

    Text is cut into word-sized chunks (whitespace kept, so merging restores it exactly),
    unless it has annotations or ``additional_properties``; every other content is one
    update; usage comes last as a ``UsageContent`` update. A message's own
    ``additional_properties`` have no place in a stream (upstream's updates have none).
    Every update carries its message's id and the response id (and the response's
    ``conversation_id``, ``finish_reason``, ``continuation_token``, ``model``,
    ``created_at`` and ``additional_properties`` when it has them; a response with no
    contents but an id or such fields is one empty update), so ``ChatResponse.from_updates``
    gives back the same messages and fields.
    """
    updates: list[ChatResponseUpdate] = []
    response_id = response.response_id
    for message in response.messages:
        role, author_name, message_id = message.role, message.author_name, message.message_id
        for content in message.contents:
            pieces = (
                [text_content(t) for t in _CHUNK.findall(content.text)] or [content]
                if isinstance(content, TextContent)
                and not (content.annotations or content.additional_properties)
                else [content]  # an annotated text goes whole: its notes are the whole's
            )
            updates.extend(
                build_chat_update(
                    role,
                    (piece,),
                    author_name=author_name,
                    message_id=message_id,
                    response_id=response_id,
                )
                for piece in pieces
            )
    if response.usage is not None:
        updates.append(
            ChatResponseUpdate(
                "assistant",
                [UsageContent(usage=response.usage)],
                response_id=response_id,
            )
        )
    fields = {name: getattr(response, name) for name in RESPONSE_FIELDS}
    if any(fields.values()):
        # upstream's streams carry them on their updates; merging keeps the last (and
        # merges additional_properties, so each update gets its own copy)
        properties = fields.pop("additional_properties")
        updates = [
            u.model_copy(update={**fields, "additional_properties": dict(properties)})
            for u in updates
        ] or [
            ChatResponseUpdate(
                "assistant",
                [],
                response_id=response_id,
                **fields,
                additional_properties=dict(properties),
            )
        ]
    elif not updates and response_id is not None:
        updates = [build_chat_update("assistant", (), response_id=response_id)]
    return updates


class FakeChatClient:
    """Base of the inspectable fakes: records requests, stamps ids, streams by splitting."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.requests: list[ChatRequest] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, requests={len(self.requests)})"

    async def _answer(self, request: ChatRequest) -> ChatResponse:
        raise NotImplementedError

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Record the request and answer it."""
        request = ChatRequest(messages, options or _NO_OPTIONS)
        self.requests.append(request)
        try:
            response = await self._answer(request)
        except StreamCut as cut:
            if _STREAMING.get():
                raise
            raise cut.error from None
        check_hosted_calls(response, request, client=self.name, turn=len(self.requests))
        return _stamp_ids(response)

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Record the request and answer it as a stream of updates."""
        token = _STREAMING.set(True)
        try:
            response = await self.get_response(messages, options=options)
        except StreamCut as cut:
            partial: StreamCut | None = cut
        else:
            partial = None
        finally:
            _STREAMING.reset(token)
        if partial is not None:
            for update in split_into_updates(_stamp_ids(partial.response))[: partial.error.after]:
                yield update
            raise partial.error from None
        for update in split_into_updates(response):
            yield update


def _stamp_ids(response: ChatResponse) -> ChatResponse:
    """Give the response and each of its messages a deterministic id where they lack one."""
    if response.response_id is not None:
        for message in response.messages:
            if not message.message_id:
                break
        else:
            return response
    messages = [
        m if m.message_id else copied(m, {"message_id": _trace.next_id("msg")})
        for m in response.messages
    ]
    return copied(  # keeps the other fields and the response_format
        response,
        {
            "messages": messages,
            "response_id": response.response_id or _trace.next_id("resp"),
        },
    )
