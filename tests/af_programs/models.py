"""Where the programs get their models: the one module a team points at its vendor.

In production ``chat_client(role)`` would return a vendor's client for that role (say
``OpenAIChatClient(model_id=...)``). Here each role is answered by the loopsim fake a
test put in place with :func:`fakes`, behind ``loopsim.agent_framework.as_chat_client``:
that is the only thing the programs in this folder have swapped. The fake is looked up
at request time, so an agent built at import time (``faq_bot``) is answered by the fake
of the run in progress.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from loopsim import ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate, Message
from loopsim.agent_framework import as_chat_client

_installed: dict[str, ChatClient] = {}


class _Role:
    """A loopsim chat client that forwards to the fake installed for ``role``."""

    def __init__(self, role: str) -> None:
        self.name = role

    def _fake(self) -> ChatClient:
        try:
            return _installed[self.name]
        except KeyError:
            msg = f"no model for role {self.name!r}: the test installs one with models.fakes()"
            raise LookupError(msg) from None

    @property
    def STORES_BY_DEFAULT(self) -> bool:
        # a client for a service that keeps the conversation (Responses API style)
        return bool(getattr(_installed.get(self.name), "STORES_BY_DEFAULT", False))

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        return await self._fake().get_response(messages, options=options)

    def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return self._fake().get_streaming_response(messages, options=options)


def chat_client(role: str) -> Any:
    """The chat client for ``role`` (production: a vendor's client; here: a loopsim fake)."""
    return as_chat_client(_Role(role))


@contextmanager
def fakes(**by_role: ChatClient) -> Iterator[None]:
    """Answer each role with its loopsim fake for the block."""
    saved = dict(_installed)
    _installed.clear()
    _installed.update(by_role)
    try:
        yield
    finally:
        _installed.clear()
        _installed.update(saved)
