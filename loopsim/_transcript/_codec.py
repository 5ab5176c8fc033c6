"""Format version 2: each message is written once; a request refers to what came before.

In memory a ``model_request`` event holds its whole request (``data["messages"]`` is the
full list, as the agent sent it). In a version 2 file its ``messages`` list mixes
messages written out in full and *references* to runs of messages already written::

    {"ref": 12, "start": 0, "count": 7}

meaning "messages ``start`` .. ``start + count - 1`` of event 12's messages" (event 12 is
an earlier ``model_request``, whose messages are its whole request, or an earlier
``model_response``). A loop's next request is then "the last request, its answer, the
feedback": three items, whatever the history's length, so a file grows linearly with
the run. Version 1 files (every request written in full) are still read.

Reading resolves every reference into the same message objects, so a transcript read and
written again is byte-identical, and ``show``, ``replay`` and the diff see full requests.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "RefError",
    "TranscriptLimits",
    "decode_messages",
    "encode_events",
    "max_depth_problem",
]

_REF_KEYS = frozenset({"ref", "start", "count"})
_MESSAGE_KINDS = ("model_request", "model_response")


class TranscriptLimits:
    """Bounds the reader enforces; each can be raised by keyword (see ``read_transcript``).

    Attributes:
        max_bytes: largest file read (default 256 MiB).
        max_depth: deepest nesting of JSON arrays and objects (default 100).
        max_messages: most messages all requests together may hold once references are
            resolved (default 8 million: a 4,000-iteration loop on one session, about 64 MB
            of list slots). Checked before a request is expanded, so a file of references
            that would expand past it is refused before it takes the memory.
    """

    __slots__ = ("max_bytes", "max_depth", "max_messages")

    def __init__(
        self,
        *,
        max_bytes: int = 256 * 1024 * 1024,
        max_depth: int = 100,
        max_messages: int = 8_000_000,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.max_messages = max_messages


class RefError(ValueError):
    """A version 2 reference that does not point at earlier messages (located)."""


def max_depth_problem(value: Any, limit: int) -> str | None:
    """None when ``value`` nests at most ``limit`` levels, else where it goes deeper.

    Iterative, so a hostile file cannot exhaust the interpreter's stack here.
    """
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, dict):
            children: Iterable[tuple[str, Any]] = ((f"{where}.{k}", v) for k, v in item.items())
        elif isinstance(item, list):
            children = ((f"{where}[{i}]", v) for i, v in enumerate(item))
        else:
            continue
        if depth > limit:
            return f"{where or '<top>'}: nested deeper than {limit} levels"
        stack.extend((v, depth + 1, w) for w, v in children if isinstance(v, (dict, list)))
    return None


# -- writing ------------------------------------------------------------------------------


#: ``json.dumps(value, sort_keys=True, ensure_ascii=False)`` without making an encoder per
#: call. sort_keys: dict order must not matter; the text tells 1, 1.0 and true apart.
_canonical = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


class _Encoder:
    """Finds, for each request, runs of messages an earlier event already holds."""

    def __init__(self) -> None:
        self.lists: dict[int, Sequence[dict[str, Any]]] = {}
        self.first: dict[str, tuple[int, int]] = {}  # canonical text -> (seq, position)
        self.keys: dict[int, str] = {}  # id(message) -> canonical text (message kept alive)
        self.alive: list[Any] = []
        self.last_request: dict[tuple[Any, Any], int] = {}

    def key(self, message: Any) -> str:
        cached = self.keys.get(id(message))
        if cached is None:
            cached = _canonical(message)
            self.keys[id(message)] = cached
            self.alive.append(message)
        return cached

    def run(self, known: Sequence[Any], start: int, messages: Sequence[Any], at: int) -> int:
        """How many of ``messages[at:]`` equal ``known[start:]``, item by item."""
        limit = min(len(known) - start, len(messages) - at)
        if limit <= 0:
            return 0
        # The recorder shares one dict per message, so identity settles the common case
        # in one C-speed pass; otherwise compare canonical texts.
        if all(map(operator.is_, known[start : start + limit], messages[at : at + limit])):
            return limit
        count = 0
        while count < limit:
            a, b = known[start + count], messages[at + count]
            if a is not b and self.key(a) != self.key(b):
                break
            count += 1
        return count

    def remember(self, seq: int, messages: Sequence[Any]) -> None:
        self.lists[seq] = messages
        for position, message in enumerate(messages):
            if isinstance(message, dict):
                self.first.setdefault(self.key(message), (seq, position))

    def request(self, seq: int, data: dict[str, Any]) -> Any:
        messages = data.get("messages")
        if not isinstance(messages, list):
            return messages  # not a list: written as is (the reader refuses it)
        out: list[Any] = []
        at = 0
        key = (data.get("agent"), data.get("session"))
        previous = self.last_request.get(key)
        if previous is not None:
            count = self.run(self.lists[previous], 0, messages, 0)
            if count:
                out.append({"ref": previous, "start": 0, "count": count})
                at = count
        fresh: list[int] = []
        while at < len(messages):
            message = messages[at]
            found = self.first.get(self.key(message)) if isinstance(message, dict) else None
            if found is None:
                out.append(message)
                fresh.append(at)
                at += 1
                continue
            count = self.run(self.lists[found[0]], found[1], messages, at)
            out.append({"ref": found[0], "start": found[1], "count": count})
            at += count
        self.lists[seq] = messages
        for position in fresh:
            self.first.setdefault(self.key(messages[position]), (seq, position))
        self.last_request[key] = seq
        return out


def encode_events(events: Iterable[Any]) -> list[dict[str, Any]]:
    """The version 2 JSON form of in-memory events (requests as references + new messages)."""
    encoder = _Encoder()
    seen: set[int] = set()
    out: list[dict[str, Any]] = []
    for event in events:
        if event.seq in seen:
            # A repeated seq makes "event N" ambiguous: refer only to what follows it.
            encoder, seen = _Encoder(), set()
        seen.add(event.seq)
        data = event.data
        if event.kind == "model_request":
            data = {**data, "messages": encoder.request(event.seq, data)}
        elif event.kind == "model_response" and isinstance(data.get("messages"), list):
            encoder.remember(event.seq, data["messages"])
        out.append({"seq": event.seq, "time": event.time, "kind": event.kind, "data": data})
    return out


# -- reading ------------------------------------------------------------------------------


def _is_ref(item: Any) -> bool:
    return isinstance(item, dict) and "ref" in item and "role" not in item


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def resolve_request(
    items: list[Any], where: str, known: dict[int, list[Any]], budget: list[int]
) -> list[Any]:
    """The full message list of a version 2 request (references replaced by messages).

    ``budget`` holds how many resolved messages may still be made (one shared counter).
    """
    out: list[Any] = []
    expanded = sum(
        item["count"] if _is_ref(item) and _int(item.get("count")) else 1 for item in items
    )
    if expanded > budget[0]:
        budget[0] -= expanded  # the caller reports the bound, nothing was expanded
        return []
    for index, item in enumerate(items):
        if not _is_ref(item):
            out.append(item)
            continue
        at = f"{where}[{index}]"
        if set(item) != _REF_KEYS:
            extra = ", ".join(sorted(set(item) ^ _REF_KEYS))
            msg = f"{at}: a reference has exactly the keys ref, start, count (not: {extra})"
            raise RefError(msg)
        seq, start, count = item["ref"], item["start"], item["count"]
        if not (_int(seq) and _int(start) and _int(count)):
            msg = f"{at}: ref, start and count must be integers, got {item!r}"
            raise RefError(msg)
        target = known.get(seq)
        if target is None:
            msg = f"{at}: ref {seq} is not an earlier model_request or model_response event"
            raise RefError(msg)
        if start < 0 or count < 1 or start + count > len(target):
            msg = (
                f"{at}: messages {start}..{start + count - 1} are out of range "
                f"(event {seq} holds {len(target)})"
            )
            raise RefError(msg)
        out.extend(target[start : start + count])
    budget[0] -= len(out)
    return out


def decode_messages(
    kind: str, seq: Any, data: dict[str, Any], where: str, state: dict[str, Any]
) -> dict[str, Any]:
    """``data`` with a version 2 request's references resolved; remembers message lists."""
    messages = data.get("messages")
    if kind not in _MESSAGE_KINDS or not isinstance(messages, list):
        return data
    known: dict[int, list[Any]] = state["known"]
    if kind == "model_request" and state["version"] >= 2:
        resolved = resolve_request(messages, f"{where}.messages", known, state["budget"])
        data = {**data, "messages": resolved}
        messages = resolved
    elif kind == "model_request":
        state["budget"][0] -= len(messages)
    if _int(seq):
        known[seq] = messages
    return data
