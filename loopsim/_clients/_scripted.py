"""ScriptedChatClient: replies come from a script, one item per turn."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from .. import _trace
from .._errors import ScriptExhaustedError
from .._messages import (
    ChatRequest,
    ChatResponse,
    Message,
    Usage,
    build_chat_response,
    copied,
    text_message,
)
from ._base import FakeChatClient, split_into_updates
from ._faults import MODEL_FAULTS, Fault
from ._faulty import model_fault

__all__ = ["ScriptItem", "ScriptedChatClient", "Turn", "split_into_updates"]

Reply = str | Message | ChatResponse | BaseException | Fault


#: The response fields a :class:`Turn` may set on its reply, in keyword order.
TURN_RESPONSE_FIELDS = (
    "response_id",
    "conversation_id",
    "model",
    "created_at",
    "finish_reason",
    "continuation_token",
    "additional_properties",
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One script entry with options: ``Turn("done", delay=30.0, usage=Usage(...))``.

    Args:
        item: a str (assistant reply), a Message, a ChatResponse, an exception to raise
            or a :class:`~loopsim.Fault` (a model-call fault on that turn).
        delay: virtual seconds the model "thinks" before answering (>= 0).
        usage: usage to report with the reply (replaces the ChatResponse's own).
        response_id: the reply's response id (instead of a drawn ``resp-…`` one).
        conversation_id: the service-side conversation the reply names (the session
            becomes service-backed, as with a real service's answer).
        model: the model the reply says answered (``"gpt-4o-mini"``...).
        created_at: when the reply says it was made, as text (upstream's ``created_at``
            is a free string; ISO 8601 such as ``"2026-01-01T00:00:00Z"`` is usual).
        finish_reason: why the model stopped (``"stop"``, ``"length"``...).
        continuation_token: a JSON object: the reply is a background response still in
            progress, to be polled with this token.
        additional_properties: JSON-safe extras of the reply (string keys).

    The response fields set the reply's own (a ChatResponse item's are replaced); they
    need a reply, so an exception or fault item with one is a ``ValueError``.

    Example:
        >>> import loopsim
        >>> turn = loopsim.Turn("done", finish_reason="length", conversation_id="conv-9")
        >>> client = loopsim.ScriptedChatClient([turn])
        >>> answer = loopsim.simulate(client.get_response, [loopsim.Message.user("hi")])
        >>> answer.finish_reason, answer.conversation_id
        ('length', 'conv-9')
    """

    item: Reply
    delay: float = 0.0
    usage: Usage | None = None
    response_id: str | None = None
    conversation_id: str | None = None
    model: str | None = None
    created_at: str | None = None
    finish_reason: str | None = None
    continuation_token: dict[str, Any] | None = None
    additional_properties: dict[str, Any] | None = None

    def __init__(
        self,
        item: Reply,
        *,
        delay: float = 0.0,
        usage: Usage | None = None,
        response_id: str | None = None,
        conversation_id: str | None = None,
        model: str | None = None,
        created_at: str | None = None,
        finish_reason: str | None = None,
        continuation_token: Mapping[str, Any] | None = None,
        additional_properties: Mapping[str, Any] | None = None,
    ) -> None:
        _check_item(item, "item")
        if isinstance(delay, bool) or not isinstance(delay, (int, float)):
            msg = f"delay must be a number of seconds, got {type(delay).__name__}"
            raise TypeError(msg)
        if not math.isfinite(delay) or delay < 0:
            msg = f"delay must be a finite number >= 0, got {delay!r}"
            raise ValueError(msg)
        if usage is not None and not isinstance(usage, Usage):
            msg = f"usage must be a loopsim Usage, got {type(usage).__name__}"
            raise TypeError(msg)
        for name, text in (
            ("response_id", response_id),
            ("conversation_id", conversation_id),
            ("model", model),
            ("created_at", created_at),
            ("finish_reason", finish_reason),
        ):
            _check_text(name, text)
        token = _json_object("continuation_token", continuation_token)
        extras = _json_object("additional_properties", additional_properties)
        given = [
            name
            for name, value in zip(
                TURN_RESPONSE_FIELDS,
                (response_id, conversation_id, model, created_at, finish_reason, token, extras),
                strict=True,
            )
            if value is not None
        ]
        if given and isinstance(item, (BaseException, Fault)):
            msg = (
                f"{given[0]} needs a reply to set, but this turn's item is "
                f"{'a fault' if isinstance(item, Fault) else 'an exception'}"
            )
            raise ValueError(msg)
        object.__setattr__(self, "item", item)
        object.__setattr__(self, "delay", float(delay))
        object.__setattr__(self, "usage", usage)
        object.__setattr__(self, "response_id", response_id)
        object.__setattr__(self, "conversation_id", conversation_id)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "created_at", created_at)
        object.__setattr__(self, "finish_reason", finish_reason)
        object.__setattr__(self, "continuation_token", token)
        object.__setattr__(self, "additional_properties", extras)

    @property
    def response_fields(self) -> dict[str, Any]:
        """The response fields this turn sets (only the ones given)."""
        values = {name: getattr(self, name) for name in TURN_RESPONSE_FIELDS}
        return {name: value for name, value in values.items() if value is not None}


def _check_text(name: str, value: object) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        msg = f"{name} must be a str, got {type(value).__name__}"
        raise TypeError(msg)
    if not value:
        msg = f"{name} must not be empty (leave it out for none)"
        raise ValueError(msg)


def _json_object(name: str, value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``value`` as a JSON object (a dict with string keys and JSON values), copied."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        msg = f"{name} must be a mapping (a JSON object), got {type(value).__name__}"
        raise TypeError(msg)
    for key in value:
        if not isinstance(key, str):
            msg = f"{name} keys must be strings, got {key!r}"
            raise TypeError(msg)
    try:
        # a round trip through JSON: no NaN (never equal to its own replay), no objects
        return dict(json.loads(json.dumps(dict(value), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        msg = f"{name} must be JSON data: {exc}"
        raise ValueError(msg) from None


ScriptItem = Reply | Turn


def _check_item(item: object, where: str) -> None:
    if not isinstance(item, (str, Message, ChatResponse, BaseException, Turn, Fault)):
        msg = (
            f"{where} must be a str, Message, ChatResponse, exception, Fault or Turn, "
            f"got {type(item).__name__}"
        )
        raise TypeError(msg)
    if isinstance(item, Fault):
        if item.kind not in MODEL_FAULTS:
            msg = (
                f"{where}: {item.kind!r} is a tool fault; a script takes model faults: "
                f"{', '.join(MODEL_FAULTS)}"
            )
            raise ValueError(msg)
        if item.when is not None or item.times is not None:
            msg = (
                f"{where}: a script's fault happens on its own turn, so it takes no `when` "
                "or `times` (those are for FaultyChatClient's rules)"
            )
            raise ValueError(msg)


def _as_response(item: Reply, usage: Usage | None, fields: dict[str, Any]) -> ChatResponse:
    response = _plain_response(item, usage)
    return copied(response, fields) if fields else response


def _plain_response(item: Reply, usage: Usage | None) -> ChatResponse:
    # Ids are drawn here in the order _stamp_ids would draw them (message, then response),
    # which saves copying the response to stamp it.
    if isinstance(item, str):
        message = text_message("assistant", item, None, _trace.next_id("msg"))
        return build_chat_response([message], response_id=_trace.next_id("resp"), usage=usage)
    if isinstance(item, Message):
        if not item.message_id:
            item = copied(item, {"message_id": _trace.next_id("msg")})
        return build_chat_response([item], response_id=_trace.next_id("resp"), usage=usage)
    assert isinstance(item, ChatResponse)  # noqa: S101 - narrowed by _check_item
    if usage is not None:
        return copied(item, {"usage": usage})
    return item


class ScriptedChatClient(FakeChatClient):
    """A chat client that answers from a script, one item per turn, and fails loudly.

    Each item is a ``str`` (an assistant reply), a ``Message``, a ``ChatResponse``, an
    exception instance (raised on that turn), a :class:`~loopsim.Fault` (a model-call
    fault on that turn: ``Fault("rate_limit", retry_after=30)``) or a :class:`Turn`
    wrapping one of those with a virtual ``delay`` and ``usage``. Past the end of the
    script it raises :class:`~loopsim.ScriptExhaustedError` naming the client, the turn
    and the last request — it never cycles or invents a default reply.

    Example:
        >>> import loopsim
        >>> client = loopsim.ScriptedChatClient(["hi", loopsim.Turn("later", delay=60)])
        >>> async def main():
        ...     first = await client.get_response([loopsim.Message.user("hello")])
        ...     second = await client.get_response([loopsim.Message.user("again")])
        ...     return first.text, second.text
        >>> loopsim.simulate(main)
        ('hi', 'later')
        >>> len(client.requests), client.remaining
        (2, ())
    """

    def __init__(self, turns: Iterable[ScriptItem], *, name: str | None = None) -> None:
        super().__init__(name or "scripted")
        items = list(turns)
        for index, item in enumerate(items):
            _check_item(item, f"turns[{index}]")
        self._script: list[ScriptItem] = items
        self._next = 0

    @property
    def remaining(self) -> tuple[ScriptItem, ...]:
        """The script items not yet used."""
        return tuple(self._script[self._next :])

    @property
    def turn(self) -> int:
        """How many turns have been answered (or attempted) so far."""
        return self._next

    async def _answer(self, request: ChatRequest) -> ChatResponse:
        if self._next >= len(self._script):
            trace = _trace.active()
            raise ScriptExhaustedError(
                self.name,
                len(self.requests),
                request,
                virtual_time=None if trace is None else trace.time(),
                seed=None if trace is None else trace.seed,
            )
        entry = self._script[self._next]
        self._next += 1
        fields: dict[str, Any] = {}
        if isinstance(entry, Turn):
            if entry.delay > 0:
                await anyio.sleep(entry.delay)
            item, usage, fields = entry.item, entry.usage, entry.response_fields
        else:  # a bare item: no delay, no usage (items were checked when the script was made)
            item, usage = entry, None
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Fault):
            return await model_fault(item, model=self.name)
        return _as_response(item, usage, fields)
