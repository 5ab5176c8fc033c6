"""RealTimeChatClient: a client that does real I/O, kept off the virtual clock.

A simulation's clock jumps to the next deadline whenever every task waits. A real HTTP
request waits on a socket, so inside a simulation the clock would jump straight to the
HTTP client's own timeout (and it would give up, or retry). This wrapper runs the inner
client on a private real-time event loop in a worker thread; the simulation waits for
that thread, and the clock never jumps while a thread is pending. That is how a real
model (``loopsim.agent_framework.from_chat_client(OpenAIChatClient(...))``) is recorded
inside a simulation.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio.to_thread

from .._messages import ChatOptions, ChatResponse, ChatResponseUpdate, Message
from ._protocol import ChatClient

__all__ = ["RealTimeChatClient"]

T = TypeVar("T")


class RealTimeChatClient:
    """Runs ``inner`` (a client doing real network I/O) on a real-time loop in a thread.

    Streaming responses are gathered in the thread and then passed on update by update.
    Call :meth:`aclose` at the end (it runs ``close`` first, e.g. the vendor client's
    own ``close``, on the same loop that opened its connections).

    Args:
        inner: the client (any :class:`~loopsim.ChatClient`).
        close: an async callable that releases ``inner``'s resources, or None.
    """

    def __init__(
        self, inner: ChatClient, *, close: Callable[[], Awaitable[Any]] | None = None
    ) -> None:
        self.inner = inner
        self._close = close
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RealTimeChatClient({self.inner!r})"

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="loopsim-real-time", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def _call(self, make: Callable[[], Awaitable[T]]) -> T:
        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self._running_loop()).result()

    async def _off_clock(self, make: Callable[[], Awaitable[T]]) -> T:
        return await anyio.to_thread.run_sync(self._call, make)

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """The inner client's answer, fetched in real time."""
        return await self._off_clock(lambda: self.inner.get_response(messages, options=options))

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """The inner client's stream, gathered in real time, then passed on."""

        async def gather() -> list[ChatResponseUpdate]:
            stream = self.inner.get_streaming_response(messages, options=options)
            return [update async for update in stream]

        for update in await self._off_clock(gather):
            yield update

    async def aclose(self) -> None:
        """Run ``close`` on the real-time loop, then stop the loop and its thread."""
        if self._loop is None:
            return
        if self._close is not None:
            close = self._close
            await self._off_clock(close)
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            await anyio.to_thread.run_sync(thread.join)
        loop.close()
