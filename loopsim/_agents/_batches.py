"""Answering part of a batch of approvals, as agent_framework 1.23.0 does it.

One model answer that asks approval for several calls is a batch. A run whose input
answers some of its requests but not all runs nothing and calls no model: its response
is the requests still open, shown again, and the answers wait in the session's state.
The run that answers the last one runs the whole batch (approved calls run, rejected
ones get the rejection result) and sends the model all the results in one tool message,
in call order, in place of the input's answers; the batch's requests and answers are
then left out of what the model is shown of the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._messages import (
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionResultContent,
    Message,
)
from ._approvals import without
from ._session_dicts import messages_from_dicts, messages_to_dicts

__all__ = ["Batch", "find_batch", "for_model_after_batch", "hold", "log_batches", "release"]

#: where a batch's earlier answers wait, in ``session.state`` (JSON-safe message dicts)
HELD_STATE_KEY = "loopsim_held_approvals"
#: the batches a streamed harness run asked (its history keeps no request), same shape
BATCHES_STATE_KEY = "loopsim_approval_batches"


@dataclass(slots=True)
class Batch:
    """The batch the input's answers belong to.

    Attributes:
        requests: the batch's approval requests, in call order.
        answers: every answer given so far (held ones first), by approval id.
        remaining: the requests not answered yet, in call order.
    """

    requests: list[FunctionApprovalRequestContent]
    answers: dict[str, FunctionApprovalResponseContent]
    remaining: list[FunctionApprovalRequestContent]

    @property
    def ids(self) -> set[str]:
        """The batch's approval ids."""
        return {r.id for r in self.requests}

    def ordered_answers(self) -> list[FunctionApprovalResponseContent]:
        """The answers in the batch's call order."""
        return [self.answers[r.id] for r in self.requests if r.id in self.answers]


def _held(state: dict[str, Any]) -> list[FunctionApprovalResponseContent]:
    data = state.get(HELD_STATE_KEY)
    if not isinstance(data, list):
        return []
    return [
        c
        for m in messages_from_dicts(data)
        for c in m.contents
        if isinstance(c, FunctionApprovalResponseContent)
    ]


def log_batches(state: dict[str, Any], messages: Sequence[Message]) -> None:
    """Remember the batches ``messages`` ask (for a history that does not keep them)."""
    batches = [
        Message("assistant", requests)
        for m in messages
        if len(requests := [c for c in m.contents if isinstance(c, FunctionApprovalRequestContent)])
        > 1
    ]
    if batches:
        state.setdefault(BATCHES_STATE_KEY, []).extend(messages_to_dicts(batches))


def _logged(state: dict[str, Any]) -> list[Message]:
    data = state.get(BATCHES_STATE_KEY)
    return messages_from_dicts(data) if isinstance(data, list) else []


def find_batch(
    history: Sequence[Message],
    answers: Sequence[FunctionApprovalResponseContent],
    state: dict[str, Any],
) -> Batch | None:
    """The batch of more than one request the answers belong to, or None.

    The batch is the first message of the history (or of the batches logged in
    ``state``) that holds a request one of the answers answers; the answers waiting in
    ``state`` count as given.
    """
    wanted = {a.id for a in answers}
    for message in (*_logged(state), *history):
        requests = [c for c in message.contents if isinstance(c, FunctionApprovalRequestContent)]
        if len(requests) < 2 or not wanted & {r.id for r in requests}:
            continue
        ids = {r.id for r in requests}
        given = {a.id: a for a in _held(state) if a.id in ids}
        given.update({a.id: a for a in answers if a.id in ids})
        remaining = [r for r in requests if r.id not in given]
        return Batch(requests, given, remaining)
    return None


def hold(state: dict[str, Any], batch: Batch) -> None:
    """Keep the batch's answers so far in ``state`` until the batch is answered."""
    state[HELD_STATE_KEY] = messages_to_dicts([Message("user", batch.ordered_answers())])


def release(state: dict[str, Any], batch: Batch) -> None:
    """Forget the held answers and the logged batch (the batch is answered)."""
    state.pop(HELD_STATE_KEY, None)
    logged = state.get(BATCHES_STATE_KEY)
    if isinstance(logged, list):
        ids = batch.ids
        kept = [
            m
            for m in _logged(state)
            if not ids & {c.id for c in m.contents if isinstance(c, FunctionApprovalRequestContent)}
        ]
        if kept:
            state[BATCHES_STATE_KEY] = messages_to_dicts(kept)
        else:
            del state[BATCHES_STATE_KEY]


def for_model_after_batch(
    loaded: Sequence[Message],
    input_messages: Sequence[Message],
    batch: Batch,
    results: Sequence[FunctionResultContent],
    *,
    loop_sees_history: bool,
) -> tuple[list[Message], list[Message]]:
    """The history (as loaded) and the input as the model is shown them once a batch is
    answered: the batch's requests and answers left out of the history (where the tool
    loop sees it), and the input's answers replaced by one tool message of all results."""
    ids = batch.ids

    def of_batch(content: Any) -> bool:
        return (
            isinstance(content, (FunctionApprovalRequestContent, FunctionApprovalResponseContent))
            and content.id in ids
        )

    shown = without(loaded, of_batch) if loop_sees_history else list(loaded)
    prefix: list[Message] = []
    placed = False
    for message in input_messages:
        kept = [c for c in message.contents if not of_batch(c)]
        if len(kept) != len(message.contents) and not placed:
            prefix.append(Message("tool", list(results)))
            placed = True
        if len(kept) == len(message.contents):
            prefix.append(message)
        elif kept:
            prefix.append(message.model_copy(update={"contents": kept}))
    return shown, prefix
