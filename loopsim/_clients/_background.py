"""BackgroundResponseChatClient: a model service that answers in the background.

A background response (upstream's ``background=True`` run option) works like this on a
real service: the request returns at once with a ``continuation_token`` and no answer
yet; the caller polls by sending the token back (``continuation_token`` run option)
and gets the token again while the work goes on, then the final answer with no token.
Here the work takes ``duration`` virtual seconds.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from .. import _trace
from .._messages import ChatOptions, ChatRequest, ChatResponse, ChatResponseUpdate, Message
from ._base import split_into_updates
from ._protocol import ChatClient

__all__ = ["BACKGROUND_OPTION", "CONTINUATION_OPTION", "BackgroundResponseChatClient"]

#: The run option asking for a background response (upstream's name).
BACKGROUND_OPTION = "background"
#: The run option polling one (upstream's name); its value is the response's token.
CONTINUATION_OPTION = "continuation_token"
_NO_OPTIONS = ChatOptions()


@dataclass(slots=True)
class _Job:
    """One background response: what was asked, when, and the answer once made."""

    messages: tuple[Message, ...]
    options: ChatOptions
    done_at: float
    answer: ChatResponse | None = None


class BackgroundResponseChatClient:
    """``inner`` behind a service that runs requests in the background when asked.

    A request with the run option ``background=True`` returns at once: no messages, a
    ``response_id`` and a ``continuation_token`` (``{"response_id": ...}``, as
    upstream's OpenAI token). A request with ``continuation_token=<that token>`` polls:
    before ``duration`` virtual seconds have passed since the start it returns the token
    again (still in progress); after, ``inner`` is asked the original request and its
    answer comes back with the same response id and no token (done); later polls get
    the same answer. Other requests go straight to ``inner``. Works on both engines: the
    options reach it as ``ChatOptions.additional_properties`` from loopsim's Agent and,
    through ``as_chat_client``, from agent_framework's.

    ``.requests`` are what the service received; ``inner.requests`` what the model read.

    Example:
        >>> import anyio, loopsim
        >>> model = loopsim.ScriptedChatClient(["the report"])
        >>> agent = loopsim.Agent(loopsim.BackgroundResponseChatClient(model, duration=60))
        >>> async def main():
        ...     response = await agent.run("write it", options={"background": True})
        ...     polls = 0
        ...     while response.continuation_token is not None:
        ...         await anyio.sleep(25)
        ...         polls += 1
        ...         token = response.continuation_token
        ...         response = await agent.run(options={"continuation_token": token})
        ...     return response.text, polls, anyio.current_time()
        >>> loopsim.simulate(main)
        ('the report', 3, 75.0)
    """

    def __init__(self, inner: ChatClient, *, duration: float, name: str | None = None) -> None:
        if isinstance(duration, bool) or not isinstance(duration, (int, float)):
            msg = f"duration must be a number of seconds, got {type(duration).__name__}"
            raise TypeError(msg)
        if not math.isfinite(duration) or duration < 0:
            msg = f"duration must be a finite number >= 0, got {duration!r}"
            raise ValueError(msg)
        self.inner = inner
        self.duration = float(duration)
        self.name = name or getattr(inner, "name", None) or "background"
        self.requests: list[ChatRequest] = []
        self._jobs: dict[str, _Job] = {}

    def __repr__(self) -> str:
        return f"BackgroundResponseChatClient({self.inner!r}, duration={self.duration!r})"

    def _poll_id(self, token: Any) -> str:
        job_id = token.get("response_id") if isinstance(token, Mapping) else None
        if not isinstance(job_id, str) or job_id not in self._jobs:
            msg = (
                f"{self.name}: continuation_token {token!r} names no background response "
                f"this client started (it knows {sorted(self._jobs) or 'none'})"
            )
            raise ValueError(msg)
        return job_id

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Start, poll, or pass on the request (see the class docs)."""
        options = options or _NO_OPTIONS
        self.requests.append(ChatRequest(messages, options))
        extra = options.additional_properties
        token = extra.get(CONTINUATION_OPTION)
        if token is not None:
            job_id = self._poll_id(token)
            job = self._jobs[job_id]
            if anyio.current_time() < job.done_at:
                return ChatResponse(
                    [], response_id=job_id, continuation_token={"response_id": job_id}
                )
            if job.answer is None:
                answer = await self.inner.get_response(job.messages, options=job.options)
                job.answer = answer.model_copy(
                    update={"response_id": job_id, "continuation_token": None}
                )
            return job.answer
        rest = {k: v for k, v in extra.items() if k not in (BACKGROUND_OPTION, CONTINUATION_OPTION)}
        inner_options = replace(options, additional_properties=rest)
        if not extra.get(BACKGROUND_OPTION):
            return await self.inner.get_response(messages, options=inner_options)
        job_id = _trace.next_id("bgresp")
        self._jobs[job_id] = _Job(
            tuple(messages), inner_options, anyio.current_time() + self.duration
        )
        return ChatResponse([], response_id=job_id, continuation_token={"response_id": job_id})

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """As :meth:`get_response`, streamed (a plain request streams from ``inner``)."""
        extra = (options or _NO_OPTIONS).additional_properties
        if extra.get(BACKGROUND_OPTION) or extra.get(CONTINUATION_OPTION) is not None:
            for update in split_into_updates(await self.get_response(messages, options=options)):
                yield update
            return
        self.requests.append(ChatRequest(messages, options or _NO_OPTIONS))
        async for update in self.inner.get_streaming_response(messages, options=options):
            yield update
