"""Built-in model policies: function-backed fake models that react to what they are sent.

* ``echo`` — a child that answers ``{prefix}{input}`` after a virtual delay.
* ``coordinator`` — a parent that lists its tasks, starts one task per child (once),
  waits for whichever finishes first, reads and clears each result as it finishes, and
  answers with the collected results. Its state is read back from the conversation (the
  tool results of the current run), so it keeps working across loop iterations, fresh
  context and process restarts, for any delays and wait timeouts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from .. import _trace
from .._clients import FunctionChatClient
from .._messages import (
    ChatOptions,
    FunctionCallContent,
    FunctionResultContent,
    Message,
)
from ._schema import CoordinatorPolicy, EchoPolicy

__all__ = ["coordinator_client", "echo_client"]

START = "background_agents_start_task"
WAIT = "background_agents_wait_for_first_completion"
RESULTS = "background_agents_get_task_results"
LIST = "background_agents_get_all_tasks"
CLEAR = "background_agents_clear_completed_task"

_LISTED = re.compile(r"^- Task (\d+) \[(\w+)\] \((.*?)\):", re.MULTILINE)
# Facts, not wording: the id and agent of a started task, the id and status of a finished
# one (the sentences around them are in loopsim._wording and differ between engines).
_STARTED = re.compile(r"[Bb]ackground task (\d+)\b.*?'(.+?)'")
_FINISHED = re.compile(r"^Task (\d+)\b[^\n]*?\bstatus(?::| is) (\w+)")
_RETRY = re.compile(r"^retry of task (\d+)$")
#: A run answers after this many tool rounds at most (a safety net against a provider bug
#: making the policy spin; far above what any scenario needs).
MAX_ROUNDS = 200


def echo_client(name: str, policy: EchoPolicy) -> FunctionChatClient:
    """A child model answering ``{prefix}{last user text}`` after ``policy.delay`` seconds."""

    async def reply(messages: Sequence[Message], options: ChatOptions) -> str:  # noqa: ARG001
        if policy.delay > 0:
            await anyio.sleep(policy.delay)
        last = next((m for m in reversed(messages) if m.role == "user"), None)
        return f"{policy.prefix}{'' if last is None else last.text}"

    return FunctionChatClient(reply, name=name)


@dataclass
class _Seen:
    """What the current run's tool results say (the coordinator's whole memory)."""

    listed: bool = False
    tasks: dict[int, list[str]] = field(default_factory=dict)  # id -> [agent, status]
    collected: dict[int, str] = field(default_factory=dict)  # in collection order
    cleared: set[int] = field(default_factory=set)
    retried: set[int] = field(default_factory=set)
    started_now: list[int] = field(default_factory=list)
    timeouts: int = 0
    wait_error: str | None = None
    rounds: int = 0


def _last_input(messages: Sequence[Message]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and not any(
            isinstance(c, FunctionResultContent) for c in message.contents
        ):
            return index
    return -1


def _read(segment: Sequence[Message]) -> _Seen:
    seen = _Seen()
    calls: dict[str, FunctionCallContent] = {}
    for message in segment:
        for content in message.contents:
            if isinstance(content, FunctionCallContent):
                calls[content.call_id] = content
                if content.name == START:
                    retry = _RETRY.match(str(content.arguments.get("description", "")))
                    if retry:
                        seen.retried.add(int(retry.group(1)))
            elif isinstance(content, FunctionResultContent):
                seen.rounds += 1
                call = calls.get(content.call_id)
                if call is None:
                    continue
                text = str(content.result if content.error is None else content.error)
                _apply(seen, call, text)
    return seen


def _apply(seen: _Seen, call: FunctionCallContent, text: str) -> None:
    if call.name == LIST:
        seen.listed = True
        for match in _LISTED.finditer(text):
            seen.tasks[int(match.group(1))] = [match.group(3), match.group(2)]
    elif call.name == START:
        started = _STARTED.search(text)
        if started:
            task_id = int(started.group(1))
            seen.tasks[task_id] = [started.group(2), "running"]
            if not _RETRY.match(str(call.arguments.get("description", ""))):
                seen.started_now.append(task_id)
    elif call.name == WAIT:
        finished = _FINISHED.search(text)
        if finished:
            task_id = int(finished.group(1))
            if task_id in seen.tasks:
                seen.tasks[task_id][1] = finished.group(2)
        elif not text.startswith("Error:"):  # the timeout reply (no task, no status)
            seen.timeouts += 1
        else:
            seen.wait_error = text
    elif call.name == RESULTS:
        task_id = int(call.arguments.get("task_id", -1))
        seen.collected[task_id] = text
    elif call.name == CLEAR:
        seen.cleared.add(int(call.arguments.get("task_id", -1)))


def _started_before(messages: Sequence[Message]) -> bool:
    return any(
        isinstance(c, FunctionCallContent) and c.name == START for m in messages for c in m.contents
    )


def _call(name: str, **arguments: Any) -> FunctionCallContent:
    return FunctionCallContent(call_id=_trace.next_id("call"), name=name, arguments=arguments)


def _answer(seen: _Seen, *, note: str | None = None) -> str:
    lines: list[str] = []
    if seen.collected:
        lines.append(f"Collected {len(seen.collected)} result(s):")
        for task_id, text in seen.collected.items():
            agent, status = seen.tasks.get(task_id, ["?", "?"])
            # a task that did not complete has no answer, only the provider's words for
            # why: the coordinator names its status (the same on either engine)
            shown = status if status in ("failed", "lost") else text
            lines.append(f"- task {task_id} ({agent}): {shown}")
    running = sorted(t for t, (_, s) in seen.tasks.items() if s == "running")
    if running:
        lines.append("Still running: " + ", ".join(f"task {t}" for t in running))
    if note:
        lines.append(note)
    return "\n".join(lines) if lines else "No background tasks."


def coordinator_client(
    name: str, policy: CoordinatorPolicy, children: Sequence[str]
) -> FunctionChatClient:
    """The parent model of the ``coordinator`` policy (see the module docstring)."""
    targets = list(policy.children or children)

    def reply(messages: Sequence[Message], options: ChatOptions) -> Message | str:  # noqa: ARG001
        start = _last_input(messages)
        user_text = messages[start].text if start >= 0 else ""
        seen = _read(messages[start + 1 :])
        if seen.rounds >= MAX_ROUNDS:
            return _answer(seen, note=f"Gave up after {MAX_ROUNDS} tool results.")
        if not seen.listed:
            return Message("assistant", [_call(LIST)])
        if not seen.tasks and not _started_before(messages):
            task_input = policy.input if policy.input is not None else user_text
            return Message(
                "assistant",
                [
                    _call(START, agent_name=child, input=task_input, description=f"{child} task")
                    for child in targets
                ],
            )
        if policy.detach and seen.started_now:
            ids = ", ".join(f"task {t}" for t in seen.started_now)
            return f"Started {len(seen.started_now)} background task(s): {ids}."
        calls: list[FunctionCallContent] = []
        for task_id, (agent, status) in sorted(seen.tasks.items()):
            if status == "running" or task_id in seen.collected or task_id in seen.cleared:
                continue
            calls.append(_call(RESULTS, task_id=task_id))
            calls.append(_call(CLEAR, task_id=task_id))
            if status == "lost" and policy.restart_lost and task_id not in seen.retried:
                task_input = policy.input if policy.input is not None else user_text
                calls.append(
                    _call(
                        START,
                        agent_name=agent,
                        input=task_input,
                        description=f"retry of task {task_id}",
                    )
                )
        if calls:
            return Message("assistant", calls)
        if seen.wait_error is not None:
            return _answer(seen, note=seen.wait_error)
        running = sorted(t for t, (_, s) in seen.tasks.items() if s == "running")
        if running:
            if policy.max_waits is not None and seen.timeouts >= policy.max_waits:
                return _answer(seen, note=f"Stopped waiting after {seen.timeouts} timeout(s).")
            return Message("assistant", [_call(WAIT, task_ids=running)])
        return _answer(seen)

    return FunctionChatClient(reply, name=name)
