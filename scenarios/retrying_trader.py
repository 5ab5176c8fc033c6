"""The user's own code of ``retry_storm.loopsim.yaml``: an agent that retries on HTTP 429.

``trader(client, name)`` is the scenario's ``factory:``. It builds the agent a team would
ship, for whichever engine runs the scenario, with a plain retry loop that waits what the
service's ``retry-after`` says (1 s when it says nothing), at most 20 attempts:

* on the built-in engine the model's client raises :class:`loopsim.RateLimitError`
  (``.retry_after``), and the retry wraps each model call;
* on the agent_framework engine the client raises what agent_framework's OpenAI clients
  raise, a ``ChatClientException`` caused by ``openai.RateLimitError`` (the header on
  ``.response``), and the retry is a chat middleware around each model call.

The waits are virtual: a storm of ten minutes costs the test a few milliseconds. A retry
library waits the same way (tenacity and backoff are tested on virtual time in the test
suite); this file needs nothing beyond loopsim, so the shipped scenarios run on a plain
install.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio

import loopsim

MAX_ATTEMPTS = 20


def get_quote(symbol: str) -> str:
    """The last traded price of ``symbol``."""
    return {"MSFT": "420.50"}.get(symbol, "unknown")


def _retry_after(exc: BaseException | None) -> float | None:
    """The seconds a 429 asks for (None: not a 429), on either engine's error."""
    if isinstance(exc, loopsim.RateLimitError):
        return 1.0 if exc.retry_after is None else exc.retry_after
    cause = getattr(exc, "__cause__", None)
    response = getattr(cause, "response", None)
    if getattr(cause, "status_code", None) == 429 and response is not None:
        return float(response.headers.get("retry-after", 1))
    return None


async def with_retry(call: Callable[[], Awaitable[Any]]) -> Any:
    """``await call()``, again after each 429 as the service asks."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return await call()
        except Exception as exc:  # noqa: PERF203 - a retry loop is what this shows
            wait = _retry_after(exc)
            if wait is None or attempt == MAX_ATTEMPTS:
                raise
            await anyio.sleep(wait)
    raise AssertionError  # pragma: no cover - the last attempt returns or raises


class RetryingClient:
    """A loopsim chat client that retries each model call on 429 (built-in engine)."""

    def __init__(self, inner: loopsim.ChatClient) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "retrying")

    async def get_response(
        self, messages: Sequence[loopsim.Message], *, options: Any = None
    ) -> loopsim.ChatResponse:
        response: loopsim.ChatResponse = await with_retry(
            lambda: self.inner.get_response(messages, options=options)
        )
        return response

    async def get_streaming_response(
        self, messages: Sequence[loopsim.Message], *, options: Any = None
    ) -> AsyncIterator[loopsim.ChatResponseUpdate]:
        # the scenario does not stream; a stream is passed on as it comes, without a retry
        async for update in self.inner.get_streaming_response(messages, options=options):
            yield update


def trader(client: Any, name: str) -> Any:
    """The scenario's factory: the trader agent on the engine ``client`` belongs to."""
    if isinstance(client, loopsim.ChatClient):
        return loopsim.Agent(RetryingClient(client), name=name, tools=[loopsim.tool(get_quote)])
    import agent_framework as af  # noqa: PLC0415 - only the agent_framework engine needs it

    class Retry(af.ChatMiddleware):
        async def process(self, context: Any, call_next: Callable[[], Awaitable[None]]) -> None:
            await with_retry(call_next)

    return af.Agent(client=client, name=name, tools=[af.tool(get_quote)], middleware=[Retry()])
