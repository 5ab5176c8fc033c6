"""What the model sees of approval requests and answers, as agent_framework shows it.

The session keeps every message as the run produced it (an approval request beside its
call, the host's answer, the tool result). The model is shown less, in three steps that
follow agent-framework-core 1.23.0:

1. **Loading the history** (upstream's in-memory history provider): approval requests
   and answers that are settled are left out. A request is settled once it is answered
   or its call has a result; an answer once its call has a result. A message left with
   no contents is left out. Open ones stay.
2. **A run that answers approvals** (upstream's function-invocation layer): in the
   history and the new input, a request whose call is already there is dropped (one
   whose call is not there stands in for the call); each answer in the input is replaced
   by its call's result, and a message holding such a result becomes a ``tool``
   message. Answers not given in this run are dropped.
3. **A run that answers none**: requests still open are dropped, and so are the calls
   they wait on (while those have no result).

A harness agent (upstream's per-service-call history persistence) loads the history
beneath its function-invocation layer: steps 2 and 3 then see the run's input only, and
the history reaches the model as step 1 leaves it.

Only what is sent changes: messages are copied, never edited in place.

Cost: :class:`HistoryList` remembers where its first approval content is, so a history
without any is passed on untouched (O(1)); a history with one is filtered in O(n).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._messages import (
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
)

__all__ = [
    "HistoryList",
    "first_control",
    "for_model",
    "has_controls",
    "may_hold_controls",
    "without",
]

_CONTROLS = (FunctionApprovalRequestContent, FunctionApprovalResponseContent)


# content class -> whether it is an approval content: a class's bases never change, and a
# dict look-up is several times cheaper than isinstance against the two classes
_IS_CONTROL: dict[type, bool] = {}


def _is_control(cls: type) -> bool:
    found = _IS_CONTROL.get(cls)
    if found is None:
        if len(_IS_CONTROL) >= 256:  # classes made on the fly (tests): stay small
            _IS_CONTROL.clear()
        found = _IS_CONTROL[cls] = issubclass(cls, _CONTROLS)
    return found


def has_controls(message: Message) -> bool:
    """Whether ``message`` holds an approval request or answer."""
    known = _IS_CONTROL
    for content in message.contents:
        cls = type(content)
        found = known.get(cls)
        if found is None:
            found = _is_control(cls)
        if found:
            return True
    return False


def first_control(messages: Sequence[Message], start: int) -> int | None:
    """The index of the first message from ``start`` on holding approval content, or None."""
    for i in range(start, len(messages)):
        if has_controls(messages[i]):
            return i
    return None


class HistoryList(list[Message]):
    """A history's message list that knows where its first approval content is.

    Histories only grow (``append``/``extend``), so the position is found by looking at
    new messages only.
    """

    __slots__ = ("first_control",)

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__(messages)
        self.first_control: int | None = first_control(self, 0) if self else None

    def append(self, message: Message) -> None:
        super().append(message)
        if self.first_control is None and has_controls(message):
            self.first_control = len(self) - 1

    def extend(self, messages: Iterable[Message]) -> None:
        start = len(self)
        super().extend(messages)
        if self.first_control is None:
            self.first_control = first_control(self, start)


def may_hold_controls(history: Sequence[Message], stop: int) -> bool:
    """False when the first ``stop`` messages of ``history`` surely hold no approval content."""
    if stop == 0:
        return False
    if isinstance(history, HistoryList):
        first = history.first_control
        return first is not None and first < stop
    return True


# -- 1. loading -------------------------------------------------------------------------


class _Ledger:
    """Which approval requests and answers of a history are still open (upstream's rule)."""

    __slots__ = (
        "answers_by_call",
        "closed_requests",
        "open_answers",
        "open_requests",
        "requests_by_call",
        "requests_by_id",
    )

    def __init__(self) -> None:
        self.open_requests: dict[str, FunctionApprovalRequestContent] = {}
        self.requests_by_id: dict[str, FunctionApprovalRequestContent] = {}
        self.requests_by_call: dict[str, deque[str]] = {}
        self.closed_requests: set[int] = set()
        self.open_answers: dict[str, FunctionApprovalResponseContent] = {}
        self.answers_by_call: dict[
            str, deque[tuple[str, FunctionApprovalRequestContent | None]]
        ] = {}

    def request(self, content: FunctionApprovalRequestContent) -> None:
        if content.id not in self.open_requests:
            self.open_requests[content.id] = self.requests_by_id[content.id] = content
            self.requests_by_call.setdefault(content.function_call.call_id, deque()).append(
                content.id
            )
        self.open_answers.pop(content.id, None)  # a new request supersedes an old answer

    def answer(self, content: FunctionApprovalResponseContent) -> None:
        request = self.requests_by_id.get(content.id)
        self.open_requests.pop(content.id, None)
        if request is not None and id(request) in self.closed_requests:
            return
        if content.id not in self.open_answers:
            self.open_answers[content.id] = content
            self.answers_by_call.setdefault(content.function_call.call_id, deque()).append(
                (content.id, request)
            )

    def result(self, call_id: str) -> None:
        """A result settles its call's oldest open answer, else its oldest open request."""
        answers = self.answers_by_call.get(call_id)
        while answers and answers[0][0] not in self.open_answers:
            answers.popleft()
        if answers:
            answer_id, request = answers.popleft()
            del self.open_answers[answer_id]
            if request is not None:
                self.closed_requests.add(id(request))
                self.open_requests.pop(request.id, None)
            return
        request_ids = self.requests_by_call.get(call_id)
        while request_ids and request_ids[0] not in self.open_requests:
            request_ids.popleft()
        if request_ids:
            self.closed_requests.add(id(self.open_requests.pop(request_ids.popleft())))


def _settled_filter(messages: Sequence[Message]) -> list[Message]:
    """The history without its settled approval requests and answers."""
    ledger = _Ledger()
    for message in messages:
        for content in message.contents:
            if isinstance(content, FunctionApprovalRequestContent):
                ledger.request(content)
            elif isinstance(content, FunctionApprovalResponseContent):
                ledger.answer(content)
            elif isinstance(content, FunctionResultContent):
                ledger.result(content.call_id)
    keep = {id(c) for c in (*ledger.open_requests.values(), *ledger.open_answers.values())}
    return without(messages, lambda c: isinstance(c, _CONTROLS) and id(c) not in keep)


def without(messages: Sequence[Message], drop: Callable[[Any], bool]) -> list[Message]:
    """``messages`` without the contents ``drop`` picks (as new message objects; a message
    left empty is left out, an untouched one is kept as it is)."""
    out: list[Message] = []
    for message in messages:
        kept = [c for c in message.contents if not drop(c)]
        if len(kept) == len(message.contents):
            out.append(message)
        elif kept:
            out.append(message.model_copy(update={"contents": kept}))
    return out


# -- 2. a run that answers approvals ----------------------------------------------------


@dataclass(slots=True)
class _Occurrence:
    call: FunctionCallContent
    approval_id: str | None = None
    closed: bool = False


def _answered(
    messages: Sequence[Message],
    answers: Mapping[str, FunctionApprovalResponseContent],
    results: Mapping[str, deque[FunctionResultContent]],
) -> list[Message | None]:
    """Each message as sent once ``answers`` (by approval id) got ``results`` (by call id);
    None for a message left empty."""
    by_call: dict[str, list[_Occurrence]] = {}
    by_approval: dict[str, list[_Occurrence]] = {}
    seen: set[tuple[str, str, str, str]] = set()

    def open_one(call_id: str, *, unbound: bool = False) -> _Occurrence | None:
        for occurrence in by_call.get(call_id, ()):
            if not occurrence.closed and not (unbound and occurrence.approval_id is not None):
                return occurrence
        return None

    out: list[Message | None] = []
    for message in messages:
        contents: list[Any] = []
        replaced = False
        for content in message.contents:
            if isinstance(content, FunctionCallContent):
                by_call.setdefault(content.call_id, []).append(_Occurrence(content))
            elif isinstance(content, FunctionApprovalRequestContent):
                call = content.function_call
                occurrence = open_one(call.call_id, unbound=True)
                identity = (content.id, call.call_id, call.name, str(call.arguments))
                if occurrence is None and identity in seen:
                    continue
                seen.add(identity)
                if occurrence is None:  # the request stands in for its call
                    occurrence = _Occurrence(call, content.id)
                    by_call.setdefault(call.call_id, []).append(occurrence)
                    by_approval.setdefault(content.id, []).append(occurrence)
                    contents.append(call)
                else:
                    occurrence.approval_id = content.id
                    by_approval.setdefault(content.id, []).append(occurrence)
                continue
            elif isinstance(content, FunctionApprovalResponseContent):
                if content.id not in answers:
                    continue
                found = next((o for o in by_approval.get(content.id, ()) if not o.closed), None)
                if found is None:
                    found = open_one(content.function_call.call_id)
                queue = results.get(content.function_call.call_id)
                if not queue:
                    contents.append(content)
                    continue
                contents.append(queue.popleft())
                replaced = True
                if found is not None:
                    found.closed = True
                continue
            elif isinstance(content, FunctionResultContent):
                found = open_one(content.call_id)
                if found is not None:
                    found.closed = True
            contents.append(content)
        if not contents:
            out.append(None)
        elif replaced:
            out.append(message.model_copy(update={"contents": contents, "role": "tool"}))
        elif len(contents) != len(message.contents) or any(
            a is not b for a, b in zip(contents, message.contents, strict=True)
        ):
            out.append(message.model_copy(update={"contents": contents}))
        else:
            out.append(message)
    return out


# -- 3. a run that answers none ---------------------------------------------------------


def _open_requests(messages: Sequence[Message]) -> set[str]:
    """Ids of approval requests neither answered nor settled by a result."""
    open_ids: dict[str, str] = {}  # approval id -> call id, in order
    for message in messages:
        for content in message.contents:
            if isinstance(content, FunctionApprovalRequestContent):
                open_ids.setdefault(content.id, content.function_call.call_id)
            elif isinstance(content, FunctionApprovalResponseContent):
                open_ids.pop(content.id, None)
            elif isinstance(content, FunctionResultContent):
                oldest = next((a for a, c in open_ids.items() if c == content.call_id), None)
                if oldest is not None:
                    del open_ids[oldest]
    return set(open_ids)


def _unanswered(messages: Sequence[Message]) -> list[Message | None]:
    """Each message without open approval requests and the result-less calls they wait on."""
    pending = _open_requests(messages)
    if not pending:
        return list(messages)
    open_calls: dict[str, deque[tuple[FunctionCallContent, int]]] = {}
    bound: set[int] = set()
    batches: set[int] = set()
    for index, message in enumerate(messages):
        for content in message.contents:
            if isinstance(content, FunctionCallContent):
                open_calls.setdefault(content.call_id, deque()).append((content, index))
            elif isinstance(content, FunctionResultContent):
                calls = open_calls.get(content.call_id)
                if calls:
                    bound.discard(id(calls.popleft()[0]))
            elif isinstance(content, FunctionApprovalRequestContent) and content.id in pending:
                call = next(
                    (
                        c
                        for c in open_calls.get(content.function_call.call_id, ())
                        if id(c[0]) not in bound
                    ),
                    None,
                )
                if call is None:
                    batches.add(index)
                else:
                    bound.add(id(call[0]))
                    batches.add(call[1])
    unanswered = {id(c) for calls in open_calls.values() for c, _ in calls}
    out: list[Message | None] = []
    for index, message in enumerate(messages):
        kept = [
            c
            for c in message.contents
            if not (
                (isinstance(c, FunctionApprovalRequestContent) and c.id in pending)
                or (index in batches and isinstance(c, FunctionCallContent) and id(c) in unanswered)
            )
        ]
        if not kept:
            out.append(None)
        elif len(kept) == len(message.contents):
            out.append(message)
        else:
            out.append(message.model_copy(update={"contents": kept}))
    return out


# -- together ---------------------------------------------------------------------------


def for_model(
    history: Sequence[Message],
    prefix: Sequence[Message],
    answers: Sequence[FunctionApprovalResponseContent],
    results: Sequence[FunctionResultContent],
    *,
    loop_sees_history: bool = True,
) -> tuple[list[Message], list[Message]]:
    """The history and the run's input as the model is shown them (steps 1-3 above).

    ``answers`` are the approval answers this run's input gives, ``results`` what each
    produced (same order). ``loop_sees_history=False`` (a harness agent): steps 2 and 3
    see the input only.
    """
    loaded = _settled_filter(history)
    if not loop_sees_history:
        return loaded, for_model((), prefix, answers, results)[1]
    messages = [*loaded, *prefix]
    if answers:
        queues: dict[str, deque[FunctionResultContent]] = {}
        for result in results:
            queues.setdefault(result.call_id, deque()).append(result)
        shown = _answered(messages, {a.id: a for a in answers}, queues)
    else:
        shown = _unanswered(messages)
    cut = len(loaded)
    return (
        [m for m in shown[:cut] if m is not None],
        [m for m in shown[cut:] if m is not None],
    )
