"""Sessions and the three history stores.

A session holds JSON-safe ``state`` (context providers keep their data there) and a
history store. The stores differ in what a *snapshot* of the session captures, which is
what decides whether a fresh-context clone (LoopAgent) is really fresh:

* ``in_memory``: the messages are in the snapshot — a restored clone starts from the
  snapshot's history and diverges from the original.
* ``service_conversation``: the snapshot holds only a conversation id on a simulated
  service — every clone appends to and sees the one shared history.
* ``service_response_chain``: the snapshot holds the id of the last response; each turn
  is a new response pointing at its parent, so clones fork cleanly.

The simulated service lives per simulation (it is "remote", so it survives a simulated
process restart, like the real one would).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from .. import _trace
from .._messages import Message
from ._approvals import HistoryList, may_hold_controls
from ._session_dicts import HISTORY_STATE_KEY, messages_from_dicts, messages_to_dicts

__all__ = [
    "HISTORY_STORES",
    "AgentSession",
    "ConversationService",
    "HistoryStoreKind",
    "MessageView",
    "conversation_service",
]

HistoryStoreKind = Literal["in_memory", "service_conversation", "service_response_chain"]
HISTORY_STORES: tuple[HistoryStoreKind, ...] = (
    "in_memory",
    "service_conversation",
    "service_response_chain",
)
SESSION_FORMAT = "loopsim.session"  # read, for snapshots of earlier loopsim versions
SESSION_TYPE = "session"  # upstream's


_new_view = object.__new__
_new_list = list.__new__


class MessageView(Sequence[Message]):
    """A read-only view of the first ``stop`` items of ``base`` followed by ``tail``.

    Lets an agent hand the whole history to a client without copying it: O(1) to make,
    and it does not change when the history grows afterwards.
    """

    __slots__ = ("_base", "_stop", "_tail")

    def __init__(self, base: Sequence[Message], stop: int, tail: Sequence[Message] = ()) -> None:
        self._base = base
        self._stop = stop
        self._tail = tuple(tail)

    def followed_by(self, tail: tuple[Message, ...]) -> MessageView:
        """This view's items (not its own tail, which must be empty) followed by ``tail``.

        One level of view, not a view of a view: items are read as fast as from this one.
        """
        if self._tail:
            return MessageView(self, len(self), tail)
        view = _new_view(MessageView)
        view._base = self._base
        view._stop = self._stop
        view._tail = tail
        return view

    def __len__(self) -> int:
        return self._stop + len(self._tail)

    def as_list(self) -> list[Message]:
        """The items as a new list, copied at C speed (a recorder reads every request)."""
        base = self._base
        if isinstance(base, MessageView):
            head = base.as_list()[: self._stop]
        elif isinstance(base, (list, tuple)):
            head = list(base[: self._stop])
        else:
            head = [base[i] for i in range(self._stop)]
        head.extend(self._tail)
        return head

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        return self._base[index] if index < self._stop else self._tail[index - self._stop]

    def __iter__(self) -> Iterator[Message]:
        for i in range(self._stop):
            yield self._base[i]
        yield from self._tail

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=False))

    __hash__ = None  # type: ignore[assignment] # mutable-looking sequence: not hashable

    def may_hold_approvals(self) -> bool:
        """False when this view surely holds no approval request or answer (O(1) for a
        session's history); True when it may."""
        if self._tail:
            return True
        return may_hold_controls(self._base, self._stop)

    def __repr__(self) -> str:
        return f"MessageView({list(self)!r})"


@dataclass(slots=True)
class _ResponseNode:
    parent: str | None
    history: HistoryList
    length: int


@dataclass(slots=True)
class ConversationService:
    """The simulated remote store behind the two ``service_*`` history stores."""

    conversations: dict[str, HistoryList] = field(default_factory=dict)
    responses: dict[str, _ResponseNode] = field(default_factory=dict)

    def new_conversation(self) -> str:
        conversation_id = _trace.next_id("conv")
        self.conversations[conversation_id] = HistoryList()
        return conversation_id

    def conversation(self, conversation_id: str) -> list[Message]:
        try:
            return self.conversations[conversation_id]
        except KeyError:
            msg = f"unknown conversation id {conversation_id!r} on the simulated service"
            raise KeyError(msg) from None

    def chain_view(self, response_id: str | None) -> MessageView:
        if response_id is None:
            return MessageView((), 0)
        node = self._node(response_id)
        return MessageView(node.history, node.length)

    def append_response(self, parent: str | None, messages: Sequence[Message]) -> str:
        """Store a turn as a new response after ``parent``; returns its id.

        A linear chain shares one list (amortised O(1) per turn); forking from a response
        that already has a child copies the prefix once.
        """
        if parent is None:
            history = HistoryList()
            length = 0
        else:
            node = self._node(parent)
            history, length = node.history, node.length
            if len(history) != length:  # someone already extended this list: fork
                history = HistoryList(history[:length])
        history.extend(messages)
        response_id = _trace.next_id("resp-chain")
        self.responses[response_id] = _ResponseNode(parent, history, len(history))
        return response_id

    def _node(self, response_id: str) -> _ResponseNode:
        try:
            return self.responses[response_id]
        except KeyError:
            msg = f"unknown response id {response_id!r} on the simulated service"
            raise KeyError(msg) from None


def conversation_service() -> ConversationService:
    """The simulated service of the current simulation (created on first use)."""
    resources = _trace.current().resources
    service = resources.get("conversation_service")
    if service is None:
        service = resources["conversation_service"] = ConversationService()
    assert isinstance(service, ConversationService)  # noqa: S101 - only we store this key
    return service


class AgentSession:
    """A conversation's state: an id, JSON-safe ``state`` and a history store.

    Attributes:
        session_id: deterministic id (``session-0001``), kept across serialization.
        state: context providers keep their (JSON-safe) data under their source id; an
            ``in_memory`` history lives in ``state["in_memory"]["messages"]`` (the
            messages themselves, as upstream's; :meth:`to_dict` writes them as dicts).
        history_store: which of the three stores holds the messages.
        service_session_id: the conversation id or last response id for ``service_*``
            stores (None for ``in_memory``, or before the first turn of a chain).
    """

    __slots__ = ("_messages", "_state", "history_store", "service_session_id", "session_id")

    def __init__(
        self,
        *,
        session_id: str | None = None,
        history_store: HistoryStoreKind = "in_memory",
        state: dict[str, Any] | None = None,
        service_session_id: str | None = None,
        messages: Sequence[Message] = (),
    ) -> None:
        if history_store not in HISTORY_STORES:
            msg = f"history_store must be one of {', '.join(HISTORY_STORES)}; got {history_store!r}"
            raise ValueError(msg)
        self.session_id = session_id or _trace.next_id("session")
        self.history_store: HistoryStoreKind = history_store
        self._messages = HistoryList(messages)
        if state is None and not self._messages:
            self._state: dict[str, Any] = {}  # what the setter makes of an empty one
        else:
            self.state = {} if state is None else state
        if history_store == "service_conversation" and service_session_id is None:
            service_session_id = conversation_service().new_conversation()
        self.service_session_id = service_session_id

    @classmethod
    def _fresh(cls) -> AgentSession:
        """``AgentSession()`` without its checks: empty, ``in_memory``, the next id."""
        session = object.__new__(cls)
        session.session_id = _trace.next_id("session")
        session.history_store = "in_memory"
        messages = session._messages = _new_list(HistoryList)  # empty: no __init__ to run
        messages.first_control = None
        session._state = {}
        session.service_session_id = None
        return session

    @property
    def state(self) -> dict[str, Any]:
        """JSON-safe data of the context providers, by source id; for an ``in_memory``
        store also the live history, where upstream keeps it, once there is one:
        ``state["in_memory"]["messages"]`` is the history list itself (no copy)."""
        return self._state

    @state.setter
    def state(self, state: dict[str, Any]) -> None:
        # a state that holds a history list brings it (upstream: assigning a restored
        # session's state assigns its history); otherwise the session's own joins it
        self._state = state
        if self.history_store != "in_memory":
            return
        held = state.get(HISTORY_STATE_KEY)
        if not isinstance(held, dict):
            if self._messages:  # (an empty history joins the state when it first grows)
                state[HISTORY_STATE_KEY] = {"messages": self._messages}
            return
        messages = held.get("messages")
        if isinstance(messages, HistoryList):
            self._messages = messages
        elif isinstance(messages, list) and all(isinstance(m, Message) for m in messages):
            self._messages = held["messages"] = HistoryList(messages)
        else:
            held["messages"] = self._messages

    def __repr__(self) -> str:
        return (
            f"AgentSession(session_id={self.session_id!r}, history_store={self.history_store!r}, "
            f"messages={len(self.history())})"
        )

    def history(self) -> MessageView:
        """The conversation so far, as a cheap read-only view."""
        if self.history_store == "in_memory":
            return MessageView(self._messages, len(self._messages))
        service = conversation_service()
        if self.history_store == "service_conversation":
            assert self.service_session_id is not None  # noqa: S101 - set in __init__
            messages = service.conversation(self.service_session_id)
            return MessageView(messages, len(messages))
        return service.chain_view(self.service_session_id)

    def add_messages(self, messages: Sequence[Message]) -> None:
        """Append one turn's messages to the history."""
        if self.history_store == "in_memory":
            self._messages.extend(messages)
            held = self._state.get(HISTORY_STATE_KEY)
            if held is None or held.get("messages") is not self._messages:
                self._state.setdefault(HISTORY_STATE_KEY, {})["messages"] = self._messages
        elif self.history_store == "service_conversation":
            assert self.service_session_id is not None  # noqa: S101 - set in __init__
            conversation_service().conversation(self.service_session_id).extend(messages)
        else:
            self.service_session_id = conversation_service().append_response(
                self.service_session_id, messages
            )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe snapshot in upstream's session dict shape.

        ``{"type": "session", "session_id", "service_session_id", "state"}`` as upstream
        writes it, plus loopsim's ``history_store``; an in-memory history is kept where
        upstream keeps it, in ``state["in_memory"]["messages"]`` (see the module
        docstring for what each store keeps).
        """
        live = self._state
        held = live.get(HISTORY_STATE_KEY) if self.history_store == "in_memory" else None
        if isinstance(held, dict) and held.get("messages") is self._messages:
            # the live history is written as dicts, not deep-copied as objects
            others = {k: v for k, v in held.items() if k != "messages"}
            state = copy.deepcopy({k: v for k, v in live.items() if k != HISTORY_STATE_KEY})
            state[HISTORY_STATE_KEY] = {**copy.deepcopy(others), "messages": []}
        else:
            state = copy.deepcopy(live)
        if self.history_store == "in_memory":
            state.setdefault(HISTORY_STATE_KEY, {})["messages"] = messages_to_dicts(self._messages)
        return {
            "type": SESSION_TYPE,
            "session_id": self.session_id,
            "service_session_id": self.service_session_id,
            "state": state,
            "history_store": self.history_store,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentSession:
        """Restore a snapshot (same session id, fresh object).

        Reads what :meth:`to_dict` writes, what upstream's ``AgentSession.to_dict``
        writes (its in-memory history included), and loopsim's earlier format.
        """
        if (
            not isinstance(data, dict)
            or data.get("type") not in (SESSION_TYPE, SESSION_FORMAT)
            or not isinstance(data.get("session_id"), str)
        ):
            msg = (
                f"not a serialized session (expected a dict with type {SESSION_TYPE!r} "
                "and a session_id)"
            )
            raise ValueError(msg)
        store = data.get("history_store", "in_memory")
        state = data.get("state")
        state = {} if state is None else copy.deepcopy(state)
        if not isinstance(state, dict):
            msg = (
                f"session {data['session_id']!r}: state must be a dict, got {type(state).__name__}"
            )
            raise ValueError(msg)  # noqa: TRY004 - a bad snapshot is a ValueError
        raw_messages: Any = data.get("messages", [])
        history = state.get(HISTORY_STATE_KEY)
        if store == "in_memory" and isinstance(history, dict) and "messages" in history:
            raw_messages = history.pop("messages")
            if not history:
                del state[HISTORY_STATE_KEY]
        messages = messages_from_dicts(raw_messages, f"session {data['session_id']!r} messages")
        return cls(
            session_id=data["session_id"],
            history_store=store,
            state=state,
            service_session_id=data.get("service_session_id"),
            messages=messages,
        )
