"""RecordingChatClient: wraps any chat client and records each model turn.

The recorded turns are JSON-safe (messages dumped with ``model_dump(mode="json")`` when
the turn happens, so later mutation of the live objects cannot change the record) and
turn into a transcript with ``loopsim.Transcript.from_turns``; a
:class:`~loopsim.ReplayChatClient` then answers from it. That is how a conversation with a
real model is captured once and becomes a test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import _trace
from .._messages import ChatOptions, ChatResponse, ChatResponseUpdate, Message
from ._protocol import ChatClient

__all__ = ["RecordedTurn", "RecordingChatClient", "dump_message", "message_summary"]

_NO_OPTIONS = ChatOptions()


@dataclass(slots=True)
class RecordedTurn:
    """One request/response with a chat client, JSON-safe.

    Attributes:
        agent: the agent that asked (None when unknown).
        session: the agent's session id (None when unknown).
        messages: the request messages, each a JSON dict.
        tools: names of the tools offered with the request.
        request_time: virtual seconds when the request was sent.
        response: the response messages (JSON dicts), None when the call failed.
        usage: the response usage (JSON dict) or None.
        response_id: the response id or None.
        response_time: virtual seconds when the response arrived.
        error: ``"Type: message"`` when the call raised.
        event_index: index of the request in a transcript's events (replay only).
    """

    agent: str | None
    session: str | None
    messages: list[dict[str, Any]]
    tools: list[str]
    request_time: float = 0.0
    response: list[dict[str, Any]] | None = None
    usage: dict[str, Any] | None = None
    response_id: str | None = None
    response_time: float | None = None
    error: str | None = None
    event_index: int | None = None
    response_index: int | None = field(default=None, repr=False)

    @property
    def summary(self) -> str:
        """The last request message, one line (what the model was last told)."""
        last = message_summary(self.messages[-1]) if self.messages else "<no messages>"
        more = len(self.messages) - 1
        return f"{last} (+{more} earlier)" if more > 0 else last


def dump_message(message: Message) -> dict[str, Any]:
    """The JSON form of ``message`` (what transcripts store)."""
    return message.model_dump(mode="json")


def _json(value: Any) -> str:
    import json  # noqa: PLC0415 - only rendering needs it

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _content_summary(content: dict[str, Any]) -> str:
    kind = content.get("type")
    if kind == "text":
        return _json(content.get("text", ""))
    if kind == "function_call":
        return (
            f"call {content.get('name')}({_json(content.get('arguments', {}))})"
            f" #{content.get('call_id')}"
        )
    if kind == "function_result":
        if content.get("error") is not None:
            return f"error #{content.get('call_id')}: {_json(content['error'])}"
        return f"result #{content.get('call_id')} = {_json(content.get('result'))}"
    if kind == "function_approval_request":
        call = content.get("function_call") or {}
        arguments = _json(call.get("arguments", {}))
        return f"approval? {call.get('name')}({arguments}) #{call.get('call_id')}"
    if kind == "function_approval_response":
        call = content.get("function_call") or {}
        verdict = "approved" if content.get("approved") else "rejected"
        return f"{verdict} {call.get('name')} #{call.get('call_id')}"
    if kind == "error":
        return f"error {_json(content.get('message', ''))}"
    if kind == "usage":
        return "usage"
    rest = {k: v for k, v in content.items() if k != "type"}
    return f"{kind} {_json(rest)}"


def message_summary(message: dict[str, Any]) -> str:
    """One line for a message in JSON form: ``user: "hi"``, ``assistant: call f({}) #c1``."""
    role = str(message.get("role", "?"))
    author = message.get("author_name")
    who = f"{role}({author})" if author else role
    parts = [_content_summary(c) for c in message.get("contents", ())]
    return f"{who}: {', '.join(parts)}" if parts else f"{who}: <empty>"


class RecordingChatClient:
    """Wraps ``inner`` (any :class:`~loopsim.ChatClient`) and records every model turn.

    Each request (messages, offered tool names) and its response (messages, usage) lands
    in :attr:`turns`, streaming ones too (the updates are passed through as they arrive
    and merged for the record). With ``emit=True`` the turns are also reported to the
    current trace as ``model_request``/``model_response``/``model_error`` events, for clients used
    outside :class:`~loopsim.Agent` (an Agent already reports its own turns, so the
    default is not to report them twice).

    Example:
        >>> import loopsim
        >>> inner = loopsim.ScriptedChatClient(["hello"])
        >>> client = loopsim.RecordingChatClient(inner, agent_name="assistant")
        >>> agent = loopsim.Agent(client, name="assistant")
        >>> loopsim.simulate(agent.run, "hi").text
        'hello'
        >>> transcript = loopsim.Transcript.from_turns(client.turns)
        >>> replay = loopsim.ReplayChatClient(transcript, "assistant")
        >>> loopsim.simulate(loopsim.Agent(replay, name="assistant").run, "hi").text
        'hello'
    """

    def __init__(
        self, inner: ChatClient, *, agent_name: str | None = None, emit: bool = False
    ) -> None:
        self.inner = inner
        self.agent_name = agent_name
        self.emit = emit
        self.turns: list[RecordedTurn] = []

    def __repr__(self) -> str:
        return f"RecordingChatClient({self.inner!r}, turns={len(self.turns)})"

    def _start(self, messages: Sequence[Message], options: ChatOptions) -> RecordedTurn:
        # The Agent says who asks in the options; a direct call leaves them None.
        turn = RecordedTurn(
            agent=self.agent_name or options.agent_name,
            session=options.session_id,
            messages=[dump_message(m) for m in messages],
            tools=list(options.tool_names),
            request_time=_now(),
        )
        self.turns.append(turn)
        if self.emit:
            _trace.emit(
                "model_request",
                agent=turn.agent,
                session=turn.session,
                messages=messages,
                tools=list(options.tool_names),
            )
        return turn

    def _finish(self, turn: RecordedTurn, response: ChatResponse) -> None:
        turn.response = [dump_message(m) for m in response.messages]
        turn.usage = None if response.usage is None else response.usage.model_dump(mode="json")
        turn.response_id = response.response_id
        turn.response_time = _now()
        if self.emit:
            _trace.emit(
                "model_response",
                agent=turn.agent,
                session=turn.session,
                messages=list(response.messages),
                usage=response.usage,
                response_id=response.response_id,
            )

    def _fail(self, turn: RecordedTurn, exc: Exception) -> None:
        turn.error = f"{type(exc).__name__}: {exc}"
        turn.response_time = _now()
        if self.emit:
            _trace.emit(
                "model_error",
                agent=turn.agent,
                session=turn.session,
                error=type(exc).__name__,
                message=str(exc),
            )

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Forward the request to ``inner`` and record both sides."""
        turn = self._start(messages, options or _NO_OPTIONS)
        try:
            response = await self.inner.get_response(messages, options=options)
        except Exception as exc:
            self._fail(turn, exc)
            raise
        self._finish(turn, response)
        return response

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Forward the stream unchanged; record the merged response when it ends."""
        turn = self._start(messages, options or _NO_OPTIONS)
        updates: list[ChatResponseUpdate] = []
        try:
            async for update in self.inner.get_streaming_response(messages, options=options):
                updates.append(update)
                yield update
        except Exception as exc:
            self._fail(turn, exc)
            raise
        self._finish(turn, ChatResponse.from_updates(updates))


def _now() -> float:
    trace = _trace.active()
    return 0.0 if trace is None else trace.time()
