"""RecordingChatClient: wraps any chat client and records each model turn.

The recorded turns are JSON-safe (messages dumped with ``model_dump(mode="json")`` when
the turn happens, so later mutation of the live objects cannot change the record) and
turn into a transcript with ``loopsim.Transcript.from_turns``; a
:class:`~loopsim.ReplayChatClient` then answers from it. That is how a conversation with a
real model is captured once and becomes a test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from .. import _trace
from .._clock import model_call
from .._clock._wall import real_seconds
from .._errors import TranscriptError
from .._messages import ChatOptions, ChatRequest, ChatResponse, ChatResponseUpdate, Message
from ._hosted import emit_hosted
from ._protocol import ChatClient
from ._secrets import SECRETS_RESOURCE, Redactor, secret_values

__all__ = [
    "ANSWER_FIELDS",
    "RecordedTurn",
    "RecordingChatClient",
    "answer_fields",
    "call_names",
    "dump_message",
    "message_summary",
]

_NO_OPTIONS = ChatOptions()

#: A model answer's response-level fields that a ``model_response`` event records besides
#: its messages, usage and response id, in the order they are written.
ANSWER_FIELDS = (
    "finish_reason",
    "conversation_id",
    "continuation_token",
    "model",
    "created_at",
    "additional_properties",
)


def answer_fields(response: ChatResponse | RecordedTurn) -> dict[str, Any]:
    """The :data:`ANSWER_FIELDS` ``response`` (or a recorded turn's answer) sets, in that
    order: every one that is not None (``additional_properties`` when not empty). Unset
    ones are left out, so the event of an answer without them is what it was before they
    were recorded."""
    fields: dict[str, Any] = {}
    for name in ANSWER_FIELDS:
        value = getattr(response, name)
        if value is not None and not (name == "additional_properties" and not value):
            fields[name] = value
    return fields


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
        instructions: the system instructions sent with the request (None: none).
        faults: a script's model faults on this turn, in order (``{"kind": ...,
            "options": ...}``), played again on replay before its answer.
        finish_reason: why the model stopped (``"stop"``, ``"tool_calls"``...), as received.
        conversation_id: the service-side conversation the response belongs to, if any.
        continuation_token: the background response's token (JSON object) while it runs.
        model: the model that answered, as the service named it.
        created_at: when the service made the answer, as it wrote it (a string).
        additional_properties: the answer's extras (JSON object; empty: none).
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
    instructions: str | None = None
    faults: list[dict[str, Any]] = field(default_factory=list)
    #: a fault struck this turn: its recorded duration is the faults' and the retries'
    #: (played live again on replay), not the model's
    faulted: bool = field(default=False, repr=False)
    finish_reason: str | None = None
    conversation_id: str | None = None
    continuation_token: dict[str, Any] | None = None
    model: str | None = None
    created_at: str | None = None
    additional_properties: dict[str, Any] = field(default_factory=dict)

    @property
    def answer_fields(self) -> dict[str, Any]:
        """The :data:`ANSWER_FIELDS` this turn's answer set, in order (see
        :func:`answer_fields`)."""
        return answer_fields(self)

    @property
    def delay(self) -> float:
        """Virtual seconds the model took to answer (0 when it never answered)."""
        if self.response_time is None:
            return 0.0
        return max(self.response_time - self.request_time, 0.0)

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


def _content_summary(content: dict[str, Any], calls: Mapping[str, str]) -> str:
    kind = content.get("type")
    if kind == "text":
        return _json(content.get("text", ""))
    if kind == "function_call":
        return (
            f"call {content.get('name')}({_json(content.get('arguments', {}))})"
            f" #{content.get('call_id')}"
        )
    if kind == "function_result":
        call_id = content.get("call_id")
        tool = calls.get(str(call_id))
        of = f"{tool} " if tool else ""
        if content.get("error") is not None:
            return f"{of}error #{call_id}: {_json(content['error'])}"
        return f"{of}result #{call_id} = {_json(content.get('result'))}"
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
    if kind == "hosted_tool_call":
        return (
            f"hosted {content.get('tool')}({_json(content.get('arguments', {}))})"
            f" #{content.get('call_id')}"
        )
    if kind == "hosted_tool_result":
        return (
            f"hosted {content.get('tool')} result #{content.get('call_id')}"
            f" = {_json(content.get('result'))}"
        )
    rest = {k: v for k, v in content.items() if k != "type"}
    return f"{kind} {_json(rest)}"


def call_names(*conversations: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Call id -> tool name, for every function call in these JSON messages."""
    names: dict[str, str] = {}
    for messages in conversations:
        for message in messages:
            for content in message.get("contents", ()):
                if content.get("type") == "function_call" and content.get("call_id") is not None:
                    names[str(content["call_id"])] = str(content.get("name"))
    return names


def message_summary(message: dict[str, Any], calls: Mapping[str, str] | None = None) -> str:
    """One line for a message in JSON form: ``user: "hi"``, ``assistant: call f({}) #c1``.

    ``calls`` maps call ids to tool names, so a tool's result names its tool
    (``tool: add result #c1 = "5"``).
    """
    role = str(message.get("role", "?"))
    author = message.get("author_name")
    who = f"{role}({author})" if author else role
    parts = [_content_summary(c, calls or {}) for c in message.get("contents", ())]
    return f"{who}: {', '.join(parts)}" if parts else f"{who}: <empty>"


class RecordingChatClient:
    """Wraps ``inner`` (any :class:`~loopsim.ChatClient`) and records every model turn.

    Each request (messages, offered tool names) and its response (messages, usage, ids
    and every other field the answer sets, see :data:`ANSWER_FIELDS`) lands in
    :attr:`turns`, streaming ones too (the updates are passed through as they arrive
    and merged for the record). With ``emit=True`` the turns are also reported to the
    current trace as ``model_request``/``model_response``/``model_error`` events, for clients used
    outside :class:`~loopsim.Agent` (an Agent already reports its own turns, so the
    default is not to report them twice). An answer whose ``continuation_token`` or
    ``additional_properties`` JSON would not give back as it is (a ``datetime``, a
    tuple, NaN) is a :class:`~loopsim.TranscriptError` naming the field: a replay of the
    record could only give back something else.

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
        self,
        inner: ChatClient,
        *,
        agent_name: str | None = None,
        emit: bool = False,
        latency: Literal["zero", "real"] = "zero",
        secrets: Sequence[str] = (),
        secret_patterns: Sequence[str] = (),
    ) -> None:
        if latency not in ("zero", "real"):
            msg = f"latency must be 'zero' or 'real', got {latency!r}"
            raise ValueError(msg)
        self.inner = inner
        self.agent_name = agent_name
        self.emit = emit
        self.latency = latency
        self.turns: list[RecordedTurn] = []
        #: Every request received (messages, options), like the fakes' ``requests``.
        self.requests: list[ChatRequest] = []
        #: What is redacted: the given secrets, keys found on the wrapped clients, and
        #: secret-looking text (default and given patterns).
        self.redactor = Redactor([*secrets, *secret_values(inner)], secret_patterns)
        # One dump per message object, shared by every request that resends it, so a
        # long conversation costs what is new in each turn (and is written once).
        self._dumps: dict[int, tuple[Message, dict[str, Any]]] = {}
        self._registered: Any = None

    def _dump(self, message: Message) -> dict[str, Any]:
        cached = self._dumps.get(id(message))
        if cached is not None and cached[0] is message:
            return cached[1]
        dumped: dict[str, Any] = self.redactor.redact(dump_message(message))
        self._dumps[id(message)] = (message, dumped)
        return dumped

    def _register(self) -> None:
        # The run's Recorder redacts what this client knows to be secret, too.
        trace = _trace.active()
        if trace is None or trace is self._registered:
            return
        self._registered = trace
        known = trace.resources.get(SECRETS_RESOURCE)
        if isinstance(known, Redactor):
            known.merge(self.redactor)
        else:
            trace.resources[SECRETS_RESOURCE] = self.redactor.copy()

    def __repr__(self) -> str:
        return f"RecordingChatClient({self.inner!r}, turns={len(self.turns)})"

    def _start(self, messages: Sequence[Message], options: ChatOptions) -> RecordedTurn:
        self._register()
        self.requests.append(ChatRequest(messages, options))
        # The Agent says who asks in the options; a direct call leaves them None.
        turn = RecordedTurn(
            agent=self.agent_name or options.agent_name,
            session=options.session_id,
            messages=[self._dump(m) for m in messages],
            tools=list(options.tool_names),
            request_time=_now(),
            instructions=None
            if options.instructions is None
            else self.redactor.text(options.instructions),
        )
        self.turns.append(turn)
        if self.emit:
            model_call(turn.agent)  # the run's max_model_calls (runaway loops)
            _trace.emit(
                "model_request",
                agent=turn.agent,
                session=turn.session,
                messages=messages,
                tools=list(options.tool_names),
                instructions=options.instructions,
            )
        return turn

    def _finish(self, turn: RecordedTurn, response: ChatResponse) -> None:
        turn.response = [self._dump(m) for m in response.messages]
        turn.usage = None if response.usage is None else response.usage.model_dump(mode="json")
        turn.response_id = response.response_id
        fields = answer_fields(response)
        for name in ("continuation_token", "additional_properties"):
            if name in fields:
                fields[name] = self._json(fields[name], name, turn)
        for name, value in fields.items():
            setattr(turn, name, value)
        turn.response_time = _now()
        if self.emit:
            emit_hosted(turn.agent, turn.session, response)
            _trace.emit(
                "model_response",
                agent=turn.agent,
                session=turn.session,
                messages=list(response.messages),
                usage=response.usage,
                response_id=response.response_id,
                **answer_fields(response),
            )

    def _json(self, value: Any, name: str, turn: RecordedTurn) -> Any:
        """``value`` as JSON data (redacted); an error when JSON would change it, since a
        replay gives back what the file holds."""
        import json  # noqa: PLC0415 - only a turn with these fields needs it

        try:
            copied = json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as exc:
            problem = f"it is not JSON data ({exc})"
        else:
            if copied == value:
                return self.redactor.redact(copied)
            problem = "JSON changes it (a tuple, or a key that is not a string?)"
        msg = (
            f"cannot record the {name} of agent {turn.agent!r}'s answer: {problem}; a "
            "replay could only give back something else"
        )
        raise TranscriptError(msg)

    def _fail(self, turn: RecordedTurn, exc: Exception) -> None:
        turn.error = self.redactor.text(f"{type(exc).__name__}: {exc}")
        turn.response_time = _now()
        if self.emit:
            _trace.emit(
                "model_error",
                agent=turn.agent,
                session=turn.session,
                error=type(exc).__name__,
                message=str(exc),
            )

    async def _wait_as_long_as(self, began: float) -> None:
        # latency="real": the model's real latency becomes virtual time, so the replay
        # (which sleeps the recorded delay) and the live run keep the same timestamps.
        if self.latency == "real":
            taken = real_seconds() - began
            if taken > 0:
                await anyio.sleep(taken)

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Forward the request to ``inner`` and record both sides."""
        turn = self._start(messages, options or _NO_OPTIONS)
        began = real_seconds()
        try:
            response = await self.inner.get_response(messages, options=options)
        except Exception as exc:
            await self._wait_as_long_as(began)
            self._fail(turn, exc)
            raise
        await self._wait_as_long_as(began)
        self._finish(turn, response)
        return response

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Forward the stream unchanged; record the merged response when it ends."""
        turn = self._start(messages, options or _NO_OPTIONS)
        updates: list[ChatResponseUpdate] = []
        began = real_seconds()
        try:
            async for update in self.inner.get_streaming_response(messages, options=options):
                updates.append(update)
                yield update
        except Exception as exc:
            await self._wait_as_long_as(began)
            self._fail(turn, exc)
            raise
        await self._wait_as_long_as(began)
        self._finish(turn, ChatResponse.from_updates(updates))


def _now() -> float:
    trace = _trace.active()
    return 0.0 if trace is None else trace.time()
