"""``BaseChatClient``: a chat client written the way upstream's fake clients are.

Subclass it and implement ``_inner_get_response(*, messages, stream, options)``: for
``stream=False`` return (or be a coroutine returning) a ``ChatResponse``; for
``stream=True`` return an async iterable of ``ChatResponseUpdate`` (an async generator,
or ``loopsim.ResponseStream(gen, finalizer=ChatResponse.from_updates)`` as upstream
writes it), or a coroutine returning one. ``options`` is a dict, as upstream passes it:
``instructions``, ``tools``, ``tool_choice``, ``response_format``, ``conversation_id``
(those set) and the run's other options.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from .._messages import ChatOptions, ChatResponse, ChatResponseUpdate, Message

__all__ = ["BaseChatClient", "FunctionInvocationLayer"]

_O = TypeVar("_O")
_NO_OPTIONS = ChatOptions()


class BaseChatClient(Generic[_O]):
    """Base of a chat client that implements ``_inner_get_response`` (upstream's shape).

    Generic in its options type as upstream's (``BaseChatClient[Any]``); loopsim's Agent
    runs the tools itself, so no function-invocation layer is needed (see
    :class:`FunctionInvocationLayer`).

    Example:
        >>> import loopsim
        >>> class Hello(loopsim.BaseChatClient):
        ...     async def _inner_get_response(self, *, messages, stream, options, **kwargs):
        ...         return loopsim.ChatResponse(
        ...             messages=[loopsim.Message(role="assistant", contents=["hello"])]
        ...         )
        >>> loopsim.simulate(loopsim.Agent(Hello(), name="a").run, "hi").text
        'hello'
    """

    #: Whether the service behind the client keeps the conversation (upstream's name).
    STORES_BY_DEFAULT: ClassVar[bool] = False

    def __init__(self, **kwargs: Any) -> None:
        self.additional_properties: dict[str, Any] = dict(kwargs.pop("additional_properties", {}))
        self.name: str = str(kwargs.pop("name", None) or type(self).__name__)

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Any:
        """Answer one request (see the module docstring); subclasses implement it."""
        raise NotImplementedError

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Answer one request through ``_inner_get_response(stream=False)``."""
        result = self._inner_get_response(
            messages=list(messages), stream=False, options=_as_dict(options)
        )
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, ChatResponse):
            got = type(result).__name__
            msg = f"{type(self).__name__}._inner_get_response returned {got}, not a ChatResponse"
            raise TypeError(msg)
        return result

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Answer one request as updates, through ``_inner_get_response(stream=True)``."""
        result = self._inner_get_response(
            messages=list(messages), stream=True, options=_as_dict(options)
        )
        if inspect.isawaitable(result) and not hasattr(result, "__aiter__"):
            result = await result
        async for update in result:
            if not isinstance(update, ChatResponseUpdate):
                got = type(update).__name__
                msg = f"{type(self).__name__}'s stream yielded {got}, not a ChatResponseUpdate"
                raise TypeError(msg)
            yield update


class FunctionInvocationLayer(Generic[_O]):
    """Upstream's function-invocation mix-in, by name only: loopsim's Agent runs the
    tools itself, so a fake written ``class Fake(FunctionInvocationLayer[Any],
    BaseChatClient[Any])`` works unchanged."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.pop("function_invocation_configuration", None)
        super().__init__(**kwargs)


def _as_dict(options: ChatOptions | None) -> dict[str, Any]:
    options = options or _NO_OPTIONS
    result: dict[str, Any] = dict(options.additional_properties)
    for key in ("instructions", "response_format", "tool_choice", "conversation_id"):
        value = getattr(options, key)
        if value is not None:
            result[key] = value
    if options.tools:
        result["tools"] = list(options.tools)
    return result
