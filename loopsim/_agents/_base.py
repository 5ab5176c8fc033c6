"""The agent protocol, response streams, and the base and delegating agents."""

from __future__ import annotations

import inspect
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Mapping,
    Sequence,
)
from contextlib import suppress
from typing import Any, Literal, Protocol, TypeVar, overload, runtime_checkable

from typing_extensions import Self

from .. import _trace
from .._messages import (
    AgentResponse,
    AgentResponseUpdate,
    Message,
    MessagesInput,
    message_update,
    normalize_messages,
)
from ._session import AgentSession, HistoryStoreKind

__all__ = [
    "BaseAgent",
    "DelegatingAgent",
    "ResponseStream",
    "RunOptions",
    "SupportsAgentRun",
    "maybe_await",
]

T = TypeVar("T")
RunOptions = Mapping[str, Any]


async def maybe_await(value: T | Awaitable[T]) -> T:
    """Await ``value`` when it is awaitable (user callbacks may be sync or async)."""
    if value is None or value is True or value is False:  # the usual sync answers, fast
        return value
    if inspect.isawaitable(value):
        return await value
    return value


@runtime_checkable
class SupportsAgentRun(Protocol):
    """What LoopAgent, the background provider and the harness need from an agent.

    Structural: any object with these members works, so a user's own test double can be
    wrapped by a LoopAgent.
    """

    @property
    def name(self) -> str | None: ...
    @property
    def id(self) -> str: ...
    @property
    def description(self) -> str | None: ...

    async def run(
        self,
        messages: MessagesInput = None,
        *,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> AgentResponse: ...

    def run_stream(
        self,
        messages: MessagesInput = None,
        *,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]: ...

    def create_session(self) -> Any: ...
    def serialize_session(self, session: Any) -> dict[str, Any]: ...
    def deserialize_session(self, data: dict[str, Any]) -> Any: ...
    def get_service(self, service_type: type[T]) -> T | None: ...


class ResponseStream(AsyncIterator[AgentResponseUpdate]):
    """The updates of a streaming run, plus the run's final response.

    Iterate it for the updates; ``await stream.get_final_response()`` drains what is
    left and returns the merged :class:`~loopsim.AgentResponse`. Use it as an async
    context manager (or call :meth:`aclose`) to stop early without leaking the run.

    ``ResponseStream(gen, finalizer=fn)`` is upstream's shape: ``fn(updates)`` (sync or
    async) makes the final response when the source yields none itself, e.g.
    ``finalizer=ChatResponse.from_updates`` for a chat client's stream.
    """

    def __init__(
        self,
        source: AsyncIterable[AgentResponseUpdate | AgentResponse],
        *,
        finalizer: Callable[[Sequence[Any]], Any] | None = None,
    ) -> None:
        self._source = source.__aiter__()
        self._updates: list[AgentResponseUpdate] = []
        self._final: AgentResponse | None = None
        self._done = False
        self._finalizer = finalizer

    def __aiter__(self) -> ResponseStream:
        return self

    async def __anext__(self) -> AgentResponseUpdate:
        while not self._done:
            try:
                item = await self._source.__anext__()
            except StopAsyncIteration:
                self._done = True
                break
            if isinstance(item, AgentResponse):
                self._final = item
                continue
            self._updates.append(item)
            return item
        raise StopAsyncIteration

    @property
    def updates(self) -> list[AgentResponseUpdate]:
        """The updates seen so far."""
        return self._updates

    async def get_final_response(self) -> AgentResponse:
        """Drain the stream and return the run's response."""
        if not self._done:  # (a drained stream would only raise StopAsyncIteration again)
            async for _ in self:
                pass
        if self._final is not None:
            return self._final
        if self._finalizer is not None:
            final = self._finalizer(self._updates)
            if inspect.isawaitable(final):
                final = await final
            self._final = final
            return final  # type: ignore[no-any-return] # the finalizer's own response type
        return AgentResponse.from_updates(self._updates)

    async def aclose(self) -> None:
        """Stop the run early."""
        self._done = True
        aclose = getattr(self._source, "aclose", None)
        if aclose is not None:
            await aclose()

    def __await__(self) -> Generator[Any, None, AgentResponse]:
        """``await stream`` is ``await stream.get_final_response()`` (as upstream)."""
        return self.get_final_response().__await__()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def close_quietly(stream: AsyncIterator[Any]) -> None:
    """Close an async iterator if it can be closed."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        with suppress(StopAsyncIteration):
            await aclose()


class StreamingRun:
    """``run(..., stream=True)``, upstream's spelling of ``run_stream(...)``.

    Without ``stream`` (or with ``stream=False``) ``run`` returns the coroutine of
    :meth:`_run_response`; with ``stream=True`` it returns :meth:`run_stream`'s
    :class:`ResponseStream` (iterate it, or await it for the final response).
    """

    @overload
    def run(
        self,
        messages: MessagesInput = None,
        *,
        stream: Literal[False] = False,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> Coroutine[Any, Any, AgentResponse]: ...
    @overload
    def run(
        self,
        messages: MessagesInput = None,
        *,
        stream: Literal[True],
        session: Any = None,
        options: RunOptions | None = None,
    ) -> ResponseStream: ...
    def run(
        self,
        messages: MessagesInput = None,
        *,
        stream: bool = False,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> Coroutine[Any, Any, AgentResponse] | ResponseStream:
        """Run once on ``messages`` (a str, a Message or a sequence of them)."""
        if stream:
            return self.run_stream(messages, session=session, options=options)
        return self._run_response(messages, session=session, options=options)

    async def _run_response(
        self,
        messages: MessagesInput = None,
        *,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> AgentResponse:
        raise NotImplementedError

    def run_stream(
        self,
        messages: MessagesInput = None,
        *,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> ResponseStream:
        raise NotImplementedError


class BaseAgent(StreamingRun):
    """Session plumbing for custom agents: subclass and implement :meth:`_run`.

    ``run_stream`` defaults to one update per message of ``_run``'s response; override
    ``_run_stream`` for real streaming.

    Example:
        >>> import loopsim
        >>> class Shouter(loopsim.BaseAgent):
        ...     async def _run(self, messages, session, options):
        ...         reply = loopsim.Message.assistant(messages[-1].text.upper())
        ...         return loopsim.AgentResponse(reply)
        >>> loopsim.simulate(Shouter(name="shouter").run, "hey").text
        'HEY'
    """

    def __init__(
        self,
        *,
        name: str | None = None,
        id: str | None = None,
        description: str | None = None,
        history_store: HistoryStoreKind = "in_memory",
    ) -> None:
        self._name = name
        self._id = id or name or type(self).__name__
        self._description = description
        self.history_store: HistoryStoreKind = history_store

    @property
    def name(self) -> str | None:
        """The agent's name (background agents are addressed by it)."""
        return self._name

    @property
    def id(self) -> str:
        """A stable id: the given id, else the name, else the class name."""
        return self._id

    @property
    def description(self) -> str | None:
        """What the agent is for."""
        return self._description

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r})"

    def create_session(self, *, session_id: str | None = None) -> AgentSession:
        """A new, empty session using this agent's history store (``session_id``: its id)."""
        if session_id is None and self.history_store == "in_memory":
            session = AgentSession._fresh()  # the usual one (a run given no session makes it)
        else:
            session = AgentSession(history_store=self.history_store, session_id=session_id)
        if _trace.observed():
            _trace.emit("session_created", agent=self._name or self._id, session=session.session_id)
        return session

    def get_session(
        self, service_session_id: str, *, session_id: str | None = None
    ) -> AgentSession:
        """A session bound to a service-side conversation id (upstream's ``get_session``)."""
        session = AgentSession(
            history_store=self.history_store,
            session_id=session_id,
            service_session_id=service_session_id,
        )
        _trace.emit("session_created", agent=self._name or self._id, session=session.session_id)
        return session

    def serialize_session(self, session: AgentSession) -> dict[str, Any]:
        """A JSON-safe snapshot of ``session``."""
        if not isinstance(session, AgentSession):
            msg = f"{self!r} can only serialize an AgentSession, got {type(session).__name__}"
            raise TypeError(msg)
        return session.to_dict()

    def deserialize_session(self, data: dict[str, Any]) -> AgentSession:
        """Restore a snapshot made by :meth:`serialize_session` as a new session object."""
        session = AgentSession.from_dict(data)
        _trace.emit("session_restored", agent=self._name or self._id, session=session.session_id)
        return session

    def get_service(self, service_type: type[T]) -> T | None:
        """This agent when it is a ``service_type``, else None (subclasses add more)."""
        return self if isinstance(self, service_type) else None

    async def _run_response(
        self,
        messages: MessagesInput = None,
        *,
        session: AgentSession | None = None,
        options: RunOptions | None = None,
    ) -> AgentResponse:
        return await self._run(
            normalize_messages(messages), session or self.create_session(), options or {}
        )

    def run_stream(
        self,
        messages: MessagesInput = None,
        *,
        session: AgentSession | None = None,
        options: RunOptions | None = None,
    ) -> ResponseStream:
        """Run once, streaming updates."""
        return ResponseStream(
            self._run_stream(
                normalize_messages(messages), session or self.create_session(), options or {}
            )
        )

    async def _run(
        self, messages: list[Message], session: AgentSession, options: RunOptions
    ) -> AgentResponse:
        raise NotImplementedError

    async def _run_stream(
        self, messages: list[Message], session: AgentSession, options: RunOptions
    ) -> AsyncIterator[AgentResponseUpdate | AgentResponse]:
        response = await self._run(messages, session, options)
        for message in response.messages:
            yield message_update(
                message, response_id=response.response_id, agent_id=response.agent_id
            )
        yield response


class DelegatingAgent(StreamingRun):
    """Forwards everything to ``inner``; subclass it to decorate an agent.

    ``get_service`` answers with this agent when it matches, else asks ``inner``.
    """

    def __init__(self, inner: SupportsAgentRun) -> None:
        if inner is None:
            msg = "inner agent must not be None"
            raise TypeError(msg)
        self.inner = inner

    @property
    def name(self) -> str | None:
        return self.inner.name

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def description(self) -> str | None:
        return self.inner.description

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"

    async def _run_response(
        self,
        messages: MessagesInput = None,
        *,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> AgentResponse:
        return await self.inner.run(messages, session=session, options=options)

    def run_stream(
        self,
        messages: MessagesInput = None,
        *,
        session: Any = None,
        options: RunOptions | None = None,
    ) -> ResponseStream:
        stream = self.inner.run_stream(messages, session=session, options=options)
        return stream if isinstance(stream, ResponseStream) else ResponseStream(stream)

    def create_session(self, *, session_id: str | None = None) -> Any:
        if session_id is None:
            return self.inner.create_session()
        return self.inner.create_session(session_id=session_id)  # type: ignore[call-arg] # an inner agent with upstream's signature

    def get_session(self, service_session_id: str, *, session_id: str | None = None) -> Any:
        get_session = getattr(self.inner, "get_session", None)
        if get_session is None:
            msg = f"{self.inner!r} has no get_session"
            raise TypeError(msg)
        return get_session(service_session_id, session_id=session_id)

    def serialize_session(self, session: Any) -> dict[str, Any]:
        return self.inner.serialize_session(session)

    def deserialize_session(self, data: dict[str, Any]) -> Any:
        return self.inner.deserialize_session(data)

    def get_service(self, service_type: type[T]) -> T | None:
        if isinstance(self, service_type):
            return self
        return self.inner.get_service(service_type)
